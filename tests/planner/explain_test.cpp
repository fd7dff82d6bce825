// The per-chip pipeline's views (explain.hpp): stage dumps, --explain OP, --dump-solver, and the
// ShardSolver failure they name. One golden file per dump format (the mlp example, small).
#include "meshplan/planner/explain.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <set>
#include <sstream>

#include "golden_file.hpp"
#include "graphs.hpp"
#include "meshplan/planner/df_sharding.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/shard_solver.hpp"

using namespace meshplan;
using namespace meshplan::planner;
using namespace meshplan::test;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// relu ops shard on 8 or 4 cores; ops named in `reject` take no sharded input; nothing reshards.
class RejectingChecker final : public ShardChecker {
 public:
  RejectingChecker(const Graph& g, std::set<std::string> reject) : g_(g), reject_(reject) {}
  std::vector<TensorLayout> legal_configs(OpId o) const override {
    if (g_.ops[o].kind != device::OpKind::relu) return {};
    return {shard(8), shard(4)};
  }
  bool valid(OpId o, uint32_t, const TensorLayout& in, const TensorLayout&) const override {
    return in.memory == device::MemLayout::interleaved || !reject_.count(g_.ops[o].name);
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

std::string golden(const std::string& name) {
  return source_path("tests/planner/golden/" + name);
}

}  // namespace

TEST_CASE("ShardSolver names the edge with no valid path, or the entry") {
  // Three nodes of two configs in a line; edge 1->2 accepts no pair and nothing reshards.
  ShardSolver::Callbacks cb;
  cb.edge_ok = [](const ShardSolver::Edge& e, uint32_t, uint32_t) { return e.consumer != 2; };
  cb.entry_ok = [](uint32_t, uint32_t) { return true; };
  cb.reshards_for = [](const ShardSolver::Edge&, uint32_t) { return std::vector<TensorLayout>{}; };
  cb.cores = [](uint32_t, uint32_t c) { return c + 1; };
  ShardSolver solver({2, 2, 2}, {{0, 1, 0}, {1, 2, 0}}, cb);
  CHECK_FALSE(solver.resolve());
  REQUIRE(solver.failure());
  CHECK(solver.failure()->at == ShardSolver::Failure::At::edge);
  CHECK(solver.failure()->edge == ShardSolver::Edge{1, 2, 0});
  // No config accepts the chain's input: the entry.
  cb.edge_ok = [](const ShardSolver::Edge&, uint32_t, uint32_t) { return true; };
  cb.entry_ok = [](uint32_t, uint32_t) { return false; };
  ShardSolver entry({2, 2}, {{0, 1, 0}}, cb);
  CHECK_FALSE(entry.resolve());
  REQUIRE(entry.failure());
  CHECK(entry.failure()->at == ShardSolver::Failure::At::entry);
  // A chain that resolves has no failure.
  cb.entry_ok = [](uint32_t, uint32_t) { return true; };
  ShardSolver ok({2, 2}, {{0, 1, 0}}, cb);
  CHECK(ok.resolve());
  CHECK(ok.pick_max_core_usage());
  CHECK_FALSE(ok.failure());
}

TEST_CASE("--dump-solver: a failed chain names the edge that had no valid path") {
  GraphBuilder b("chain3");
  auto a = b.relu("a", b.input("x", {64, 256}));
  auto c = b.relu("b", a);
  b.output(b.relu("c", c));
  Graph g = b.finish();
  RejectingChecker checker(g, {"c"});
  auto df = run_df_sharding(g, device::wormhole_b0(), PlannerOptions{}, checker, true);
  REQUIRE(df);
  REQUIRE(df->chains.size() == 1);
  CHECK(df->chains[0].state == ChainState::failed);
  const std::string want_failure =
      "edge b -> c (operand 0 %b): no valid (producer, consumer) config pair and no reshard";
  CHECK(df->chains[0].failure == want_failure);
  std::string dump = df->print_solver(g);
  CHECK(dump.find("chain [a b c] failed spill dram\n") == 0);
  CHECK(dump.find("  failed: " + want_failure + "\n") != std::string::npos);
  // Both configs of each op are listed by index, and edge a -> b kept every pair.
  CHECK(dump.find("  node 0 a: 0=" + layout_string(shard(8)) + ", 1=" + layout_string(shard(4))) !=
        std::string::npos);
  CHECK(dump.find("  edge 0->1.0: (0,0) (0,1) (1,0) (1,1)\n") != std::string::npos);
  // Without `c` rejecting, the same chain completes and records no failure.
  RejectingChecker lenient(g, {});
  auto fine = run_df_sharding(g, device::wormhole_b0(), PlannerOptions{}, lenient, true);
  REQUIRE(fine);
  CHECK(fine->chains[0].state == ChainState::completed);
  CHECK(fine->chains[0].failure.empty());
  // Most cores: every op selects config 0 (8 cores).
  CHECK(fine->print_solver(g).find("  node 2: 0 (selected 0)\n") != std::string::npos);
}

TEST_CASE("--explain: candidates with costs or OpModel's reason, the L1 budget, and the choice") {
  Graph g = mlp_example();
  for (std::string policy : {"greedy", "df-sharding"}) {
    CAPTURE(policy);
    PlannerOptions o;
    o.policy = policy;
    auto planning = planning_graph(g, o);
    REQUIRE(planning);
    auto text = explain_op(*planning, device::wormhole_b0(), o, "act1");
    REQUIRE_MESSAGE(text, (text ? "" : text.error().message));
    auto planned = plan_layout(*planning, device::wormhole_b0(), o);
    REQUIRE(planned);
    const Graph& pg = planned->graph;
    OpId act1 = 0;
    while (pg.ops[act1].name != "act1") ++act1;
    const TensorLayout& chosen = planned->layout.tensors[pg.ops[act1].results[0]];
    // One line per candidate (relu [64x512]: its candidate pool), exactly one chosen: the plan's.
    size_t candidates = layout_candidates(pg.values[pg.ops[act1].results[0]], device::wormhole_b0(),
                                          o.max_legal_layouts)
                            .size();
    CHECK(count(*text, "\n    ") == candidates);
    CHECK(count(*text, "<- chosen") == 1);
    CHECK(text->find("    " + layout_string(chosen) + ": valid") != std::string::npos);
    CHECK(text->find("  choice: " + layout_string(chosen)) != std::string::npos);
    if (policy == "df-sharding")
      // The bias adds broadcast a row, which tt-metal's binary_ng runs with nothing sharded:
      // each chain ends before one, act1's runs from act1 to the next matmul.
      CHECK(text->find("  chain: [act1 fc2] completed\n") != std::string::npos);
  }
  PlannerOptions o;
  o.policy = "greedy";
  auto planning = planning_graph(g, o);
  REQUIRE(planning);
  // A matmul's sharded results are valid: the plain program refuses them, a multicast program
  // (1-D in0 multicast for width shards) writes them.
  auto fc1 = explain_op(*planning, device::wormhole_b0(), o, "fc1");
  REQUIRE(fc1);
  CHECK(fc1->find("    l1 width_sharded 8x2 [64x32]: valid") != std::string::npos);
  CHECK(fc1->find("rejected by OpModel") == std::string::npos);
  // bias1 adds to fc1's width-sharded result: a result sharded otherwise is refused, in
  // OpModel's words (tt-metal's binary op takes a sharded result's spec from its operand).
  auto bias1 = explain_op(*planning, device::wormhole_b0(), o, "bias1");
  REQUIRE(bias1);
  CHECK(bias1->find("    l1 block_sharded 8x2 [32x64]: rejected by OpModel: op 'bias1' (add)") !=
        std::string::npos);
  auto missing = explain_op(*planning, device::wormhole_b0(), o, "no_such_op");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::not_found);
  CHECK(missing.error().message.find("'no_such_op'") != std::string::npos);
}

