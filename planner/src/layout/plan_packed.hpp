// plan_layout() for compile(): the fitted plan with the L1 packing fit_and_validate() made of it
// last, so that the memory plan need not pack (and validate every op) again.
#pragma once

#include "meshplan/planner/memory_plan.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/schedule.hpp"

namespace meshplan::planner {

/// plan_layout(); `packing` receives pack_l1() of the returned plan on `schedule`, which
/// receives Schedule::build() of its graph.
Result<LayoutResult> plan_layout_packed(const Graph& graph, const device::ChipDesc& chip,
                                        const PlannerOptions& options, L1Packing& packing,
                                        Schedule& schedule);

}  // namespace meshplan::planner
