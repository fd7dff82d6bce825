// Device backends by name, registered by explicit calls (as IREE's HAL registers its drivers):
// a program registers the backends it links (the emulator: register_emulator_backend() in
// emulator_backend.hpp), then opens meshes by backend name. No static initializer registers
// anything, so a backend the linker keeps is one a caller asked for. A hardware backend is a
// sibling folder of device/emulator/ with its own registration function.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "meshplan/device/mesh.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// What a program may ask of any backend when it opens a mesh.
struct BackendOptions {
  /// Host threads each chip may use to run its cores (0: the backend's default). A backend whose
  /// chips run no host threads (hardware) ignores it.
  unsigned host_threads = 0;
};

/// Opens a mesh of `desc`'s shape and chip on one backend (a single chip is a 1x1 mesh).
using MeshFactory =
    std::function<Result<std::unique_ptr<Mesh>>(const MeshDesc& desc, const BackendOptions&)>;

/// Adds backend `name` to the process's registry. Fails (invalid_argument) when the name is
/// empty or already registered. Thread-safe.
Status register_backend(std::string_view name, MeshFactory factory);

/// For a backend's own registration function (register_emulator_backend(), ...): the first call
/// for `name` registers it as register_backend() does; every later call returns the first call's
/// status and drops its factory. Thread-safe.
Status register_backend_once(std::string_view name, MeshFactory factory);

/// Whether backend `name` is registered. Thread-safe.
bool has_backend(std::string_view name);

/// The registered backend names, sorted. Thread-safe.
std::vector<std::string> backend_names();

/// Opens a mesh on backend `name`; not_found (naming the registered backends) when no backend of
/// that name is registered, else whatever the backend's factory answers. Thread-safe; the
/// factory runs outside the registry's lock.
Result<std::unique_ptr<Mesh>> open_backend(std::string_view name, const MeshDesc& desc,
                                           const BackendOptions& options = {});

}  // namespace meshplan::device
