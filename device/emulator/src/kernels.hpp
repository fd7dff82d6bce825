// Kernels of the emulated chip (internal to device/). Each emulated core computes its share of
// the output tiles from tiles it reads through the operands' address maps (TileIO), and writes
// its tiles back through the result's. Padding outside a tensor's logical shape is written as 0.
#pragma once

#include "meshplan/device/device.hpp"
#include "meshplan/device/emulator.hpp"

namespace meshplan::device {

/// Runs `op` on `memory`. Preconditions: OpModel::validate accepted it and every placement is live.
Result<OpTiming> run_kernel(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op);

/// One kernel per op family; `cores` is the number of cores the op uses.
Status run_matmul(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores);
Status run_eltwise(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores);
Status run_reduction(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores);
Status run_shape_op(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores);
Status run_conv(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores);
Status run_data_movement(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op,
                         uint32_t cores);

}  // namespace meshplan::device
