// tt-mlir's override-output-layout syntax (op=l1:block_sharded:2x4:tile:bf16) resolved to layouts,
// and every policy planning within it. Expected layouts are worked out from the shapes: a
// [64, 256] bf16 value is 2 x 8 tiles; tt-mlir writes block grids rows x columns, height
// sharding N x 1 and width sharding 1 x N.
#include <doctest/doctest.h>

#include "graphs.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/policy.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

Result<planner::Overrides> parse(const planner::Graph& g, std::vector<std::string> overrides) {
  planner::PlannerOptions o;
  o.output_overrides = std::move(overrides);
  return planner::parse_overrides(g, device::wormhole_b0(), o);
}

struct Shard {
  device::MemLayout memory;
  int cols, rows;  // cores along x and y
  int64_t shard_h, shard_w;
};

bool is(const planner::TensorLayout& t, const Shard& s) {
  return t.buffer == device::BufferType::l1 && t.memory == s.memory && t.shard.grid.x0 == 0 &&
         t.shard.grid.y0 == 0 && t.shard.grid.x1 + 1 == s.cols && t.shard.grid.y1 + 1 == s.rows &&
         t.shard.shape[0] == s.shard_h && t.shard.shape[1] == s.shard_w;
}

const planner::TensorLayout& result_of(const planner::LayoutResult& r, std::string_view op) {
  for (planner::OpId o = 0; o < r.graph.ops.size(); ++o)
    if (r.graph.ops[o].name == op) return r.layout.tensors[r.graph.ops[o].results[0]];
  FAIL("no op ", op);
  static planner::TensorLayout none;
  return none;
}

}  // namespace

TEST_CASE("override-output-layout parameters resolve to the layouts they name") {
  planner::Graph g = residual_graph();
  planner::OpId act = 1;  // act_a0: relu of a [64, 256] matmul result
  REQUIRE(g.ops[act].name == "act_a0");

  auto ov = parse(g, {"act_a0=l1:block_sharded:2x4:tile:bf16"});
  REQUIRE_MESSAGE(ov, (ov ? std::string() : ov.error().message));
  const planner::OutputOverride* w = ov->output_for(act);
  REQUIRE(w);
  REQUIRE(w->layouts.size() == 1);
  // 2 rows x 4 columns of cores: shards of 64/2 rows x 256/4 columns.
  CHECK(is(w->layouts[0], {device::MemLayout::block_sharded, 4, 2, 32, 64}));
  CHECK(ov->output_for(0) == nullptr);

  // Parameters in any order; height sharding is N x 1 (2 tile rows: only 2 cores).
  ov = parse(g, {"act_a0=2x1:height_sharded:l1"});
  REQUIRE(ov);
  REQUIRE(ov->output_for(act)->layouts.size() == 1);
  CHECK(ov->output_for(act)->layouts[0].memory == device::MemLayout::height_sharded);
  CHECK(ov->output_for(act)->layouts[0].shard.shape[0] == 32);
  CHECK(ov->output_for(act)->layouts[0].shard.shape[1] == 256);

  // A partial override: width sharding on 8, 4 or 2 cores (the divisors of 8 tile columns).
  ov = parse(g, {"act_a0=width_sharded"});
  REQUIRE(ov);
  const auto& width = ov->output_for(act)->layouts;
  REQUIRE(width.size() == 3);
  CHECK(width[0].shard.shape[1] == 32);
  CHECK(width[1].shard.shape[1] == 64);
  CHECK(width[2].shard.shape[1] == 128);

  // l1: height (2 cores), width (8, 4, 2), block (2x8, 2x4, 2x2) and L1 interleaved.
  ov = parse(g, {"act_a0=l1"});
  REQUIRE(ov);
  CHECK(ov->output_for(act)->layouts.size() == 8);
  CHECK(ov->output_for(act)->allowed(false).size() == 1);  // dram/l1-interleaved: interleaved
  CHECK(ov->output_for(act)->allowed(true).size() == 8);

  // The interleaved L1 grid is the chip's, DRAM's 1x1; row_major sets the page layout.
  ov = parse(g, {"act_a0=8x8:l1:interleaved:row_major,fc_a0=dram:1x1:interleaved"});
  REQUIRE_MESSAGE(ov, (ov ? std::string() : ov.error().message));
  REQUIRE(ov->output_for(act)->layouts.size() == 1);
  CHECK(ov->output_for(act)->layouts[0].layout == device::TileLayout::row_major);
  CHECK(ov->output_for(act)->layouts[0].memory == device::MemLayout::interleaved);
  REQUIRE(ov->output_for(0));
  CHECK(ov->output_for(0)->layouts.size() == 1);
  CHECK_FALSE(ov->output_for(0)->layouts[0].in_l1());
}

