// DFShardingPolicy's L1-interleaved fallback (tt-mlir's L1 interleaved fallback analysis): after
// the chains, an op whose result is still in DRAM, read by exactly one op scheduled right after
// it and no graph output, gets an L1-interleaved result when both ops accept it and each fits
// under 80% of usable L1. A synthetic checker decides legality, so each case is worked by hand.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "graphs.hpp"
#include "meshplan/planner/df_sharding.hpp"
#include "meshplan/planner/policy.hpp"

using namespace meshplan;
using namespace meshplan::planner;
using namespace meshplan::test;

namespace {

/// relu shards on 8 cores (height); nothing else shards. Any interleaved input is accepted
/// (except a DRAM one by ops named in `no_dram`); a sharded one only by an op whose result is
/// interleaved or sharded alike. Every op needs 64 KiB of L1 per core, or what `need` says.
class FallbackChecker final : public ShardChecker {
 public:
  FallbackChecker(const Graph& g, std::map<std::string, uint64_t> need = {},
                  std::set<std::string> no_dram = {})
      : g_(g), need_(std::move(need)), no_dram_(std::move(no_dram)) {}
  static TensorLayout shard() {
    TensorLayout t;
    t.buffer = device::BufferType::l1;
    t.memory = device::MemLayout::height_sharded;
    t.shard.grid = device::CoreRange{0, 0, 7, 0};
    t.shard.shape[0] = 32;
    t.shard.shape[1] = 256;
    return t;
  }
  std::vector<TensorLayout> legal_configs(OpId o) const override {
    if (g_.ops[o].kind != device::OpKind::relu) return {};
    return {shard()};
  }
  bool valid(OpId o, uint32_t, const TensorLayout& in, const TensorLayout& out) const override {
    if (in.buffer == device::BufferType::dram && no_dram_.count(g_.ops[o].name)) return false;
    return in.memory == device::MemLayout::interleaved ||
           out.memory == device::MemLayout::interleaved || in == out;
  }
  bool valid_all(OpId o, const std::vector<TensorLayout>& in, const TensorLayout& out,
                 uint64_t* l1) const override {
    auto it = need_.find(g_.ops[o].name);
    if (l1) *l1 = it == need_.end() ? 64 << 10 : it->second;
    for (uint32_t i = 0; i < in.size(); ++i)
      if (!valid(o, i, in[i], out)) return false;
    return true;
  }
  std::vector<TensorLayout> reshard_targets(ValueId) const override { return {}; }
  bool move_valid(ValueId, const TensorLayout&, const TensorLayout&) const override { return true; }

 private:
  const Graph& g_;
  std::map<std::string, uint64_t> need_;
  std::set<std::string> no_dram_;
};

/// x -> a = add(x, x); b = add(a, x); f = add(x, x); c = add(b, f); d = relu(c); e = add(d, d),
/// built in its DFS schedule order (a, b, f, c, d, e); e is the graph output.
Graph fallback_graph() {
  GraphBuilder b("fallback");
  auto x = b.input("x", {64, 256});
  auto a = b.add("a", x, x);
  auto bb = b.add("b", a, x);
  auto f = b.add("f", x, x);
  auto c = b.add("c", bb, f);
  auto d = b.relu("d", c);
  b.output(b.add("e", d, d));
  return b.finish();
}

ValueId value(const Graph& g, std::string_view name) {
  for (ValueId v = 0; v < g.values.size(); ++v)
    if (g.values[v].name == name) return v;
  FAIL("no value ", name);
  return 0;
}

}  // namespace

TEST_CASE("df-sharding L1-interleaved fallback: only results whose one reader runs next move") {
  Graph g = fallback_graph();
  REQUIRE(dfs_schedule(g) == std::vector<OpId>{0, 1, 2, 3, 4, 5});
  FallbackChecker checker(g);
  auto df = run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), checker);
  REQUIRE(df);
  std::string dump = df->print(g);
  MESSAGE(dump);
  // a (position 0) is read only by b (1): L1. b is read by c at 3, not 2: DRAM. f (2) feeds c
  // (3) on operand 1: L1. c (3) feeds the chain [d] (4): L1. d forks into e's two operands and
  // stays sharded by a reservation (a 32x256 bf16 shard: 16384 B/core); e is the graph output:
  // DRAM.
  CHECK(dump ==
        "chain [d] completed spill none\n"
        "reserve %d [4, 5] 16384 B/core\n"
        "fallback %a l1_interleaved\n"
        "fallback %f l1_interleaved\n"
        "fallback %c l1_interleaved\n");
  const LayoutDecision& d = df->decision;
  TensorLayout l1 = interleaved_layout(g.values[value(g, "a")], device::BufferType::l1);
  CHECK(d.tensors[value(g, "a")] == l1);
  CHECK(d.tensors[value(g, "f")] == l1);
  CHECK(d.tensors[value(g, "c")] == l1);
  CHECK(d.tensors[value(g, "d")] == FallbackChecker::shard());
  CHECK(d.tensors[value(g, "b")].buffer == device::BufferType::dram);
  CHECK(d.tensors[value(g, "e")].buffer == device::BufferType::dram);
}

