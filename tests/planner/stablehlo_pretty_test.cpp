// Pretty forms of ops beyond the core set: dot (lowered as dot_general), pad (edge padding as
// concatenations), optimization_barrier (the identity), and ops the parser reads but meshplan
// cannot lower (located errors naming the op and what lowers).
#include <doctest/doctest.h>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

Module parsed(const std::string& text, const std::string& file = "p.mlir") {
  auto m = parse_module(text, file);
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::move(*m);
}

/// Lowers `text` and its printed-and-reparsed form (same graph key), compiles and runs it.
std::vector<std::vector<float>> run(
    const std::string& text,
    const std::vector<std::pair<std::vector<int64_t>, std::vector<float>>>& inputs) {
  Module m = parsed(text);
  auto g = lower_to_graph(m);
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  Module again = parsed(print_module(m), "printed.mlir");
  auto g2 = lower_to_graph(again);
  REQUIRE_MESSAGE(g2.has_value(), g2.error().message);
  CHECK(planner::graph_key(*g) == planner::graph_key(*g2));
  auto plan =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE_MESSAGE(plan.has_value(), plan.error().message);
  auto ref = runtime::verify_plan(plan->bytes, "pretty");
  REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
  std::vector<runtime::TensorView> views;
  for (const auto& [shape, data] : inputs) views.push_back({shape, data});
  auto got = runtime::run_reference(*ref, views);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  std::vector<std::vector<float>> out;
  for (const auto& t : *got) out.emplace_back(t.data.begin(), t.data.end());
  return out;
}

std::string lower_error(const std::string& text) {
  Module m = parsed(text);
  auto g = lower_to_graph(m);
  REQUIRE_FALSE(g.has_value());
  return g.error().message;
}

}  // namespace

TEST_CASE("dot, pad and optimization_barrier in pretty form lower and match literals") {
  std::string text =
      R"(func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<4x3xf32>) {
  %0:2 = stablehlo.optimization_barrier %arg0, %arg1 : tensor<2x3xf32>, tensor<3x2xf32>
  %1 = stablehlo.dot %0#0, %0#1, precision = [DEFAULT, DEFAULT] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %cst = stablehlo.constant dense<7.000000e+00> : tensor<f32>
  %2 = stablehlo.pad %arg0, %cst, low = [1, 0], high = [1, 0], interior = [0, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  return %1, %2 : tensor<2x2xf32>, tensor<4x3xf32>
}
)";
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 2, -1};
  auto out = run(text, {{{2, 3}, a}, {{3, 2}, b}});
  REQUIRE(out.size() == 2);
  // [[1,2,3],[4,5,6]] x [[1,0],[0,1],[2,-1]] = [[7,-1],[16,-1]]
  CHECK(out[0] == std::vector<float>{7, -1, 16, -1});
  CHECK(out[1] == std::vector<float>{7, 7, 7, 1, 2, 3, 4, 5, 6, 7, 7, 7});
  // The generic form of dot is read the same way.
  std::string generic =
      R"(func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.dot"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
)";
  out = run(generic, {{{2, 3}, a}, {{3}, {1, 1, -1}}});
  CHECK(out[0] == std::vector<float>{0, 3});
}

TEST_CASE("ops read in pretty form that meshplan cannot lower are located errors") {
  const std::string sig = "func.func @main(%arg0: tensor<4x4xf32>, %arg1: tensor<i32>) -> ";
  CHECK(lower_error(sig + "tensor<5x2xf32> {\n  %0 = stablehlo.dynamic_slice %arg0, %arg1, %arg1, "
                          "sizes = [5, 2] : (tensor<4x4xf32>, tensor<i32>, tensor<i32>) -> "
                          "tensor<5x2xf32>\n  return %0 : tensor<5x2xf32>\n}\n")
            .starts_with("p.mlir:2:3: stablehlo.dynamic_slice: slice_sizes[0] = 5 is outside "
                         "[0, 4]"));
  CHECK(lower_error(sig +
                    "tensor<4x4x2xi16> {\n  %0 = stablehlo.bitcast_convert %arg0 : "
                    "(tensor<4x4xf32>) -> tensor<4x4x2xi16>\n  return %0 : tensor<4x4x2xi16>\n}\n")
            .starts_with("p.mlir:2:3: unimplemented: stablehlo.bitcast_convert from f32 to i16"));
}

