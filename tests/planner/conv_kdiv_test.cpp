// conv2d K splits as op configs: the (act_block_h, act_block_w_div) pairs tried per launch are
// bounded and valid, every policy splits K for a ResNet-50 stage-4 conv (taller blocks, weights
// re-read less), choose_conv_blocks streams the weights when only that fits beside the live L1
// tensors (so the residency the memory planner fits is the one timed and run), a split the
// graph gives is kept or rejected with OpModel's reason, and the plan carries it to the runtime.
#include <doctest/doctest.h>

#include <set>

#include "builder.hpp"
#include "meshplan/device/conv_blocking.hpp"
#include "meshplan/planner/candidates.hpp"
#include "meshplan/planner/policy.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

planner::Attribute pad1() {
  return planner::Attribute{"padding", std::vector<int64_t>{1, 1}};
}

planner::PlannerOptions with_policy(const std::string& policy) {
  planner::PlannerOptions o;
  o.policy = policy;
  return o;
}

/// x [n,h,h,cin] -> conv 3x3 pad 1 (cout) -> output.
planner::Graph one_conv(const char* name, int64_t n, int64_t h, int64_t cin, int64_t cout,
                        std::vector<planner::Attribute> extra = {}) {
  GraphBuilder b(name);
  auto x = b.input("x", {n, h, h, cin});
  auto w = b.param("w", {cout, 3, 3, cin});
  std::vector<planner::Attribute> a = {pad1()};
  a.insert(a.end(), extra.begin(), extra.end());
  b.output(b.op(device::OpKind::conv2d, "c", {x, w}, a));
  return b.finish();
}

/// The placements of op `o` on `plan`'s layouts, owned here, and a launch of them.
struct Launch {
  std::vector<device::TensorPlacement> ps;
  std::vector<const device::TensorPlacement*> in, out;
  Launch(const planner::Graph& g, const planner::LayoutPlan& plan, planner::OpId o) {
    const planner::Op& op = g.ops[o];
    for (planner::ValueId v : op.operands)
      ps.push_back(planner::placement_of(g.values[v], plan.tensors[v]));
    ps.push_back(planner::placement_of(g.values[op.results[0]], plan.tensors[op.results[0]]));
    for (size_t i = 0; i + 1 < ps.size(); ++i) in.push_back(&ps[i]);
    out = {&ps.back()};
  }
  device::OpLaunch launch(const device::OpConfig& c) const {
    return device::OpLaunch{device::OpKind::conv2d, "c", in, out, c};
  }
};

/// An all-DRAM layout plan of `g` with OpQuery's default configs.
planner::LayoutPlan dram_plan(const planner::Graph& g, const device::ChipDesc& chip) {
  planner::LayoutPlan plan;
  for (const planner::Value& v : g.values)
    plan.tensors.push_back(planner::interleaved_layout(v, device::BufferType::dram));
  for (const planner::Op& op : g.ops)
    plan.configs.push_back(planner::config_for(planner::op_config(op, g.mesh).value(),
                                               plan.tensors[op.results[0]], chip));
  return plan;
}

uint64_t usable_l1(const device::ChipDesc& chip) {
  return chip.l1_usable_top() - chip.l1_unreserved_base;
}

}  // namespace

TEST_CASE("conv_block_configs: bounded (height, K split) pairs that divide and fit") {
  device::ChipDesc chip = device::wormhole_b0();
  device::OpModel model(chip);
  for (int64_t cin : {64, 256, 512}) {
    CAPTURE(cin);
    planner::Graph g = one_conv("c", 8, 7, cin, cin);
    planner::LayoutPlan plan = dram_plan(g, chip);
    for (uint16_t grid : {1, 8}) {
      CAPTURE(grid);
      device::OpConfig base = plan.configs[0];
      base.grid_x = base.grid_y = grid;
      Launch l(g, plan, 0);
      auto b = device::resolve_conv(l.launch(base), chip);
      REQUIRE(b);
      auto configs = planner::conv_block_configs(l.launch(base), chip);
      REQUIRE_FALSE(configs.empty());
      CHECK(configs.size() <= planner::kMaxConvBlockHeights * planner::kMaxConvKSplits);
      std::set<std::pair<uint32_t, uint32_t>> seen;
      for (const device::OpConfig& c : configs) {
        CHECK(b->rows_per_core % c.act_block_h == 0);
        CHECK(b->k_tiles % c.act_block_w_div == 0);
        CHECK(seen.insert({c.act_block_h, c.act_block_w_div}).second);
        device::OpValidation v = model.validate(l.launch(c));
        CHECK_MESSAGE(v.ok, v.reason);
      }
    }
  }
}