TEST_CASE("df-sharding L1-interleaved fallback: an op or its reader over 80% of L1 stays DRAM") {
  Graph g = fallback_graph();
  const device::ChipDesc chip = device::wormhole_b0();
  const uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  // b needs 85% of usable L1: it is valid on its own (under 100%), but above tt-mlir's 80% cap,
  // so a (whose reader b would hold it) and nothing of b's moves; f and c are unaffected.
  FallbackChecker checker(g, {{"b", usable / 100 * 85}});
  auto df = run_df_sharding(g, chip, PlannerOptions::with_policy("dram"), checker);
  REQUIRE(df);
  CHECK(df->l1_fallbacks == std::vector<ValueId>{value(g, "f"), value(g, "c")});
  CHECK(df->decision.tensors[value(g, "a")].buffer == device::BufferType::dram);
  // 75% passes: a moves again.
  FallbackChecker under(g, {{"b", usable / 100 * 75}});
  df = run_df_sharding(g, chip, PlannerOptions::with_policy("dram"), under);
  REQUIRE(df);
  CHECK(df->l1_fallbacks == std::vector<ValueId>{value(g, "a"), value(g, "f"), value(g, "c")});
}

TEST_CASE("df-sharding L1-interleaved fallback: an output override keeps the op as the user said") {
  Graph g = fallback_graph();
  FallbackChecker checker(g);
  PlannerOptions o = PlannerOptions::with_policy("dram");
  o.output_overrides = {"a=dram:interleaved"};
  auto df = run_df_sharding(g, device::wormhole_b0(), o, checker);
  REQUIRE(df);
  CHECK(df->l1_fallbacks == std::vector<ValueId>{value(g, "f"), value(g, "c")});
  CHECK(df->decision.tensors[value(g, "a")].buffer == device::BufferType::dram);
}

TEST_CASE("df-sharding L1-interleaved fallback: the real OpModel's plans run end to end") {
  // c1 -> dw -> pw -> pool -> gap -> flat (reshape) -> logits -> probs (the output).
  auto loaded = load_graph_file(source_path("examples/models/small_cnn.json"));
  REQUIRE_MESSAGE(loaded, (loaded ? std::string() : loaded.error().message));
  const Graph& g = *loaded;
  auto checker =
      make_opmodel_checker(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"));
  auto df =
      run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), *checker);
  REQUIRE(df);
  std::string dump = df->print(g);
  MESSAGE(dump);
  // The convolutions and the pool form one chain, whose output spills to DRAM. Outside it, gap's
  // result is read only by flat and logits' only by probs, each scheduled right after: both move
  // to L1 interleaved. flat's result is held by the reshape reservation instead, and probs'
  // result is the graph output, which stays in DRAM.
  CHECK(dump.find("chain [c1 dw pw pool] completed") != std::string::npos);
  CHECK(df->l1_fallbacks == std::vector<ValueId>{value(g, "gap_out"), value(g, "logits_out")});
  CHECK(df->decision.tensors[value(g, "probs_out")].buffer == device::BufferType::dram);
  PlannerOptions o;
  o.policy = "df-sharding";
  E2E e = run_e2e(g, device::wormhole_b0(), o);  // runs on the emulator and checks the result
  CHECK(e.l1_outputs >= 2);
}

// applyL1ReservationsForReshapes (seed 001 §4.1.7, step 5).
namespace {
/// x -> a1 = relu(x); a2 = relu(a1); rs = reshape(a2) to 128x128; m = add(y, y) (y: a 128x128
/// input); o = add(rs, m) (the output), in schedule order.
Graph reshape_graph() {
  GraphBuilder b("reshape_chain");
  auto x = b.input("x", {64, 256});
  auto a2 = b.relu("a2", b.relu("a1", x));
  auto rs = b.op(device::OpKind::reshape, "rs", {a2},
                 {Attribute{"shape", std::vector<int64_t>{128, 128}}});
  auto y = b.input("y", {128, 128});
  auto m = b.add("m", y, y);
  auto out = b.add("o", rs, m);
  b.output(out);
  return b.finish();
}
}  // namespace

