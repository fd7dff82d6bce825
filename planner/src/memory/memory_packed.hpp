// The memory plan on an L1 packing computed before (fit_and_validate's last one, when nothing
// changed the graph, schedule or layouts since): the packing validated every op and kept its
// circular buffers, so neither is repeated.
#pragma once

#include "meshplan/planner/memory_plan.hpp"

namespace meshplan::planner {

/// plan_memory() with `packing` = pack_l1(graph, schedule, layout, chip).
Result<MemoryPlan> plan_memory_packed(const Graph& graph, const Schedule& schedule,
                                      const LayoutPlan& layout, const device::ChipDesc& chip,
                                      const L1Packing& packing);

/// verify_memory() with the circular buffers per schedule position that OpModel gave for these
/// layouts and configs (L1Packing::cb_bytes): every op was validated when they were computed.
Status verify_memory_packed(const Graph& graph, const Schedule& schedule, const LayoutPlan& layout,
                            const MemoryPlan& memory, const device::ChipDesc& chip,
                            const std::vector<uint64_t>& cb_bytes);

}  // namespace meshplan::planner
