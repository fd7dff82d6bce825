// conv2d deallocate_activation in the planner: the L1 packing lets the conv's result take the
// L1 of the input it frees (and nothing else), the memory verifier accepts exactly that overlap,
// an input the conv may not free is refused naming it, df-sharding sets the flag where tt-mlir
// does, the override states it, and the plans run on the emulator to the reference.
#include <doctest/doctest.h>

#include "builder.hpp"
#include "meshplan/planner/df_sharding.hpp"
#include "meshplan/planner/memory_plan.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/schedule.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

/// x [1,16,16,32] -> relu pre -> conv1 3x3 pad 1 (32 out) -> relu act -> output; with `reuse`,
/// pre is also added to act after the conv (so the conv is not its last use).
planner::Graph pre_conv(bool reuse = false, bool pre_is_output = false) {
  GraphBuilder b("pre_conv");
  auto x = b.input("x", {1, 16, 16, 32});
  auto w = b.param("w", {32, 3, 3, 32});
  auto pre = b.relu("pre", x);
  auto c = b.op(device::OpKind::conv2d, "conv1", {pre, w},
                {planner::Attribute{"padding", std::vector<int64_t>{1, 1}}});
  auto act = b.relu("act", c);
  if (reuse) act = b.add("sum", act, pre);
  b.output(act);
  if (pre_is_output) b.output(pre);
  return b.finish();
}

planner::ValueId id(const planner::Graph& g, std::string_view name) {
  for (planner::ValueId v = 0; v < g.values.size(); ++v)
    if (g.values[v].name == name) return v;
  FAIL("no value ", name);
  return 0;
}

planner::OpId op_id(const planner::Graph& g, std::string_view name) {
  for (planner::OpId o = 0; o < g.ops.size(); ++o)
    if (g.ops[o].name == name) return o;
  FAIL("no op ", name);
  return 0;
}

/// Every result in L1 interleaved on the one-core chip, conv1 freeing its input when `dealloc`.
planner::LayoutResult l1_plan(const planner::Graph& g, const device::ChipDesc& chip,
                              bool dealloc) {
  auto d = planner::LayoutDecision::all_dram(g, chip);
  REQUIRE(d);
  for (const planner::Op& op : g.ops) d->tensors[op.results[0]].buffer = device::BufferType::l1;
  auto r = planner::materialize(g, *d);
  REQUIRE(r);
  r->layout.configs[op_id(r->graph, "conv1")].deallocate_activation = dealloc;
  return std::move(*r);
}

}  // namespace

TEST_CASE("a conv2d that frees its input may take the input's L1, and verify_memory accepts it") {
  device::ChipDesc chip = one_core_chip();
  planner::Graph g = pre_conv();
  // [1,16,16,32] bf16 on one core: 16 tile rows x 1 tile column = 16 tiles of 2048 bytes.
  const uint64_t size = 16 * 2048, top = chip.l1_usable_top();
  for (bool dealloc : {false, true}) {
    CAPTURE(dealloc);
    planner::LayoutResult r = l1_plan(g, chip, dealloc);
    planner::Schedule s = planner::Schedule::build(r.graph);
    auto packing = planner::pack_l1(r.graph, s, r.layout, chip);
    REQUIRE_MESSAGE(packing, (packing ? std::string() : packing.error().message));
    REQUIRE(packing->unplaced.empty());
    uint64_t pre = packing->address[id(r.graph, "pre")];
    uint64_t conv = packing->address[id(r.graph, "conv1")];
    CHECK(pre == top - size);
    // Freed between the halo step and the result's allocation: the result takes the input's
    // place; kept to the op's end, the result goes below it.
    CHECK(conv == (dealloc ? top - size : top - 2 * size));
    CHECK(packing->high_water == 2 * size);  // act lives with conv1's result either way
    auto memory = planner::plan_memory(r.graph, s, r.layout, chip);
    REQUIRE_MESSAGE(memory, (memory ? std::string() : memory.error().message));
    auto ok = planner::verify_memory(r.graph, s, r.layout, *memory, chip);
    CHECK_MESSAGE(ok, (ok ? std::string() : ok.error().message));
  }
}

TEST_CASE("verify_memory accepts the freed input's overlap and no other") {
  device::ChipDesc chip = one_core_chip();
  planner::Graph g = pre_conv();
  planner::LayoutResult r = l1_plan(g, chip, true);
  planner::Schedule s = planner::Schedule::build(r.graph);
  auto memory = planner::plan_memory(r.graph, s, r.layout, chip);
  REQUIRE(memory);
  planner::ValueId pre = id(r.graph, "pre"), conv = id(r.graph, "conv1");
  REQUIRE(memory->address[pre] == memory->address[conv]);
  // The same addresses with the input kept to the op's end: the result overlaps a live tensor.
  planner::LayoutResult kept = l1_plan(g, chip, false);
  auto bad = planner::verify_memory(kept.graph, s, kept.layout, *memory, chip);
  REQUIRE_FALSE(bad);
  CHECK_MESSAGE(bad.error().message.find("memory plan does not verify") != std::string::npos,
                bad.error().message);
  CHECK_MESSAGE(bad.error().message.find("conv1") != std::string::npos, bad.error().message);
  // The conv frees only its input: its result over the weight (live across the op) is refused.
  planner::LayoutResult w_l1 = l1_plan(g, chip, true);
  planner::ValueId w = id(w_l1.graph, "w");
  w_l1.layout.tensors[w].buffer = device::BufferType::l1;
  auto m2 = planner::plan_memory(w_l1.graph, s, w_l1.layout, chip);
  REQUIRE_MESSAGE(m2, (m2 ? std::string() : m2.error().message));
  CHECK(planner::verify_memory(w_l1.graph, s, w_l1.layout, *m2, chip));
  CHECK(m2->address[w] != m2->address[conv]);
  m2->address[conv] = m2->address[w];
  auto over_w = planner::verify_memory(w_l1.graph, s, w_l1.layout, *m2, chip);
  REQUIRE_FALSE(over_w);
  CHECK_MESSAGE(over_w.error().message.find("memory plan does not verify") != std::string::npos,
                over_w.error().message);
}

