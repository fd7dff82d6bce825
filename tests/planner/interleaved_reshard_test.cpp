// When an op refuses every layout its producer offers, greedy and beam read that operand through
// a reshard the op accepts, at the least to an interleaved layout (L1 or DRAM), which every
// interleaved program reads. The case: a softmax over the last dim of a [64, 256] bf16 value
// (2 x 8 tiles) that an override fixes as block-sharded on 2 x 4 cores, shards of 32 x 64. A
// sharded softmax needs whole rows per shard (tt-metal: "shard width must equal to input tensor
// shape[3]"), so 64 of 256 columns is refused with any result layout.
#include <doctest/doctest.h>

#include "graphs.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/policy.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

planner::Graph block_then_softmax() {
  GraphBuilder b("block_then_softmax");
  auto x = b.input("x", {64, 256});
  auto r = b.relu("r", x);
  b.output(b.op(device::OpKind::softmax, "s", {r}, {planner::Attribute{"dim", int64_t{-1}}}));
  return b.finish();
}

/// The layout the softmax reads: its operand's value in the planned graph (a reshard's result
/// when one was inserted before it).
const planner::TensorLayout& softmax_reads(const planner::LayoutResult& r, bool& resharded) {
  for (planner::OpId o = 0; o < r.graph.ops.size(); ++o) {
    if (r.graph.ops[o].name != "s") continue;
    planner::ValueId v = r.graph.ops[o].operands[0];
    planner::OpId p = r.graph.values[v].producer;
    resharded = p != planner::kNoOp && r.origin[p] == planner::OpOrigin::reshard;
    return r.layout.tensors[v];
  }
  FAIL("no softmax");
  static planner::TensorLayout none;
  return none;
}

}  // namespace

TEST_CASE("greedy and beam reshard an operand its consumer refuses in every offered layout") {
  const std::vector<std::string> block = {"r=l1:block_sharded:2x4:tile:bf16"};
  for (uint32_t width : {1u, 4u}) {
    for (std::string policy : {"greedy", "beam"}) {
      CAPTURE(policy);
      CAPTURE(width);
      planner::PlannerOptions o = planner::PlannerOptions::with_policy(policy);
      o.beam_width = width;
      o.output_overrides = block;
      auto r = planner::plan_layout(block_then_softmax(), device::wormhole_b0(), o);
      REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
      bool resharded = false;
      const planner::TensorLayout& reads = softmax_reads(*r, resharded);
      CHECK(resharded);
      // Whole rows: interleaved, or shards 256 columns wide (height sharding on 2 cores).
      CHECK((reads.memory == device::MemLayout::interleaved || reads.shard.shape[1] == 256));
      run_e2e(block_then_softmax(), device::wormhole_b0(), o);
    }
  }
}

TEST_CASE("beam at width 1 takes the interleaved reshard when its explored reshards fail") {
  // Beam explores the pool's first two valid reshard targets from the 2x4 block: the 2x8 block
  // (16 cores, shards 32 x 32) and width sharding on 8 cores (64 x 32); the softmax refuses
  // both, so only the interleaved fallback plans it: L1 interleaved, the pool's first
  // interleaved layout, read by the interleaved softmax.
  planner::PlannerOptions o = planner::PlannerOptions::with_policy("beam");
  o.beam_width = 1;
  o.output_overrides = {"r=l1:block_sharded:2x4:tile:bf16"};
  auto r = planner::plan_layout(block_then_softmax(), device::wormhole_b0(), o);
  REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
  bool resharded = false;
  const planner::TensorLayout& reads = softmax_reads(*r, resharded);
  CHECK(resharded);
  CHECK(reads.memory == device::MemLayout::interleaved);
  CHECK(reads.buffer == device::BufferType::l1);
}
