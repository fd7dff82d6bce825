// Semantic checks of a parsed StableHLO/Shardy module, run once after parsing.
#pragma once

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// Checks what the parser does not: tensor sizes within device::checked_volume's limits, every
/// dimension attribute in range for its operand's rank (dot_general, reduce, iota, slice,
/// transpose, broadcast_in_dim, concatenate, collectives), written result types that follow
/// from the operands, meshes (axis sizes, device_ids), and shardings (known mesh and axes, rank
/// equal to the tensor's, no axis used twice). Errors read "file:line:col: op: what". Passes
/// after it may assume these hold. Dimensions of size 0 are accepted (zero-size tensors; the
/// size limits apply to the other dims).
Status verify_module(const Module& module);

}  // namespace meshplan::planner::shlo
