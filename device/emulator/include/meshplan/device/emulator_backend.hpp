// The emulator's registration in the backend registry (backend.hpp), called explicitly by the
// programs that run plans on emulated chips (the C API, meshplan-run, the Python module).
#pragma once

#include <string_view>

#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// The emulator's backend name.
inline constexpr std::string_view kEmulatorBackend = "emulator";

/// Registers backend "emulator" (an EmulatedMesh of the descriptor's shape and chip). Idempotent
/// and thread-safe: the first call registers, later calls return what it returned.
Status register_emulator_backend();

}  // namespace meshplan::device
