// Op configs as candidates: OpQuery scores a matmul whose graph names no program by its cheapest
// valid program config, the plan carries that program, and the emulator runs it with the same
// clock; greedy takes the cheapest valid L1 result layout.
#include <doctest/doctest.h>

#include "builder.hpp"
#include "graphs.hpp"
#include "meshplan/planner/candidates.hpp"
#include "meshplan/planner/policy.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

/// x [64, 512] @ w [512, 512] (w a DRAM parameter) -> relu. Program none would read each weight
/// column twice (two output tile rows on different cores); a multicast program reads it once.
planner::Graph weight_graph() {
  GraphBuilder b("weights");
  auto x = b.input("x", {64, 512});
  auto w = b.param("w", {512, 512});
  auto y = b.matmul("mm", x, w);
  b.output(b.relu("act", y));
  return b.finish();
}

planner::PlannerOptions with_policy(const std::string& policy) {
  planner::PlannerOptions o;
  o.policy = policy;
  return o;
}

}  // namespace

TEST_CASE("an auto matmul is scored by its cheapest valid program, and the plan runs it") {
  planner::Graph g = weight_graph();
  device::ChipDesc chip = device::wormhole_b0();
  planner::OpQuery q(g, chip);
  const planner::Op& mm = g.ops[0];
  planner::TensorLayout dram_x = planner::interleaved_layout(g.values[mm.operands[0]],
                                                             device::BufferType::dram),
                        dram_w = planner::interleaved_layout(g.values[mm.operands[1]],
                                                             device::BufferType::dram),
                        l1_out = planner::interleaved_layout(g.values[mm.results[0]],
                                                             device::BufferType::l1);
  const planner::TensorLayout* in[] = {&dram_x, &dram_w};
  device::OpConfig base = planner::config_for(device::OpConfig{}, l1_out, chip);
  REQUIRE(planner::is_auto_matmul(mm.kind, base));
  device::OpConfig chosen =
      q.resolve_config(mm.kind, mm.name, mm.operands, in, mm.results[0], l1_out, base);
  CHECK(chosen.program != device::MatmulProgram::none);
  CHECK(q.validate(mm.kind, mm.name, mm.operands, in, mm.results[0], l1_out, chosen).ok);
  // The auto config's cost is the chosen program's, below program none's and no higher than any
  // valid program's.
  uint64_t auto_ns = q.cost(mm.kind, mm.name, mm.operands, in, mm.results[0], l1_out, base);
  device::OpConfig none = base;
  none.in0_block_w = 1;  // not auto any more, still program none
  uint64_t none_ns = q.cost(mm.kind, mm.name, mm.operands, in, mm.results[0], l1_out, none);
  CHECK(auto_ns == q.cost(mm.kind, mm.name, mm.operands, in, mm.results[0], l1_out, chosen));
  CHECK(auto_ns < none_ns);
  for (const device::OpConfig& c : planner::matmul_program_configs(base)) {
    if (!q.validate(mm.kind, mm.name, mm.operands, in, mm.results[0], l1_out, c).ok) continue;
    CHECK(auto_ns <= q.cost(mm.kind, mm.name, mm.operands, in, mm.results[0], l1_out, c));
  }
  // Every policy's plan carries a multicast program for the matmul, the emulator's clock is
  // consistent with the planner's estimate, and the result matches the reference.
  for (const char* policy : {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"}) {
    CAPTURE(policy);
    auto r = planner::plan_layout(g, chip, with_policy(policy));
    REQUIRE(r);
    for (planner::OpId o = 0; o < r->graph.ops.size(); ++o)
      if (r->graph.ops[o].kind == device::OpKind::matmul)
        CHECK(r->layout.configs[o].program != device::MatmulProgram::none);
    E2E e = run_e2e(g, chip, with_policy(policy));
    // Consistency check, not a validation: both sum device::estimate().
    CHECK(e.estimated_ns == e.device_ns);
  }
}

TEST_CASE("greedy takes the cheapest valid L1 result layout for each op") {
  device::ChipDesc chip = device::wormhole_b0();
  for (const planner::Graph& g : {mlp_example(), qkv_graph(), weight_graph()}) {
    CAPTURE(g.name);
    planner::PlannerOptions o = with_policy("greedy");
    auto r = planner::plan_layout(g, chip, o);
    REQUIRE(r);
    REQUIRE(r->spills == 0);  // no layout was changed after greedy chose it
    planner::OpQuery q(r->graph, chip);
    for (planner::OpId op_id = 0; op_id < r->graph.ops.size(); ++op_id) {
      const planner::Op& op = r->graph.ops[op_id];
      const planner::TensorLayout& chosen = r->layout.tensors[op.results[0]];
      if (!chosen.in_l1()) continue;
      CAPTURE(op.name);
      std::vector<const planner::TensorLayout*> in;
      for (planner::ValueId v : op.operands) in.push_back(&r->layout.tensors[v]);
      device::OpConfig base = *planner::op_config(op);
      uint64_t chosen_ns = q.cost(op.kind, op.name, op.operands, in, op.results[0], chosen,
                                  planner::config_for(base, chosen, chip));
      for (const planner::TensorLayout& t :
           planner::layout_candidates(r->graph.values[op.results[0]], chip, o.max_legal_layouts)) {
        if (!t.in_l1()) continue;
        device::OpConfig c = planner::config_for(base, t, chip);
        if (!q.validate(op.kind, op.name, op.operands, in, op.results[0], t, c).ok) continue;
        CHECK(chosen_ns <= q.cost(op.kind, op.name, op.operands, in, op.results[0], t, c));
      }
    }
  }
}

TEST_CASE("greedy repairs a sharded result that slows its reader (BERT's FFN)") {
  // x [384, 768] -> matmul w1 [768, 3072] -> relu -> matmul w2 [3072, 768]. Alone, the
  // first matmul is cheapest with a width-sharded result, which makes the second matmul read a
  // width-sharded in0 (2.5x slower in BERT); the repair pass trades it for interleaved operands.
  GraphBuilder b("ffn");
  auto x = b.input("x", {384, 768});
  auto w1 = b.param("w1", {768, 3072});
  auto w2 = b.param("w2", {3072, 768});
  auto h = b.relu("act", b.matmul("up", x, w1));
  b.output(b.matmul("down", h, w2));
  planner::Graph g = b.finish();
  device::ChipDesc chip = device::wormhole_b0();
  auto greedy = planner::plan_layout(g, chip, with_policy("greedy"));
  auto interleaved = planner::plan_layout(g, chip, with_policy("l1-interleaved"));
  REQUIRE(greedy);
  REQUIRE(interleaved);
  CHECK(greedy->estimated_ns(chip) <= interleaved->estimated_ns(chip));
  E2E e = run_e2e(g, chip, with_policy("greedy"));
  // Consistency check, not a validation: both sum device::estimate().
  CHECK(e.estimated_ns == e.device_ns);
}
