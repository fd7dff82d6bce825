// Planning entry points only tests use, defined in meshplan_testing (planner/testing/), which only
// the test suites link:
// the exhaustive search, the optimum the beam search is measured against, and run_layout_policy,
// a policy's layout of a graph that gets no moves inserted.
#pragma once

#include <cstdint>

#include "meshplan/planner/layout.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/policy.hpp"

namespace meshplan::planner {

/// Exhaustive search (graphs of at most `max_ops` ops) over every combination of valid result
/// layouts, per-operand reshards to a candidate layout of the value read, and spills of live L1
/// values to DRAM before any op: the plan with the least simulated time whose L1 tensors all
/// pack. Candidates are layout_candidates() capped at options.max_legal_layouts. `bounded`
/// false turns off the lower bound that cuts branches (the reference the bound is tested
/// against; exponential). Fails with invalid_argument on larger graphs.
struct SearchResult {
  /// Result layouts, configs and reshards (its `spills` are empty: the plan's spills are at
  /// points a LayoutDecision cannot name).
  LayoutDecision decision;
  /// The complete plan, spills included.
  LayoutResult plan;
  uint64_t estimated_ns = 0;
  uint64_t plans_tried = 0;
};
Result<SearchResult> exhaustive_search(const Graph& graph, const device::ChipDesc& chip,
                                       const PlannerOptions& options, int max_ops = 10,
                                       bool bounded = true);

/// Runs the policy named in `options` over the graph when it inserts no moves (see
/// plan_layout() in policy.hpp for the general case, which returns the planned graph). The
/// `dram` policy without overrides puts every tensor in DRAM, interleaved and tiled, in its
/// value's dtype (bf16 for bf8b), and every op on the full grid.
Result<LayoutPlan> run_layout_policy(const Graph& graph, const Schedule& schedule,
                                     const device::ChipDesc& chip, const PlannerOptions& options);

}  // namespace meshplan::planner
