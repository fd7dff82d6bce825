// Conformance of StableHLO forms that JAX, torch-xla and tt-mlir's tests write and that other
// exporters leave unchanged: stablehlo.composite (a call of its decomposition, as the spec
// defines it), arith.constant on tensors, `loc(...)` after sdy.mesh, and reduce whose init is
// a computed value (joined with the reduction by the region's op). Each module goes parse ->
// lower -> plan (several policies) -> run on the emulated chip against literal results worked
// out by hand from the spec, and round-trips (print, parse again: the same graph key).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/stablehlo.hpp"
#include "plan_run.hpp"

using namespace meshplan;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
const char* const kPolicies[] = {"dram", "greedy", "beam"};

struct Input {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

bool matches(float got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (want == 0.0) return got == 0.0f && std::signbit(got) == std::signbit(want);
  return std::fabs(got - want) <= 1e-6 * std::fabs(want);
}

/// Parses and lowers `text`, checks the round trip, then plans and runs it under each policy
/// against `want` (one list of values per output).
void check_all(const std::string& text, const std::vector<Input>& inputs,
               const std::vector<std::vector<double>>& want) {
  auto m = planner::shlo::parse_module(text, "export.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  auto g = planner::shlo::lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  auto again = planner::shlo::parse_module(planner::shlo::print_module(*m), "printed.mlir");
  REQUIRE_MESSAGE(again, (again ? "" : again.error().message));
  auto g2 = planner::shlo::lower_to_graph(*again);
  REQUIRE_MESSAGE(g2, (g2 ? "" : g2.error().message));
  CHECK(planner::graph_key(*g) == planner::graph_key(*g2));
  std::vector<runtime::TensorView> views;
  for (const Input& in : inputs) views.push_back({in.shape, in.data});
  for (const char* policy : kPolicies) {
    CAPTURE(policy);
    auto outputs = test::plan_and_run(*g, policy, "export", views);
    REQUIRE(outputs.size() == want.size());
    for (size_t r = 0; r < want.size(); ++r) {
      CAPTURE(r);
      const auto& out = outputs[r].data;
      REQUIRE(out.size() == want[r].size());
      for (size_t i = 0; i < out.size(); ++i) {
        CAPTURE(i);
        CHECK_MESSAGE(matches(out[i], want[r][i]), out[i], " != ", want[r][i]);
      }
    }
  }
}

void check(const std::string& text, const std::vector<Input>& inputs,
           const std::vector<double>& want) {
  check_all(text, inputs, {want});
}

std::string parse_error(const std::string& text) {
  auto m = planner::shlo::parse_module(text, "export.mlir");
  REQUIRE_FALSE(m.has_value());
  return m.error().message;
}

/// `reduce` of `x` (tensor<2x3xf32>) over `dims` from the computed init `init` (tensor<f32>, an
/// argument) by `body`; result type `r`.
std::string reduce_computed_init(const std::string& body, const std::string& dims,
                                 const std::string& r) {
  return "func.func @main(%x: tensor<2x3xf32>, %init: tensor<f32>) -> " + r +
         " {\n"
         "  %0 = stablehlo.reduce(%x init: %init) applies stablehlo." +
         body + " across dimensions = [" + dims + "] : (tensor<2x3xf32>, tensor<f32>) -> " + r +
         "\n"
         "  return %0 : " +
         r + "\n}\n";
}

}  // namespace

TEST_CASE("composite: the call of its decomposition (pretty and generic forms)") {
  // add_mul(a, b) = (a + b) * b; the composite's name and attributes do not change the values.
  const std::string decomposition =
      "  func.func private @add_mul(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n"
      "    %0 = stablehlo.add %a, %b : tensor<4xf32>\n"
      "    %1 = stablehlo.multiply %0, %b : tensor<4xf32>\n"
      "    return %1 : tensor<4xf32>\n"
      "  }\n";
  const std::vector<Input> in = {{{4}, {1, -2, kInf, 0.5f}}, {{4}, {3, 4, -1, -0.0f}}};
  // (1+3)*3, (-2+4)*4, (inf-1)*-1, (0.5-0)*-0.
  const std::vector<double> want = {12, 8, -kInf, -0.0};
  check("module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n" + decomposition +
            "  func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {\n"
            "    %0 = stablehlo.composite \"my.add_mul\" %x, %y {composite_attributes = {approx = "
            "\"none\"}, decomposition = @add_mul, version = 1 : i32} : (tensor<4xf32>, "
            "tensor<4xf32>) -> tensor<4xf32> loc(#loc3)\n"
            "    return %0 : tensor<4xf32>\n"
            "  }\n"
            "}\n"
            "#loc3 = loc(\"add_mul\")\n",
        in, want);
  check("module {\n" + decomposition +
            "  func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {\n"
            "    %0 = \"stablehlo.composite\"(%x, %y) {name = \"my.add_mul\", decomposition = "
            "@add_mul} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
            "    return %0 : tensor<4xf32>\n"
            "  }\n"
            "}\n",
        in, want);
  // Without a decomposition the composite has no meaning meshplan can compute.
  std::string e = parse_error(
      "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %0 = stablehlo.composite \"my.op\" %x {version = 1 : i32} : (tensor<4xf32>) -> "
      "tensor<4xf32>\n"
      "  return %0 : tensor<4xf32>\n}\n");
  CHECK(e.find("export.mlir:2:8") != std::string::npos);
  CHECK(e.find("decomposition") != std::string::npos);
}

TEST_CASE("arith.constant of a tensor is a stablehlo.constant; scalars are refused") {
  check(
      "func.func @main(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {\n"
      "  %0 = arith.constant dense<[[0.5, -1.0], [2.0, 0.0]]> : tensor<2x2xf32>\n"
      "  %1 = stablehlo.multiply %x, %0 : tensor<2x2xf32>\n"
      "  return %1 : tensor<2x2xf32>\n}\n",
      {{{2, 2}, {4, 3, -2, -5}}}, {2, -3, -4, -0.0});
  std::string e = parse_error(
      "func.func @main(%x: tensor<f32>) -> tensor<f32> {\n"
      "  %0 = arith.constant 3.0 : f32\n"
      "  return %x : tensor<f32>\n}\n");
  CHECK(e.find("export.mlir:2:") != std::string::npos);
  CHECK(e.find("dense") != std::string::npos);
}

TEST_CASE("a location after sdy.mesh and on the module is skipped") {
  check(
      "#loc = loc(unknown)\n"
      "module @SyncTensorsGraph.9 {\n"
      "  sdy.mesh @mesh = <[\"x\"=1]> loc(#loc)\n"
      "  func.func @main(%x: tensor<3xf32> loc(\"p0.1\")) -> tensor<3xf32> {\n"
      "    %0 = stablehlo.negate %x : tensor<3xf32> loc(#loc)\n"
      "    return %0 : tensor<3xf32> loc(#loc)\n"
      "  } loc(#loc)\n"
      "} loc(#loc)\n",
      {{{3}, {1, -0.0f, kInf}}}, {-1, 0.0, -kInf});
}

TEST_CASE("reduce from a computed init: the init joins the reduction by the region's op") {
  // x = [[1, 2, 3], [-4, 5, NaN]], init an argument. Spec: the result is the region's op over
  // the init and every element reduced (in an unspecified order: these ops are associative).
  const Input x{{2, 3}, {1, 2, 3, -4, 5, kNaN}};
  const Input xf{{2, 3}, {1, 2, 3, -4, 5, 6}};
  check(reduce_computed_init("add", "1", "tensor<2xf32>"), {xf, {{}, {10}}}, {16, 17});
  check(reduce_computed_init("add", "0, 1", "tensor<f32>"), {xf, {{}, {-0.5}}}, {12.5});
  check(reduce_computed_init("multiply", "0", "tensor<3xf32>"), {xf, {{}, {2}}}, {-8, 20, 36});
  // maximum and minimum propagate NaN; the init wins where it is beyond every element.
  check(reduce_computed_init("maximum", "1", "tensor<2xf32>"), {x, {{}, {2.5}}}, {3, kNaN});
  check(reduce_computed_init("minimum", "1", "tensor<2xf32>"), {x, {{}, {-kInf}}}, {-kInf, kNaN});
  check(reduce_computed_init("minimum", "0", "tensor<3xf32>"), {xf, {{}, {0}}}, {-4, 0, 0});
  // No dimensions: every element joins the init once.
  check(reduce_computed_init("add", "", "tensor<2x3xf32>"), {xf, {{}, {1}}}, {2, 3, 4, -3, 6, 7});
}

TEST_CASE("reduce of i1 from a computed init: and / or join the init") {
  // mask = x > 0 for x = [[1, -1], [2, 3]]; init = (t > 0). all/any over dim 1, joined with init.
  const std::string text =
      "func.func @main(%x: tensor<2x2xf32>, %t: tensor<f32>) -> tensor<2xf32> {\n"
      "  %z = stablehlo.constant dense<0.0> : tensor<2x2xf32>\n"
      "  %zs = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %m = stablehlo.compare GT, %x, %z : (tensor<2x2xf32>, tensor<2x2xf32>) -> "
      "tensor<2x2xi1>\n"
      "  %i = stablehlo.compare GT, %t, %zs : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
      "  %r = stablehlo.reduce(%m init: %i) applies stablehlo.OP across dimensions = [1] : "
      "(tensor<2x2xi1>, tensor<i1>) -> tensor<2xi1>\n"
      "  %f = stablehlo.convert %r : (tensor<2xi1>) -> tensor<2xf32>\n"
      "  return %f : tensor<2xf32>\n}\n";
  auto with = [&](const std::string& op) {
    std::string s = text;
    s.replace(s.find("OP"), 2, op);
    return s;
  };
  const Input x{{2, 2}, {1, -1, 2, 3}};
  check(with("and"), {x, {{}, {1}}}, {0, 1});
  check(with("and"), {x, {{}, {-1}}}, {0, 0});
  check(with("or"), {x, {{}, {-1}}}, {1, 1});
  check(with("or"), {{{2, 2}, {-1, -2, 2, -3}}, {{}, {-1}}}, {0, 1});
  check(with("or"), {{{2, 2}, {-1, -2, 2, -3}}, {{}, {5}}}, {1, 1});
}

TEST_CASE("batch_norm_inference: the spec's example and a computed epsilon") {
  // Spec: operand [[[1,2],[3,4]],[[3,4],[1,2]]], scale [1,1], offset [1,1], mean [2,3],
  // variance [1,1], epsilon 0, feature_index 2 -> [[[0,0],[2,2]],[[2,2],[0,0]]].
  const std::string t =
      "func.func @main(%x: tensor<2x2x2xf32>, %s: tensor<2xf32>, %o: tensor<2xf32>, %m: "
      "tensor<2xf32>, %v: tensor<2xf32>) -> tensor<2x2x2xf32> {\n"
      "  %r = \"stablehlo.batch_norm_inference\"(%x, %s, %o, %m, %v) {epsilon = EPS : f32, "
      "feature_index = 2 : i64} : (tensor<2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, "
      "tensor<2xf32>, tensor<2xf32>) -> tensor<2x2x2xf32>\n"
      "  return %r : tensor<2x2x2xf32>\n}\n";
  auto with = [&](const std::string& eps) {
    std::string s = t;
    s.replace(s.find("EPS"), 3, eps);
    return s;
  };
  const Input x{{2, 2, 2}, {1, 2, 3, 4, 3, 4, 1, 2}};
  check(with("0.0"), {x, {{2}, {1, 1}}, {{2}, {1, 1}}, {{2}, {2, 3}}, {{2}, {1, 1}}},
        {0, 0, 2, 2, 2, 2, 0, 0});
  // var + eps = [4, 0.25]: stddev [2, 0.5]; scale [2, 0.5], offset [1, -1]:
  // feature 0: (x - 2) / 2 * 2 + 1 = x - 1; feature 1: (x - 3) / 0.5 * 0.5 - 1 = x - 4.
  check(with("2.500000e-01"),
        {x, {{2}, {2, 0.5f}}, {{2}, {1, -1}}, {{2}, {2, 3}}, {{2}, {3.75f, 0}}},
        {0, -2, 2, 0, 2, 0, 0, -2});
}

TEST_CASE("batch_norm_training: output, batch mean and biased batch variance") {
  const std::string t =
      "func.func @main(%x: tensor<X>, %s: tensor<C>, %o: tensor<C>) -> (tensor<X>, tensor<C>, "
      "tensor<C>) {\n"
      "  %r, %m, %v = \"stablehlo.batch_norm_training\"(%x, %s, %o) {epsilon = EPS : f32, "
      "feature_index = F : i64} : (tensor<X>, tensor<C>, tensor<C>) -> (tensor<X>, tensor<C>, "
      "tensor<C>)\n"
      "  return %r, %m, %v : tensor<X>, tensor<C>, tensor<C>\n}\n";
  auto with = [&](const std::string& x, const std::string& c, const std::string& eps,
                  const std::string& f) {
    std::string s = t;
    for (auto [from, to] : {std::pair{"X>", x + ">"}, std::pair{"C>", c + ">"},
                            std::pair{"EPS", eps}, std::pair{"F :", f + " :"}})
      for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
        s.replace(p, std::string(from).size(), to);
    return s;
  };
  // The spec's example: mean [2, 3], variance [1, 1], output as batch_norm_inference's.
  check_all(with("2x2x2xf32", "2xf32", "0.0", "2"),
            {{{2, 2, 2}, {1, 2, 3, 4, 3, 4, 1, 2}}, {{2}, {1, 1}}, {{2}, {1, 1}}},
            {{0, 0, 2, 2, 2, 2, 0, 0}, {2, 3}, {1, 1}});
  // x = [1, 2, 3, 6] along dim 0: mean 3, variance (4 + 1 + 0 + 9) / 4 = 3.5, + eps 0.5 = 4;
  // scale 2, offset 1: (x - 3) / 2 * 2 + 1 = x - 2.
  check_all(with("4x1xf32", "1xf32", "5.000000e-01", "1"),
            {{{4, 1}, {1, 2, 3, 6}}, {{1}, {2}}, {{1}, {1}}}, {{-1, 0, 1, 4}, {3}, {3.5}});
}

TEST_CASE("batch_norm_grad: the spec's formulas on exact values") {
  // x = [1, 2, 3, 6] (one feature, dim 1), mean 3, variance 4 (stddev 2), scale 3,
  // dy = [1, 0, 2, 1]: norm = [-1, -0.5, 0, 1.5], grad_offset = sum(dy) = 4,
  // grad_scale = sum(dy * norm) = 0.5, grad_operand = 3 / 2 * (dy - 4/4 - norm * 0.5/4)
  // = 1.5 * [0.125, -0.9375, 1, -0.1875].
  check_all(
      "func.func @main(%x: tensor<4x1xf32>, %s: tensor<1xf32>, %m: tensor<1xf32>, %v: "
      "tensor<1xf32>, %dy: tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<1xf32>, "
      "tensor<1xf32>) {\n"
      "  %gx, %gs, %go = \"stablehlo.batch_norm_grad\"(%x, %s, %m, %v, %dy) {epsilon = 0.0 : "
      "f32, feature_index = 1 : i64} : (tensor<4x1xf32>, tensor<1xf32>, tensor<1xf32>, "
      "tensor<1xf32>, tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<1xf32>, tensor<1xf32>)\n"
      "  return %gx, %gs, %go : tensor<4x1xf32>, tensor<1xf32>, tensor<1xf32>\n}\n",
      {{{4, 1}, {1, 2, 3, 6}}, {{1}, {3}}, {{1}, {3}}, {{1}, {4}}, {{4, 1}, {1, 0, 2, 1}}},
      {{0.1875, -1.40625, 1.5, -0.28125}, {0.5}, {4}});
}

TEST_CASE("get_dimension_size of a static dim is a constant; dynamic_iota of a static shape") {
  check(
      "func.func @main(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {\n"
      "  %0 = stablehlo.get_dimension_size %x, dim = 1 : (tensor<2x5xf32>) -> tensor<i32>\n"
      "  %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<f32>\n"
      "  %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<2x5xf32>\n"
      "  %3 = stablehlo.add %x, %2 : tensor<2x5xf32>\n"
      "  return %3 : tensor<2x5xf32>\n}\n",
      {{{2, 5}, {0, 1, 2, 3, 4, -5, -6, -7, -8, -9}}}, {5, 6, 7, 8, 9, 0, -1, -2, -3, -4});
  check(
      "func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
      "  %s = stablehlo.constant dense<[2, 3]> : tensor<2xi64>\n"
      "  %0 = \"stablehlo.dynamic_iota\"(%s) {iota_dimension = 1 : i64} : (tensor<2xi64>) -> "
      "tensor<2x3xf32>\n"
      "  %1 = stablehlo.multiply %x, %0 : tensor<2x3xf32>\n"
      "  return %1 : tensor<2x3xf32>\n}\n",
      {{{2, 3}, {5, 5, 5, -1, -1, -1}}}, {0, 5, 10, -0.0, -1, -2});
  std::string e = parse_error(
      "func.func @main(%x: tensor<2x5xf32>) -> tensor<i32> {\n"
      "  %0 = stablehlo.get_dimension_size %x, dim = 2 : (tensor<2x5xf32>) -> tensor<i32>\n"
      "  return %0 : tensor<i32>\n}\n");
  CHECK(e.find("export.mlir:2:") != std::string::npos);
  CHECK(e.find("dimension 2") != std::string::npos);
}

TEST_CASE("an attribute's dense literal may have index elements (XLA's layouts)") {
  check(
      "func.func @main(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {\n"
      "  %0 = stablehlo.transpose %x, dims = [1, 0] {result_layout = dense<[0, 1]> : "
      "tensor<2xindex>} : (tensor<2x3xf32>) -> tensor<3x2xf32>\n"
      "  return %0 : tensor<3x2xf32>\n}\n",
      {{{2, 3}, {1, 2, 3, 4, 5, 6}}}, {1, 4, 2, 5, 3, 6});
  // As a value's type, index is not an element type meshplan computes.
  std::string e = parse_error(
      "func.func @main(%x: tensor<2xindex>) -> tensor<2xindex> {\n"
      "  return %x : tensor<2xindex>\n}\n");
  CHECK(e.find("export.mlir:1:") != std::string::npos);
  CHECK(e.find("index") != std::string::npos);
}

TEST_CASE("sort by a TOTALORDER compare (tt-mlir's and torch-xla's argsort): IEEE total order") {
  // Total order: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN; the sort is stable.
  const std::string t =
      "func.func @main(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xi32>) {\n"
      "  %i = stablehlo.iota dim = 0 : tensor<8xi32>\n"
      "  %0:2 = \"stablehlo.sort\"(%x, %i) <{dimension = 0 : i64, is_stable = true}> ({\n"
      "  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):\n"
      "    %1 = stablehlo.compare  DIR, %a, %b,  TOTALORDER : (tensor<f32>, tensor<f32>) -> "
      "tensor<i1>\n"
      "    stablehlo.return %1 : tensor<i1>\n"
      "  }) : (tensor<8xf32>, tensor<8xi32>) -> (tensor<8xf32>, tensor<8xi32>)\n"
      "  return %0#0, %0#1 : tensor<8xf32>, tensor<8xi32>\n}\n";
  auto with = [&](const std::string& dir) {
    std::string s = t;
    s.replace(s.find("DIR"), 3, dir);
    return s;
  };
  const Input x{{8}, {3, -0.0f, kNaN, -kInf, 0.0f, -kNaN, 1, -0.0f}};
  check_all(with("LT"), {x},
            {{-kNaN, -kInf, -0.0, -0.0, 0.0, 1, 3, kNaN}, {5, 3, 1, 7, 4, 6, 0, 2}});
  check_all(with("GT"), {x},
            {{kNaN, 3, 1, 0.0, -0.0, -0.0, -kInf, -kNaN}, {2, 0, 6, 4, 1, 7, 3, 5}});
}
