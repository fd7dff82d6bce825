// The emulator as a registered backend (see emulator_backend.hpp).
#include "meshplan/device/emulator_backend.hpp"

#include "meshplan/device/backend.hpp"
#include "meshplan/device/emulated_mesh.hpp"

namespace meshplan::device {

Status register_emulator_backend() {
  return register_backend_once(
      kEmulatorBackend,
      [](const MeshDesc& desc, const BackendOptions& options) -> Result<std::unique_ptr<Mesh>> {
        auto mesh = MESHPLAN_TRY(EmulatedMesh::create(desc));
        if (options.host_threads != 0)
          for (int i = 0; i < mesh->size(); ++i)
            mesh->chip(i).set_core_threads(options.host_threads);
        return std::unique_ptr<Mesh>(std::move(mesh));
      });
}

}  // namespace meshplan::device
