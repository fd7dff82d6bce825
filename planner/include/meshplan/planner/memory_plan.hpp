// Memory planning: an address for every tensor, found by replaying the schedule through the
// device's own bank allocators, so the runtime's allocations at those addresses must succeed.
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

/// Assigns addresses in schedule order: arguments first, then each op's results, freeing values
/// after their last use (Schedule::dying_at). Fails with resource_exhausted naming the tensor
/// that does not fit.
Result<MemoryPlan> plan_memory(const Graph& graph, const Schedule& schedule, const LayoutPlan& layout,
                               const device::ChipDesc& chip);

/// Replays the plan and proves that no two simultaneously live tensors of one memory overlap.
Status verify_memory(const Graph& graph, const Schedule& schedule, const LayoutPlan& layout,
                     const MemoryPlan& memory, const device::ChipDesc& chip);

}  // namespace meshplan::planner
