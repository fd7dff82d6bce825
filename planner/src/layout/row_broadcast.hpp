// Which binary ops tt-metal's binary_ng refuses to run with a sharded operand or result: the
// ones that broadcast along a dim other than the last (docs/hardware-rules.md, "Broadcasting").
// The policies give such an op interleaved reads and an interleaved result, weighing a reshard
// of a sharded producer's result to L1 interleaved against the producer writing it interleaved.
#pragma once

#include <algorithm>

#include "meshplan/planner/graph.hpp"

namespace meshplan::planner {

/// Whether `op` is a binary eltwise op or comparison whose operands differ (numpy-aligned, the
/// missing leading dims counting as 1) in a dim other than the last. OpModel refuses such an op
/// with anything sharded unless ttnn takes its legacy program (a block-float operand): the
/// policies only use this to add interleaved options, so matching those too costs a few
/// evaluations, never a plan.
inline bool broadcasts_across_rows(const Graph& g, const Op& op) {
  if (op.operands.size() != 2 ||
      !(device::is_binary_eltwise(op.kind) || device::is_comparison(op.kind)))
    return false;
  const std::vector<int64_t>& a = g.values[op.operands[0]].shape;
  const std::vector<int64_t>& b = g.values[op.operands[1]].shape;
  size_t rank = std::max(a.size(), b.size());
  for (size_t i = 2; i <= rank; ++i) {
    int64_t da = i <= a.size() ? a[a.size() - i] : 1, db = i <= b.size() ? b[b.size() - i] : 1;
    if (da != db) return true;
  }
  return false;
}

}  // namespace meshplan::planner
