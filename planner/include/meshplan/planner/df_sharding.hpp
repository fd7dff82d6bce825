// DFShardingPolicy (seeds 001 §3.2-3.3, §4.1): the `df-sharding` baseline. L1 chains along
// operand 0 of single-use ops in schedule (DFS) order, each resolved by a ShardSolver; a chain
// whose solver fails falls back to DRAM entirely; chain outputs spill to DRAM unless kept in L1
// by a concat (N-way) merge, a fork L1 reservation or an A->B / 3-way chain merge, validated
// against the L1 reservation timeline; then ops left in DRAM whose only reader runs next fall back
// to an L1-interleaved result.
#pragma once

#include <algorithm>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "meshplan/planner/policies.hpp"

namespace meshplan::planner {

/// The judge the policy asks. The real one (make_opmodel_checker) asks device::OpModel; tests may
/// substitute a synthetic compatibility function, as tt-mlir's ShardSolver tests do.
class ShardChecker {
 public:
  virtual ~ShardChecker() = default;
  /// Legal sharded result layouts of `op`, best first (the precomputed pool, bounded).
  virtual std::vector<TensorLayout> legal_configs(OpId op) const = 0;
  /// Whether sharded `layout` is a legal config of `op` by legal_configs()'s test (for layouts
  /// an override names that the bounded pool may not hold). By default: whether the pool has it.
  virtual bool legal_config(OpId op, const TensorLayout& layout) const {
    auto pool = legal_configs(op);
    return std::find(pool.begin(), pool.end(), layout) != pool.end();
  }
  /// Is `op` valid with result `out` and operand `operand` in `in` (other operands as decided)?
  virtual bool valid(OpId op, uint32_t operand, const TensorLayout& in,
                     const TensorLayout& out) const = 0;
  /// Is `op` valid with operands `in` and result `out`? Also reports its L1 need per core.
  virtual bool valid_all(OpId op, const std::vector<TensorLayout>& in, const TensorLayout& out,
                         uint64_t* l1_bytes) const = 0;
  /// The op-specific configs of `op` with sharded result `layout`, in the search space's order
  /// (tt-mlir's LegalOpConfigAnalysis): a matmul's program derived from the layout, a conv2d's
  /// block heights. Each is a config of its own in the solver. Empty (the default): the op has
  /// none, or the graph fixed them; it is validated with its attribute config.
  virtual std::vector<device::OpConfig> op_configs(OpId op, const TensorLayout& layout) const {
    (void)op;
    (void)layout;
    return {};
  }
  /// valid() with op config `config` (an op_configs() entry) instead of the attribute config.
  virtual bool valid_config(OpId op, uint32_t operand, const TensorLayout& in,
                            const TensorLayout& out, const device::OpConfig& config) const {
    (void)config;
    return valid(op, operand, in, out);
  }
  /// valid_all() with op config `config`.
  virtual bool valid_all_config(OpId op, const std::vector<TensorLayout>& in,
                                const TensorLayout& out, const device::OpConfig& config,
                                uint64_t* l1_bytes) const {
    (void)config;
    return valid_all(op, in, out, l1_bytes);
  }
  /// Reshard targets for `value` (sharded layouts) and whether moving `from` -> `to` is valid.
  virtual std::vector<TensorLayout> reshard_targets(ValueId value) const = 0;
  virtual bool move_valid(ValueId value, const TensorLayout& from,
                          const TensorLayout& to) const = 0;
};

/// Chain states (seed 001 §3.2.4).
enum class ChainState { in_build, built, resolved, failed, completed };
std::string_view chain_state_name(ChainState s);

/// Where a completed chain's output goes.
enum class SpillLocation { dram, l1_interleaved, none };

struct L1Chain {
  std::vector<OpId> ops;
  ChainState state = ChainState::in_build;
  SpillLocation spill = SpillLocation::dram;
  std::vector<TensorLayout> layouts;  ///< Selected result layout per op (completed chains).
  /// The op-specific config selected with each layout (ShardChecker::op_configs), if any.
  std::vector<std::optional<device::OpConfig>> op_configs;
  /// A concat isolated in its own chain (seed 001 §4.1.6), resolved after the regular chains.
  bool concat = false;
  /// Output memory layout a neighbouring concat needs (setConcatChainPreferences): the solver
  /// picks among the last op's configs of this layout when it has any.
  std::optional<device::MemLayout> preferred;
  /// A failed chain: the edge (or entry, or op) the solver found no valid path for, by op names.
  std::string failure;
  /// The solver's bitsets and paths after the last solve (run_df_sharding with record_solver).
  std::string solver;
};

/// A reservation of L1 for a tensor kept past its chain: [first, last] schedule positions.
struct L1Reservation {
  ValueId value;
  int first, last;
  uint64_t bytes;
};

/// The policy's full state after run(): chains, reservations and the decision.
struct DfShardingResult {
  std::vector<L1Chain> chains;
  std::vector<L1Reservation> reservations;
  /// Results of ops outside chains moved from DRAM to L1 interleaved (the L1-interleaved
  /// fallback), in schedule order.
  std::vector<ValueId> l1_fallbacks;
  LayoutDecision decision;
  /// Deterministic dump: one line per chain (ops, state, spill), per reservation and per
  /// L1-interleaved fallback.
  std::string print(const Graph& graph) const;
  /// print() with, per regular chain, its configs per op (layouts), the solver's bitsets and
  /// paths (when recorded) and a failed chain's edge (meshplan-compile --dump-solver).
  std::string print_solver(const Graph& graph) const;
  /// The memreconfig moves the solver did not take (not on operand 0 of an op in a completed
  /// chain): df_sharding() applies them to the decision.
  std::vector<Overrides::Move> moves_after;
  /// Legal sharded configs per op (the solver's config indices), by OpId: the result layout of
  /// each, and its op-specific config (op_configs, same indices) when the op has them.
  std::vector<std::vector<TensorLayout>> configs;
  std::vector<std::vector<std::optional<device::OpConfig>>> op_configs;
};

/// Runs DFShardingPolicy with `checker`. `record_solver` keeps each chain's solver dump.
/// Output overrides in `options` constrain the solver as tt-mlir's legal-layout analysis does: an
/// overridden op's configs are the sharded layouts its override allows (none: it joins no
/// chain); an op whose override allows no sharded layout takes its first allowed interleaved
/// layout OpModel accepts before chains are solved. An override the policy cannot hold (its
/// chain failed, or no allowed layout is valid) fails naming the op and the reason.
Result<DfShardingResult> run_df_sharding(const Graph& graph, const device::ChipDesc& chip,
                                         const PlannerOptions& options, const ShardChecker& checker,
                                         bool record_solver = false);

/// The legacy pipeline's DFS schedule (seed 001 §3.2.2): repeatedly the first ready op (all
/// operands defined, in graph order) that reads the previously scheduled op's result as its
/// operand 0, else the first ready op. A topological order of `graph`'s ops.
std::vector<OpId> dfs_schedule(const Graph& graph);

/// `graph` with its ops in dfs_schedule() order (producers renumbered; values unchanged).
/// plan_layout() hands df-sharding this graph, so its chains, reservations and the plan's
/// execution order are the DFS schedule.
Graph dfs_ordered(const Graph& graph);

/// tt-mlir's deallocate_activation on the planned graph (the legacy pipeline's conv2d config
/// search space sets it, and a conv whose input has other users gets it cleared): a conv2d whose
/// input (operand 0) is in L1, produced by an op (no program argument), read by this conv alone
/// and no program output frees it after its halo step, when OpModel accepts the conv with the
/// halo buffer that adds. A conv whose graph attribute states deallocate_activation
/// (--override-conv2d-config) keeps that value.
void set_deallocate_activation(LayoutResult& result, const device::ChipDesc& chip);

/// The OpModel-backed checker.
std::unique_ptr<ShardChecker> make_opmodel_checker(const Graph& graph, const device::ChipDesc& chip,
                                                   const PlannerOptions& options);

}  // namespace meshplan::planner
