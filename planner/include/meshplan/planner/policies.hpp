// The layout policies (seed 002 §5, seeds 000/001): each turns the original graph into a
// LayoutDecision using OpModel as the only judge of legality and cost.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "meshplan/planner/layout_decision.hpp"

namespace meshplan::planner {

struct LayoutResult;  // policy.hpp

/// One op's override-output-layout, resolved to the result layouts it allows.
struct OutputOverride {
  std::string entry;                        ///< As written ("op=l1:block_sharded:8x8:tile").
  std::optional<device::MemLayout> memory;  ///< The tensor memory layout it names, if any.
  /// Every layout meshplan can give the result that matches the override, best first (the
  /// candidate order of layout_candidates, uncapped). Never empty.
  std::vector<TensorLayout> layouts;

  /// `layouts` for a policy: a policy without sharding (dram, l1-interleaved) keeps the
  /// interleaved ones unless the override names a memory layout or allows only sharded ones.
  std::vector<TensorLayout> allowed(bool sharded_policy) const;
};

/// User overrides (tt-mlir's override-output-layout and insert-memreconfig), resolved to ops.
struct Overrides {
  std::map<OpId, OutputOverride> output;  ///< By OpId: the layouts its result may take.
  struct Move {
    OpId op;
    uint32_t operand;
    device::BufferType to;
  };
  std::vector<Move> moves;  ///< Forced moves before an op's operand.

  /// The override of op `o`, or null.
  const OutputOverride* output_for(OpId o) const;
  bool empty() const { return moves.empty() && output.empty(); }
};

/// Parses PlannerOptions::output_overrides in tt-mlir's override-output-layout syntax
/// ("op=param:param:...", comma-separated lists allowed; params in any order, each kind once: a
/// grid RxC, l1|dram, interleaved|height_sharded|width_sharded|block_sharded, tile|row_major, a
/// data type) and memreconfig ("op:operand=l1|dram"). Errors name the entry and the unknown op,
/// operand or parameter, a grid no layout of the result has on `chip`, or a data type other
/// than the result's.
Result<Overrides> parse_overrides(const Graph& graph, const device::ChipDesc& chip,
                                  const PlannerOptions& options);

/// Applies tt-mlir's override-conv2d-config lists
/// ("conv1=act_block_h_override#64:act_block_w_div#2, conv2=shard_layout#height_sharded") to `g`'s
/// conv2d ops: act_block_h_override (rows, a multiple of 32; 0 leaves the planner's choice) and
/// act_block_w_div become the op's act_block_h (tiles) and act_block_w_div attributes, so every
/// policy plans the op with that blocking; shard_layout#X appends "op=l1:X" to `output_overrides`;
/// deallocate_activation#true|false becomes the op's deallocate_activation attribute (every policy
/// plans with it; df-sharding's own choice yields to it). activation and output_layout are
/// accepted only when they state what meshplan does (the graph's activation, tile); other tt-mlir
/// parameters are refused as not modelled. Errors name the entry and the op, parameter or value.
Status apply_conv2d_config_overrides(Graph& g, std::span<const std::string> lists,
                                     std::vector<std::string>& output_overrides);

/// Fails, naming the override and the layout the result got, when a planned op's result (by name,
/// ops of `r.graph` that came from `original`) is outside its override's layouts (spill
/// management moved it to DRAM).
Status check_overrides_held(const Graph& original, const Overrides& overrides,
                            const LayoutResult& r);

/// Applies output overrides and forced moves to a decision in op order (operand layouts as the
/// decision has them): each overridden result takes its cheapest allowed layout OpModel accepts
/// (`sharded_policy` as in OutputOverride::allowed); an override OpModel rejects in every
/// allowed layout fails with OpModel's reason.
Status apply_overrides(const Graph& graph, const device::ChipDesc& chip, const Overrides& overrides,
                       LayoutDecision& d, bool sharded_policy = false);

/// Greedy layout propagation over all operands in schedule order (K = 1): per op the first valid
/// result among L1 sharded (most cores first; only when `sharded`), L1 interleaved, DRAM, given
/// the operands' chosen layouts; if none is valid, reshards an operand and tries again.
/// `l1-interleaved` is this with sharded = false; `greedy` with sharded = true.
Result<LayoutDecision> greedy_propagation(const Graph& graph, const device::ChipDesc& chip,
                                          const PlannerOptions& options, const Overrides& overrides,
                                          bool sharded);

/// Greedy's repair pass over a decision's sharded L1 results (greedy.cpp): a result tries L1
/// interleaved, a same-shape reader's layout, or the target its own reshards move it to (dropping
/// them), kept when the ops it touches cost less. Run by `greedy` and on beam's decision.
void repair_readers(const Graph& graph, const device::ChipDesc& chip,
                    const PlannerOptions& options, const Overrides& overrides, LayoutDecision& d);

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
