// The layout policies (seed 002 §5, seeds 000/001): each turns the original graph into a
// LayoutDecision using OpModel as the only judge of legality and cost.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "meshplan/planner/policy.hpp"

namespace meshplan::planner {

/// User overrides (tt-mlir's override-output-layout and insert-memreconfig), resolved to ops.
struct Overrides {
  std::vector<std::optional<device::BufferType>> output;  ///< By OpId: a fixed result memory.
  struct Move {
    OpId op;
    uint32_t operand;
    device::BufferType to;
  };
  std::vector<Move> moves;  ///< Forced moves before an op's operand.

  bool empty() const {
    return moves.empty() &&
           std::none_of(output.begin(), output.end(), [](auto& o) { return o.has_value(); });
  }
};

/// Parses PlannerOptions::output_overrides ("op=l1|dram") and memreconfig ("op:operand=l1|dram");
/// errors name the unknown op, operand or memory.
Result<Overrides> parse_overrides(const Graph& graph, const PlannerOptions& options);

/// Applies overrides to a decision in op order (operand layouts as the decision has them);
/// an override OpModel rejects fails with OpModel's reason.
Status apply_overrides(const Graph& graph, const device::ChipDesc& chip, const Overrides& overrides,
                       LayoutDecision& d);

/// Greedy layout propagation over all operands in schedule order (K = 1): per op the first valid
/// result among L1 sharded (most cores first; only when `sharded`), L1 interleaved, DRAM, given
/// the operands' chosen layouts; if none is valid, reshards an operand and tries again.
/// `l1-interleaved` is this with sharded = false; `greedy` with sharded = true.
Result<LayoutDecision> greedy_propagation(const Graph& graph, const device::ChipDesc& chip,
                                          const PlannerOptions& options, const Overrides& overrides,
                                          bool sharded);

/// The work beam_search() did (deterministic counts, for tests and reports).
struct BeamStats {
  uint64_t evaluations = 0;         ///< OpModel timing queries (combination x result layout).
  uint64_t combinations = 0;        ///< Operand-option combinations scored.
  uint64_t max_op_evaluations = 0;  ///< The most one op took.
  uint64_t max_op_combinations = 0;
  uint32_t ops_bounded = 0;   ///< Ops whose combinations were cut to the bound.
  uint32_t ops_degraded = 0;  ///< Ops planned greedily past options.beam_max_evaluations.
};

/// Beam search (seed 002 §5.8.1): K candidates per op with back-pointers, K x K operand pairs for
/// binary ops (options.beam_max_combinations for any arity), bounded reshard exploration, fork
/// resolution at trace-back. Scored by OpModel::cost (options.beam_cost_mode) or by bottleneck
/// cores then reshard count. An op needing more than options.beam_max_evaluations is planned
/// greedily and named in the decision's notes. `stats`, when given, receives the work done.
Result<LayoutDecision> beam_search(const Graph& graph, const device::ChipDesc& chip,
                                   const PlannerOptions& options, const Overrides& overrides,
                                   BeamStats* stats = nullptr);

/// DFShardingPolicy with ShardSolver (seeds 000, 001): the `df-sharding` baseline.
Result<LayoutDecision> df_sharding(const Graph& graph, const device::ChipDesc& chip,
                                   const PlannerOptions& options, const Overrides& overrides);

}  // namespace meshplan::planner