TEST_CASE("an input the conv may not free is refused, naming the conv and the reason") {
  device::ChipDesc chip = one_core_chip();
  auto refused = [&](const planner::Graph& g, std::string_view words) {
    planner::LayoutResult r = l1_plan(g, chip, true);
    planner::Schedule s = planner::Schedule::build(r.graph);
    auto packing = planner::pack_l1(r.graph, s, r.layout, chip);
    REQUIRE_FALSE(packing);
    CHECK(packing.error().code == ErrorCode::invalid_argument);
    CHECK_MESSAGE(packing.error().message.find("conv2d 'conv1' frees its input 'pre'") !=
                      std::string::npos,
                  packing.error().message);
    CHECK_MESSAGE(packing.error().message.find(words) != std::string::npos,
                  packing.error().message);
  };
  refused(pre_conv(/*reuse=*/true), "op 'sum' reads it later");
  refused(pre_conv(false, /*pre_is_output=*/true), "it is a program output");
  // In DRAM: OpModel refuses the config.
  planner::Graph g = pre_conv();
  planner::LayoutResult r = l1_plan(g, chip, true);
  r.layout.tensors[id(r.graph, "pre")].buffer = device::BufferType::dram;
  planner::Schedule s = planner::Schedule::build(r.graph);
  auto packing = planner::pack_l1(r.graph, s, r.layout, chip);
  REQUIRE_FALSE(packing);
  CHECK_MESSAGE(packing.error().message.find("deallocate_activation frees an L1 input; 'pre' is "
                                             "in DRAM") != std::string::npos,
                packing.error().message);
}

TEST_CASE("df-sharding frees a conv2d's single-use L1 input, as tt-mlir's legacy pipeline") {
  device::ChipDesc chip = device::wormhole_b0();
  planner::PlannerOptions o = planner::PlannerOptions::with_policy("df-sharding");
  auto flag_of = [&](const planner::Graph& g) {
    auto r = planner::plan_layout(g, chip, o);
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
    planner::OpId c = op_id(r->graph, "conv1");
    // Whatever df-sharding chose for the input, the flag follows the rule.
    return std::pair{r->layout.configs[c].deallocate_activation,
                     r->layout.tensors[r->graph.ops[c].operands[0]].in_l1()};
  };
  auto [single, single_l1] = flag_of(pre_conv());
  REQUIRE(single_l1);  // relu -> conv is a chain: pre stays in L1.
  CHECK(single);
  CHECK_FALSE(flag_of(pre_conv(/*reuse=*/true)).first);           // another reader
  CHECK_FALSE(flag_of(pre_conv(false, /*pre_is_output=*/true)).first);  // a program output
  // A program argument read by the conv directly is never freed.
  {
    GraphBuilder b("arg_conv");
    auto x = b.input("x", {1, 16, 16, 32});
    auto w = b.param("w", {32, 3, 3, 32});
    auto c = b.op(device::OpKind::conv2d, "conv1", {x, w},
                  {planner::Attribute{"padding", std::vector<int64_t>{1, 1}}});
    b.output(b.relu("act", c));
    CHECK_FALSE(flag_of(b.finish()).first);
  }
  // Other policies leave it off.
  for (std::string policy : {"greedy", "beam"}) {
    CAPTURE(policy);
    auto r = planner::plan_layout(pre_conv(), chip, planner::PlannerOptions::with_policy(policy));
    REQUIRE(r);
    CHECK_FALSE(r->layout.configs[op_id(r->graph, "conv1")].deallocate_activation);
  }
  // The plan runs to the reference with the conv freeing its input.
  run_e2e(pre_conv(), chip, o);
}

TEST_CASE("override-conv2d-config deallocate_activation states the flag for every policy") {
  device::ChipDesc chip = device::wormhole_b0();
  for (std::string value : {"true", "false"}) {
    planner::Graph g = pre_conv();
    std::vector<std::string> outputs;
    auto ok = planner::apply_conv2d_config_overrides(
        g, std::vector<std::string>{"conv1=deallocate_activation#" + value}, outputs);
    REQUIRE_MESSAGE(ok, (ok ? std::string() : ok.error().message));
    for (std::string policy : {"greedy", "df-sharding"}) {
      CAPTURE(policy);
      CAPTURE(value);
      planner::PlannerOptions o = planner::PlannerOptions::with_policy(policy);
      auto r = planner::plan_layout(g, chip, o);
      REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
      planner::OpId c = op_id(r->graph, "conv1");
      if (value == "false" || r->layout.tensors[r->graph.ops[c].operands[0]].in_l1()) {
        CHECK(r->layout.configs[c].deallocate_activation == (value == "true"));
        run_e2e(g, chip, o);
      }
    }
  }
  // Stated on an input the conv is not the last reader of: the plan is refused, naming it.
  planner::Graph g = pre_conv(/*reuse=*/true);
  std::vector<std::string> outputs;
  REQUIRE(planner::apply_conv2d_config_overrides(
      g, std::vector<std::string>{"conv1=deallocate_activation#true"}, outputs));
  auto compiled = planner::compile(g, chip, planner::PlannerOptions::with_policy("df-sharding"));
  REQUIRE_FALSE(compiled);
  CHECK_MESSAGE(compiled.error().message.find("op 'sum' reads it later") != std::string::npos,
                compiled.error().message);
}