TEST_CASE("an override no layout can satisfy is refused, naming it") {
  planner::Graph g = residual_graph();
  auto refused = [&](std::string entry, std::string_view words) {
    CAPTURE(entry);
    auto ov = parse(g, {entry});
    REQUIRE_FALSE(ov);
    CHECK(ov.error().code == ErrorCode::invalid_argument);
    CHECK_MESSAGE(ov.error().message.find(words) != std::string::npos, ov.error().message);
  };
  // 3 rows of cores do not divide 2 tile rows; 16 columns do not fit an 8x8 chip.
  refused("act_a0=l1:block_sharded:3x4", "act_a0=l1:block_sharded:3x4': op 'act_a0'");
  refused("act_a0=l1:block_sharded:2x16", "no such layout");
  refused("act_a0=l1:interleaved:4x4", "no such layout");  // interleaved L1 uses the whole grid
  refused("act_a0=dram:height_sharded", "DRAM is interleaved only");
  refused("nosuch=l1", "has no op named 'nosuch'");
  refused("act_a0=sram", "invalid layout parameter 'sram'");
  refused("act_a0=l1:dram", "more than one buffer type");
  refused("act_a0=2x2:4x4", "more than one grid");
  refused("act_a0=f32", "differs from op 'act_a0' result");
  refused("act_a0=f16", "data type 'f16' has no meshplan dtype");
  refused("act_a0=system_memory", "system_memory");
  refused("act_a0", "is not of the form op=param");
  refused("act_a0=l1,act_a0=dram", "overridden twice");
}

TEST_CASE("every policy plans within a sharded override") {
  // 2x2 block sharding (4 cores): no policy picks it on its own, each prefers more cores.
  const Shard want{device::MemLayout::block_sharded, 2, 2, 32, 128};
  for (std::string policy : {"greedy", "beam", "df-sharding"}) {
    CAPTURE(policy);
    planner::PlannerOptions o = planner::PlannerOptions::with_policy(policy);
    auto free = planner::plan_layout(residual_graph(), device::wormhole_b0(), o);
    REQUIRE_MESSAGE(free, (free ? std::string() : free.error().message));
    CHECK_FALSE(is(result_of(*free, "act_a0"), want));
    o.output_overrides = {"act_a0=l1:block_sharded:2x2:tile:bf16"};
    auto r = planner::plan_layout(residual_graph(), device::wormhole_b0(), o);
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
    CHECK(is(result_of(*r, "act_a0"), want));
    run_e2e(residual_graph(), device::wormhole_b0(), o);
  }
}

TEST_CASE("every policy plans within an interleaved or DRAM override") {
  for (std::string policy : {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"}) {
    CAPTURE(policy);
    planner::PlannerOptions o = planner::PlannerOptions::with_policy(policy);
    o.output_overrides = {"act_a0=l1:interleaved", "fc_b0=dram"};
    auto r = planner::plan_layout(residual_graph(), device::wormhole_b0(), o);
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
    const planner::TensorLayout& a = result_of(*r, "act_a0");
    CHECK(a.in_l1());
    CHECK(a.memory == device::MemLayout::interleaved);
    CHECK_FALSE(result_of(*r, "fc_b0").in_l1());
    run_e2e(residual_graph(), device::wormhole_b0(), o);
  }
}

TEST_CASE("an override that cannot hold is a located error in every policy") {
  // 2000 KiB on one core: no L1 layout of `big` fits.
  for (std::string policy : {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"}) {
    CAPTURE(policy);
    planner::PlannerOptions o = planner::PlannerOptions::with_policy(policy);
    o.output_overrides = {"big=l1"};
    auto r = planner::plan_layout(big_output_graph(), one_core_chip(), o);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::invalid_argument);
    CHECK_MESSAGE(
        r.error().message.find("output override for op 'big' is illegal") != std::string::npos,
        r.error().message);
    CHECK(r.error().message.find("big=l1") != std::string::npos);
  }
}
