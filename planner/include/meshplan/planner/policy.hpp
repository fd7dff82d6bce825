// The layout planner's pipeline: a policy decides layouts and reshards on the original graph
// (LayoutDecision, layout_decision.hpp), moves are materialized as to_memory_config ops
// (LayoutResult), L1 spill management evicts under memory pressure, and the L1 memory planner
// proves the result fits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "meshplan/planner/candidates.hpp"
#include "meshplan/planner/layout.hpp"
#include "meshplan/planner/layout_decision.hpp"

namespace meshplan::planner {

/// Why an op is in the planned graph. Values match fb::OpOrigin.
enum class OpOrigin : uint8_t { graph = 0, reshard = 1, spill = 2 };

/// How a plan's L1 spills were chosen (spill_dp.hpp). Values match fb::SpillSelection.
enum class SpillSelection : uint8_t {
  belady = 0,          ///< manage_spills(): farthest next use (--spill=belady).
  dp_exact = 1,        ///< The DP's optimum over the spill choice space.
  dp_kept_belady = 2,  ///< The DP proved no choice of the space beats Belady's plan, kept.
  dp_fallback = 3,     ///< The DP hit a limit: Belady's plan, not proven optimal.
};

/// A planned graph: the original ops plus inserted moves, with layouts for every value and
/// configs for every op. Op order is the schedule.
struct LayoutResult {
  Graph graph;
  LayoutPlan layout;
  std::vector<OpOrigin> origin;  ///< By OpId of `graph`.
  uint32_t spills = 0;
  uint32_t reshards = 0;

  /// Ops whose result is in L1 (original ops only).
  uint32_t l1_outputs() const;
  /// Sum of OpModel::cost over the ops, in ns.
  uint64_t estimated_ns(const device::ChipDesc& chip) const;
  /// Deterministic dump: one line per op with its origin, config and result layout.
  std::string print() const;

  /// How the spills were chosen, and the states the DP created (0 under Belady).
  SpillSelection spill_selection = SpillSelection::belady;
  uint64_t spill_dp_states = 0;
  /// The mesh a mesh program is planned for (PlannerOptions::mesh): OpQuery costs its
  /// collectives there. Absent: each collective's default mesh.
  std::optional<device::MeshDesc> mesh;
  /// LayoutDecision::kept_configs by OpId of `graph` (inserted moves: false; empty: none).
  std::vector<bool> kept_configs;
  /// The policy's notes (LayoutDecision::notes).
  std::vector<std::string> notes;
};

/// Builds the planned graph from a decision (reshards become to_memory_config ops).
Result<LayoutResult> materialize(const Graph& graph, const LayoutDecision& decision);

/// L1 spill management (seed 002 §5.6.2): walks the schedule tracking live L1 tensors; when an
/// op's circular buffers plus the live L1 tensors exceed the usable L1 per core, evicts the
/// tensor whose next use is farthest (a result of the op itself, or a tensor not read since it was
/// produced, is written to DRAM directly by its producer; a tensor already read gets a
/// to_memory_config to DRAM before the op and later readers read the copy).
/// With `results_first` (policy l1-interleaved: "L1 where it fits") the op's own result goes to
/// DRAM before anything older is evicted.
Result<LayoutResult> manage_spills(LayoutResult planned, const device::ChipDesc& chip,
                                   bool results_first = false);

/// Final step of every policy: packs L1 (memory_plan.hpp) and, where packing fails, moves the
/// tensor to DRAM (counted as a spill) and packs again; then proves every op valid with OpModel.
Status fit_and_validate(LayoutResult& planned, const device::ChipDesc& chip);

/// Runs the policy named in options.policy, spill management and fitting.
Result<LayoutResult> plan_layout(const Graph& graph, const device::ChipDesc& chip,
                                 const PlannerOptions& options);

/// Where plan_layout_until() stops: after the policy's decision is materialized (moves inserted,
/// no spill management), after spill management (not yet packed or validated), or at the end
/// (what plan_layout() returns). df-sharding spills by itself: its `decided` and `spilled` agree.
enum class LayoutStage { decided, spilled, fitted };

/// plan_layout() stopped after `stop` (meshplan-compile --stop-after=layout|spills).
Result<LayoutResult> plan_layout_until(const Graph& graph, const device::ChipDesc& chip,
                                       const PlannerOptions& options, LayoutStage stop);

}  // namespace meshplan::planner
