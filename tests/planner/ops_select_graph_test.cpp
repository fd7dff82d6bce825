// The comparisons, where, clamp, reduce_min and reduce_prod through graph.json: import with their
// attributes, plan, run on the emulator against the reference; clamp's bounds reach the plan;
// bad attributes and shapes are errors naming the op.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "planner/graph_json_util.hpp"

using namespace meshplan;
using namespace meshplan::test::gjson;

namespace {}  // namespace

TEST_CASE("comparisons, where, clamp, reduce_min and reduce_prod plan and run from graph.json") {
  std::vector<std::string> ops;
  std::vector<std::string> outs;
  for (const char* k : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    ops.push_back(op(std::string("c_") + k, k, {"x", "row"}));
    outs.push_back(std::string("c_") + k);
  }
  ops.push_back(op("w", "where", {"c_gt_out", "x", "y"}));
  ops.push_back(
      op("cl", "clamp", {"x"}, R"({"name": "min", "f": -0.25}, {"name": "max", "i": 1})"));
  ops.push_back(op("rmin", "reduce_min", {"x"}, R"({"name": "dims", "ints": [-1]})"));
  ops.push_back(op("rprod", "reduce_prod", {"x"},
                   R"({"name": "dims", "ints": [0]}, {"name": "keepdim", "b": true})"));
  for (const char* o : {"w", "cl", "rmin", "rprod"}) outs.push_back(o);
  std::string json = graph("masks",
                           // f32: the reference compares the inputs as given, the device as
                           // stored, so bf16 storage could flip near-ties.
                           {arg("x", {2, 45, 70}, "input", "f32"),
                            arg("y", {45, 70}, "input", "f32"), arg("row", {70}, "input", "f32")},
                           ops, outs);
  plan_and_run(json);

  auto g = planner::import_graph_json(json, "masks.json");
  REQUIRE_MESSAGE(g, g.error().message);
  const planner::Op& cl = g->ops[7];
  REQUIRE(cl.kind == device::OpKind::clamp);
  device::OpConfig c = *planner::op_config(cl);
  CHECK(c.clamp_min == -0.25f);
  CHECK(c.clamp_max == 1.0f);
  CHECK(g->values[g->ops[9].results[0]].shape == std::vector<int64_t>{1, 45, 70});
  // The bounds reach the plan; other ops keep the infinite defaults (not stored).
  auto plan =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE(plan);
  auto ref = runtime::verify_plan(plan->bytes, "masks");
  REQUIRE(ref);
  int clamps = 0;
  for (const fb::OpPlan* fop : *ref->plan().ops()) {
    device::OpConfig got = runtime::op_config_of(*fop);
    if (fop->kind() == fb::OpKind::clamp) {
      ++clamps;
      CHECK(got.clamp_min == -0.25f);
      CHECK(got.clamp_max == 1.0f);
    } else {
      CHECK(std::isinf(got.clamp_min));
      CHECK(std::isinf(got.clamp_max));
    }
  }
  CHECK(clamps == 1);
  // Bounds enter the graph key.
  std::string other = json;
  other.replace(other.find("-0.25"), 5, "-0.50");
  auto g2 = planner::import_graph_json(other, "masks2.json");
  REQUIRE(g2);
  CHECK(planner::graph_key(*g) != planner::graph_key(*g2));
}