TEST_CASE("every policy splits K for a ResNet-50 stage-4 conv, taller blocks fewer weight reads") {
  // [8,7,7,512] 3x3 -> 512: 144 K tiles, 4.7 MB of weights that stream. Without a split only
  // one-row blocks fit (2 x 144 activation tiles); with K/2 the busiest core's rows fit in one.
  planner::Graph g = one_conv("stage4", 8, 7, 512, 512);
  device::ChipDesc chip = device::wormhole_b0();
  // df-sharding's solver searches tt-mlir's conv2d space, whose K split is always 1 (the
  // block height then shrinks to what fits): checked at the end.
  for (const char* policy : {"dram", "l1-interleaved", "greedy", "beam"}) {
    CAPTURE(policy);
    auto r = planner::plan_layout(g, chip, with_policy(policy));
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
    planner::OpId o = 0;
    while (r->graph.ops[o].kind != device::OpKind::conv2d) ++o;
    const device::OpConfig& c = r->layout.configs[o];
    CHECK(c.act_block_w_div > 1);
    Launch l(r->graph, r->layout, o);
    auto b = device::resolve_conv(l.launch(c), chip);
    REQUIRE(b);
    CHECK_FALSE(b->weights_resident);
    // The same height without the split does not fit, and the chosen pair is cheaper than
    // the best unsplit one.
    device::OpModel model(chip);
    device::OpConfig unsplit = c;
    unsplit.act_block_w_div = 1;
    CHECK_FALSE(model.validate(l.launch(unsplit)).ok);
    device::OpConfig one = c;
    one.act_block_h = 1;
    one.act_block_w_div = 1;
    REQUIRE(model.validate(l.launch(one)).ok);
    CHECK(model.cost(l.launch(c)).duration_ns < model.cost(l.launch(one)).duration_ns);
  }
  auto r = planner::plan_layout(g, chip, with_policy("df-sharding"));
  REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
  planner::OpId o = 0;
  while (r->graph.ops[o].kind != device::OpKind::conv2d) ++o;
  const device::OpConfig& c = r->layout.configs[o];
  CHECK(c.act_block_w_div == 1);
  Launch l(r->graph, r->layout, o);
  CHECK(device::OpModel(chip).validate(l.launch(c)).ok);
}

TEST_CASE("weights stream when only streaming fits beside the live L1 tensors") {
  // conv c: [1,14,14,256] 3x3 -> 128 (DRAM) on a 2x2 grid: 4 tile columns per core, 72 K
  // tiles, the 72 x 4 resident weight tiles (590 KB) fit an empty L1 with their activation
  // blocks. z, an L1 argument read after c, leaves room for streamed weights only.
  device::ChipDesc chip = device::wormhole_b0();
  uint64_t usable = usable_l1(chip);
  auto build = [&](int64_t z_rows) {
    GraphBuilder gb("tight");
    auto gx = gb.input("x", {1, 14, 14, 256});
    auto gw = gb.param("w", {128, 3, 3, 256});
    auto gz = gb.input("z", {z_rows, 32});
    gb.output(gb.op(device::OpKind::conv2d, "c", {gx, gw}, {pad1()}));
    gb.output(gb.relu("r", gz));
    planner::Graph g = gb.finish();
    planner::LayoutPlan plan = dram_plan(g, chip);
    plan.tensors[gz] = planner::interleaved_layout(g.values[gz], device::BufferType::l1);
    plan.configs[0].grid_x = plan.configs[0].grid_y = 2;
    return std::pair{std::move(g), std::move(plan)};
  };
  // z per core: 64 banks, tiles of 2048 bytes.
  auto z_bytes = [](int64_t z_rows) { return static_cast<uint64_t>(z_rows / 32 / 64) * 2048; };
  device::OpModel model(chip);
  // The smallest resident config: one-row blocks, one-tile K chunks.
  auto [g0, p0] = build(64 * 32);
  Launch l0(g0, p0, 0);
  device::OpConfig c0 = p0.configs[0];
  auto b0 = device::resolve_conv(l0.launch(c0), chip);
  REQUIRE(b0);
  CHECK(b0->cols_per_core == 4);
  CHECK(b0->weights_resident);
  c0.act_block_h = 1;
  c0.act_block_w_div = static_cast<uint32_t>(b0->k_tiles);
  uint64_t resident_min = model.circular_buffer_bytes(l0.launch(c0));
  c0.act_block_w_div = 2;
  c0.stream_weights = true;
  uint64_t streamed = model.circular_buffer_bytes(l0.launch(c0));
  REQUIRE(streamed < resident_min);
  // z leaves room between the two.
  int64_t z_rows = static_cast<int64_t>((usable - (resident_min + streamed) / 2) / 2048) * 64 * 32;
  auto [g1, p1] = build(z_rows);
  uint64_t z = z_bytes(z_rows);
  REQUIRE(z + resident_min > usable);
  REQUIRE(z + streamed <= usable);
  REQUIRE(planner::choose_conv_blocks(g1, p1, chip));
  const device::OpConfig& chosen = p1.configs[0];
  CHECK(chosen.stream_weights);
  Launch l1(g1, p1, 0);
  auto b1 = device::resolve_conv(l1.launch(chosen), chip);
  REQUIRE(b1);
  CHECK_FALSE(b1->weights_resident);  // What the kernel and the timing model use...
  device::OpValidation v = model.validate(l1.launch(chosen));
  REQUIRE_MESSAGE(v.ok, v.reason);
  CHECK(v.cb_bytes_per_core + z <= usable);  // ...is what fits beside z.
  // Without z the weights stay resident.
  REQUIRE(planner::choose_conv_blocks(g0, p0, chip));
  CHECK_FALSE(p0.configs[0].stream_weights);
  CHECK(device::resolve_conv(l0.launch(p0.configs[0]), chip)->weights_resident);
}