TEST_CASE("--explain: a candidate that does not fit beside the live L1 tensors is flagged") {
  // 32 MiB tensors: 512 KiB per core on 64 cores. At 'second', 'first' is live (read by 'sum'),
  // so a candidate on 32 cores (1 MiB per core) does not fit beside it though OpModel accepts it.
  GraphBuilder b("live");
  auto first = b.relu("first", b.input("x", {4096, 4096}));
  b.output(b.add("sum", first, b.relu("second", first)));
  Graph g = b.finish();
  PlannerOptions o;
  o.policy = "greedy";
  auto text = explain_op(g, device::wormhole_b0(), o, "second");
  REQUIRE_MESSAGE(text, (text ? "" : text.error().message));
  // Every valid candidate: flagged exactly when circular buffers + result + live > usable.
  uint64_t live = 0, usable = 0;
  REQUIRE(std::sscanf(text->c_str() + text->find("  L1: "),
                      "  L1: %lu B/core held by tensors live across the op, %lu", &live,
                      &usable) == 2);
  CHECK(usable == device::wormhole_b0().l1_usable_top() - device::wormhole_b0().l1_unreserved_base);
  size_t flagged = 0, valid = 0;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find(": valid, ");
    if (at == std::string::npos) continue;
    ++valid;
    uint64_t ns = 0, cb = 0, result = 0;
    REQUIRE(std::sscanf(line.c_str() + at, ": valid, %lu ns, L1 %lu CB + %lu", &ns, &cb, &result) ==
            3);
    bool over = cb + result + live > usable;
    CHECK(over == (line.find("over the L1 budget") != std::string::npos));
    flagged += over;
  }
  CHECK(valid > 0);
  CHECK(live > 0);
  CHECK(flagged > 0);
}

