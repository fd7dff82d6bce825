// The MPI mesh as a registered backend (see mpi_backend.hpp).
#include "meshplan/device/mpi_backend.hpp"

#include "meshplan/device/backend.hpp"
#include "meshplan/device/mpi_mesh.hpp"

namespace meshplan::device {

Status register_mpi_backend() {
  return register_backend_once(
      kMpiBackend,
      [](const MeshDesc& desc, const BackendOptions& options) -> Result<std::unique_ptr<Mesh>> {
        int initialised = 0;
        MPI_Initialized(&initialised);
        if (!initialised)
          return fail(ErrorCode::incompatible, "backend '", kMpiBackend,
                      "': MPI is not initialised (run the program under mpirun)");
        auto mesh = MESHPLAN_TRY(MpiMesh::create(desc, MPI_COMM_WORLD, mpi_timeout_seconds()));
        if (options.host_threads != 0)
          for (int i = 0; i < mesh->size(); ++i)
            if (EmulatedDevice* chip = mesh->local_chip(i))
              chip->set_core_threads(options.host_threads);
        return std::unique_ptr<Mesh>(std::move(mesh));
      });
}

}  // namespace meshplan::device