TEST_CASE("a K split the graph gives is kept, or rejected with OpModel's reason") {
  device::ChipDesc chip = device::wormhole_b0();
  // K = 3*3*32 = 288 = 9 tiles.
  planner::Graph given =
      one_conv("given", 2, 16, 32, 32, {planner::Attribute{"act_block_w_div", int64_t{3}}});
  auto r = planner::plan_layout(given, chip, with_policy("greedy"));
  REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
  CHECK(r->layout.configs[0].act_block_w_div == 3);
  CHECK(r->layout.configs[0].act_block_h > 0);
  // The plan runs it with the reference's results and the planned time.
  E2E e = run_e2e(given, chip, with_policy("greedy"));
  // Consistency check, not a validation: both sum device::estimate().
  CHECK(e.estimated_ns == e.device_ns);
  planner::Graph bad =
      one_conv("bad", 2, 16, 32, 32, {planner::Attribute{"act_block_w_div", int64_t{2}}});
  auto x = planner::plan_layout(bad, chip, with_policy("dram"));
  REQUIRE_FALSE(x);
  CHECK(x.error().message.find("'c' (conv2d)") != std::string::npos);
  CHECK(x.error().message.find("act_block_w_div 2 does not divide the im2col K of 9 tiles") !=
        std::string::npos);
  planner::Graph zero =
      one_conv("zero", 2, 16, 32, 32, {planner::Attribute{"act_block_w_div", int64_t{1}}});
  zero.ops[0].attributes.back().value = int64_t{0};
  auto z = planner::validate(zero);
  REQUIRE_FALSE(z);
  CHECK(z.error().message.find("attribute 'act_block_w_div' is 0") != std::string::npos);
}

TEST_CASE("the plan carries the K split and the residency to the runtime, and runs them") {
  device::ChipDesc chip = device::wormhole_b0();
  // [2,7,7,512] 3x3 -> 512: streamed weights; a split lets the busiest core take one block.
  planner::Graph g = one_conv("stage4b2", 2, 7, 512, 512);
  auto compiled = planner::compile(g, chip, with_policy("greedy"));
  REQUIRE_MESSAGE(compiled, (compiled ? std::string() : compiled.error().message));
  auto plan = runtime::verify_plan(compiled->bytes, g.name);
  REQUIRE(plan);
  int convs = 0;
  for (const fb::OpPlan* op : *plan->plan().ops())
    if (op->kind() == fb::OpKind::conv2d) {
      ++convs;
      device::OpConfig c = runtime::op_config_of(*op);
      CHECK(c.act_block_w_div == op->config()->act_block_w_div());
      CHECK(c.act_block_w_div > 1);
      CHECK(c.stream_weights == op->config()->stream_weights());
    }
  CHECK(convs == 1);
  E2E e = run_e2e(g, chip, with_policy("greedy"));
  // Consistency check, not a validation: both sum device::estimate().
  CHECK(e.estimated_ns == e.device_ns);
}