TEST_CASE("--stop-after stages: layout before spills, spills after, addresses at memory") {
  // farthest: L1 is too small for every result, so spill management inserts spills.
  Graph g = farthest_graph();
  PlannerOptions o;
  o.policy = "greedy";
  auto layout = stage_json(g, device::wormhole_b0(), o, PlanStage::layout);
  auto spills = stage_json(g, device::wormhole_b0(), o, PlanStage::spills);
  auto memory = stage_json(g, device::wormhole_b0(), o, PlanStage::memory);
  REQUIRE(layout);
  REQUIRE(spills);
  REQUIRE(memory);
  auto decided = plan_layout_until(g, device::wormhole_b0(), o, LayoutStage::decided);
  auto spilled = plan_layout_until(g, device::wormhole_b0(), o, LayoutStage::spilled);
  REQUIRE(decided);
  REQUIRE(spilled);
  CHECK(decided->spills == 0);
  CHECK(count(*layout, "\"origin\": \"spill\"") == 0);
  CHECK(count(*spills, "\"origin\": \"spill\"") ==
        static_cast<size_t>(
            std::count(spilled->origin.begin(), spilled->origin.end(), OpOrigin::spill)));
  CHECK(count(*layout, "\"origin\": ") == decided->graph.ops.size());
  CHECK(count(*spills, "\"origin\": ") == spilled->graph.ops.size());
  CHECK(count(*memory, "\"address\": ") > 0);
  CHECK(layout->find("\"stage\": \"layout\"") != std::string::npos);
  // The emit stage is the plan itself, not a stage dump.
  CHECK_FALSE(stage_json(g, device::wormhole_b0(), o, PlanStage::emit));
  CHECK(plan_stage_from_name("spills") == PlanStage::spills);
  CHECK_FALSE(plan_stage_from_name("close"));
}

TEST_CASE("dump formats are stable (golden files, the mlp example)") {
  Graph g = mlp_example();
  PlannerOptions o;
  o.policy = "greedy";
  auto planning = planning_graph(g, o);
  REQUIRE(planning);
  auto candidates = stage_json(*planning, device::wormhole_b0(), o, PlanStage::candidates);
  auto layout = stage_json(*planning, device::wormhole_b0(), o, PlanStage::layout);
  auto memory = stage_json(*planning, device::wormhole_b0(), o, PlanStage::memory);
  auto explain = explain_op(*planning, device::wormhole_b0(), o, "act1");
  o.policy = "df-sharding";
  auto solver = dump_solver(*planning, device::wormhole_b0(), o);
  REQUIRE(candidates);
  REQUIRE(layout);
  REQUIRE(memory);
  REQUIRE(explain);
  REQUIRE(solver);
  check_golden_lines(golden("mlp_stage_candidates.json"), *candidates);
  check_golden_lines(golden("mlp_stage_layout.json"), *layout);
  check_golden_lines(golden("mlp_stage_memory.json"), *memory);
  check_golden_lines(golden("mlp_explain_act1.txt"), *explain);
  check_golden_lines(golden("mlp_dump_solver.txt"), *solver);
}
