// The emulator as a registered backend (see emulator_backend.hpp).
#include "meshplan/device/emulator_backend.hpp"

#include <mutex>

#include "meshplan/device/backend.hpp"
#include "meshplan/device/emulated_mesh.hpp"

namespace meshplan::device {

Status register_emulator_backend() {
  static std::once_flag once;
  static Status status;
  std::call_once(once, [] {
    status = register_backend(kEmulatorBackend,
                              [](const MeshDesc& desc) -> Result<std::unique_ptr<Mesh>> {
                                return MESHPLAN_TRY(EmulatedMesh::create(desc));
                              });
  });
  return status;
}

}  // namespace meshplan::device
