// The printer writes what MLIR's printer writes for the same module: floats in scientific form
// with six digits after the point when that reads back exactly. Printing and parsing back keeps
// the graph key.
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
