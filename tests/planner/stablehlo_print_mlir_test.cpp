// The printer writes what MLIR's printer writes for the same module: floats in scientific form
// with six digits after the point when that reads back exactly, `stablehlo.while` and
// `stablehlo.custom_call` in their pretty forms (loop arguments named `iterArg`). Printing and
// parsing back keeps the graph key.
#include <doctest/doctest.h>

#include "meshplan/planner/key.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/stablehlo.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

Module parsed(const std::string& text, const std::string& file = "p.mlir") {
  auto m = parse_module(text, file);
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::move(*m);
}

bool has(const std::string& text, const std::string& part) {
  INFO(text);
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("float literals print as MLIR prints them and read back to the same graph") {
  std::string text = R"(func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.constant dense<1.0> : tensor<f32>
  %1 = stablehlo.constant dense<[0.5, -2.0]> : tensor<2xf32>
  %2 = stablehlo.constant dense<100.0> : tensor<f64>
  %3 = stablehlo.constant dense<0.123456789> : tensor<f64>
  %4 = stablehlo.constant dense<0.0> : tensor<f32>
  %5 = stablehlo.constant dense<1.0e-05> : tensor<f32>
  %6 = stablehlo.add %arg0, %1 : tensor<2xf32>
  return %6 : tensor<2xf32>
}
)";
  std::string printed = print_module(parsed(text));
  CHECK(has(printed, "dense<1.000000e+00> : tensor<f32>"));
  CHECK(has(printed, "dense<[5.000000e-01, -2.000000e+00]> : tensor<2xf32>"));
  CHECK(has(printed, "dense<1.000000e+02> : tensor<f64>"));
  // Seven significant digits would lose it: the exact shortest form instead.
  CHECK(has(printed, "dense<0.123456789> : tensor<f64>"));
  CHECK(has(printed, "dense<0.000000e+00> : tensor<f32>"));
  CHECK(has(printed, "dense<1.000000e-05> : tensor<f32>"));

  Module m = parsed(text);
  auto g = lower_to_graph(m);
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  Module again = parsed(printed, "printed.mlir");
  auto g2 = lower_to_graph(again);
  REQUIRE_MESSAGE(g2.has_value(), g2.error().message);
  CHECK(planner::graph_key(*g) == planner::graph_key(*g2));
}

TEST_CASE("while prints in its pretty form with iterArg names and reads back") {
  std::string text = R"(sdy.mesh @mesh = <["a"=2]>
func.func @main(%arg0: tensor<8xf32>, %arg1: tensor<i32>) -> tensor<8xf32> {
  %0 = stablehlo.constant dense<0> : tensor<i32>
  %1 = stablehlo.constant dense<4> : tensor<i32>
  %2 = stablehlo.constant dense<1> : tensor<i32>
  %3:2 = stablehlo.while(%x = %arg0, %i = %0) : tensor<8xf32>, tensor<i32> attributes {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}]>, <@mesh, []>]>}
   cond {
    %4 = stablehlo.compare LT, %i, %arg1 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %4 : tensor<i1>
  } do {
    %4 = stablehlo.add %i, %2 : tensor<i32>
    %5 = stablehlo.add %x, %x : tensor<8xf32>
    stablehlo.return %5, %4 : tensor<8xf32>, tensor<i32>
  }
  %4:2 = stablehlo.while(%y = %3#0, %j = %0) : tensor<8xf32>, tensor<i32>
   cond {
    %5 = stablehlo.compare LT, %j, %arg1 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %5 : tensor<i1>
  } do {
    stablehlo.return %y, %j : tensor<8xf32>, tensor<i32>
  }
  return %4#0 : tensor<8xf32>
}
)";
  Module m = parsed(text);
  std::string printed = print_module(m);
  // (A trip count the parser cannot see, so the loops stay loops.)
  CHECK(has(printed,
            "%0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_2 = %c) : tensor<8xf32>, "
            "tensor<i32> attributes {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{\"a\"}]>, "
            "<@mesh, []>]>}\n   cond {\n"));
  CHECK(has(printed, "stablehlo.add %iterArg, %iterArg : tensor<8xf32>"));
  CHECK(has(printed, "  } do {\n"));
  // Names are scoped to the regions: the second loop starts over. (The constants are %c,
  // %c_0, %c_1, MLIR's names, so the loop arguments take the next suffix, `_2`.)
  CHECK(has(printed,
            "%1:2 = stablehlo.while(%iterArg = %0#0, %iterArg_2 = %c) : tensor<8xf32>, "
            "tensor<i32>\n   cond {\n"));
  CHECK(has(printed, "stablehlo.return %iterArg, %iterArg_2 : tensor<8xf32>, tensor<i32>"));
  CHECK_FALSE(has(printed, "\"stablehlo.while\""));

  Module again = parsed(printed, "printed.mlir");
  CHECK(print_module(again) == printed);
  REQUIRE(again.funcs.size() == 1);
}

