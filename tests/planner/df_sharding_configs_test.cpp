// df-sharding's op-specific configs (seed 001 §3.1.4, §3.3.2): each legal layout paired with each
// op-specific config of tt-mlir's search space is a solver config of its own, config-major; the
// solver keeps the ones valid on their edges and core-usage maximization takes the first of the
// best. A matmul's program follows its sharded result (tt-mlir's generateMatmulProgramConfig),
// a conv2d's block heights are act_block_h_override 0, 64 and 32 rows; fitting keeps what the
// solver chose.
#include <doctest/doctest.h>

#include "builder.hpp"
#include "graphs.hpp"
#include "meshplan/device/conv_blocking.hpp"
#include "meshplan/planner/candidates.hpp"
#include "meshplan/planner/df_sharding.hpp"
#include "meshplan/planner/policy.hpp"

using namespace meshplan;
using namespace meshplan::planner;
using namespace meshplan::test;

namespace {

device::OpConfig block_h(uint32_t h) {
  device::OpConfig c;
  c.act_block_h = h;
  c.act_block_w_div = 1;
  return c;
}

/// relu ops shard on 8 or 4 cores and accept a sharded input with at least as many cores as their
/// result. Op 'b' has two op-specific configs per layout, block heights 4 then 1: height 4 runs
/// on at most `h4_cores` cores, height 1 on any.
class ConfigChecker final : public ShardChecker {
 public:
  ConfigChecker(const Graph& g, uint32_t h4_cores) : g_(g), h4_cores_(h4_cores) {}
  std::vector<TensorLayout> legal_configs(OpId) const override { return {shard(8), shard(4)}; }
  std::vector<device::OpConfig> op_configs(OpId o, const TensorLayout&) const override {
    if (g_.ops[o].name != "b") return {};
    return {block_h(4), block_h(1)};
  }
  bool valid(OpId, uint32_t, const TensorLayout& in, const TensorLayout& out) const override {
    return in.memory == device::MemLayout::interleaved || cores(in) >= cores(out);
  }
  bool valid_config(OpId o, uint32_t operand, const TensorLayout& in, const TensorLayout& out,
                    const device::OpConfig& c) const override {
    if (c.act_block_h == 4 && cores(out) > h4_cores_) return false;
    return valid(o, operand, in, out);
  }
  bool valid_all(OpId o, const std::vector<TensorLayout>& in, const TensorLayout& out,
                 uint64_t* l1) const override {
    if (l1) *l1 = 64 << 10;
    return valid(o, 0, in[0], out);
  }
  bool valid_all_config(OpId o, const std::vector<TensorLayout>& in, const TensorLayout& out,
                        const device::OpConfig& c, uint64_t* l1) const override {
    if (l1) *l1 = 64 << 10;
    return valid_config(o, 0, in[0], out, c);
  }
  std::vector<TensorLayout> reshard_targets(ValueId) const override { return {}; }
  bool move_valid(ValueId, const TensorLayout&, const TensorLayout&) const override { return true; }

 private:
  const Graph& g_;
  uint32_t h4_cores_;
};

Graph chain2() {
  GraphBuilder b("chain2");
  b.output(b.relu("b", b.relu("a", b.input("x", {64, 256}))));
  return b.finish();
}

OpId op_named(const Graph& g, std::string_view name) {
  for (OpId o = 0; o < g.ops.size(); ++o)
    if (g.ops[o].name == name) return o;
  FAIL("no op ", name);
  return 0;
}

}  // namespace

