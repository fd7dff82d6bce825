// Spill management when an op's operands end up unlike: tt-metal's concat takes its operands all
// sharded or all interleaved, so once an eviction moves one sharded L1 operand of a concat to
// DRAM, the concat as greedy placed it is refused. manage_spills() then moves the concat's other
// L1 operands to DRAM as well (and, were that not enough, its result) instead of failing with an
// internal error.
#include <doctest/doctest.h>

#include "builder.hpp"
#include "meshplan/planner/candidates.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/policy.hpp"

using namespace meshplan;
using namespace meshplan::planner;
using namespace meshplan::test;

namespace {

// OpModel's verdict on op `o` of a planned result, "" when valid.
std::string refusal(const LayoutResult& r, const device::ChipDesc& chip, OpId o) {
  OpQuery q(r.graph, chip);
  const Op& op = r.graph.ops[o];
  std::vector<const TensorLayout*> in;
  for (ValueId v : op.operands) in.push_back(&r.layout.tensors[v]);
  device::OpValidation v = q.explain(op.kind, op.name, op.operands, in, op.results[0],
                                     r.layout.tensors[op.results[0]], r.layout.configs[o]);
  return v.ok ? std::string() : v.reason;
}

OpId op_named(const Graph& g, std::string_view name) {
  for (OpId o = 0; o < g.ops.size(); ++o)
    if (g.ops[o].name == name) return o;
  FAIL("no op named ", name);
  return kNoOp;
}

}  // namespace

TEST_CASE("spill management moves a concat's other L1 operands to DRAM once one was evicted") {
  // x -> relu a, relu b -> concat(a, b) along the rows -> relu: greedy shards a, b and the concat
  // alike in L1 (checked below, so that the case does exercise the rule).
  GraphBuilder b("concat_spill");
  auto x = b.input("x", {256, 128});
  auto a = b.relu("a", x);
  auto c = b.relu("b", x);
  auto cat = b.op(device::OpKind::concat, "cat", {a, c}, {Attribute{"axis", int64_t{0}}});
  b.output(b.relu("after", cat));
  Graph g = b.finish();
  const device::ChipDesc chip = device::wormhole_b0();

  PlannerOptions o;
  o.policy = "greedy";
  auto ov = parse_overrides(g, chip, o);
  REQUIRE(ov);
  auto d = greedy_propagation(g, chip, o, *ov, /*sharded=*/true);
  REQUIRE_MESSAGE(d, (d ? std::string() : d.error().message));
  auto placed = materialize(g, *d);
  REQUIRE(placed);
  LayoutResult in = *placed;
  const OpId cat_op = op_named(in.graph, "cat");
  const ValueId va = in.graph.ops[cat_op].operands[0], vb = in.graph.ops[cat_op].operands[1];
  REQUIRE(in.layout.tensors[va].in_l1());
  REQUIRE(in.layout.tensors[vb].in_l1());
  REQUIRE(in.layout.tensors[va].memory != device::MemLayout::interleaved);
  REQUIRE(in.layout.tensors[vb].memory != device::MemLayout::interleaved);
  CHECK(refusal(in, chip, cat_op).empty());

  // `a` evicted at birth, as spill management does under L1 pressure: its producer writes DRAM
  // on the full grid. The concat's operands are now unlike.
  const OpId producer = in.graph.values[va].producer;
  in.layout.tensors[va] = interleaved_layout(in.graph.values[va], device::BufferType::dram);
  in.layout.configs[producer] =
      config_for(in.layout.configs[producer], in.layout.tensors[va], chip);
  CHECK(refusal(in, chip, cat_op).find("All tensors must be sharded or all must be interleaved") !=
        std::string::npos);

  auto out = manage_spills(in, chip);
  REQUIRE_MESSAGE(out, (out ? std::string() : out.error().message));
  // One spill: b's copy in DRAM, made just before the concat, which reads both from DRAM.
  CHECK(out->spills == in.spills + 1);
  const OpId cat_out = op_named(out->graph, "cat");
  REQUIRE(cat_out >= 1);
  const Op& move = out->graph.ops[cat_out - 1];
  CHECK(out->origin[cat_out - 1] == OpOrigin::spill);
  CHECK(move.kind == device::OpKind::to_memory_config);
  CHECK(move.operands == std::vector<ValueId>{vb});
  const Op& cat_after = out->graph.ops[cat_out];
  CHECK(cat_after.operands == std::vector<ValueId>{va, move.results[0]});
  for (ValueId v : cat_after.operands) {
    CHECK(out->layout.tensors[v].buffer == device::BufferType::dram);
    CHECK(out->layout.tensors[v].memory == device::MemLayout::interleaved);
  }
  // Every op of the spilled plan is valid, and the plan fits and validates.
  for (OpId p = 0; p < out->graph.ops.size(); ++p) {
    CAPTURE(out->graph.ops[p].name);
    CHECK(refusal(*out, chip, p).empty());
  }
  LayoutResult fitted = *out;
  auto fit = fit_and_validate(fitted, chip);
  CHECK_MESSAGE(fit, (fit ? std::string() : fit.error().message));
}
