// Sharding rules of the `sdy-propagation` stage that differ from the mesh pipeline's
// (internal).
#pragma once

#include <optional>

#include "meshplan/planner/sharding.hpp"

namespace meshplan::planner::shlo {

/// Shardy's rule for `op` where the `sdy-propagation` stage follows Shardy rather than the
/// mesh pipeline's rule: `dynamic_slice`, `dynamic_update_slice` and the custom calls Shardy
/// treats as pointwise (`MoveToHost`, `MoveToDevice`, ...). nullopt: use sharding_rule.
std::optional<FactorRule> shardy_stage_rule(const Module& m, const Op& op);
/// A rule of the `sdy-insert-explicit-reshards` stage and its permutation factors (Shardy's
/// kPermutation: factors whose elements change place along their dim, e.g. padded or sliced
/// dims; empty: none).
struct ReshardRule {
  FactorRule rule;
  std::vector<bool> permutation;
};
/// The rule that stage takes where Shardy's differs from the mesh pipeline's: a dynamic_slice's
/// sliced dims are one factor of operand and result needing replication, pad and slice have
/// one factor per dim, permutation factors where the size changes, a reverse's reversed
/// dims are permutation factors and a broadcast_in_dim's expanded size-1 dims need no
/// replication; concatenate, gather, scatter and a reduce of several inputs as Shardy's
/// registry states them (see architecture.md). nullopt: sharding_rule.
std::optional<ReshardRule> shardy_reshard_rule(const Module& m, const Op& op);

/// The rule Shardy's op sharding rule registry gives ops the general rules do not cover:
/// cholesky, triangular_solve, rng_bit_generator, collective_broadcast, bitcast_convert
/// (an extra factor for the narrower type's minor dim) and the custom call targets Shardy knows
/// (linalg, top-k, host offload, ...). nullopt: no such rule.
std::optional<FactorRule> registry_rule(const Module& m, const Op& op);

/// True for an op Shardy has no sharding rule for and leaves as it is when inserting explicit
/// reshards: a custom call to a target it does not know, without a stated rule, and any op
/// whose stated rule is marked `custom`; and `func.call`, whose operands the export pass
/// reshards to the callee's argument shardings.
bool shardy_skips_op(const Module& m, const Op& op);

}  // namespace meshplan::planner::shlo
