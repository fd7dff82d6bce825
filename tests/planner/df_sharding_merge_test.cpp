// DFShardingPolicy chain merging beyond A->B (seed 001 §4.1.2, §4.1.5-4.1.6): the concat (N-way)
// merge with its sharding constraints and cumulative L1 pressure, concat chain preferences, and
// the 3-way merge whose join op is validated again with both sharded inputs. A synthetic checker
// decides legality, as tt-mlir's optimizer tests do, so each scenario is exact.
#include <doctest/doctest.h>

#include <set>

#include "graphs.hpp"
#include "meshplan/planner/df_sharding.hpp"

using namespace meshplan;
using namespace meshplan::planner;
using namespace meshplan::test;

namespace {

using device::MemLayout;

/// A sharded layout of `shape` ([rows, cols]) on 8 cores (block: 2x2 cores).
TensorLayout sharded(const std::vector<int64_t>& shape, MemLayout m) {
  TensorLayout t;
  t.buffer = device::BufferType::l1;
  t.memory = m;
  uint16_t gx = m == MemLayout::block_sharded ? 2 : 8, gy = m == MemLayout::block_sharded ? 2 : 1;
  t.shard.grid =
      device::CoreRange{0, 0, static_cast<uint16_t>(gx - 1), static_cast<uint16_t>(gy - 1)};
  t.shard.shape[0] = static_cast<uint32_t>(m == MemLayout::height_sharded  ? shape[0] / 8
                                           : m == MemLayout::block_sharded ? shape[0] / 2
                                                                           : shape[0]);
  t.shard.shape[1] = static_cast<uint32_t>(m == MemLayout::width_sharded   ? shape[1] / 8
                                           : m == MemLayout::block_sharded ? shape[1] / 2
                                                                           : shape[1]);
  return t;
}

/// relu and add shard in the layouts of `kinds` (in that order); concat in height and width. A
/// sharded input is accepted when its memory layout is the result's. Every op needs `need` bytes
/// of L1 per core; ops named in `no_pair` reject two sharded inputs at once.
class MergeChecker final : public ShardChecker {
 public:
  MergeChecker(const Graph& g, std::vector<MemLayout> kinds, uint64_t need,
               std::set<std::string> no_pair = {})
      : g_(g), kinds_(std::move(kinds)), need_(need), no_pair_(std::move(no_pair)) {}
  std::vector<TensorLayout> legal_configs(OpId o) const override {
    const Op& op = g_.ops[o];
    const auto& shape = g_.values[op.results[0]].shape;
    std::vector<TensorLayout> out;
    if (op.kind == device::OpKind::concat) {
      for (MemLayout m : {MemLayout::height_sharded, MemLayout::width_sharded})
        out.push_back(sharded(shape, m));
    } else if (op.kind == device::OpKind::relu || op.kind == device::OpKind::add) {
      for (MemLayout m : kinds_) out.push_back(sharded(shape, m));
    }
    return out;
  }
  bool valid(OpId, uint32_t, const TensorLayout& in, const TensorLayout& out) const override {
    if (in.memory == MemLayout::interleaved || out.memory == MemLayout::interleaved) return true;
    return in.memory == out.memory;
  }
  bool valid_all(OpId o, const std::vector<TensorLayout>& in, const TensorLayout& out,
                 uint64_t* l1) const override {
    if (l1) *l1 = need_;
    int sharded_inputs = 0;
    for (uint32_t i = 0; i < in.size(); ++i) {
      if (!valid(o, i, in[i], out)) return false;
      if (in[i].memory != MemLayout::interleaved) ++sharded_inputs;
    }
    return !(sharded_inputs >= 2 && no_pair_.count(g_.ops[o].name));
  }
  std::vector<TensorLayout> reshard_targets(ValueId) const override { return {}; }
  bool move_valid(ValueId, const TensorLayout&, const TensorLayout&) const override { return true; }

