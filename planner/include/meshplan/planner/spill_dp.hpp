// Exact L1 spill selection (seed 002 §5.8.2): dynamic programming over the schedule whose state is
// the set of live tensors still in L1, with branch-and-bound against Belady's plan, as an
// alternative to manage_spills()' farthest-next-use (Belady) eviction. Selected with
// PlannerOptions::spill = "dp" (meshplan-compile --spill=dp) for greedy, beam and l1-interleaved
// (whose "results first" rule it does not keep: it minimises the simulated time over the whole
// choice space). The cost it minimises is the one the plan pays: OpModel::cost of every op and of
// every spill move, and every op, the moves included, must fit its circular buffers plus the L1
// tensors live at its position. fit_and_validate() then packs the result as for Belady.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "meshplan/planner/policy.hpp"

namespace meshplan::planner {

/// What happens to one L1 tensor of the planned graph (the spill choice space). Its reads are the
/// positions of the ops that read it, ascending (a graph output also counts as a read at the end).
/// `l1_reads` per tensor: -1: its producer writes DRAM directly (not for arguments); k in
/// 0..reads-1: a to_memory_config to DRAM follows its k-th reading op (k = 0: right after it is
/// produced; an argument: before the first op) and later readers read the copy; k = reads: it
/// stays in L1 for its whole life. Moves after one op run in ascending tensor id. There are no
/// reloads (DRAM back to L1) in this space.
struct SpillChoice {
  std::vector<ValueId> tensors;   ///< The L1 tensors of the planned graph, ascending.
  std::vector<uint32_t> reads;    ///< Number of reads per tensor.
  std::vector<int32_t> l1_reads;  ///< The choice per tensor.
};

/// The L1 tensors of `planned` and their read counts, every one kept (l1_reads = reads).
SpillChoice spill_choice_space(const LayoutResult& planned);

/// Applies a choice: demotes, inserts the moves and rewires later readers. Spills counted as
/// manage_spills() counts them (one per demoted or moved tensor).
Result<LayoutResult> apply_spill_choice(const LayoutResult& planned, const SpillChoice& choice,
                                        const device::ChipDesc& chip);

/// The fit rule the DP optimises under: at every op of `planned` (spill and reshard moves
/// included), its circular buffers plus the L1 tensors live there (its operands and its result
/// included) fit the usable L1 per core. The error names the first op that does not fit and the
/// bytes it needs.
Status check_spill_fit(const LayoutResult& planned, const device::ChipDesc& chip);

/// Bounds on the DP's work, and the Belady variant it starts from.
struct SpillDpOptions {
  uint32_t max_live = 256;            ///< L1 tensors live at once (the state's bit width, <= 256).
  uint32_t max_readers = 16;          ///< Distinct L1 tensors one op reads (2^k eviction subsets).
  uint64_t max_states = 1u << 20;     ///< DP states over the whole schedule (~24 B each).
  bool belady_results_first = false;  ///< manage_spills()' results_first for the bound.
  bool keep_belady = false;           ///< Hand Belady's plan back in SpillDpStats::belady_plan.
};

/// Statistics of the last DP run, for tests, the bench and the plan metrics.
struct SpillDpStats {
  uint64_t cost_ns = 0;     ///< Simulated time of the returned plan (OpModel::cost, moves too).
  uint64_t belady_ns = 0;   ///< Belady's plan, the initial bound (0 if it breaks the fit rule).
  uint64_t states = 0;      ///< DP states created over the schedule.
  uint64_t max_states = 0;  ///< Most DP states alive at one position.
  uint64_t pruned = 0;      ///< States cut by the bound (cost so far + lower bound > Belady's).
  /// How the returned plan was chosen (SpillSelection): dp_exact (the DP's optimum over the
  /// space), dp_kept_belady (the DP proved no choice of the space beats Belady's plan, which is
  /// returned) or dp_fallback (limits exceeded or nothing in the space fits: Belady's plan, not
  /// proven optimal; `reason` says why).
  SpillSelection selection = SpillSelection::dp_exact;
  std::string reason;
  /// Belady's plan as the DP computed it (SpillDpOptions::keep_belady; empty when it failed).
  std::optional<LayoutResult> belady_plan;
  bool exact() const { return selection != SpillSelection::dp_fallback; }
};

/// DP spill selection: among all choices of the space above that satisfy check_spill_fit(), one
/// with the least simulated time (ties: fewer spills), or Belady's plan when that is at least as
/// cheap and satisfies the rule too. Never more simulated time than manage_spills() when
/// Belady's plan satisfies the rule. Falls back to manage_spills() (selection = dp_fallback) past
/// the limits in `options`. The result carries the selection and the state count
/// (LayoutResult::spill_*).
Result<LayoutResult> manage_spills_dp(const LayoutResult& planned, const device::ChipDesc& chip,
                                      SpillDpStats* stats = nullptr, SpillDpOptions options = {});

}  // namespace meshplan::planner
