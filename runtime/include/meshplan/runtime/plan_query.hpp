// What a caller expects of a plan (graph, device, planner version, options), and the field-by-field
// comparison that turns a cache miss into a reason: "stale: planner 0.0.9 ≠ 0.1.0".
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/runtime/plan.hpp"

namespace meshplan::runtime {

/// The key material a server expects a plan to have been made with. Fields left empty are not
/// compared. Views only: the strings and the descriptor must outlive the query.
struct PlanQuery {
  std::optional<Hash128> graph_key;                    ///< Graph the plan must be for.
  const device::ChipDesc* device = nullptr;            ///< Device the plan must target.
  std::string_view planner_version = kPlannerVersion;  ///< Empty: any planner version.
  std::string_view policy;                             ///< Empty: any layout policy.
  std::optional<uint32_t> beam_width;  ///< Compared only when both sides use policy "beam".
  /// Mesh the plan must run on (shape and descriptor); a single-chip plan matches only a 1x1
  /// mesh. Null: not compared.
  const device::MeshDesc* mesh = nullptr;
};

/// Compares `plan`'s header with `query` field by field. Ok when everything asked for matches;
/// otherwise an `incompatible` error whose message lists every differing field, e.g.
/// "plan 'mlp': stale: planner 0.0.9 ≠ 0.1.0; device wormhole_b0 8×8 ≠ blackhole_p150 10×13".
/// Allocation-free when the plan matches.
Status check_plan_matches(const PlanRef& plan, const PlanQuery& query);

}  // namespace meshplan::runtime
