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

}  // namespace meshplan::planner::shlo
