// sdy.manual_computation in the `sdy-propagation` stage, against Shardy's documented
// semantics (sdy dialect, ManualComputationOp): operands flow into the body's block arguments
// and returned values into the results as data-flow edges; outside the shardings are global
// (manual axes first in each dim of in_shardings / out_shardings), inside they name free axes
// only; manual axes never cross the boundary. The modules are written for these tests and the
// expected shardings are worked out by hand in the comments.
#include <doctest/doctest.h>

#include <string>

#include "meshplan/planner/sharding_strategies.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

Result<std::string> propagated(const std::string& text, PropagationStrategy strategy) {
  Module m = MESHPLAN_TRY(parse_module(text, "manual.mlir"));
  MESHPLAN_TRY(run_sdy_propagation(m, strategy));
  return print_module(m);
}

std::string ok(const std::string& text, PropagationStrategy strategy) {
  auto out = propagated(text, strategy);
  REQUIRE_MESSAGE(out.has_value(), out.error().message);
  return *out;
}

bool has(const std::string& out, const std::string& line) {
  return out.find(line) != std::string::npos;
}

// "x" is manual: each body instance holds a 4x8 block of the 8x8 operand. %arg0 states "y"
// on dim 1.
const std::string kNegate = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"y", ?}]>}) -> tensor<8x8xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x", ?}, {?}]>] out_shardings=[<@mesh, [{"x", ?}, {?}]>] manual_axes={"x"} (%arg1: tensor<4x8xf32>) {
    %1 = stablehlo.negate %arg1 : tensor<4x8xf32>
    sdy.return %1 : tensor<4x8xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)";

}  // namespace

TEST_CASE("manual computation: free axes flow through the body, manual axes stay outside") {
  // %arg0's local view is [{?}, {"y", ?}]: the block argument takes "y" on dim 1 and the
  // negate with it, without "x" (manual: the body holds one "x" block). The returned value
  // gives the result's local view "y" on dim 1; globally the result is "x" (its out_sharding's
  // manual axis) then nothing on dim 0, "y" on dim 1. %arg0 takes the in_sharding's manual
  // "x" on its open dim 0. No explicit sdy.data_flow_edge: in/out shardings are updated.
  std::string out = ok(kNegate, PropagationStrategy::basic);
  CHECK(
      has(out,
          R"(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {"y", ?}]>})"));
  CHECK(has(
      out,
      R"(in_shardings=[<@mesh, [{"x", ?}, {"y", ?}]>] out_shardings=[<@mesh, [{"x", ?}, {"y", ?}]>] manual_axes={"x"})"));
  CHECK(has(
      out,
      R"(stablehlo.negate %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"y", ?}]>]>})"));
  CHECK(has(out,
            R"(-> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {"y", ?}]>}))"));
  // The manual computation itself carries no per-result sharding.
  CHECK_FALSE(has(out, R"(} {sdy.sharding)"));
}

TEST_CASE("manual computation: the pipeline closes in_shardings and out_shardings") {
  // As above, then Shardy's export closes every sharding, the manual computation's too.
  std::string out = ok(kNegate, PropagationStrategy::pipeline);
  CHECK(has(out,
            R"(in_shardings=[<@mesh, [{"x"}, {"y"}]>] out_shardings=[<@mesh, [{"x"}, {"y"}]>])"));
  CHECK(has(
      out,
      R"(stablehlo.negate %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"y"}]>]>})"));
  CHECK(
      has(out, R"(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>})"));
}

TEST_CASE("manual computation: a use sharded on a manual axis gives the result only free axes") {
  // "y" is manual and unused by the out_sharding (the 8 elements are whole in every "y"
  // instance). The negate wants [{"x", "y"}] of the result: "y" cannot enter the
  // out_sharding, so the result takes "x" alone; "x" flows back through the body (the add,
  // local [{"x", ?}]) to the in_sharding and %arg0. The function result is the negate's.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{?}]>] out_shardings=[<@mesh, [{?}]>] manual_axes={"y"} (%arg1: tensor<8xf32>) {
    %1 = stablehlo.add %arg1, %arg1 : tensor<8xf32>
    sdy.return %1 : tensor<8xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  %2 = stablehlo.negate %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", "y"}]>]>} : tensor<8xf32>
  return %2 : tensor<8xf32>
}
)";
  std::string out = ok(text, PropagationStrategy::basic);
  CHECK(has(out, R"(in_shardings=[<@mesh, [{"x", ?}]>] out_shardings=[<@mesh, [{"x", ?}]>])"));
  CHECK(has(
      out,
      R"(stablehlo.add %arg1, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}]>]>})"));
  CHECK(has(out, R"(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}]>})"));
  CHECK(has(out, R"(-> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y", ?}]>}))"));
}

