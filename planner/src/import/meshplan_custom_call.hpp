// `"stablehlo.custom_call"` ops with call_target_name = "meshplan.<op>" (MESH-SPEC §2): reading
// them back into a graph op, for the lowering, the sharding rules and the host evaluator
// (internal).
#pragma once

#include <optional>
#include <string>

#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

inline constexpr std::string_view kMeshplanPrefix = "meshplan.";

/// The call target of a stablehlo.custom_call ("" for other ops or when none is given).
std::string custom_call_target(const Op& op);

/// The meshplan op kind a custom call stands for, or nullopt when it is not a meshplan call.
std::optional<OpKind> meshplan_call_kind(const Op& op);

/// The graph op (name = the call target, kind, attributes sorted by name; no operands or
/// results) of a meshplan custom call. Errors (unimplemented) name the op's location: no call
/// target, a target that is not meshplan.<op>, an unknown meshplan op, a result count other than
/// one, an attribute whose value has no graph form.
Result<planner::Op> meshplan_call_op(const Op& op);

/// MLIR text of a graph attribute value per MESH-SPEC §2 (`-1 : i64`, `1.0e-05 : f64`, `true`,
/// `"s"`, `array<i64: 1, 2>`, `array<f64: 0.5>`).
std::string attr_value_text(const AttrValue& value);

}  // namespace meshplan::planner::shlo

#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

/// The factor rule of a meshplan custom call (see sharding_rules_meshplan.cpp).
Result<FactorRule> meshplan_call_rule(const Module& m, const Op& op);

}  // namespace meshplan::planner::shlo