TEST_CASE("bad clamp, where and reduction input is a clear error naming the op") {
  auto one = [](const std::string& kind, const std::string& attrs,
                std::vector<int64_t> shape = {4, 6}) {
    return graph("bad", {arg("x", shape)}, {op("the_op", kind, {"x"}, attrs)}, {"the_op"});
  };
  std::string e = import_error(one("clamp", R"({"name": "min", "f": 2}, {"name": "max", "f": 1})"));
  CHECK(contains(e, "op 'the_op' (clamp)"));
  CHECK(contains(e, "clamp min 2 is not <= max 1"));
  e = import_error(one("clamp", R"({"name": "min", "s": "low"})"));
  CHECK(contains(e, "(clamp): attribute 'min' must be a number"));
  e = import_error(one("relu", R"({"name": "max", "f": 1})"));
  CHECK(contains(e, "(relu): unknown attribute 'max'"));
  e = import_error(one("reduce_prod", R"({"name": "dims", "ints": [2]})"));
  CHECK(contains(e, "op 'the_op' (reduce_prod)"));
  CHECK(contains(e, "out of range for rank 2"));
  e = import_error(one("reduce_min", R"({"name": "dims", "ints": [1, -1]})"));
  CHECK(contains(e, "listed twice"));
  e = import_error(graph("w", {arg("c", {4, 6}), arg("a", {4, 6}), arg("b", {5, 6})},
                         {op("sel", "where", {"c", "a", "b"})}, {"sel"}));
  CHECK(contains(e, "op 'sel' (where)"));
  CHECK(contains(e, "condition [4x6], true values [4x6] and false values [5x6] do not broadcast"));
  e = import_error(
      graph("w2", {arg("c", {4, 6}), arg("a", {4, 6})}, {op("sel", "where", {"c", "a"})}, {"sel"}));
  CHECK(contains(e, "op 'sel' (where) takes 3 operand(s), got 2"));
  e = import_error(graph(
      "w3", {arg("c", {4, 6}, "input", "f32"), arg("a", {4, 6}), arg("b", {4, 6}, "input", "f32")},
      {op("sel", "where", {"c", "a", "b"})}, {"sel"}));
  CHECK(contains(e, "where's true values are bf16, its false values f32"));
  e = import_error(
      graph("cmp", {arg("a", {4, 6}), arg("b", {4, 7})}, {op("lt", "lt", {"a", "b"})}, {"lt"}));
  CHECK(contains(e, "op 'lt' (lt)"));
  CHECK(contains(e, "do not broadcast"));
}

TEST_CASE("clamp bounds round-trip through the plan without storing an infinity") {
  // One-sided, degenerate (0, 0) and two-sided clamps: infinite bounds are flags in the plan
  // (JSON has no infinity), a bound of 0 is told apart from an absent one, and the plan's JSON
  // form has no `inf`.
  struct Case {
    const char* attrs;
    float lo, hi;
  };
  const float inf = std::numeric_limits<float>::infinity();
  for (Case k : {Case{R"({"name": "min", "f": 0})", 0.0f, inf},
                 Case{R"({"name": "max", "f": 6})", -inf, 6.0f},
                 Case{R"({"name": "min", "f": 0}, {"name": "max", "f": 0})", 0.0f, 0.0f},
                 Case{R"({"name": "min", "f": -1}, {"name": "max", "f": 2})", -1.0f, 2.0f}}) {
    CAPTURE(k.attrs);
    std::string json = graph("clamp1", {arg("x", {32, 64}, "input", "f32")},
                             {op("cl", "clamp", {"x"}, k.attrs)}, {"cl"});
    auto g = planner::import_graph_json(json, "clamp1.json");
    REQUIRE_MESSAGE(g, g.error().message);
    auto plan =
        planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
    REQUIRE_MESSAGE(plan, plan.error().message);
    auto ref = runtime::verify_plan(plan->bytes, "clamp1");
    REQUIRE(ref);
    for (const fb::OpPlan* fop : *ref->plan().ops()) {
      if (fop->kind() != fb::OpKind::clamp) continue;
      device::OpConfig got = runtime::op_config_of(*fop);
      CHECK(got.clamp_min == k.lo);
      CHECK(got.clamp_max == k.hi);
      CHECK(std::isfinite(fop->config()->clamp_min()));
      CHECK(std::isfinite(fop->config()->clamp_max()));
    }
    // The emulator's results match the reference with these bounds (all zeros for (0, 0),
    // which the relative check cannot scale).
    if (k.lo != k.hi) plan_and_run(json);
  }
}
