// The sdy-propagation stage as Shardy's basic propagation documents it: a sub-axis is a prefix
// of its axis ("a":(1)2 before "a"), an axis a tensor of the op holds for another factor is
// cut to its part before that axis, only a rule's blocked_propagation factors stop
// propagation (need_replication factors propagate), and sliced and concatenated dims
// propagate (Shardy's non-conservative rules). Expected texts are worked out by hand.
#include <doctest/doctest.h>

#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/sharding_strategies.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

std::string basic(const std::string& text) {
  auto m = parse_module(text, "stage.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto s = run_sdy_propagation(*m, PropagationStrategy::basic);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return print_module(*m);
}

}  // namespace

TEST_CASE("stage propagation: a sub-axis prefix is compatible and a conflict cuts the axis") {
  // Dim 0: "a" and "a":(1)2 agree on "a"; %arg1 holds "a":(4)2 for dim 1, so "a" is cut to
  // "a":(1)4, which %arg1 and the sum take. Dim 1: "a":(4)2 overlaps the "a" %arg0 holds for
  // dim 0, so nothing propagates there.
  const std::string got = basic(R"(sdy.mesh @mesh = <["a"=8]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {?}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a":(1)2, ?}, {"a":(4)2, ?}]>}) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)");
  CHECK(got.find("%arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"a\":(1)4, ?}, "
                 "{\"a\":(4)2, ?}]>}) -> (tensor<8x8xf32> {sdy.sharding = "
                 "#sdy.sharding<@mesh, [{\"a\":(1)4, ?}, {?}]>})") != std::string::npos);
  CHECK(got.find("%0 = stablehlo.add %arg0, %arg1 {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@mesh, [{\"a\":(1)4, ?}, {?}]>]>}") !=
        std::string::npos);
  CHECK(got.find("%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"a\", ?}, "
                 "{?}]>}") != std::string::npos);
}

TEST_CASE("stage propagation: only blocked_propagation factors stop propagation") {
  // i needs replication but is not blocked: "a" propagates along it; j is blocked.
  const std::string got = basic(R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}) -> tensor<8x8xf32> {
  %0 = stablehlo.custom_call @bar(%arg0) {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=8} need_replication={i} blocked_propagation={j}>} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)");
  CHECK(got.find("%0 = stablehlo.custom_call @bar(%arg0) {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@mesh, [{\"a\", ?}, {?}]>]>") != std::string::npos);
  CHECK(got.find("-> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"a\", ?}, "
                 "{?}]>})") != std::string::npos);
}

TEST_CASE("stage propagation: sliced and concatenated dims propagate") {
  const std::string got = basic(R"(sdy.mesh @mesh = <["a"=4]>
func.func @main(%arg0: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) -> tensor<16x4xf32> {
  %0 = stablehlo.slice %arg0 [0:4, 0:4] : (tensor<16x4xf32>) -> tensor<4x4xf32>
  %1 = stablehlo.slice %arg0 [4:16, 0:4] : (tensor<16x4xf32>) -> tensor<12x4xf32>
  %2 = stablehlo.concatenate %1, %0, dim = 0 : (tensor<12x4xf32>, tensor<4x4xf32>) -> tensor<16x4xf32>
  return %2 : tensor<16x4xf32>
}
)");
  const std::string open = "#sdy.sharding_per_value<[<@mesh, [{\"a\", ?}, {?}]>]>";
  CHECK(got.find("%0 = stablehlo.slice %arg0 [0:4, 0:4] {sdy.sharding = " + open) !=
        std::string::npos);
  CHECK(got.find("%1 = stablehlo.slice %arg0 [4:16, 0:4] {sdy.sharding = " + open) !=
        std::string::npos);
  CHECK(got.find("%2 = stablehlo.concatenate %1, %0, dim = 0 {sdy.sharding = " + open) !=
        std::string::npos);
}

TEST_CASE("stage propagation: equal sources break a conflict in favour of the first tensor") {
  // The case's edge: dim 0 wants "x", "y" (from %arg2), dim 1 wants "y" (from %arg1); both
  // sources have 64 elements, so the first branch's %arg1 wins "y" for dim 1 and dim 0 keeps
  // "x" (aggressive conflict resolution, as the pipeline runs it).
  auto m = parse_module(R"(sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%arg0: tensor<i32>, %arg1: tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"y", ?}]>}, %arg2: tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y", ?}, {?}]>}) -> tensor<4x16xf32> {
  %0 = "stablehlo.case"(%arg0) ({
    stablehlo.return %arg1 : tensor<4x16xf32>
  }, {
    stablehlo.return %arg2 : tensor<4x16xf32>
  }) : (tensor<i32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
)",
                        "case.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto s = run_sdy_propagation(*m, PropagationStrategy::pipeline);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  const std::string got = print_module(*m);
  CHECK(got.find("}) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{\"x\"}, {\"y\"}]>]>} : "
                 "(tensor<i32>) -> tensor<4x16xf32>") != std::string::npos);
  CHECK(got.find("%arg1: tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, "
                 "{\"y\"}]>}, %arg2: tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, "
                 "[{\"x\", \"y\"}, {}]>}") != std::string::npos);
}

TEST_CASE("stage propagation: a maximal mesh is not replaced by the function's mesh") {
  // "<[], device_ids=[1]>" places the whole tensor on device 1: unlike a mesh without axes or
  // devices it is not a blank to fill, so the multiply's operands name two meshes and nothing
  // propagates through it.
  const std::string got = basic(R"(sdy.mesh @one = <[], device_ids=[1]>
sdy.mesh @mesh = <["x"=2]>
func.func @main(%arg0: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@one, []>}) -> tensor<4x4xf32> {
  %0 = stablehlo.multiply %arg0, %arg1 : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
)");
  CHECK(got.find("%arg1: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@one, []>}) -> "
                 "tensor<4x4xf32> {") != std::string::npos);
  CHECK(got.find("%0 = stablehlo.multiply %arg0, %arg1 : tensor<4x4xf32>") != std::string::npos);
}