TEST_CASE("custom_call prints in its pretty form, with any number of results, and reads back") {
  std::string text = R"(sdy.mesh @mesh = <["a"=2]>
func.func @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {
  %0:2 = "stablehlo.custom_call"(%arg0, %arg1) <{backend_config = "", call_target_name = "foo"}> {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}]>, <@mesh, [{"a", ?}]>]>} : (tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  %1 = "stablehlo.custom_call"(%0#1) <{call_target_name = "bar", has_side_effect = true}> : (tensor<8xf32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}
)";
  std::string printed = print_module(parsed(text));
  CHECK(has(printed,
            "%0:2 = stablehlo.custom_call @foo(%arg0, %arg1) {backend_config = \"\", sdy.sharding "
            "= #sdy.sharding_per_value<[<@mesh, [{}]>, <@mesh, [{\"a\", ?}]>]>} : (tensor<8xf32>, "
            "tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)\n"));
  CHECK(has(printed,
            "%1 = stablehlo.custom_call @bar(%0#1) {has_side_effect = true} : (tensor<8xf32>) -> "
            "tensor<8xf32>\n"));
  Module again = parsed(printed, "printed.mlir");
  CHECK(print_module(again) == printed);
  REQUIRE(again.funcs.size() == 1);
  const Func& f = again.funcs[0];
  const Op& call = again.ops[f.body.ops[0]];
  REQUIRE(call.prop("call_target_name") != nullptr);
  CHECK(call.prop("call_target_name")->text == "foo");
  REQUIRE(call.prop("backend_config") != nullptr);
  CHECK(call.attrs.empty());
  CHECK(call.shardings.size() == 2);
}

TEST_CASE("a variadic reduce prints in its pretty form, lhs and rhs paired per input") {
  // StableHLO's pretty reduce: one `(%x init: %i)` per input, and one `(%lhs: T, %rhs: T)`
  // group per input in the reducer, whose block takes every lhs, then every rhs.
  std::string text =
      R"(func.func @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4x8xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %0 = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.constant dense<0> : tensor<i32>
  %2:2 = "stablehlo.reduce"(%arg0, %arg1, %0, %1) <{dimensions = array<i64: 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<i32>):
    %3 = stablehlo.add %a, %c : tensor<f32>
    %4 = stablehlo.add %b, %d : tensor<i32>
    stablehlo.return %3, %4 : tensor<f32>, tensor<i32>
  }) : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
  return %2#0, %2#1 : tensor<4xf32>, tensor<4xi32>
}
)";
  std::string printed = print_module(parsed(text));
  CHECK(has(printed,
            "%0:2 = stablehlo.reduce(%arg0 init: %cst), (%arg1 init: %c) across dimensions = [1] : "
            "(tensor<4x8xf32>, tensor<4x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, "
            "tensor<4xi32>)\n"));
  CHECK(has(printed,
            "reducer(%arg2: tensor<f32>, %arg4: tensor<f32>) (%arg3: tensor<i32>, %arg5: "
            "tensor<i32>) {\n"));
  CHECK(has(printed, "stablehlo.add %arg2, %arg4 : tensor<f32>"));
  CHECK(has(printed, "stablehlo.add %arg3, %arg5 : tensor<i32>"));
  Module again = parsed(printed, "printed.mlir");
  CHECK(print_module(again) == printed);
}

TEST_CASE("dynamic_slice prints in its pretty form and reads back to the same graph") {
  std::string text =
      R"(func.func @main(%arg0: tensor<8x8xf32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<8x2xf32> {
  %0 = "stablehlo.dynamic_slice"(%arg0, %arg1, %arg2) <{slice_sizes = array<i64: 8, 2>}> : (tensor<8x8xf32>, tensor<i32>, tensor<i32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}
)";
  Module m = parsed(text);
  std::string printed = print_module(m);
  CHECK(has(printed,
            "%0 = stablehlo.dynamic_slice %arg0, %arg1, %arg2, sizes = [8, 2] : (tensor<8x8xf32>, "
            "tensor<i32>, tensor<i32>) -> tensor<8x2xf32>\n"));
  Module again = parsed(printed, "printed.mlir");
  CHECK(print_module(again) == printed);
  auto g = lower_to_graph(m);
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  auto g2 = lower_to_graph(again);
  REQUIRE_MESSAGE(g2.has_value(), g2.error().message);
  CHECK(planner::graph_key(*g) == planner::graph_key(*g2));
}
