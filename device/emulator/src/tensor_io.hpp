// Whole-tensor transfers between row-major host values and device pages (internal to device/).
#pragma once

#include <span>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/placement.hpp"

namespace meshplan::device {

/// Writes volume(t.shape) row-major values into t's pages in t's layout (tilizing, packing,
/// zero padding). Preconditions: check_placement(t) passed and host has volume(t.shape) values.
Status write_tensor(ChipMemory& memory, const ChipDesc& chip, const TensorPlacement& t,
                    std::span<const float> host);
/// Reads t's pages back into volume(t.shape) row-major values.
Status read_tensor(ChipMemory& memory, const ChipDesc& chip, const TensorPlacement& t,
                   std::span<float> host);

}  // namespace meshplan::device
