// Sub-axes that cannot coexist (sdy_dialect.md, AxisRefAttr: "a":(1)2 and "a":(3)2 of "a"=6
// name no consistent split of the axis) are treated as sharing devices, and the order in which
// propagation sees a function's result shardings (before its ops, as Shardy's func-results
// step runs before the op worklist). Expected texts are worked out from those rules.
#include <doctest/doctest.h>

#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/sharding_strategies.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

std::string cosine_module(std::string_view result_axis) {
  return std::string(
             "sdy.mesh @mesh = <[\"a\"=6]>\n"
             "func.func @main(%arg0: tensor<6x6xf32> {sdy.sharding = #sdy.sharding<@mesh, "
             "[{\"a\":(1)3}, {}]>}) -> (tensor<6x6xf32> {sdy.sharding = #sdy.sharding<@mesh, "
             "[{}, {\"a\":") +
         std::string(result_axis) +
         "}]>}) {\n"
         "  %0 = stablehlo.cosine %arg0 : tensor<6x6xf32>\n"
         "  return %0 : tensor<6x6xf32>\n"
         "}\n";
}

std::string basic(const std::string& text) {
  auto m = parse_module(text, "doc.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto s = run_sdy_propagation(*m, PropagationStrategy::basic);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return print_module(*m);
}

}  // namespace

TEST_CASE("sub-axes that cannot coexist count as overlapping") {
  MeshDecl six{"m", {{"a", 6}}, {}};
  MeshDecl eight{"m", {{"a", 8}}, {}};
  MeshDecl twelve{"m", {{"a", 12}}, {}};
  AxisMath m6{six}, m8{eight}, m12{twelve};
  // Disjoint and consistent: bounds 1 | 2 | 4 | 8, or 1 | 3 | 6 | 12.
  CHECK_FALSE(m8.overlaps({"a", 1, 2}, {"a", 4, 2}));
  CHECK_FALSE(m12.overlaps({"a", 1, 3}, {"a", 6, 2}));
  CHECK_FALSE(m6.overlaps({"a", 1, 3}, {"a", 3, 2}));
  // Disjoint ranges but no common refinement: 2 does not divide 3.
  CHECK(m6.overlaps({"a", 1, 2}, {"a", 3, 2}));
  CHECK(m6.overlaps({"a", 1, 3}, {"a", 2, 3}));
  CHECK(m12.overlaps({"a", 1, 2}, {"a", 3, 2}));
  // Sharing devices, and another axis.
  CHECK(m8.overlaps({"a", 1, 4}, {"a", 2, 4}));
  CHECK_FALSE(m8.overlaps({"a", 1, 4}, {"b", 1, 4}));
}

TEST_CASE("a result sub-axis that cannot coexist with the operand's keeps its dim") {
  // The result sharding reaches %0 first ("a":(2)3 on dim 1); the operand's "a":(1)3 cannot
  // join it on dim 0 (3 = 1*3 does not divide 2), so dim 0 stays open and empty.
  std::string text = cosine_module("(2)3");
  std::string out = basic(text);
  CHECK(out.find("stablehlo.cosine %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
                 "[{?}, {\"a\":(2)3, ?}]>]>}") != std::string::npos);
  // "a":(1)3 and "a":(3)2 split "a"=6 as 2 x 3: both reach %0.
  out = basic(cosine_module("(3)2"));
  CHECK(out.find("stablehlo.cosine %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
                 "[{\"a\":(1)3, ?}, {\"a\":(3)2, ?}]>]>}") != std::string::npos);
}