TEST_CASE("df-sharding: op-specific configs are solver configs, config-major; cores come first") {
  Graph g = chain2();
  const OpId a = op_named(g, "a"), b = op_named(g, "b");
  // b's configs: 0 = (8 cores, h 4), 1 = (4, h 4), 2 = (8, h 1), 3 = (4, h 1). Height 4 runs on
  // at most 4 cores, so config 0 has no path; a takes 8 cores (config 0) and the most cores on
  // b with it is config 2: 8 cores at height 1 beats the preferred height on 4.
  ConfigChecker checker(g, /*h4_cores=*/4);
  auto r = run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), checker,
                           /*record_solver=*/true);
  REQUIRE(r);
  std::string dump = r->print_solver(g);
  MESSAGE(dump);
  CHECK(dump.find("node 1 b: 0=l1 height_sharded 8x1 [256x256] h 4 div 1, 1=l1 height_sharded "
                  "4x1 [512x256] h 4 div 1, 2=l1 height_sharded 8x1 [256x256] h 1 div 1, 3=l1 "
                  "height_sharded 4x1 [512x256] h 1 div 1") != std::string::npos);
  CHECK(dump.find("node 0: 0 (selected 0)") != std::string::npos);
  CHECK(dump.find("node 1: 2 (selected 2)") != std::string::npos);
  const LayoutDecision& d = r->decision;
  CHECK(d.tensors[g.ops[b].results[0]] == shard(8));
  CHECK(d.configs[b].act_block_h == 1);
  CHECK(d.configs[b].grid_x == 8);
  REQUIRE(d.kept_configs.size() == g.ops.size());
  CHECK(d.kept_configs[b]);
  CHECK_FALSE(d.kept_configs[a]);  // a has no op-specific config
}

TEST_CASE("df-sharding: among configs of equal core usage the search space's first one wins") {
  Graph g = chain2();
  const OpId b = op_named(g, "b");
  // Height 4 runs on 8 cores too: configs 0 and 2 both take 8 cores, config 0 (h 4) comes first.
  ConfigChecker checker(g, /*h4_cores=*/8);
  auto r = run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), checker,
                           /*record_solver=*/true);
  REQUIRE(r);
  std::string dump = r->print_solver(g);
  CHECK(dump.find("node 1: 0 (selected 0)") != std::string::npos);
  CHECK(r->decision.configs[b].act_block_h == 4);
}

TEST_CASE("legacy conv2d configs: heights of 0, 64 and 32 rows on the busiest core's tile rows") {
  // x [1,12,32,32] -> 1x1 conv (32 out) -> [1,12,32,32]: 12 output tile rows, one tile column.
  GraphBuilder gb("conv1x1");
  auto x = gb.input("x", {1, 12, 32, 32});
  auto w = gb.param("w", {32, 1, 1, 32});
  gb.output(gb.op(device::OpKind::conv2d, "c", {x, w}));
  Graph g = gb.finish();
  const Op& op = g.ops[0];
  auto heights = [&](uint16_t cores, uint32_t given_h, uint32_t given_div) {
    std::vector<device::TensorPlacement> ps;
    for (ValueId v : op.operands)
      ps.push_back(placement_of(g.values[v], interleaved_layout(g.values[v], device::BufferType::dram)));
    device::TensorPlacement out = placement_of(
        g.values[op.results[0]], interleaved_layout(g.values[op.results[0]], device::BufferType::dram));
    const device::TensorPlacement* in[] = {&ps[0], &ps[1]};
    const device::TensorPlacement* outs[] = {&out};
    device::OpConfig c;
    c.grid_x = static_cast<uint16_t>(cores > 8 ? cores / 2 : cores);  // 12 cores: 6x2
    c.grid_y = static_cast<uint16_t>(cores > 8 ? 2 : 1);
    c.act_block_h = given_h;
    c.act_block_w_div = given_div;
    std::vector<std::pair<uint32_t, uint32_t>> got;
    for (const device::OpConfig& k : legacy_conv_configs(
             device::OpLaunch{op.kind, op.name, in, outs, c}, device::wormhole_b0()))
      got.emplace_back(k.act_block_h, k.act_block_w_div);
    return got;
  };
  using P = std::vector<std::pair<uint32_t, uint32_t>>;
  CHECK(heights(2, 0, 0) == P{{6, 1}, {2, 1}, {1, 1}});  // 6 rows per core
  CHECK(heights(4, 0, 0) == P{{3, 1}, {1, 1}});          // 3 rows: 2 does not divide
  CHECK(heights(8, 0, 0) == P{{2, 1}, {1, 1}});          // ceil(12 / 8) = 2 rows
  CHECK(heights(12, 0, 0) == P{{1, 1}});                 // one row: 0, 64, 32 rows all give 1
  CHECK(heights(2, 2, 0) == P{{2, 1}});                  // the graph's height is kept
  CHECK(heights(2, 0, 1) == P{{6, 1}, {2, 1}, {1, 1}});  // K = 32: one tile, split 1
  CHECK(heights(2, 4, 0) == P{{3, 1}});                  // 4 on 6 rows runs as 3 (tt-metal)
}

