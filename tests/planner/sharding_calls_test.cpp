// func.call and private functions in the `sdy-propagation` stage, and `!stablehlo.token`
// values. Expected texts follow Shardy's documented passes: -sdy-flatten-call-graph (a
// function called again is copied for that call, named with one counter for the module),
// propagation through calls, and -sdy-unflatten-call-graph (copies of one function with the
// same argument and result shardings become one again; sdy_export_passes.md).
#include <doctest/doctest.h>

#include "meshplan/planner/sharding_strategies.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

std::string propagated(const std::string& text, PropagationStrategy strategy) {
  auto m = parse_module_for_propagation(text, "calls.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto s = run_sdy_propagation(*m, strategy);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return print_module(*m);
}

constexpr const char* kMesh = "sdy.mesh @mesh = <[\"a\"=2, \"b\"=2]>\n";

const std::string kFoo =
    "func.func private @foo(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {\n"
    "  %0 = stablehlo.abs %arg0 : tensor<8x4xf32>\n"
    "  return %0 : tensor<8x4xf32>\n"
    "}\n";

std::string sh(const std::string& dims) {
  return "{sdy.sharding = #sdy.sharding<@mesh, [" + dims + "]>}";
}
std::string per_value(const std::string& dims) {
  return "{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [" + dims + "]>]>}";
}

}  // namespace

TEST_CASE("flatten-call-graph: a second call gets its own copy; differing copies stay") {
  // foo's first call sees {"a"} (from %arg0), the second {"b"} (the constraint): two
  // callees with different shardings, so unflattening keeps both.
  std::string in = std::string(kMesh) + "func.func @main(%arg0: tensor<8x4xf32> " +
                   sh("{\"a\"}, {}") +
                   ") -> tensor<8x4xf32> {\n"
                   "  %0 = call @foo(%arg0) : (tensor<8x4xf32>) -> tensor<8x4xf32>\n"
                   "  %1 = sdy.sharding_constraint %0 <@mesh, [{\"b\"}, {}]> : tensor<8x4xf32>\n"
                   "  %2 = call @foo(%1) : (tensor<8x4xf32>) -> tensor<8x4xf32>\n"
                   "  return %2 : tensor<8x4xf32>\n"
                   "}\n" +
                   kFoo;
  std::string a = "{\"a\"}, {}", b = "{\"b\"}, {}";
  std::string want =
      std::string(kMesh) + "func.func @main(%arg0: tensor<8x4xf32> " + sh(a) +
      ") -> (tensor<8x4xf32> " + sh(b) + ") {\n" + "  %0 = call @foo(%arg0) " + per_value(a) +
      " : (tensor<8x4xf32>) -> tensor<8x4xf32>\n" +
      "  %1 = sdy.reshard %0 <@mesh, [{\"b\"}, {}]> : tensor<8x4xf32>\n" +
      "  %2 = call @foo_0(%1) " + per_value(b) + " : (tensor<8x4xf32>) -> tensor<8x4xf32>\n" +
      "  return %2 : tensor<8x4xf32>\n}\n" + "func.func private @foo(%arg0: tensor<8x4xf32> " +
      sh(a) + ") -> (tensor<8x4xf32> " + sh(a) + ") {\n" + "  %0 = stablehlo.abs %arg0 " +
      per_value(a) + " : tensor<8x4xf32>\n" + "  return %0 : tensor<8x4xf32>\n}\n" +
      "func.func private @foo_0(%arg0: tensor<8x4xf32> " + sh(b) + ") -> (tensor<8x4xf32> " +
      sh(b) + ") {\n" + "  %0 = stablehlo.abs %arg0 " + per_value(b) + " : tensor<8x4xf32>\n" +
      "  return %0 : tensor<8x4xf32>\n}\n";
  std::string out = propagated(in, PropagationStrategy::pipeline);
  CHECK(out == want);
  // The printed calls parse back and print the same.
  auto again = parse_module_for_propagation(out, "printed.mlir");
  REQUIRE_MESSAGE(again.has_value(), again.error().message);
  CHECK(print_module(*again) == out);
}

TEST_CASE("unflatten-call-graph: copies with equal shardings become one function again") {
  std::string in = std::string(kMesh) + "func.func @main(%arg0: tensor<8x4xf32> " +
                   sh("{\"a\"}, {}") +
                   ") -> tensor<8x4xf32> {\n"
                   "  %0 = call @foo(%arg0) : (tensor<8x4xf32>) -> tensor<8x4xf32>\n"
                   "  %1 = call @foo(%arg0) : (tensor<8x4xf32>) -> tensor<8x4xf32>\n"
                   "  %2 = stablehlo.add %0, %1 : tensor<8x4xf32>\n"
                   "  return %2 : tensor<8x4xf32>\n"
                   "}\n" +
                   kFoo;
  std::string a = "{\"a\"}, {}";
  std::string out = propagated(in, PropagationStrategy::pipeline);
  CHECK(out.find("%0 = call @foo(%arg0) " + per_value(a)) != std::string::npos);
  CHECK(out.find("%1 = call @foo(%arg0) " + per_value(a)) != std::string::npos);
  CHECK(out.find("@foo_0") == std::string::npos);
  CHECK(out.find("func.func private @foo(%arg0: tensor<8x4xf32> " + sh(a) +
                 ") -> (tensor<8x4xf32> " + sh(a) + ")") != std::string::npos);
}

