// The timing model: how long the real chip would take for one op. The emulator advances its
// clock by it and the planner scores plans with it, so both agree.
//
// duration = dispatch + max(compute, data movement), where
//   compute  = the busiest core's work: tile-matmuls x cycles per tile-matmul (16 at LoFi, x2 at
//              HiFi2, x3 HiFi3, x4 HiFi4), or elements / eltwise_elems_per_cycle, over the clock;
//   movement = DRAM bytes (operands and results in DRAM) / DRAM bandwidth
//            + L1 bytes / (NoC bytes per cycle x cores used x clock).
#pragma once

#include <span>

#include "meshplan/device/device.hpp"

namespace meshplan::device {

/// Cores an op uses: min(config grid cores, output tiles).
uint32_t cores_used(const OpLaunch& op);

/// Simulated cost of `op` on `chip`. Pure: no device state.
OpTiming estimate(const ChipDesc& chip, const OpLaunch& op);

}  // namespace meshplan::device
