// User overrides (override-output-layout, insert-memreconfig) and the exhaustive search the
// beam is measured against.
#include <doctest/doctest.h>

#include <functional>

#include "graphs.hpp"
#include "meshplan/planner/memory_plan.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/testing.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

// Whether a plan is one of the decisions exhaustive_search covers with this pool: result layouts
// and reshard targets among the pool's candidates, spills of L1 values to DRAM interleaved on the
// grid spill management gives them (op configs are not compared: a policy may choose a program
// config the search does not).
bool in_search_space(const planner::LayoutResult& r, const device::ChipDesc& chip, uint32_t pool) {
  using namespace planner;
  for (OpId p = 0; p < r.graph.ops.size(); ++p) {
    const Op& op = r.graph.ops[p];
    const TensorLayout& l = r.layout.tensors[op.results[0]];
    if (r.origin[p] == OpOrigin::spill) {
      const TensorLayout& from = r.layout.tensors[op.operands[0]];
      device::OpConfig want = config_for(device::OpConfig{}, from, chip);
      if (!from.in_l1() ||
          !(l == interleaved_layout(r.graph.values[op.results[0]], device::BufferType::dram)) ||
          r.layout.configs[p].grid_x != want.grid_x || r.layout.configs[p].grid_y != want.grid_y)
        return false;
      continue;
    }
    auto cands = layout_candidates(r.graph.values[op.results[0]], chip, pool);
    if (std::find(cands.begin(), cands.end(), l) == cands.end()) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("an output override fixes the op's result memory in every policy") {
  for (std::string policy : {"dram", "l1-interleaved", "greedy", "beam"}) {
    CAPTURE(policy);
    planner::PlannerOptions o;
    o.policy = policy;
    o.output_overrides = {"q_proj=dram", "k_proj=l1"};
    auto r = planner::plan_layout(qkv_graph(), device::wormhole_b0(), o);
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
    for (const planner::Op& op : r->graph.ops) {
      if (op.name == "q_proj") CHECK_FALSE(r->layout.tensors[op.results[0]].in_l1());
      if (op.name == "k_proj") CHECK(r->layout.tensors[op.results[0]].in_l1());
    }
    run_e2e(qkv_graph(), device::wormhole_b0(), o);
  }
}

TEST_CASE("a forced memreconfig inserts a reshard before the operand") {
  for (std::string policy : {"dram", "greedy", "beam"}) {
    CAPTURE(policy);
    planner::PlannerOptions o;
    o.policy = policy;
    o.memreconfig = {"out:1=l1"};
    auto r = planner::plan_layout(qkv_graph(), device::wormhole_b0(), o);
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
    CHECK(r->reshards == 1);
    bool found = false;
    for (planner::OpId i = 0; i < r->graph.ops.size(); ++i)
      if (r->origin[i] == planner::OpOrigin::reshard) {
        found = true;
        CHECK(r->graph.ops[i + 1].name == "out");
        CHECK(r->graph.ops[i + 1].operands[1] == r->graph.ops[i].results[0]);
        CHECK(r->layout.tensors[r->graph.ops[i].results[0]].in_l1());
      }
    CHECK(found);
    E2E e = run_e2e(qkv_graph(), device::wormhole_b0(), o);
    CHECK(e.reshards == 1);
  }
}

TEST_CASE("an override OpModel rejects fails with OpModel's reason; unknown ops are named") {
  for (std::string policy : {"dram", "l1-interleaved", "greedy", "beam"}) {
    CAPTURE(policy);
    planner::PlannerOptions o;
    o.policy = policy;
    o.output_overrides = {"big=l1"};  // 2000 KiB on one core
    auto r = planner::plan_layout(big_output_graph(), one_core_chip(), o);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::invalid_argument);
    CHECK(r.error().message.find("output override for op 'big' is illegal") != std::string::npos);
    CHECK(r.error().message.find("usable") != std::string::npos);  // OpModel's words
  }
  planner::PlannerOptions o;
  o.policy = "greedy";
  o.output_overrides = {"nosuch=l1"};
  auto r = planner::plan_layout(qkv_graph(), device::wormhole_b0(), o);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("no op named 'nosuch'") != std::string::npos);
  o.output_overrides = {"q_proj=sram"};
  r = planner::plan_layout(qkv_graph(), device::wormhole_b0(), o);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("invalid layout parameter 'sram'") != std::string::npos);
  o.output_overrides = {};
  o.memreconfig = {"out:2=l1"};
  r = planner::plan_layout(qkv_graph(), device::wormhole_b0(), o);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("has no operand '2'") != std::string::npos);
  // An index too large for any integer type is an error, not an exception.
  o.memreconfig = {"out:99999999999999999999999=l1"};
  r = planner::plan_layout(qkv_graph(), device::wormhole_b0(), o);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("has no operand '99999999999999999999999'") != std::string::npos);
}

