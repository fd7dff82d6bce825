// conv2d activation block heights as op configs: OpQuery scores an auto conv2d by its cheapest
// valid block height, every policy's plan carries an explicit height that the emulator runs,
// choose_conv_blocks takes a smaller height when the L1 tensors live across the op leave no room
// for the cheapest one, and a height the graph gives is kept (or rejected with OpModel's reason).
#include <doctest/doctest.h>

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

/// x [n,32,32,16] -> conv 3x3 (32) -> relu -> conv 3x3 (32) -> output.
planner::Graph conv_graph(int64_t n, std::vector<planner::Attribute> extra = {}) {
  GraphBuilder b("convs");
  auto x = b.input("x", {n, 32, 32, 16});
  auto w1 = b.param("w1", {32, 3, 3, 16});
  auto w2 = b.param("w2", {32, 3, 3, 32});
  std::vector<planner::Attribute> a1 = {pad1()};
  a1.insert(a1.end(), extra.begin(), extra.end());
  auto c1 = b.op(device::OpKind::conv2d, "c1", {x, w1}, a1);
  auto r = b.relu("r", c1);
  b.output(b.op(device::OpKind::conv2d, "c2", {r, w2}, {pad1()}));
  return b.finish();
}

planner::PlannerOptions with_policy(const std::string& policy) {
  planner::PlannerOptions o;
  o.policy = policy;
  return o;
}

/// The conv2d launch of op `o` on `plan`'s layouts with `config`, resolved.
device::ConvBlocking blocking(const planner::Graph& g, const planner::LayoutPlan& plan,
                              planner::OpId o, const device::OpConfig& config) {
  const planner::Op& op = g.ops[o];
  std::vector<device::TensorPlacement> ps;
  for (planner::ValueId v : op.operands)
    ps.push_back(planner::placement_of(g.values[v], plan.tensors[v]));
  ps.push_back(planner::placement_of(g.values[op.results[0]], plan.tensors[op.results[0]]));
  std::vector<const device::TensorPlacement*> in;
  for (size_t i = 0; i + 1 < ps.size(); ++i) in.push_back(&ps[i]);
  const device::TensorPlacement* out[] = {&ps.back()};
  auto b = device::resolve_conv(device::OpLaunch{op.kind, op.name, in, out, config},
                                device::wormhole_b0());
  REQUIRE_MESSAGE(b, b.error().message);
  return *b;
}

}  // namespace

TEST_CASE("an auto conv2d is scored by its cheapest valid block height") {
  // [1,256,256,64] 3x3 -> 64 channels, DRAM result on 64 cores: 32 tile rows per core; the
  // largest block (32 rows x 18 K tiles, double-buffered) does not fit L1, smaller ones do.
  GraphBuilder b("big");
  auto x = b.input("x", {1, 256, 256, 64});
  auto w = b.param("w", {64, 3, 3, 64});
  b.output(b.op(device::OpKind::conv2d, "c", {x, w}, {pad1()}));
  planner::Graph g = b.finish();
  device::ChipDesc chip = device::wormhole_b0();
  planner::OpQuery q(g, chip);
  const planner::Op& op = g.ops[0];
  planner::TensorLayout dx = planner::interleaved_layout(g.values[x], device::BufferType::dram),
                        dw = planner::interleaved_layout(g.values[w], device::BufferType::dram),
                        dy = planner::interleaved_layout(g.values[op.results[0]],
                                                         device::BufferType::dram);
  const planner::TensorLayout* in[] = {&dx, &dw};
  device::OpConfig base = planner::config_for(planner::op_config(op, g.mesh).value(), dy, chip);
  REQUIRE(planner::is_auto_conv(op.kind, base));
  device::OpConfig largest = base;
  largest.act_block_h = 32;
  CHECK_FALSE(q.validate(op.kind, op.name, op.operands, in, op.results[0], dy, largest).ok);
  device::OpConfig one = base;
  one.act_block_h = 1;
  device::OpValidation v1 = q.validate(op.kind, op.name, op.operands, in, op.results[0], dy, one);
  REQUIRE_MESSAGE(v1.ok, v1.reason);
  device::OpConfig chosen =
      q.resolve_config(op.kind, op.name, op.operands, in, op.results[0], dy, base);
  REQUIRE(chosen.act_block_h > 0);
  CHECK(chosen.act_block_h < 32);
  CHECK(32 % chosen.act_block_h == 0);
  CHECK(q.validate(op.kind, op.name, op.operands, in, op.results[0], dy, chosen).ok);
  uint64_t auto_ns = q.cost(op.kind, op.name, op.operands, in, op.results[0], dy, base);
  CHECK(auto_ns == q.cost(op.kind, op.name, op.operands, in, op.results[0], dy, chosen));
  // No valid height is cheaper; the candidates' heights are the divisors of 32, largest first
  // (each with its K splits, conv_kdiv_test.cpp).
  std::vector<uint32_t> heights;
  for (uint32_t h : {32u, 16u, 8u, 4u, 2u, 1u}) {
    device::OpConfig c = base;
    c.act_block_h = h;
    heights.push_back(h);
    if (!q.validate(op.kind, op.name, op.operands, in, op.results[0], dy, c).ok) continue;
    CHECK(auto_ns <= q.cost(op.kind, op.name, op.operands, in, op.results[0], dy, c));
  }
  std::vector<uint32_t> tried;
  planner::TensorLayout ly = dy;
  device::TensorPlacement px = planner::placement_of(g.values[x], dx),
                          pw = planner::placement_of(g.values[w], dw),
                          py = planner::placement_of(g.values[op.results[0]], ly);
  const device::TensorPlacement* ins[] = {&px, &pw};
  const device::TensorPlacement* outs[] = {&py};
  for (const device::OpConfig& c :
       planner::conv_block_configs(device::OpLaunch{op.kind, "c", ins, outs, base}, chip))
    if (tried.empty() || tried.back() != c.act_block_h) tried.push_back(c.act_block_h);
  CHECK(tried == heights);
}

