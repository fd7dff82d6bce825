// Per-chip layout decisions: where each tensor lives and which config runs each op. Policies
// fill a LayoutPlan; the memory planner then gives every tensor an address.
#pragma once

#include <string>
#include <vector>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/types.hpp"
#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/schedule.hpp"

namespace meshplan::planner {

/// Where one tensor lives (addresses come later, from the memory planner).
struct TensorLayout {
  device::DType dtype = device::DType::bf16;
  device::TileLayout layout = device::TileLayout::tile;
  device::BufferType buffer = device::BufferType::dram;
  device::MemLayout memory = device::MemLayout::interleaved;
};

/// The policy's decisions, indexed by ValueId and OpId.
struct LayoutPlan {
  std::vector<TensorLayout> tensors;
  std::vector<device::OpConfig> configs;

  std::string print(const Graph& graph) const;
};

/// Names of the layout policies.
std::vector<std::string_view> policy_names();

/// Runs the policy named in `options` over the graph.
Result<LayoutPlan> run_layout_policy(const Graph& graph, const Schedule& schedule, const device::ChipDesc& chip,
                                     const PlannerOptions& options);

}  // namespace meshplan::planner