TEST_CASE("the bounded exhaustive search finds the same optimum as the unbounded one") {
  // The unbounded search enumerates every spill subset and reshard of every op: graphs of up to 5
  // ops with 3 candidates per tensor keep it to seconds.
  std::vector<std::pair<planner::Graph, device::ChipDesc>> cases = {
      {farthest_graph(), one_core_chip()},
      {farthest_graph(false), one_core_chip()},
      {join_graph(), one_core_chip()},
      {qkv_graph(), one_core_chip()},
  };
  for (const auto& [g, chip] : cases) {
    CAPTURE(g.name);
    planner::PlannerOptions o;
    o.policy = "dram";
    o.max_legal_layouts = 3;
    auto best = planner::exhaustive_search(g, chip, o);
    REQUIRE_MESSAGE(best, (best ? std::string() : best.error().message));
    auto unbounded = planner::exhaustive_search(g, chip, o, 10, /*bounded=*/false);
    REQUIRE_MESSAGE(unbounded, (unbounded ? std::string() : unbounded.error().message));
    CHECK(best->estimated_ns == unbounded->estimated_ns);
  }
}

TEST_CASE("exhaustive search finds the optimum of small graphs; beam's gap to it") {
  std::vector<std::pair<planner::Graph, device::ChipDesc>> cases = {
      {mlp_example(), device::wormhole_b0()},   {residual_graph(), device::wormhole_b0()},
      {qkv_graph(), device::wormhole_b0()},     {residual_graph(), one_core_chip()},
      {qkv_graph(), one_core_chip()},           {farthest_graph(), one_core_chip()},
      {farthest_graph(false), one_core_chip()}, {join_graph(), one_core_chip()},
  };
  for (const auto& [g, chip] : cases) {
    CAPTURE(g.name);
    CAPTURE(chip.name);
    planner::PlannerOptions o;
    o.policy = "beam";
    // The search is exponential in candidates per tensor; its bounds (relaxed cost of the
    // remaining ops, memoised per live state) keep a pool of 8 (the best-ranked candidates,
    // sharded ones included) to seconds. Beam plans with the same pool, so the gap compares like
    // with like.
    o.max_legal_layouts = 8;
    auto best = planner::exhaustive_search(g, chip, o);
    REQUIRE_MESSAGE(best, (best ? std::string() : best.error().message));
    // The optimum is a real plan: it fits, every op is valid and it costs what the search said.
    planner::LayoutResult* r = &best->plan;
    CHECK(planner::fit_and_validate(*r, chip));
    CHECK(r->estimated_ns(chip) == best->estimated_ns);
    auto beam = planner::plan_layout(g, chip, o);
    REQUIRE(beam);
    uint64_t beam_ns = beam->estimated_ns(chip);
    double gap = static_cast<double>(beam_ns) / static_cast<double>(best->estimated_ns) - 1.0;
    MESSAGE(g.name, " on ", chip.name, ": optimum ", best->estimated_ns, " ns (", best->plans_tried,
            " complete plans; ", r->reshards, " reshards, ", r->spills, " spills), beam ", beam_ns,
            " ns, gap ", gap * 100, "%, beam reshards ", beam->reshards, " spills ", beam->spills);
    // Every policy's plan of these graphs is in the searched space, so the optimum bounds it.
    CHECK(in_search_space(*beam, chip, 8));
    CHECK(best->estimated_ns <= beam_ns);
    for (std::string p : {"dram", "l1-interleaved", "greedy", "df-sharding"}) {
      CAPTURE(p);
      auto other = planner::plan_layout(g, chip, [&] {
        planner::PlannerOptions x;
        x.policy = p;
        return x;
      }());
      REQUIRE(other);
      CHECK(in_search_space(*other, chip, 8));
      CHECK(best->estimated_ns <= other->estimated_ns(chip));
    }
  }
  planner::PlannerOptions o;
  o.policy = "dram";
  auto big = planner::exhaustive_search(mlp_example(), device::wormhole_b0(), o, 4);
  REQUIRE_FALSE(big);
  CHECK(big.error().message.find("more than 4") != std::string::npos);
}
