// Op-priority propagation against Shardy's documented schedule (propagation.md, "op-priority
// propagation": pass-through ops first, dynamic slices forward only, broadcasts backward
// before forward, pass-through factors before reduction factors) and `unreduced` axes
// (sdy_dialect.md: an unreduced axis holds partial values, so no dim of that tensor may be
// sharded along it). The modules are small programs written for these tests; the expected
// shardings are worked out by hand, round by round, in the comments.
#include <doctest/doctest.h>

#include <string>

#include "meshplan/planner/sharding_strategies.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

std::string propagated(const std::string& text, PropagationStrategy strategy) {
  auto m = parse_module(text, "op_priority.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto s = run_sdy_propagation(*m, strategy);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return print_module(*m);
}

bool has(const std::string& out, const std::string& line) {
  return out.find(line) != std::string::npos;
}

const std::string kMesh = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
)";

}  // namespace

TEST_CASE("op priority: a dynamic_slice propagates forward before anything goes backward") {
  // %arg0 has two uses, so round 0 (single-use pass-through ops) moves nothing. The function
  // results reach %0 ([{"x"}, {}]) and %1 ([{}, {"x"}]). Round 1: the exponential passes
  // {"x"} on dim 1 back to %arg0; the dynamic_slice may only go forward, and its operand
  // has nothing on dim 0. Round 2: dim 0 (kept whole by the slice) may go backward, but
  // %arg0 already holds "x" on dim 1. So %arg0 ends [{?}, {"x", ?}].
  const std::string text =
      kMesh +
      R"(func.func @main(%arg0: tensor<16x8xf32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> (tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) {
  %0 = stablehlo.dynamic_slice %arg0, %arg1, %arg2, sizes = [16, 4] : (tensor<16x8xf32>, tensor<i32>, tensor<i32>) -> tensor<16x4xf32>
  %1 = stablehlo.exponential %arg0 : tensor<16x8xf32>
  return %0, %1 : tensor<16x4xf32>, tensor<16x8xf32>
}
)";
  std::string out = propagated(text, PropagationStrategy::op_priority);
  CHECK(has(out,
            R"(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"x", ?}]>})"));
  CHECK(has(
      out,
      R"(sizes = [16, 4] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {?}]>]>})"));
  CHECK(has(
      out,
      R"(stablehlo.exponential %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"x", ?}]>]>})"));
}

TEST_CASE("op priority: a single-use dynamic_slice carries its operand's dims forward first") {
  // %arg0 ([{"y", ?}, {?}]) is used once: in round 0 the slice passes "y" on the kept dim 0 to
  // its result, and the negate passes it on. The sliced dim 1 needs replication: "x" on the
  // result's dim 1 (from the function result) never reaches %arg0's dim 1.
  const std::string text =
      kMesh +
      R"(func.func @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y", ?}, {?}]>}, %arg1: tensor<i32>, %arg2: tensor<i32>) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"x", ?}]>}) {
  %0 = stablehlo.dynamic_slice %arg0, %arg1, %arg2, sizes = [8, 4] : (tensor<8x16xf32>, tensor<i32>, tensor<i32>) -> tensor<8x4xf32>
  %1 = stablehlo.negate %0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
)";
  std::string out = propagated(text, PropagationStrategy::op_priority);
  CHECK(has(out,
            R"(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y", ?}, {?}]>})"));
  CHECK(has(
      out,
      R"(sizes = [8, 4] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y", ?}, {"x", ?}]>]>})"));
  CHECK(has(
      out,
      R"(stablehlo.negate %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y", ?}, {"x", ?}]>]>})"));
}

TEST_CASE("op priority: a broadcast_in_dim takes its result's sharding before its operand's") {
  // The broadcast is no pass-through op: rounds 0 and 1 skip it, and the function result
  // gives %0 [{"y", ?}, {?}]. Round 2 lets it go backward only: dim 0 is new (nothing to
  // pass back), dim 1 has nothing on the result. Forward (round 4): "y" from %arg0 would go
  // to dim 1, but the result holds "y" on dim 0 already.
  const std::string text =
      kMesh +
      R"(func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}) -> (tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) {
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
)";
  std::string out = propagated(text, PropagationStrategy::op_priority);
  CHECK(has(out,
            R"(dims = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y", ?}, {?}]>]>})"));
}

TEST_CASE("op priority: pass-through factors of a dot before its contracting factor") {
  // %arg1 (32x4, 128 elements) has "x" on the contracting dim; the result (8x4, 32 elements)
  // gets "x" on dim 0 from the function result. Aggressive propagation alone takes the
  // larger source first: "x" goes to %arg0's contracting dim 1. Op priority runs the dot's
  // pass-through factors (round 2) before the reduction factor (round 3): "x" goes to
  // %arg0's dim 0, and then the contracting dim cannot take it.
  const std::string text =
      kMesh +
      R"(func.func @main(%arg0: tensor<8x32xf32>, %arg1: tensor<32x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {?}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {?}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
)";
  CHECK(has(propagated(text, PropagationStrategy::op_priority),
            R"(%arg0: tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {?}]>})"));
  CHECK(has(propagated(text, PropagationStrategy::aggressive),
            R"(%arg0: tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"x", ?}]>})"));
}

TEST_CASE("unreduced axes: a partial result takes no dim sharding along its unreduced axis") {
  // The dot's result is unreduced along "y" (its contracting factor is split over "y"). The
  // function result asks for "y" on dim 1: the negate takes it, but it cannot go back to %0
  // (a tensor never holds one axis both unreduced and on a dim). %arg1 takes the
  // contracting "y" on dim 0 from %arg0, and %0 keeps its open, empty dims.
  const std::string text =
      kMesh +
      R"(func.func @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}, %arg1: tensor<8x4xf32>) -> (tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"y"}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}], unreduced={"y"}>]>} : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %1 = stablehlo.negate %0 : tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}
)";
  for (auto strategy : {PropagationStrategy::basic, PropagationStrategy::aggressive,
                        PropagationStrategy::op_priority}) {
    CAPTURE(strategy_name(strategy));
    std::string out = propagated(text, strategy);
    CHECK(has(out,
              R"(%arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y", ?}, {?}]>})"));
    CHECK(has(
        out,
        R"(contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {?}], unreduced={"y"}>]>})"));
    CHECK(has(
        out,
        R"(stablehlo.negate %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"y", ?}]>]>})"));
  }
}

TEST_CASE("unreduced axes: an axis both unreduced and on a dim is refused, located") {
  const std::string text =
      kMesh +
      R"(func.func @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}], unreduced={"y"}>}) -> tensor<4x8xf32> {
  return %arg0 : tensor<4x8xf32>
}
)";
  auto m = parse_module(text, "twice.mlir");
  std::string err;
  if (!m) {
    err = m.error().message;
  } else {
    auto s = run_sdy_propagation(*m, PropagationStrategy::op_priority);
    REQUIRE_FALSE(s.has_value());
    err = s.error().message;
  }
  CHECK(has(err, "twice.mlir:2"));
  CHECK(has(err, "\"y\""));
}
