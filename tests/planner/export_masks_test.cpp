// Graph -> export_stablehlo -> lower_to_graph keeps the comparisons, where, clamp (with its
// bounds), reduce_min and reduce_prod: they export as @meshplan.* custom calls, which lower
// back to the same ops and attributes.
#include <doctest/doctest.h>

#include "meshplan/planner/export_stablehlo.hpp"
#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner {
namespace {

using V = GraphBuilder::Value;

std::string structure(const Graph& g) {
  std::string s;
  auto shape = [&](ValueId v) {
    return shape_string(g.values[v].shape) + std::string(device::dtype_name(g.values[v].dtype));
  };
  for (const Op& op : g.ops) {
    s += str(device::op_name(op.kind));
    for (const Attribute& a : op.attributes) s += " " + a.name;
    for (ValueId v : op.operands) s += " " + shape(v);
    s += " -> " + shape(op.results[0]) + "\n";
  }
  return s;
}

}  // namespace

TEST_CASE("comparisons, where, clamp, reduce_min, reduce_prod: export and lower back unchanged") {
  GraphBuilder b("masks");
  V x = b.input("x", {4, 8}, DType::f32);
  V y = b.input("y", {4, 8}, DType::f32);
  V m = b.op("ge", {x, y});
  for (const char* k : {"eq", "ne", "lt", "le", "gt"}) m = b.op("maximum", {m, b.op(k, {x, y})});
  V w = b.op("where", {m, x, y});
  V c = b.op("clamp", {w}, {attr("max", 0.5), attr("min", -0.25)});
  b.output(b.op("reduce_min", {c}, {attr("dims", std::vector<int64_t>{1})}));
  b.output(b.op("reduce_prod", {c}, {attr("dims", std::vector<int64_t>{0})}));
  auto graph = b.build();
  REQUIRE_MESSAGE(graph.has_value(), graph.error().message);
  auto module = export_stablehlo(*graph);
  REQUIRE_MESSAGE(module.has_value(), module.error().message);
  auto back = shlo::lower_to_graph(*module);
  REQUIRE_MESSAGE(back.has_value(), back.error().message);
  CHECK(structure(*back) == structure(*graph));
  REQUIRE(back->ops.size() == graph->ops.size());
  for (size_t i = 0; i < back->ops.size(); ++i) {
    CAPTURE(i);
    const auto& p = back->ops[i].attributes;
    const auto& q = graph->ops[i].attributes;
    REQUIRE(p.size() == q.size());
    for (size_t k = 0; k < p.size(); ++k) CHECK(p[k].value == q[k].value);
  }
}

}  // namespace meshplan::planner
