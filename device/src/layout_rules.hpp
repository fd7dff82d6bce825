// Layout and dtype rules tt-metal's device operations enforce for the non-matmul ops meshplan
// models: binary eltwise, conv2d, softmax, layer norm and RMS norm (docs/hardware-rules.md lists
// each rule with its tt-metal source). OpModel::validate calls layout_rule() after the shape and
// placement checks, so the planner and the emulator refuse the same launches.
#pragma once

#include <string>

#include "meshplan/device/device.hpp"

namespace meshplan::device {

/// Empty when `op` satisfies every rule below that applies to its kind, otherwise why not: the
/// message names the tensor and quotes tt-metal's reason (the caller prefixes the op).
/// Preconditions: operand and result counts checked, placements valid.
std::string layout_rule(const OpLaunch& op);

}  // namespace meshplan::device