TEST_CASE("df-sharding with the real OpModel: a chain matmul runs the program its layout implies") {
  // qkv: its projections' chains keep sharded matmul results (the mlp example's bias rows, which
  // binary_ng reads only interleaved, leave none).
  Graph g = qkv_graph();
  auto checker = make_opmodel_checker(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"));
  auto r = run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), *checker);
  REQUIRE(r);
  int checked = 0;
  for (const L1Chain& chain : r->chains) {
    if (chain.state != ChainState::completed || chain.concat) continue;
    for (size_t k = 0; k < chain.ops.size(); ++k) {
      OpId o = chain.ops[k];
      if (!device::is_matmul_family(g.ops[o].kind)) continue;
      const TensorLayout& t = r->decision.tensors[g.ops[o].results[0]];
      if (t.memory == device::MemLayout::interleaved) continue;
      const device::OpConfig& c = r->decision.configs[o];
      CAPTURE(g.ops[o].name);
      CHECK(r->decision.kept_configs[o]);
      if (t.memory == device::MemLayout::block_sharded) {
        CHECK(c.program == device::MatmulProgram::mcast_2d);
      } else {
        CHECK(c.program == device::MatmulProgram::mcast_1d);
        CHECK(c.mcast_in0 == (t.memory == device::MemLayout::width_sharded));
      }
      ++checked;
    }
  }
  REQUIRE(checked > 0);
  // The plan keeps those programs through fitting and runs them on the emulator.
  PlannerOptions o;
  o.policy = "df-sharding";
  auto planned = plan_layout(g, device::wormhole_b0(), o);
  REQUIRE_MESSAGE(planned, (planned ? std::string() : planned.error().message));
  int kept = 0;
  for (OpId p = 0; p < planned->graph.ops.size(); ++p) {
    const Op& op = planned->graph.ops[p];
    const TensorLayout& t = planned->layout.tensors[op.results[0]];
    if (!device::is_matmul_family(op.kind) || t.memory == device::MemLayout::interleaved) continue;
    if (p >= planned->kept_configs.size() || !planned->kept_configs[p]) continue;
    CAPTURE(op.name);
    const device::OpConfig& c = planned->layout.configs[p];
    if (t.memory == device::MemLayout::block_sharded)
      CHECK(c.program == device::MatmulProgram::mcast_2d);
    else
      CHECK((c.program == device::MatmulProgram::mcast_1d &&
             c.mcast_in0 == (t.memory == device::MemLayout::width_sharded)));
    ++kept;
  }
  CHECK(kept > 0);
  E2E e = run_e2e(g, device::wormhole_b0(), o);
  CHECK(e.l1_outputs > 0);
}

TEST_CASE("materialize: a reshard before a reader of a spilled value moves the spill's copy") {
  // df-sharding's chain entries can reshard a value an earlier chain spilled.
  GraphBuilder gb("spill_reshard");
  gb.output(gb.relu("b", gb.relu("a", gb.input("x", {64, 256}))));
  Graph g = gb.finish();
  auto d = LayoutDecision::all_dram(g, device::wormhole_b0());
  REQUIRE(d);
  ValueId a = g.ops[0].results[0];
  TensorLayout l1 = interleaved_layout(g.values[a], device::BufferType::l1);
  d->tensors[a] = l1;
  d->spills.push_back(a);
  d->reshards.push_back(LayoutDecision::Reshard{1, 0, l1});
  auto r = materialize(g, *d);
  REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
  REQUIRE(r->graph.ops.size() == 4);  // a, its spill, the reshard, b
  const Op& move = r->graph.ops[2];
  CHECK(move.kind == device::OpKind::to_memory_config);
  CHECK(r->graph.values[move.operands[0]].name == g.values[a].name + ".spill");
  CHECK(r->graph.values[move.results[0]].name == g.values[a].name + ".spill.reshard");
  CHECK(r->graph.ops[3].operands[0] == move.results[0]);
}