TEST_CASE("df-sharding: a reshape keeps its result in L1 and saves its input chain a DRAM spill") {
  Graph g = reshape_graph();
  FallbackChecker checker(g);
  auto df = run_df_sharding(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"), checker);
  REQUIRE(df);
  std::string dump = df->print(g);
  MESSAGE(dump);
  // [a1 a2] ends at position 1 and only rs (position 2) reads a2: a2 goes L1 interleaved
  // (64x256 bf16 = 16 tiles of 2 KiB over 64 cores: 2048 B/core), reserved [1, 2]. rs's result
  // (128x128, again 16 tiles) stays in L1 up to its reader o at 4. m (3) is read only by o (4):
  // the fallback moves it.
  CHECK(dump ==
        "chain [a1 a2] completed spill l1_interleaved\n"
        "reserve %a2 [1, 2] 2048 B/core\n"
        "reserve %rs [2, 4] 2048 B/core\n"
        "fallback %m l1_interleaved\n");
  CHECK(df->decision.spills.empty());
  CHECK(df->decision.tensors[value(g, "a2")] ==
        interleaved_layout(g.values[value(g, "a2")], device::BufferType::l1));
  CHECK(df->decision.tensors[value(g, "rs")] ==
        interleaved_layout(g.values[value(g, "rs")], device::BufferType::l1));
}

TEST_CASE("df-sharding: a reshape result that does not fit beside the ops up to its reader stays") {
  Graph g = reshape_graph();
  const device::ChipDesc chip = device::wormhole_b0();
  const uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  // m, scheduled between rs and its reader, needs all usable L1 but 1 KiB: rs's 2048 B/core do
  // not fit beside it, so rs stays in DRAM; a2 still goes to L1 for rs, and m (over 80%) stays.
  FallbackChecker checker(g, {{"m", usable - 1024}});
  auto df = run_df_sharding(g, chip, PlannerOptions::with_policy("dram"), checker);
  REQUIRE(df);
  std::string dump = df->print(g);
  MESSAGE(dump);
  CHECK(dump ==
        "chain [a1 a2] completed spill l1_interleaved\n"
        "reserve %a2 [1, 2] 2048 B/core\n");
  CHECK(df->decision.tensors[value(g, "rs")].buffer == device::BufferType::dram);
}

// insert-memreconfig on a chain edge is a reshard edge inside ShardSolver.
TEST_CASE("df-sharding: a memreconfig on a chain edge is the solver's reshard on that edge") {
  GraphBuilder b("chain3");
  auto a = b.relu("a", b.input("x", {64, 256}));
  auto c = b.relu("b", a);
  b.output(b.relu("c", c));
  Graph g = b.finish();
  PlannerOptions o = PlannerOptions::with_policy("dram");
  o.memreconfig = {"b:0=dram"};
  FallbackChecker checker(g);
  auto df = run_df_sharding(g, device::wormhole_b0(), o, checker, /*record_solver=*/true);
  REQUIRE(df);
  REQUIRE(df->chains.size() == 1);
  CHECK(df->chains[0].state == ChainState::completed);
  // Edge a -> b (node 0 -> 1) is forced through a move of %a to DRAM interleaved, which b's one
  // config accepts; the solver takes the move, so nothing is left for after it.
  CHECK(df->chains[0].solver.find("edge 0->1.0: (0,0) [reshard]") != std::string::npos);
  REQUIRE(df->decision.reshards.size() == 1);
  CHECK(df->decision.reshards[0].before == 1);
  CHECK(df->decision.reshards[0].operand == 0);
  CHECK(df->decision.reshards[0].to ==
        interleaved_layout(g.values[value(g, "a")], device::BufferType::dram));
  CHECK(df->moves_after.empty());
  for (const char* name : {"a", "b", "c"})
    CHECK(df->decision.tensors[value(g, name)] == FallbackChecker::shard());

  // b refuses DRAM input: the forced edge enables no config, the chain fails naming the edge, and
  // the move is left to be applied to the (DRAM) result.
  FallbackChecker no_dram(g, {}, {"b"});
  df = run_df_sharding(g, device::wormhole_b0(), o, no_dram);
  REQUIRE(df);
  CHECK(df->chains[0].state == ChainState::failed);
  CHECK(df->chains[0].failure ==
        "edge a -> b (operand 0 %a): the forced reshard (memreconfig) enables no consumer config");
  REQUIRE(df->moves_after.size() == 1);
  CHECK(df->moves_after[0].op == 1);
}

TEST_CASE("df-sharding: a memreconfig on a chain edge is planned once, with the real OpModel") {
  Graph g = mlp_example();  // chain [bias1 act1]: act1 reads z1 from bias1 on operand 0
  PlannerOptions o;
  o.policy = "df-sharding";
  o.memreconfig = {"act1:0=dram"};
  auto plan = plan_layout(g, device::wormhole_b0(), o);
  REQUIRE(plan);
  // act1 reads a reshard of z1 to DRAM interleaved (the solver's edge), and exactly one: the move
  // is not applied again after the solver.
  int moves = 0;
  for (OpId k = 0; k < plan->graph.ops.size(); ++k) {
    const Op& op = plan->graph.ops[k];
    if (op.name != "act1") continue;
    ValueId in = op.operands[0];
    OpId p = plan->graph.values[in].producer;
    REQUIRE(p != kNoOp);
    CHECK(plan->origin[p] == OpOrigin::reshard);
    CHECK(plan->layout.tensors[in].buffer == device::BufferType::dram);
    ValueId src = plan->graph.ops[p].operands[0];
    OpId q = plan->graph.values[src].producer;
    CHECK(plan->graph.ops[q].name == "bias1");
    ++moves;
  }
  CHECK(moves == 1);
  E2E e = run_e2e(g, device::wormhole_b0(), o);  // runs on the emulator and checks the result
  CHECK(e.reshards >= 1);
}
