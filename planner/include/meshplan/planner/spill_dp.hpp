// Optimal L1 spill selection (seed 002 §5.8.2): dynamic programming over the schedule whose state
// is the set of live tensors still in L1, as an alternative to manage_spills()' farthest-next-use
// (Belady) eviction. Selected with PlannerOptions::spill = "dp" (meshplan-compile --spill=dp) for
// greedy, beam and l1-interleaved (whose "results first" rule it does not keep: it minimises the
// simulated time over the whole choice space). Move ops' own circular buffers are not counted,
// as manage_spills() does not count them; fit_and_validate() packs the result as for Belady.
#pragma once

#include <cstdint>
#include <vector>

#include "meshplan/planner/policy.hpp"

namespace meshplan::planner {

/// What happens to one L1 tensor of the planned graph (the spill choice space). Its reads are the
/// positions of the ops that read it, ascending (a graph output also counts as a read at the end).
/// `l1_reads` per tensor: -1: its producer writes DRAM directly (not for arguments); k in
/// 0..reads-1: a to_memory_config to DRAM follows its k-th reading op (k = 0: right after it is
/// produced; an argument: before the first op) and later readers read the copy; k = reads: it
/// stays in L1 for its whole life.
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

/// Statistics of the last DP run, for tests and the bench.
struct SpillDpStats {
  uint64_t cost_ns = 0;     ///< Simulated time of the chosen plan (OpModel::cost of every op).
  uint64_t max_states = 0;  ///< Most DP states alive at one position.
  bool exact = true;        ///< False when the live set exceeded the DP's limit (Belady used).
};

/// DP spill selection: among all choices of the space above, the one with the least simulated
/// time whose circular buffers plus live L1 tensors fit the usable L1 at every op. Falls back to
/// manage_spills() (and reports exact = false) when more than `max_live` L1 tensors are live at
/// once, or when no choice fits.
Result<LayoutResult> manage_spills_dp(const LayoutResult& planned, const device::ChipDesc& chip,
                                      SpillDpStats* stats = nullptr, uint32_t max_live = 20);

}  // namespace meshplan::planner