TEST_CASE("manual computation: an explicit data_flow_edge owns the block argument's sharding") {
  // The edge inside holds the block argument's (local) sharding: it takes the operand's "y"
  // on dim 1, and the in_sharding stays as written. The operand takes the in_sharding's
  // manual "x" on its open dim 0.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"y", ?}]>}) -> tensor<8x8xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x", ?}, {?}]>] out_shardings=[<@mesh, [{"x", ?}, {?}]>] manual_axes={"x"} (%arg1: tensor<4x8xf32>) {
    %1 = sdy.data_flow_edge %arg1 sharding=<@mesh, [{?}, {?}]> : tensor<4x8xf32>
    sdy.return %1 : tensor<4x8xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)";
  std::string out = ok(text, PropagationStrategy::basic);
  CHECK(has(out, R"(in_shardings=[<@mesh, [{"x", ?}, {?}]>])"));
  CHECK(has(out, R"(sdy.data_flow_edge %arg1 sharding=<@mesh, [{?}, {"y", ?}]>)"));
  CHECK(
      has(out,
          R"(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {"y", ?}]>})"));
}

TEST_CASE("manual computation: bad manual axes and local shapes are located errors") {
  std::string bad_axis = kNegate;
  bad_axis.replace(bad_axis.find(R"(manual_axes={"x"})"), 17, R"(manual_axes={"z"})");
  auto e1 = propagated(bad_axis, PropagationStrategy::basic);
  REQUIRE_FALSE(e1.has_value());
  CHECK(e1.error().code == ErrorCode::invalid_argument);
  CHECK(
      e1.error().message ==
      R"(manual.mlir:3:3: sdy.manual_computation: manual axis "z" of operand 0 is not an axis of mesh @mesh)");

  // The body declares the global 8x8 where "x" leaves 4x8 per instance.
  std::string bad_shape = kNegate;
  for (size_t at; (at = bad_shape.find("tensor<4x8xf32>")) != std::string::npos;)
    bad_shape.replace(at, 15, "tensor<8x8xf32>");
  auto e2 = propagated(bad_shape, PropagationStrategy::basic);
  REQUIRE_FALSE(e2.has_value());
  CHECK(
      e2.error().message ==
      R"(manual.mlir:3:3: sdy.manual_computation: operand 0 has dim 0 of size 8 split 2 ways by manual axes {"x"} of mesh @mesh, but the body's value has size 8 there (expected 4))");

  // An in_sharding of the wrong rank.
  std::string bad_rank = kNegate;
  bad_rank.replace(bad_rank.find(R"(in_shardings=[<@mesh, [{"x", ?}, {?}]>])"), 39,
                   R"(in_shardings=[<@mesh, [{"x", ?}]>])");
  auto e3 = propagated(bad_rank, PropagationStrategy::basic);
  REQUIRE_FALSE(e3.has_value());
  CHECK(e3.error().message.find("manual.mlir:3:3: sdy.manual_computation operand 0") == 0);
  CHECK(e3.error().message.find("has 1 dims for a rank-2 tensor") != std::string::npos);
}

TEST_CASE("manual computation: block arguments in a sharding group state their in_shardings") {
  // %arg2 states [{"x"}, {}] and %arg3 [{}, {"y"}] (their in_shardings; no manual axes): the
  // group's members differ, so each gets an open sharding constraint (inserted at the start of
  // the body, the later argument's first) which takes its place in the group. Propagation
  // gives %2 "x" on dim 0 and %1 "y" on dim 1; the group makes them one sharding,
  // [{"x", ?}, {"y", ?}], and the add takes it. The closed in_shardings stay; the operands
  // take their local views (here the same) on their open dims.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{"x"}, {}]>, <@mesh, [{}, {"y"}]>] out_shardings=[<@mesh, [{}, {}]>] manual_axes={} (%arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>) {
    sdy.sharding_group %arg2 group_id = 0 : tensor<8x8xf32>
    sdy.sharding_group %arg3 group_id = 0 : tensor<8x8xf32>
    %1 = stablehlo.add %arg2, %arg3 : tensor<8x8xf32>
    sdy.return %1 : tensor<8x8xf32>
  } : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)";
  std::string out = ok(text, PropagationStrategy::basic);
  CHECK(has(
      out, R"(    %1 = sdy.sharding_constraint %arg3 <@mesh, [{"x", ?}, {"y", ?}]> : tensor<8x8xf32>
    %2 = sdy.sharding_constraint %arg2 <@mesh, [{"x", ?}, {"y", ?}]> : tensor<8x8xf32>
    sdy.sharding_group %2 group_id=0 : tensor<8x8xf32>
    sdy.sharding_group %1 group_id=0 : tensor<8x8xf32>
    %3 = stablehlo.add %2, %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", ?}, {"y", ?}]>]>})"));
  CHECK(has(
      out,
      R"(in_shardings=[<@mesh, [{"x"}, {}]>, <@mesh, [{}, {"y"}]>] out_shardings=[<@mesh, [{}, {}]>])"));
  CHECK(
      has(out, R"(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {?}]>})"));
  CHECK(
      has(out, R"(%arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"y", ?}]>})"));
}