TEST_CASE("fori_loop-shaped while loops unroll; constant if/case fold; others are refused") {
  // x <- x * 2 + y, five times (JAX's fori_loop(0, 5, ...)), then a constant-predicate if.
  std::string text =
      R"(module @jit_loop attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:3 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0, %iterArg_1 = %arg1) : tensor<i32>, tensor<4xf32>, tensor<4xf32>
     cond {
      %c_2 = stablehlo.constant dense<5> : tensor<i32>
      %3 = stablehlo.compare  LT, %iterArg, %c_2,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %3 : tensor<i1>
    } do {
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg, %c_2 : tensor<i32>
      %4 = stablehlo.add %iterArg_0, %iterArg_0 : tensor<4xf32>
      %5 = stablehlo.add %4, %iterArg_1 : tensor<4xf32>
      stablehlo.return %3, %5, %iterArg_1 : tensor<i32>, tensor<4xf32>, tensor<4xf32>
    }
    %true = stablehlo.constant dense<true> : tensor<i1>
    %1 = "stablehlo.if"(%true) ({
      %3 = stablehlo.negate %0#1 : tensor<4xf32>
      stablehlo.return %3 : tensor<4xf32>
    }, {
      stablehlo.return %0#1 : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    %c_3 = stablehlo.constant dense<7> : tensor<i32>
    %2 = "stablehlo.case"(%c_3) ({
      stablehlo.return %1 : tensor<4xf32>
    }, {
      %3 = stablehlo.abs %1 : tensor<4xf32>
      stablehlo.return %3 : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
)";
  // x5 = 32 x + 31 y; if(true) negates; case(7) is out of range: the last branch, abs.
  auto out = run(text, {{{4}, {1, 0, -1, 0.5f}}, {{4}, {0, 1, 1, -1}}});
  CHECK(out[0] == std::vector<float>{32, 31, 1, 15});
  Module m = parsed(text);
  for (OpId o : m.funcs[0].body.ops) CHECK(m.ops[o].name != "stablehlo.while");
  // A loop bound by an argument stays a loop, and the lowering names it.
  std::string dynamic = text;
  dynamic.replace(dynamic.find("%3 = stablehlo.compare  LT, %iterArg, %c_2"),
                  std::string("%3 = stablehlo.compare  LT, %iterArg, %c_2").size(),
                  "%3 = stablehlo.compare  LT, %iterArg_0, %iterArg_1");
  dynamic.replace(dynamic.find(",  SIGNED : (tensor<i32>, tensor<i32>)"),
                  std::string(",  SIGNED : (tensor<i32>, tensor<i32>)").size(),
                  ",  FLOAT : (tensor<4xf32>, tensor<4xf32>)");
  dynamic.replace(dynamic.find("-> tensor<i1>\n      stablehlo.return %3 : tensor<i1>"),
                  std::string("-> tensor<i1>\n      stablehlo.return %3 : tensor<i1>").size(),
                  "-> tensor<4xi1>\n      stablehlo.return %3 : tensor<4xi1>");
  auto dm = parse_module(dynamic, "p.mlir");
  REQUIRE_MESSAGE(dm.has_value(), dm.error().message);
  auto g = lower_to_graph(*dm);
  REQUIRE_FALSE(g.has_value());
  CHECK(
      g.error().message.starts_with("p.mlir:4:5: unimplemented: stablehlo.while whose trip "
                                    "count is not a compile-time constant"));
  // More than 256 iterations is refused at import.
  std::string long_loop = text;
  long_loop.replace(long_loop.find("dense<5>"), 8, "dense<300>");
  auto lm = parse_module(long_loop, "p.mlir");
  REQUIRE_FALSE(lm.has_value());
  CHECK(lm.error().message ==
        "p.mlir:4:5: unimplemented: stablehlo.while of 300 iterations (loops with a constant "
        "trip count up to 256 are unrolled)");
}
