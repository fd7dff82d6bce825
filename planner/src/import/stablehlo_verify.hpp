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
///
/// `SizeLimits::text` is for the stages that only rewrite the module's text (Shardy's
/// propagation and export passes, which never hold a tensor's data): a tensor may then hold up
/// to kMaxTextElements elements, as Shardy's own tests use shapes far beyond any chip's memory;
/// the device limits apply again when a module is lowered to a plan.
enum class SizeLimits { device, text };
/// Most elements a tensor may hold in a text-only stage: 2^48, so that its byte size times any
/// mesh's device count (at most 2^32) still fits in 64 bits.
inline constexpr int64_t kMaxTextElements = int64_t{1} << 48;
Status verify_module(const Module& module, SizeLimits limits = SizeLimits::device);

}  // namespace meshplan::planner::shlo