TEST_CASE("propagation reaches a caller from inside the callee") {
  // The sharding is stated inside @foo only: the call's operand and result take it.
  std::string in = std::string(kMesh) +
                   "func.func @main(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {\n"
                   "  %0 = stablehlo.negate %arg0 : tensor<8x4xf32>\n"
                   "  %1 = call @foo(%0) : (tensor<8x4xf32>) -> tensor<8x4xf32>\n"
                   "  return %1 : tensor<8x4xf32>\n"
                   "}\n"
                   "func.func private @foo(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {\n"
                   "  %0 = stablehlo.abs %arg0 " +
                   per_value("{}, {\"b\"}") +
                   " : tensor<8x4xf32>\n"
                   "  return %0 : tensor<8x4xf32>\n"
                   "}\n";
  std::string out = propagated(in, PropagationStrategy::basic);
  std::string open = "{?}, {\"b\", ?}";
  CHECK(out.find("%0 = stablehlo.negate %arg0 " + per_value(open)) != std::string::npos);
  CHECK(out.find("%1 = call @foo(%0) " + per_value("{}, {\"b\"}")) != std::string::npos);
  CHECK(out.find("func.func private @foo(%arg0: tensor<8x4xf32> " + sh(open) + ")") !=
        std::string::npos);
}

TEST_CASE("recursive calls are refused with the function named") {
  std::string in = std::string(kMesh) +
                   "func.func @main(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {\n"
                   "  %0 = call @main(%arg0) : (tensor<8x4xf32>) -> tensor<8x4xf32>\n"
                   "  return %0 : tensor<8x4xf32>\n"
                   "}\n";
  auto m = parse_module_for_propagation(in, "rec.mlir");
  REQUIRE(m.has_value());
  auto s = run_sdy_propagation(*m, PropagationStrategy::basic);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().message.find("@main calls itself") != std::string::npos);
}

TEST_CASE("!stablehlo.token values get no sharding and print back") {
  std::string in =
      "sdy.mesh @mesh = <[\"a\"=2]>\n"
      "func.func @main(%arg0: !stablehlo.token, %arg1: tensor<8xf32> {sdy.sharding = "
      "#sdy.sharding<@mesh, [{\"a\"}]>}) -> (!stablehlo.token, tensor<8xf32>) {\n"
      "  %0 = stablehlo.abs %arg1 : tensor<8xf32>\n"
      "  return %arg0, %0 : !stablehlo.token, tensor<8xf32>\n"
      "}\n";
  std::string want =
      "sdy.mesh @mesh = <[\"a\"=2]>\n"
      "func.func @main(%arg0: !stablehlo.token, %arg1: tensor<8xf32> {sdy.sharding = "
      "#sdy.sharding<@mesh, [{\"a\"}]>}) -> (!stablehlo.token, tensor<8xf32> {sdy.sharding = "
      "#sdy.sharding<@mesh, [{\"a\", ?}]>}) {\n"
      "  %0 = stablehlo.abs %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{\"a\", "
      "?}]>]>} : tensor<8xf32>\n"
      "  return %arg0, %0 : !stablehlo.token, tensor<8xf32>\n"
      "}\n";
  CHECK(propagated(in, PropagationStrategy::basic) == want);
  // The mesh passes have no token values: the ordinary import refuses them where they are.
  auto m = parse_module(in, "tok.mlir");
  REQUIRE_FALSE(m.has_value());
  CHECK(m.error().message.find("tok.mlir:2:") != std::string::npos);
  CHECK(m.error().message.find("sdy-propagation") != std::string::npos);
}

TEST_CASE("sdy.func_data_flow_edge passes a sharding through like its operand") {
  // sdy_dialect.md: the edge's result is its operand, so the sharding of %0 flows into the
  // callee's edge and out through the caller's edge after the call. The callee's argument is
  // used only by its edge, which holds the sharding: the argument itself states none.
  std::string in = std::string(kMesh) +
                   "func.func private @f(%arg0: tensor<8x2xi32>) -> tensor<8x2xi32> {\n"
                   "  %0 = sdy.func_data_flow_edge %arg0 : tensor<8x2xi32>\n"
                   "  return %0 : tensor<8x2xi32>\n"
                   "}\n"
                   "func.func @main(%arg0: tensor<8x2xi32> " +
                   sh("{\"a\"}, {}") +
                   ") -> tensor<8x2xi32> {\n"
                   "  %0 = stablehlo.add %arg0, %arg0 : tensor<8x2xi32>\n"
                   "  %1 = call @f(%0) : (tensor<8x2xi32>) -> tensor<8x2xi32>\n"
                   "  %2 = sdy.func_data_flow_edge %1 : tensor<8x2xi32>\n"
                   "  return %2 : tensor<8x2xi32>\n"
                   "}\n";
  std::string out = propagated(in, PropagationStrategy::basic);
  std::string open = "{\"a\", ?}, {?}";
  CHECK(out.find("%0 = sdy.func_data_flow_edge %arg0 " + per_value(open) +
                 " : tensor<8x2xi32>\n") != std::string::npos);
  CHECK(out.find("%2 = sdy.func_data_flow_edge %1 " + per_value(open) + " : tensor<8x2xi32>\n") !=
        std::string::npos);
  CHECK(out.find("func.func private @f(%arg0: tensor<8x2xi32>) -> ") != std::string::npos);
  auto again = parse_module_for_propagation(out, "printed.mlir");
  REQUIRE_MESSAGE(again.has_value(), again.error().message);
  CHECK(print_module(*again) == out);
}