TEST_CASE("every policy plans an explicit block height for each conv2d and the plan runs it") {
  planner::Graph g = conv_graph(2);
  device::ChipDesc chip = device::wormhole_b0();
  for (const char* policy : {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"}) {
    CAPTURE(policy);
    auto r = planner::plan_layout(g, chip, with_policy(policy));
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
    int convs = 0;
    for (planner::OpId o = 0; o < r->graph.ops.size(); ++o) {
      if (r->graph.ops[o].kind != device::OpKind::conv2d) continue;
      ++convs;
      const device::OpConfig& c = r->layout.configs[o];
      CHECK(c.act_block_h > 0);
      device::ConvBlocking b = blocking(r->graph, r->layout, o, c);
      CHECK(b.rows_per_core % c.act_block_h == 0);
    }
    CHECK(convs == 2);
    // The plan carries the heights the layout plan chose.
    auto compiled = planner::compile(g, chip, with_policy(policy));
    REQUIRE(compiled);
    auto plan = runtime::verify_plan(compiled->bytes, g.name);
    REQUIRE(plan);
    for (const fb::OpPlan* op : *plan->plan().ops())
      if (op->kind() == fb::OpKind::conv2d) {
        CHECK(op->config()->act_block_h() > 0);
        CHECK(runtime::op_config_of(*op).act_block_h == op->config()->act_block_h());
      }
    E2E e = run_e2e(g, chip, with_policy(policy));
    // Consistency check, not a validation: both sum device::estimate().
    CHECK(e.estimated_ns == e.device_ns);
  }
}

TEST_CASE("a smaller block height is chosen when live L1 tensors leave no room for the cheapest") {
  // conv c: x [4,64,64,32] (DRAM) -> [4,64,64,64] (DRAM) on 64 cores: 8 tile rows per core.
  // z, an L1 argument read after c, is live across it.
  device::ChipDesc chip = device::wormhole_b0();
  uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  // Per core, z takes pages / 64 tiles of 2048 bytes (L1 interleaved over the 64 cores).
  auto z_for = [&](uint64_t per_core) {
    return std::vector<int64_t>{static_cast<int64_t>(per_core / 2048 * 64 * 32), 32};
  };
  // The graph and an all-DRAM layout plan (z in L1 when asked) for one size of z.
  auto build = [&](uint64_t z_per_core, bool z_in_l1) {
    GraphBuilder gb("tight");
    auto gx = gb.input("x", {4, 64, 64, 32});
    auto gw = gb.param("w", {64, 3, 3, 32});
    auto gz = gb.input("z", z_for(z_per_core));
    auto gc = gb.op(device::OpKind::conv2d, "c", {gx, gw}, {pad1()});
    gb.output(gc);
    gb.output(gb.relu("r", gz));
    planner::Graph g = gb.finish();
    planner::LayoutPlan plan;
    for (const planner::Value& v : g.values)
      plan.tensors.push_back(planner::interleaved_layout(v, device::BufferType::dram));
    if (z_in_l1)
      plan.tensors[gz] = planner::interleaved_layout(g.values[gz], device::BufferType::l1);
    for (const planner::Op& op : g.ops)
      plan.configs.push_back(planner::config_for(planner::op_config(op, g.mesh).value(),
                                                 plan.tensors[op.results[0]], chip));
    return std::pair{std::move(g), std::move(plan)};
  };
  // Without pressure: the cheapest valid height (OpQuery's choice).
  auto [g0, plan0] = build(2048, false);
  REQUIRE(planner::choose_conv_blocks(g0, plan0, chip));
  planner::OpQuery q0(g0, chip);
  uint32_t free_choice = plan0.configs[0].act_block_h;
  {
    const planner::Op& op = g0.ops[0];
    const planner::TensorLayout* in[] = {&plan0.tensors[op.operands[0]],
                                         &plan0.tensors[op.operands[1]]};
    device::OpConfig base = plan0.configs[0];
    base.act_block_h = 0;
    CHECK(free_choice == q0.resolve_config(op.kind, op.name, op.operands, in, op.results[0],
                                           plan0.tensors[op.results[0]], base)
                             .act_block_h);
  }
  REQUIRE(free_choice > 1);
  device::ConvBlocking b0 = blocking(g0, plan0, 0, plan0.configs[0]);
  CHECK(b0.rows_per_core == 8);
  // CB bytes of the chosen height and of the next smaller divisor.
  auto cb_of = [&](const planner::Graph& g, const planner::LayoutPlan& plan, uint32_t h) {
    device::OpConfig cfg = plan.configs[0];
    cfg.act_block_h = h;
    const planner::TensorLayout* in[] = {&plan.tensors[g.ops[0].operands[0]],
                                         &plan.tensors[g.ops[0].operands[1]]};
    planner::OpQuery q(g, chip);
    return q
        .validate(g.ops[0].kind, "c", g.ops[0].operands, in, g.ops[0].results[0],
                  plan.tensors[g.ops[0].results[0]], cfg)
        .cb_bytes_per_core;
  };
  uint64_t cb_big = cb_of(g0, plan0, free_choice), cb_one = cb_of(g0, plan0, 1);
  REQUIRE(cb_one < cb_big);
  // z leaves room for height 1's buffers but not for the cheapest height's.
  uint64_t z_per_core = (usable - (cb_big + cb_one) / 2) / 2048 * 2048;
  auto [g1, plan1] = build(z_per_core, true);
  REQUIRE(planner::choose_conv_blocks(g1, plan1, chip));
  uint32_t tight_choice = plan1.configs[0].act_block_h;
  CAPTURE(free_choice);
  CHECK(tight_choice < free_choice);
  CHECK(tight_choice >= 1);
  CHECK(cb_of(g1, plan1, tight_choice) + z_per_core <= usable);
  CHECK(cb_of(g1, plan1, free_choice) + z_per_core > usable);
}

TEST_CASE(
    "a block height the graph gives is kept (as the device runs it); a K split that does not "
    "divide is rejected with OpModel's reason") {
  device::ChipDesc chip = device::wormhole_b0();
  // conv_graph(2): c1's result [2,32,32,32] = 64 tile rows; 1 tile row per core on 64 cores.
  planner::Graph given = conv_graph(2, {planner::Attribute{"act_block_h", int64_t{1}}});
  auto r = planner::plan_layout(given, chip, with_policy("dram"));
  REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
  CHECK(r->layout.configs[0].act_block_h == 1);
  // 3 does not divide the one tile row per core: tt-metal runs the closest smaller divisor, 1,
  // and so does the plan.
  planner::Graph odd = conv_graph(2, {planner::Attribute{"act_block_h", int64_t{3}}});
  auto o = planner::plan_layout(odd, chip, with_policy("dram"));
  REQUIRE_MESSAGE(o, (o ? std::string() : o.error().message));
  CHECK(o->layout.configs[0].act_block_h == 1);
  // c1's K = 3 x 3 x 16 = 144 elements = 5 tiles: a split in 2 does not divide it.
  planner::Graph bad = conv_graph(2, {planner::Attribute{"act_block_w_div", int64_t{2}}});
  auto e = planner::plan_layout(bad, chip, with_policy("dram"));
  REQUIRE_FALSE(e);
  CHECK(e.error().message.find("'c1' (conv2d)") != std::string::npos);
  CHECK(e.error().message.find("act_block_w_div 2 does not divide the im2col K of 5 tiles") !=
        std::string::npos);
  // The attribute is a positive height: 0 (auto) is what leaving it out means.
  planner::Graph zero = conv_graph(2, {planner::Attribute{"act_block_h", int64_t{1}}});
  zero.ops[0].attributes.back().value = int64_t{0};
  auto z = planner::validate(zero);
  REQUIRE_FALSE(z);
  CHECK(z.error().message.find("attribute 'act_block_h' is 0") != std::string::npos);
}
