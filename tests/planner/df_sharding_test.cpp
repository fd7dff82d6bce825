// DFShardingPolicy: chain building along operand 0 of single-use ops, and its documented limits
// (seed 002 §5.4.1-5.4.2) shown against greedy: operand 1 of a binary op is spilled, and one bad
// edge fails a whole chain. A synthetic checker makes sharded configs legal, as tt-mlir's
// optimizer tests do; with the real OpModel (no sharded layouts yet) the plans also run.
#include "meshplan/planner/df_sharding.hpp"
#include "meshplan/planner/policy.hpp"

#include <doctest/doctest.h>

#include <set>

#include "graphs.hpp"

using namespace meshplan;
using namespace meshplan::planner;
using namespace meshplan::test;

namespace {

/// relu ops shard on 8, 4 or 2 cores; add does not shard; a sharded input is accepted when its
/// grid has at least as many cores as the op's (unless the consumer is in `reject`).
class SyntheticChecker final : public ShardChecker {
 public:
  SyntheticChecker(const Graph& g, std::set<std::string> reject = {})
      : g_(g), reject_(std::move(reject)) {}
  std::vector<TensorLayout> legal_configs(OpId o) const override {
    if (g_.ops[o].kind != device::OpKind::relu) return {};
    return {shard(8), shard(4), shard(2)};
  }
  bool valid(OpId o, uint32_t, const TensorLayout& in, const TensorLayout& out) const override {
    if (in.memory == device::MemLayout::interleaved) return true;
    if (reject_.count(g_.ops[o].name)) return false;
    return out.memory == device::MemLayout::interleaved || cores(in) >= cores(out);
  }
  bool valid_all(OpId o, const std::vector<TensorLayout>& in, const TensorLayout& out,
                 uint64_t* l1) const override {
    if (l1) *l1 = 64 << 10;
    return valid(o, 0, in[0], out);
  }
  std::vector<TensorLayout> reshard_targets(ValueId) const override { return {}; }
  bool move_valid(ValueId, const TensorLayout&, const TensorLayout&) const override { return true; }

 private:
  const Graph& g_;
  std::set<std::string> reject_;
};

ValueId value(const Graph& g, std::string_view name) {
  for (ValueId v = 0; v < g.values.size(); ++v)
    if (g.values[v].name == name) return v;
  FAIL("no value ", name);
  return 0;
}

bool spilled(const LayoutDecision& d, ValueId v) {
  return std::find(d.spills.begin(), d.spills.end(), v) != d.spills.end();
}

}  // namespace

TEST_CASE("df-sharding: chains follow operand 0 of single-use ops and take the most cores") {
  Graph g =
      operand1_graph();  // lhs = relu(x); rhs = relu(x); rhs2 = relu(rhs); sum = add(lhs, rhs2)
  SyntheticChecker checker(g);
  auto r = run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), checker);
  REQUIRE(r);
  std::string dump = r->print(g);
  MESSAGE(dump);
  CHECK(dump == "chain [lhs] completed spill dram\nchain [rhs rhs2] completed spill dram\n");
  CHECK(r->decision.tensors[value(g, "rhs")] == shard(8));
  CHECK(r->decision.tensors[value(g, "rhs2")] == shard(8));
}

TEST_CASE(
    "df-sharding limit: a binary op's operand 1 that could stay in L1 is spilled (greedy keeps "
    "it)") {
  Graph g = operand1_graph();
  SyntheticChecker checker(g);
  auto df = run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), checker);
  REQUIRE(df);
  // rhs2 feeds 'sum' on operand 1: the chain ends there and its output goes to DRAM.
  CHECK(spilled(df->decision, value(g, "rhs2")));
  auto planned = materialize(g, df->decision);
  REQUIRE(planned);
  const Op& sum = planned->graph.ops.back();
  REQUIRE(sum.name == "sum");
  CHECK(planned->graph.values[sum.operands[1]].name == "rhs2.spill");
  CHECK_FALSE(planned->layout.tensors[sum.operands[1]].in_l1());
  // greedy (layout propagation over all operands, real OpModel): 'sum' reads rhs2 from L1.
  PlannerOptions o;
  o.policy = "greedy";
  auto greedy = plan_layout(g, device::wormhole_b0(), o);
  REQUIRE(greedy);
  CHECK(greedy->spills == 0);
  const Op& gsum = greedy->graph.ops.back();
  CHECK(greedy->graph.values[gsum.operands[1]].name == "rhs2");
  CHECK(greedy->layout.tensors[gsum.operands[1]].in_l1());
}

TEST_CASE("df-sharding limit: one edge without a path fails the whole chain (all or nothing)") {
  GraphBuilder b("chain3");
  auto a = b.relu("a", b.input("x", {64, 256}));
  auto c = b.relu("b", a);
  b.output(b.relu("c", c));
  Graph g = b.finish();
  SyntheticChecker checker(g, {"c"});  // c takes no sharded input, and nothing reshards
  auto df = run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), checker);
  REQUIRE(df);
  REQUIRE(df->chains.size() == 1);
  CHECK(df->chains[0].ops.size() == 3);
  CHECK(df->chains[0].state == ChainState::failed);
  // a -> b alone was fine, yet nothing stays sharded. The L1-interleaved fallback then gives a
  // and b (each read only by the next op, which takes an interleaved input) L1-interleaved
  // results; c, the graph output, and the input x stay in DRAM.
  for (const TensorLayout& t : df->decision.tensors)
    CHECK(t.memory == device::MemLayout::interleaved);
  CHECK(df->l1_fallbacks == std::vector<ValueId>{value(g, "a"), value(g, "b")});
  CHECK(df->decision.tensors[value(g, "c")].buffer == device::BufferType::dram);
  CHECK(df->decision.tensors[value(g, "x")].buffer == device::BufferType::dram);
  PlannerOptions o;
  o.policy = "greedy";
  auto greedy = plan_layout(g, device::wormhole_b0(), o);
  REQUIRE(greedy);
  CHECK(greedy->l1_outputs() == 3);
}

