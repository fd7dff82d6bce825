// PENDING (left out of the build on purpose: the *_test.cpp glob does not match this name).
//
// MESH-SPEC §2's round trip Graph -> export_stablehlo -> lower_to_graph -> Graph is the identity
// up to value names. It needs engineer B's lowering (branch shlo-lower) of every op the export
// emits; on main, lower_to_graph only lowers dot_general / add / relu. After the lead merges
// shlo-lower: `git mv tests/planner/export_roundtrip_test.cpp.pending
// tests/planner/export_roundtrip_test.cpp`.
//
// Not identities by design (so not in these graphs): fused activations (matmul/add with
// `activation` export as the op followed by the activation op), reduce_* with keepdim (reduce +
// reshape), and constants (they stay arguments of kind constant; their data is not in the
// module).
#include <doctest/doctest.h>

#include "meshplan/planner/export_stablehlo.hpp"
#include "meshplan/planner/graph_builder.hpp"

namespace meshplan::planner {
namespace {

using V = GraphBuilder::Value;

/// Kinds, attributes, shapes and dtypes in order; argument kinds; outputs by position.
std::string structure(const Graph& g) {
  std::string s;
  auto shape = [&](ValueId v) {
    return shape_string(g.values[v].shape) + std::string(device::dtype_name(g.values[v].dtype));
  };
  for (ValueId a : g.arguments) s += str("arg ", arg_kind_name(g.values[a].kind), shape(a), "\n");
  for (const Op& op : g.ops) {
    s += str(device::op_name(op.kind));
    for (const Attribute& a : op.attributes) s += " " + a.name;
    for (ValueId v : op.operands) s += " " + shape(v);
    s += " -> " + shape(op.results[0]) + "\n";
  }
  for (ValueId v : g.outputs) s += "out " + shape(v) + "\n";
  return s;
}

bool same_attributes(const Graph& a, const Graph& b) {
  if (a.ops.size() != b.ops.size()) return false;
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const auto& x = a.ops[i].attributes;
    const auto& y = b.ops[i].attributes;
    if (x.size() != y.size()) return false;
    for (size_t k = 0; k < x.size(); ++k)
      if (x[k].name != y[k].name || x[k].value != y[k].value) return false;
  }
  return true;
}

TEST_CASE("Graph -> StableHLO -> Graph is the identity up to names") {
  GraphBuilder b("roundtrip");
  V x = b.input("x", {4, 8, 16}, DType::f32);
  V w = b.parameter("w", {16}, DType::f32);
  V n = b.op("rms_norm", {x, w}, {attr("epsilon", 1e-5)});
  V s = b.op("softmax", {n}, {attr("dim", -1)});
  V r = b.op("reshape", {s}, {attr("shape", std::vector<int64_t>{4, 8, 4, 4})});
  V p = b.op("permute", {r}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
  V m = b.op("matmul", {p, b.parameter("k", {4, 4, 4, 8}, DType::f32)});
  V c = b.op("concat", {m, m}, {attr("axis", 3)});  // the export resolves negative axes
  V sl = b.op("slice", {c},
              {attr("begins", std::vector<int64_t>{0, 0, 0, 0}),
               attr("ends", std::vector<int64_t>{4, 4, 8, 8}),
               attr("steps", std::vector<int64_t>{1, 1, 1, 1})});
  V g = b.op("gelu", {sl});
  V a = b.op("add", {g, b.parameter("bias", {8}, DType::f32)});
  b.output(b.op("reduce_sum", {b.relu(a)}, {attr("dims", std::vector<int64_t>{1})}));
  auto graph = b.build();
  REQUIRE_MESSAGE(graph.has_value(), graph.error().message);
  auto module = export_stablehlo(*graph);
  REQUIRE_MESSAGE(module.has_value(), module.error().message);
  auto back = shlo::lower_to_graph(*module);
  REQUIRE_MESSAGE(back.has_value(), back.error().message);
  CHECK(structure(*back) == structure(*graph));
  CHECK(same_attributes(*back, *graph));
}

}  // namespace
}  // namespace meshplan::planner
