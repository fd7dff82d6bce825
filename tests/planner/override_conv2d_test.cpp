// tt-mlir's override-conv2d-config syntax: the blocking it fixes is what every policy plans
// with; shard_layout becomes an output-layout override; what meshplan does not model is refused.
#include <doctest/doctest.h>

#include "builder.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/policy.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

/// x [2,16,16,32] -> conv 3x3 pad 1 (32) -> relu: im2col K = 3*3*32 = 288 = 9 tiles, 512 rows.
planner::Graph conv_relu() {
  GraphBuilder b("conv_relu");
  auto x = b.input("x", {2, 16, 16, 32});
  auto w = b.param("w", {32, 3, 3, 32});
  auto c = b.op(device::OpKind::conv2d, "conv1", {x, w},
                {planner::Attribute{"padding", std::vector<int64_t>{1, 1}}});
  b.output(b.relu("act", c));
  return b.finish();
}

Status apply(planner::Graph& g, std::vector<std::string> lists, std::vector<std::string>& out) {
  return planner::apply_conv2d_config_overrides(g, lists, out);
}

}  // namespace

TEST_CASE("override-conv2d-config fixes the blocking every policy plans with") {
  for (std::string policy : {"dram", "greedy", "beam", "df-sharding"}) {
    CAPTURE(policy);
    planner::Graph g = conv_relu();
    std::vector<std::string> outputs;
    // 32 rows = 1 tile row per block; K in 3 chunks of 3 tiles.
    auto ok =
        apply(g, {"conv1=act_block_h_override#32:act_block_w_div#3:activation#none"}, outputs);
    REQUIRE_MESSAGE(ok, (ok ? std::string() : ok.error().message));
    CHECK(outputs.empty());
    planner::PlannerOptions o = planner::PlannerOptions::with_policy(policy);
    auto r = planner::plan_layout(g, device::wormhole_b0(), o);
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
    bool seen = false;
    for (planner::OpId i = 0; i < r->graph.ops.size(); ++i)
      if (r->graph.ops[i].name == "conv1") {
        seen = true;
        CHECK(r->layout.configs[i].act_block_h == 1);
        CHECK(r->layout.configs[i].act_block_w_div == 3);
      }
    CHECK(seen);
    run_e2e(g, device::wormhole_b0(), o);
  }
}

TEST_CASE("override-conv2d-config shard_layout constrains the conv's result layout") {
  planner::Graph g = conv_relu();
  std::vector<std::string> outputs;
  auto ok = apply(g, {"conv1=shard_layout#height_sharded"}, outputs);
  REQUIRE(ok);
  REQUIRE(outputs == std::vector<std::string>{"conv1=l1:height_sharded"});
  for (std::string policy : {"greedy", "beam"}) {
    CAPTURE(policy);
    planner::PlannerOptions o = planner::PlannerOptions::with_policy(policy);
    o.output_overrides = outputs;
    auto r = planner::plan_layout(g, device::wormhole_b0(), o);
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
    for (planner::OpId i = 0; i < r->graph.ops.size(); ++i)
      if (r->graph.ops[i].name == "conv1")
        CHECK(r->layout.tensors[r->graph.ops[i].results[0]].memory ==
              device::MemLayout::height_sharded);
  }
}

TEST_CASE("override-conv2d-config refusals name the entry and the parameter") {
  auto refused = [](std::string entry, std::string_view words) {
    CAPTURE(entry);
    planner::Graph g = conv_relu();
    std::vector<std::string> outputs;
    auto r = apply(g, {entry}, outputs);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::invalid_argument);
    CHECK_MESSAGE(r.error().message.find(words) != std::string::npos, r.error().message);
  };
  refused("nosuch=act_block_w_div#1", "has no op named 'nosuch'");
  refused("act=act_block_w_div#1", "op 'act' is a relu, not a conv2d");
  refused("conv1=act_block_h_override#48", "48 is not a multiple of 32");
  refused("conv1=act_block_w_div#0", "act_block_w_div '0' is not a positive count");
  refused("conv1=act_block_w_div#1:act_block_w_div#3", "given twice");
  refused("conv1=activation#relu", "differs from the graph's (none)");
  refused("conv1=deallocate_activation#maybe",
          "deallocate_activation 'maybe' is not true or false");
  refused("conv1=enable_act_double_buffer#true", "'enable_act_double_buffer' is not modelled");
  refused("conv1=shard_layout#diagonal", "shard_layout 'diagonal'");
  refused("conv1=frobnicate#1", "invalid override parameter 'frobnicate'");
  refused("conv1", "is not of the form op=param#value");
  // A block height that does not divide the tile rows: OpModel's reason, naming the op.
  planner::Graph g = conv_relu();
  std::vector<std::string> outputs;
  REQUIRE(apply(g, {"conv1=act_block_w_div#2"}, outputs));
  auto r = planner::plan_layout(g, device::wormhole_b0(),
                                planner::PlannerOptions::with_policy("greedy"));
  REQUIRE_FALSE(r);
  CHECK_MESSAGE(r.error().message.find("act_block_w_div 2 does not divide") != std::string::npos,
                r.error().message);
}