TEST_CASE(
    "df-sharding: a forked chain output is kept in L1 by a reservation when every consumer takes "
    "it") {
  GraphBuilder b("fork");
  auto x = b.input("x", {64, 256});
  auto h = b.relu("h", b.relu("pre", x));
  auto l = b.relu("left", h);
  auto r = b.relu("right", h);
  b.output(b.add("join", l, r));
  Graph g = b.finish();
  SyntheticChecker checker(g);
  auto df = run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), checker);
  REQUIRE(df);
  std::string dump = df->print(g);
  MESSAGE(dump);
  CHECK(dump.find("chain [pre h] completed spill none") != std::string::npos);
  CHECK(dump.find("reserve %h [1, 3]") != std::string::npos);
  CHECK_FALSE(spilled(df->decision, value(g, "h")));
  CHECK(df->decision.tensors[value(g, "h")].in_l1());
}

TEST_CASE("df-sharding with the real OpModel builds sharded L1 chains that run end to end") {
  for (const Graph& g : {mlp_example(), qkv_graph(), operand1_graph()}) {
    CAPTURE(g.name);
    auto checker =
        make_opmodel_checker(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"));
    auto df =
        run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), *checker);
    REQUIRE(df);
    CHECK_FALSE(df->chains.empty());  // the emulator accepts sharded layouts: chains form
    PlannerOptions o;
    o.policy = "df-sharding";
    E2E e = run_e2e(g, device::wormhole_b0(), o);  // runs on the emulator and checks the result
    CHECK(e.l1_outputs > 0);
  }
}

TEST_CASE(
    "df-sharding: chain A's output stays in L1 for chain B (A->B merge) when the ops between fit") {
  GraphBuilder b("merge");
  auto x = b.input("x", {64, 256});
  auto a = b.relu("a2", b.relu("a1", x));
  auto mid = b.add("mid", x, x);  // scheduled between the chains; not shardable
  auto c = b.relu("b2", b.relu("b1", a));
  b.output(b.add("out", c, mid));
  Graph g = b.finish();
  SyntheticChecker checker(g);
  auto df = run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), checker);
  REQUIRE(df);
  std::string dump = df->print(g);
  MESSAGE(dump);
  CHECK(dump.find("chain [a1 a2] completed spill none") != std::string::npos);
  CHECK(dump.find("reserve %a2 [1, 3]") != std::string::npos);
  CHECK(dump.find("chain [b1 b2] completed spill dram") != std::string::npos);
  CHECK_FALSE(spilled(df->decision, value(g, "a2")));
  CHECK(spilled(df->decision, value(g, "b2")));
}

namespace {
/// relu ops shard on 8, 4 or 2 cores. From DRAM only the 2-core config runs; a sharded input is
/// accepted when its grid has at least as many cores as the op's; the input reshards to any of the
/// three.
class InputSearchChecker final : public ShardChecker {
 public:
  explicit InputSearchChecker(const Graph&) {}
  std::vector<TensorLayout> legal_configs(OpId) const override {
    return {shard(8), shard(4), shard(2)};
  }
  bool legal_config(OpId, const TensorLayout&) const override { return true; }
  bool valid(OpId, uint32_t, const TensorLayout& in, const TensorLayout& out) const override {
    if (out.memory == device::MemLayout::interleaved) return true;
    if (in.memory == device::MemLayout::interleaved) return cores(out) == 2;
    return cores(in) >= cores(out);
  }
  bool valid_all(OpId o, const std::vector<TensorLayout>& in, const TensorLayout& out,
                 uint64_t* l1) const override {
    if (l1) *l1 = 64 << 10;
    return valid(o, 0, in[0], out);
  }
  std::vector<TensorLayout> reshard_targets(ValueId) const override {
    return {shard(8), shard(4), shard(2)};
  }
  bool move_valid(ValueId, const TensorLayout&, const TensorLayout&) const override { return true; }
};
}  // namespace

TEST_CASE("df-sharding: first-op input search reshards the chain's input when that wins cores") {
  // a = relu(x), b = relu(a), x in DRAM. With x as it is only a's 2-core config runs, and b can
  // take at most a's cores: 2 + 2 = 4 cores. Searching x's layouts: x resharded to 8 cores lets a
  // and b run on 8 (16 cores); to 4 cores, 8; so x moves to shard(8) before a, a and b on 8 cores.
  GraphBuilder b("input_search");
  auto a = b.relu("a", b.input("x", {64, 256}));
  b.output(b.relu("b", a));
  Graph g = b.finish();
  InputSearchChecker checker(g);
  auto r = run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), checker,
                           true);
  REQUIRE(r);
  const LayoutDecision& d = r->decision;
  REQUIRE(d.reshards.size() == 1);
  CHECK(d.reshards[0].before == g.values[value(g, "a")].producer);
  CHECK(d.reshards[0].operand == 0);
  CHECK(d.reshards[0].to == shard(8));
  CHECK(d.tensors[value(g, "a")] == shard(8));
  CHECK(d.tensors[value(g, "b")] == shard(8));
  CHECK(d.tensors[value(g, "x")].buffer == device::BufferType::dram);
  // The first op keeps its 8-core config (through the reshard) and its 2-core one (as it is);
  // the 4-core config takes a resharded input too.
  std::string dump = r->print_solver(g);
  CHECK(dump.find("  node 0: 0 1 2\n") != std::string::npos);
}
