// A policy's answer on the original graph (LayoutDecision): what greedy, beam and df-sharding
// return and policy.cpp materializes. Apart from policy.hpp so that df_sharding.hpp and the
// policies name the decision without the pipeline that runs them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "meshplan/planner/candidates.hpp"
#include "meshplan/planner/layout.hpp"

namespace meshplan::planner {

/// A policy's answer on the original graph (indexed by its ValueId and OpId).
struct LayoutDecision {
  /// A to_memory_config inserted before op `before`, feeding its operand `operand` with `to`.
  struct Reshard {
    OpId before;
    uint32_t operand;
    TensorLayout to;
  };
  std::vector<TensorLayout> tensors;
  std::vector<device::OpConfig> configs;
  std::vector<Reshard> reshards;
  /// Values moved to DRAM right after their producer (df-sharding's chain-output spills); every
  /// later reader, and the graph output, reads the copy.
  std::vector<ValueId> spills;
  /// Ops (by OpId; empty: none) whose op-specific config (matmul program, conv2d blocks) the
  /// policy chose in its own search (df-sharding's solver): fitting keeps it instead of choosing
  /// again, as long as the op's result keeps its layout.
  std::vector<bool> kept_configs;
  /// What the policy tells the user about its plan (a bound it hit, in op order); not in the plan.
  std::vector<std::string> notes;

  /// Every value DRAM interleaved, every op on the full grid with its attribute config.
  static Result<LayoutDecision> all_dram(const Graph& graph, const device::ChipDesc& chip);
};

}  // namespace meshplan::planner
