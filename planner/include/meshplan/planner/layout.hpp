// Per-chip layout decisions: where each tensor lives and which config runs each op. Policies
// fill a LayoutPlan; the memory planner then gives every tensor an address.
#pragma once

#include <string>
#include <vector>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/placement.hpp"
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
  device::ShardSpec shard;  ///< Sharded layouts only.

  bool in_l1() const { return buffer == device::BufferType::l1; }
  friend bool operator==(const TensorLayout& a, const TensorLayout& b) {
    return a.dtype == b.dtype && a.layout == b.layout && a.buffer == b.buffer &&
           a.memory == b.memory &&
           (a.memory == device::MemLayout::interleaved || a.shard == b.shard);
  }
};

/// The policy's decisions, indexed by ValueId and OpId.
struct LayoutPlan {
  std::vector<TensorLayout> tensors;
  std::vector<device::OpConfig> configs;

  std::string print(const Graph& graph) const;
};

/// Names of the layout policies.
std::vector<std::string_view> policy_names();

}  // namespace meshplan::planner
