// Memory planning: DRAM addresses by replaying the schedule through the device's own bank
// allocator; L1 addresses by interval packing over lifetimes (largest first, best gap among
// tensors whose lifetimes overlap), tensors from the top of L1 down, each op's circular buffers
// from the unreserved base up. verify_memory() proves the runtime's allocations must succeed.
#pragma once

#include <string>
#include <vector>

#include "meshplan/planner/layout.hpp"

namespace meshplan::planner {

struct MemoryPlan {
  std::vector<uint64_t> address;         ///< By ValueId.
  std::vector<uint64_t> bytes_per_bank;  ///< By ValueId.
  std::vector<uint32_t> page_size;       ///< By ValueId.
  uint64_t dram_high_water = 0;
  uint64_t l1_high_water = 0;

  std::string print(const Graph& graph) const;
};

/// L1 interval packing of the L1 tensors of a planned graph.
struct L1Packing {
  std::vector<uint64_t> address;   ///< By ValueId; 0 for tensors not in L1 or not placed.
  std::vector<uint64_t> cb_bytes;  ///< Circular buffers per core, by schedule position.
  std::vector<ValueId> unplaced;   ///< L1 tensors that found no gap, in packing order.
  uint64_t high_water = 0;         ///< Bytes per core from the usable top to the lowest tensor.

  /// Deterministic dump: one line per placed tensor (by id) with lifetime, size and address.
  std::string print(const Graph& graph, const Schedule& schedule, const LayoutPlan& layout,
                    const device::ChipDesc& chip) const;
};

/// Packs every L1 tensor. A tensor lives from its producer's position (0 for arguments) to its
/// last use (the end for graph outputs); it may not go below the circular buffers of any op in
/// its lifetime. A conv2d with deallocate_activation frees its input inside the op, after its
/// halo step and before its result is allocated, so the two may share L1 (nothing else may);
/// the input must be in L1 and this conv its last use. Tensors are taken largest first; each
/// goes into the smallest gap, among the tensors already placed whose lifetimes overlap its own,
/// that holds it, else below them all.
/// Fails only on an op OpModel rejects or a deallocate_activation it may not honour (naming it).
Result<L1Packing> pack_l1(const Graph& graph, const Schedule& schedule, const LayoutPlan& layout,
                          const device::ChipDesc& chip);

/// Assigns addresses: L1 by pack_l1(), DRAM by replaying the schedule (arguments first, then
/// each op's results, freeing values after their last use). Fails with resource_exhausted
/// naming the tensor that does not fit.
Result<MemoryPlan> plan_memory(const Graph& graph, const Schedule& schedule,
                               const LayoutPlan& layout, const device::ChipDesc& chip);

/// Replays the plan and proves that no two simultaneously live tensors of one memory overlap and
/// that no op's circular buffers reach a live L1 tensor. A conv2d with deallocate_activation
/// frees its input between its halo step and its result's allocation: its result may overlap
/// that input and nothing else, and the circular buffers must clear the tensors of both steps.
Status verify_memory(const Graph& graph, const Schedule& schedule, const LayoutPlan& layout,
                     const MemoryPlan& memory, const device::ChipDesc& chip);

}  // namespace meshplan::planner