 private:
  const Graph& g_;
  std::vector<MemLayout> kinds_;
  uint64_t need_;
  std::set<std::string> no_pair_;
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

/// Three relu chains concatenated along `axis`, then a relu.
Graph concat_graph(int64_t axis) {
  GraphBuilder b("concat3");
  auto x = b.input("x", {256, 256});
  auto a = b.relu("a", x);
  auto c = b.relu("b", x);
  auto e = b.relu("c", x);
  auto cat = b.op(device::OpKind::concat, "cat", {a, c, e}, {planner::Attribute{"axis", axis}});
  b.output(b.relu("out", cat));
  return b.finish();
}

const device::ChipDesc kChip = device::wormhole_b0();
const uint64_t kUsable = kChip.l1_usable_top() - kChip.l1_unreserved_base;
// One [256, 256] input, height sharded on 8 cores: 8 tiles of 2 KiB per core.
constexpr uint64_t kInput = 8 * 2048;

}  // namespace

TEST_CASE("df-sharding concat merge: a width concat keeps its three height-sharded inputs in L1") {
  Graph g = concat_graph(-1);
  MergeChecker checker(g, {MemLayout::height_sharded, MemLayout::width_sharded}, 64 << 10);
  auto df = run_df_sharding(g, kChip, PlannerOptions::with_policy("dram"), checker);
  REQUIRE(df);
  std::string dump = df->print(g);
  MESSAGE(dump);
  // The concat is isolated in its own chain; the inputs' chains end at it.
  CHECK(dump.find("chain [a] completed spill none\nchain [b] completed spill none\nchain [c] "
                  "completed spill none\nchain [cat] completed") != std::string::npos);
  // Cumulative reservations: each input from its producer to the concat.
  CHECK(dump.find("reserve %a [0, 3] 16384 B/core") != std::string::npos);
  CHECK(dump.find("reserve %b [1, 3] 16384 B/core") != std::string::npos);
  CHECK(dump.find("reserve %c [2, 3] 16384 B/core") != std::string::npos);
  for (const char* v : {"a", "b", "c"}) {
    CAPTURE(v);
    CHECK_FALSE(spilled(df->decision, value(g, v)));
    CHECK(df->decision.tensors[value(g, v)].memory == MemLayout::height_sharded);
  }
  CHECK(df->decision.tensors[value(g, "cat")].memory == MemLayout::height_sharded);
  CHECK(df->chains[3].concat);
}

TEST_CASE("df-sharding concat preferences: a height concat makes its input chains width sharded") {
  Graph g = concat_graph(0);
  // Without the preference the solver would take height sharding (first of the equal-core
  // configs); the concat needs width-sharded inputs.
  MergeChecker checker(g, {MemLayout::height_sharded, MemLayout::width_sharded}, 64 << 10);
  auto df = run_df_sharding(g, kChip, PlannerOptions::with_policy("dram"), checker);
  REQUIRE(df);
  MESSAGE(df->print(g));
  for (const char* v : {"a", "b", "c"}) {
    CAPTURE(v);
    CHECK(df->decision.tensors[value(g, v)].memory == MemLayout::width_sharded);
    CHECK_FALSE(spilled(df->decision, value(g, v)));
  }
  CHECK(df->decision.tensors[value(g, "cat")].memory == MemLayout::width_sharded);
  // The consumer chain got the same preference.
  CHECK(df->chains[4].preferred == MemLayout::width_sharded);
  CHECK(df->decision.tensors[value(g, "out")].memory == MemLayout::width_sharded);
}

TEST_CASE("df-sharding concat limit: block-sharded inputs are not supported, the inputs spill") {
  Graph g = concat_graph(-1);
  MergeChecker checker(g, {MemLayout::block_sharded}, 64 << 10);
  auto df = run_df_sharding(g, kChip, PlannerOptions::with_policy("dram"), checker);
  REQUIRE(df);
  std::string dump = df->print(g);
  MESSAGE(dump);
  CHECK(dump.find("chain [cat] failed") != std::string::npos);
  for (const char* v : {"a", "b", "c"}) {
    CAPTURE(v);
    CHECK(df->decision.tensors[value(g, v)].memory == MemLayout::block_sharded);
    CHECK(spilled(df->decision, value(g, v)));
  }
  // The failed concat chain leaves cat's result in DRAM; its one reader `out` runs next and takes
  // an interleaved input, so the L1-interleaved fallback moves it to L1, unsharded.
  CHECK(df->decision.tensors[value(g, "cat")] ==
        interleaved_layout(g.values[value(g, "cat")], device::BufferType::l1));
  CHECK(df->l1_fallbacks == std::vector<ValueId>{value(g, "cat")});
  // A concat along a middle axis of a rank-3 tensor has no supported layout either.
  GraphBuilder b("concat_mid");
  auto x = b.input("x", {2, 64, 64});
  auto l = b.relu("l", x);
  auto r = b.relu("r", x);
  b.output(b.op(device::OpKind::concat, "cat", {l, r}, {planner::Attribute{"axis", int64_t{0}}}));
  Graph g3 = b.finish();
  MergeChecker checker3(g3, {MemLayout::height_sharded}, 64 << 10);
  auto df3 = run_df_sharding(g3, kChip, PlannerOptions::with_policy("dram"), checker3);
  REQUIRE(df3);
  CHECK(df3->print(g3).find("chain [cat] failed") != std::string::npos);
}

TEST_CASE("df-sharding concat merge: cumulative pressure decides, all inputs or none") {
  Graph g = concat_graph(-1);
  // Every op needs `need`; the concat must also hold all three 16 KiB inputs, the op producing
  // the third input the first two.
  for (uint64_t spare : {3 * kInput, 3 * kInput - 1}) {
    CAPTURE(spare);
    MergeChecker checker(g, {MemLayout::height_sharded}, kUsable - spare);
    auto df = run_df_sharding(g, kChip, PlannerOptions::with_policy("dram"), checker);
    REQUIRE(df);
    std::string dump = df->print(g);
    MESSAGE(dump);
    bool fits = spare >= 3 * kInput;
    for (const char* v : {"a", "b", "c"}) {
      CAPTURE(v);
      CHECK(spilled(df->decision, value(g, v)) == !fits);
    }
    CHECK((dump.find("chain [cat] completed") != std::string::npos) == fits);
    CHECK((dump.find("reserve %") != std::string::npos) == fits);
  }
}

TEST_CASE("df-sharding 3-way merge: both inputs of a join stay in L1, validated together") {
  auto build = [] {
    GraphBuilder b("three_way");
    auto x = b.input("x", {256, 256});
    auto a = b.relu("a", x);    // chain A (operand 0 of the join)
    auto c = b.relu("c", x);    // chain C, runs while A's output waits in L1
    auto j = b.add("j", a, c);  // first op of chain B
    b.output(b.relu("out", j));
    return b.finish();
  };
  Graph g = build();
  {
    MergeChecker checker(g, {MemLayout::height_sharded}, 64 << 10);
    auto df = run_df_sharding(g, kChip, PlannerOptions::with_policy("dram"), checker);
    REQUIRE(df);
    std::string dump = df->print(g);
    MESSAGE(dump);
    CHECK(dump.find("chain [a] completed spill none") != std::string::npos);
    CHECK(dump.find("chain [c] completed spill none") != std::string::npos);
    CHECK(dump.find("reserve %a [0, 2]") != std::string::npos);
    CHECK(dump.find("reserve %c [1, 2]") != std::string::npos);
  }
  {
    // The join takes either input sharded, but not both: the second merge is rejected when the
    // join is validated with both sharded inputs.
    MergeChecker checker(g, {MemLayout::height_sharded}, 64 << 10, {"j"});
    auto df = run_df_sharding(g, kChip, PlannerOptions::with_policy("dram"), checker);
    REQUIRE(df);
    std::string dump = df->print(g);
    MESSAGE(dump);
    CHECK(dump.find("chain [a] completed spill none") != std::string::npos);
    CHECK(dump.find("chain [c] completed spill dram") != std::string::npos);
    CHECK(spilled(df->decision, value(g, "c")));
    CHECK_FALSE(spilled(df->decision, value(g, "a")));
  }
  {
    // Chain C must run with A's output as extra L1: with room for only one input beside an op,
    // A merges and C (whose op would need A's 16 KiB plus its own) does not.
    MergeChecker checker(g, {MemLayout::height_sharded}, kUsable - kInput - kInput / 2);
    auto df = run_df_sharding(g, kChip, PlannerOptions::with_policy("dram"), checker);
    REQUIRE(df);
    std::string dump = df->print(g);
    MESSAGE(dump);
    CHECK(dump.find("chain [a] completed spill none") != std::string::npos);
    CHECK(dump.find("chain [c] completed spill dram") != std::string::npos);
  }
}

TEST_CASE("df-sharding concat merge with the real OpModel: the plan runs end to end") {
  GraphBuilder b("concat_real");
  auto x = b.input("x", {256, 256});
  auto l = b.relu("l", x);
  auto r = b.relu("r", x);
  auto cat = b.op(device::OpKind::concat, "cat", {l, r}, {planner::Attribute{"axis", int64_t{-1}}});
  b.output(b.relu("out", cat));
  Graph g = b.finish();
  auto checker = make_opmodel_checker(g, kChip, PlannerOptions::with_policy("dram"));
  auto df = run_df_sharding(g, kChip, PlannerOptions::with_policy("dram"), *checker);
  REQUIRE(df);
  std::string dump = df->print(g);
  MESSAGE(dump);
  // Whether or not OpModel lets the concat keep its inputs in L1, the decision is consistent:
  // merged inputs are height sharded and not spilled, unmerged ones spilled.
  bool merged = dump.find("chain [cat] completed") != std::string::npos;
  for (const char* v : {"l", "r"}) {
    CAPTURE(v);
    CHECK(spilled(df->decision, value(g, v)) != merged);
    if (merged) CHECK(df->decision.tensors[value(g, v)].memory == MemLayout::height_sharded);
  }
  PlannerOptions o;
  o.policy = "df-sharding";
  run_e2e(g, kChip, o);
}
