// Kernels of the emulated chip (internal to device/).
#pragma once

#include "meshplan/device/device.hpp"
#include "meshplan/device/emulator.hpp"

namespace meshplan::device {

/// Runs `op` on `memory`, reading operands and writing results through their address maps.
/// Preconditions: every placement is live and supported (the emulator checks).
Result<OpTiming> run_kernel(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op);

}  // namespace meshplan::device
