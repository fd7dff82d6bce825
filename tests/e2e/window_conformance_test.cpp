// Conformance of stablehlo.reduce_window and stablehlo.select_and_scatter as JAX prints them
// (generic form): each module goes parse -> lower -> plan (several policies) -> run on the
// emulated chip, in f32 and bf16, against literal results worked out by hand from the
// StableHLO spec (its own examples included: padding, base and window dilations, overlapping
// windows; NaN propagation, infinities, negative zero, ties). Every module also round-trips
// (print, parse again: the same graph key), and unsupported forms fail at file:line:col.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"
#include "plan_run.hpp"
#include "test_util.hpp"

using namespace meshplan;
using device::OpKind;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
const char* const kPolicies[] = {"dram", "l1-interleaved", "greedy", "beam"};

struct Input {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

bool matches(float got, double want, double rel) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (want == 0.0) return got == 0.0f && std::signbit(got) == std::signbit(want);
  return std::fabs(got - want) <= rel * std::fabs(want);
}

/// Lowers `text` (element type written E), checks the round trip, then plans and runs it
/// under every policy in f32 and bf16 against `want`. Returns the lowered f32 graph.
planner::Graph check(const std::string& text, const std::vector<Input>& inputs,
                     const std::vector<double>& want) {
  planner::Graph first;
  for (std::string el : {"f32", "bf16"}) {
    CAPTURE(el);
    double rel = el == "f32" ? 1e-6 : 1.0 / 128;
    std::string t = replace_all(text, "E>", el + ">");
    t = replace_all(t, "NEGINF", el == "f32" ? "0xFF800000" : "0xFF80");
    t = replace_all(t, "POSINF", el == "f32" ? "0x7F800000" : "0x7F80");
    auto m = planner::shlo::parse_module(t, "window.mlir");
    REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
    auto g = planner::shlo::lower_to_graph(*m);
    REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
    auto again = planner::shlo::parse_module(planner::shlo::print_module(*m), "printed.mlir");
    REQUIRE_MESSAGE(again, (again ? "" : again.error().message));
    auto g2 = planner::shlo::lower_to_graph(*again);
    REQUIRE_MESSAGE(g2, (g2 ? "" : g2.error().message));
    CHECK(planner::graph_key(*g) == planner::graph_key(*g2));
    if (el == "f32") first = *g;
    std::vector<runtime::TensorView> views;
    for (const Input& in : inputs) views.push_back({in.shape, in.data});
    for (const char* policy : kPolicies) {
      CAPTURE(policy);
      auto outputs = test::plan_and_run(*g, policy, "window", views);
      REQUIRE(outputs.size() == 1);
      const auto& out = outputs[0].data;
      REQUIRE(out.size() == want.size());
      for (size_t i = 0; i < out.size(); ++i) {
        CAPTURE(i);
        CHECK_MESSAGE(matches(out[i], want[i], rel), out[i], " != ", want[i]);
      }
    }
  }
  return first;
}

int count(const planner::Graph& g, OpKind k) {
  int n = 0;
  for (const auto& op : g.ops) n += op.kind == k;
  return n;
}

/// One-input reduce_window module: `x` of type X, init `init`, `body` (add, maximum, ...),
/// attributes `attrs` (the `<{...}>` properties), result type R.
std::string reduce_window(const std::string& x, const std::string& r, const std::string& init,
                          const std::string& body, const std::string& attrs) {
  return "module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n"
         "  func.func public @main(%arg0: " +
         x + ") -> (" + r +
         " {jax.result_info = \"\"}) {\n"
         "    %cst = stablehlo.constant dense<" +
         init +
         "> : tensor<E>\n"
         "    %0 = \"stablehlo.reduce_window\"(%arg0, %cst) <{" +
         attrs +
         "}> ({\n"
         "    ^bb0(%arg1: tensor<E>, %arg2: tensor<E>):\n"
         "      %1 = stablehlo." +
         body +
         " %arg1, %arg2 : tensor<E>\n"
         "      stablehlo.return %1 : tensor<E>\n"
         "    }) : (" +
         x + ", tensor<E>) -> " + r +
         "\n"
         "    return %0 : " +
         r +
         "\n"
         "  }\n"
         "}\n";
}

std::string select_and_scatter(const std::string& x, const std::string& s, const std::string& dir,
                               const std::string& attrs) {
  return "func.func public @main(%arg0: " + x + ", %arg1: " + s + ") -> " + x +
         " {\n"
         "  %cst = stablehlo.constant dense<0.0> : tensor<E>\n"
         "  %0 = \"stablehlo.select_and_scatter\"(%arg0, %arg1, %cst) <{" +
         attrs +
         "}> ({\n"
         "  ^bb0(%a: tensor<E>, %b: tensor<E>):\n"
         "    %1 = stablehlo.compare " +
         dir +
         ", %a, %b, FLOAT : (tensor<E>, tensor<E>) -> tensor<i1>\n"
         "    stablehlo.return %1 : tensor<i1>\n"
         "  }, {\n"
         "  ^bb0(%a: tensor<E>, %b: tensor<E>):\n"
         "    %1 = stablehlo.add %a, %b : tensor<E>\n"
         "    stablehlo.return %1 : tensor<E>\n"
         "  }) : (" +
         x + ", " + s + ", tensor<E>) -> " + x +
         "\n"
         "  return %0 : " +
         x + "\n}\n";
}

std::string lower_error(const std::string& text) {
  auto m = planner::shlo::parse_module(replace_all(text, "E>", "f32>"), "window.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  auto g = planner::shlo::lower_to_graph(*m);
  REQUIRE_FALSE(g.has_value());
  return g.error().message;
}

}  // namespace

TEST_CASE("reduce_window: the spec's example (base and window dilation, padding, stride)") {
  // Spec: input [[1, 2], [3, 4], [5, 6]], init 0, add, window [2, 1], strides [4, 1],
  // base dilations [2, 1], window dilations [3, 1], padding [[2, 1], [0, 0]] -> [[0, 0], [3, 4]].
  check(reduce_window("tensor<3x2xE>", "tensor<2x2xE>", "0.0", "add",
                      "base_dilations = array<i64: 2, 1>, padding = dense<[[2, 1], [0, 0]]> : "
                      "tensor<2x2xi64>, window_dilations = array<i64: 3, 1>, "
                      "window_dimensions = array<i64: 2, 1>, window_strides = array<i64: 4, 1>"),
        {{{3, 2}, {1, 2, 3, 4, 5, 6}}}, {0, 0, 3, 4});
}

TEST_CASE("reduce_window max over bf16 NHWC is max_pool2d; NaN propagates, -inf and ties") {
  // flax/JAX max_pool 2x2 stride 2: windows {1,2,3,-1} {5,NaN,0,7} {-inf,-2,-3,-5} {8,8,1,9}.
  // The -inf init as JAX prints it: hex bits of the element type.
  std::string t = reduce_window(
      "tensor<1x4x4x1xE>", "tensor<1x2x2x1xE>", "NEGINF", "maximum",
      "padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, "
      "window_strides = array<i64: 1, 2, 2, 1>");
  auto g = check(t, {{{1, 4, 4, 1}, {1, 2, 5, kNaN, 3, -1, 0, 7, -kInf, -2, 8, 8, -3, -5, 1, 9}}},
                 {3, kNaN, -2, 9});
  // max_pool2d in bf16 only (tt-metal's pools read bf16 only); f32 takes slices and maximums.
  CHECK(count(g, OpKind::max_pool2d) == 0);
  auto bf = planner::shlo::parse_module(
      replace_all(replace_all(t, "E>", "bf16>"), "NEGINF", "0xFF80"), "window.mlir");
  REQUIRE(bf);
  auto gb = planner::shlo::lower_to_graph(*bf);
  REQUIRE(gb);
  CHECK(count(*gb, OpKind::max_pool2d) == 1);
  // SAME-style padding (high side): 3x3 input, window 2x2 stride 1 -> [[5,6,6],[8,9,9],[8,9,9]].
  check(reduce_window("tensor<1x3x3x1xE>", "tensor<1x3x3x1xE>", "NEGINF", "maximum",
                      "padding = dense<[[0, 0], [0, 1], [0, 1], [0, 0]]> : tensor<4x2xi64>, "
                      "window_dimensions = array<i64: 1, 2, 2, 1>, "
                      "window_strides = array<i64: 1, 1, 1, 1>"),
        {{{1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}}, {5, 6, 6, 8, 9, 9, 8, 9, 9});
}

TEST_CASE("reduce_window add (JAX's avg_pool numerator): init +0 makes a window of -0 +0") {
  // Windows of [[1,2,-0,-0],[3,4,-0,-0],[inf,1,5,6],[2,3,7,8]], 2x2 stride 2, NCHW-free [4, 4].
  std::string t =
      reduce_window("tensor<4x4xE>", "tensor<2x2xE>", "0.000000e+00", "add",
                    "padding = dense<0> : tensor<2x2xi64>, window_dimensions = array<i64: 2, 2>, "
                    "window_strides = array<i64: 2, 2>");
  auto g = check(t, {{{4, 4}, {1, 2, -0.0f, -0.0f, 3, 4, -0.0f, -0.0f, kInf, 1, 5, 6, 2, 3, 7, 8}}},
                 {10, 0.0, kInf, 26});
  CHECK(count(g, OpKind::max_pool2d) == 0);
  // Init -0 (the identity): the window of -0 stays -0.
  check(replace_all(t, "0.000000e+00", "-0.000000e+00"),
        {{{4, 4}, {1, 2, -0.0f, -0.0f, 3, 4, -0.0f, -0.0f, kInf, 1, 5, 6, 2, 3, 7, 8}}},
        {10, -0.0, kInf, 26});
}

TEST_CASE("reduce_window as cumsum / cumprod / cummax (window n, padding n-1 low)") {
  check(reduce_window("tensor<8xE>", "tensor<8xE>", "0.0", "add",
                      "padding = dense<[[7, 0]]> : tensor<1x2xi64>, "
                      "window_dimensions = array<i64: 8>, window_strides = array<i64: 1>"),
        {{{8}, {1, 2, 3, 4, 5, 6, 7, 8}}}, {1, 3, 6, 10, 15, 21, 28, 36});
  // inf then -inf: NaN from there on.
  check(reduce_window("tensor<4xE>", "tensor<4xE>", "0.0", "add",
                      "padding = dense<[[3, 0]]> : tensor<1x2xi64>, "
                      "window_dimensions = array<i64: 4>, window_strides = array<i64: 1>"),
        {{{4}, {1, kInf, -kInf, 2}}}, {1, kInf, kNaN, kNaN});
  check(reduce_window("tensor<2x4xE>", "tensor<2x4xE>", "1.0", "multiply",
                      "padding = dense<[[0, 0], [3, 0]]> : tensor<2x2xi64>, "
                      "window_dimensions = array<i64: 1, 4>, window_strides = array<i64: 1, 1>"),
        {{{2, 4}, {1, 2, 3, 4, -1, 0.5f, -2, 4}}}, {1, 2, 6, 24, -1, -0.5, 1, 4});
  check(reduce_window("tensor<5xE>", "tensor<5xE>", "NEGINF", "maximum",
                      "padding = dense<[[4, 0]]> : tensor<1x2xi64>, "
                      "window_dimensions = array<i64: 5>, window_strides = array<i64: 1>"),
        {{{5}, {-3, -5, 2, kNaN, 7}}}, {-3, -3, 2, kNaN, kNaN});
}

TEST_CASE(
    "reduce_window min with window dilation and stride; negative padding; init not the "
    "identity") {
  // x = [5,1,4,-2,NaN,7,3,0], window 2 dilated by 2, stride 2: min(x0,x2) min(x2,x4) min(x4,x6).
  check(reduce_window("tensor<8xE>", "tensor<3xE>", "POSINF", "minimum",
                      "window_dilations = array<i64: 2>, window_dimensions = array<i64: 2>, "
                      "window_strides = array<i64: 2>"),
        {{{8}, {5, 1, 4, -2, kNaN, 7, 3, 0}}}, {4, kNaN, kNaN});
  // padding [[-1, -1]] crops [1..6] to [2,3,4,5]; windows of 2, stride 2.
  check(reduce_window("tensor<6xE>", "tensor<2xE>", "0.0", "add",
                      "padding = dense<[[-1, -1]]> : tensor<1x2xi64>, "
                      "window_dimensions = array<i64: 2>, window_strides = array<i64: 2>"),
        {{{6}, {1, 2, 3, 4, 5, 6}}}, {5, 9});
  // max with init 0 (not the identity) takes part in every window.
  check(reduce_window("tensor<4xE>", "tensor<2xE>", "0.0", "maximum",
                      "window_dimensions = array<i64: 2>, window_strides = array<i64: 2>"),
        {{{4}, {-1, 2, -3, -4}}}, {2, 0});
}

TEST_CASE("select_and_scatter: the spec's example (overlapping windows, padding never selected)") {
  // Spec: operand [[1,5],[2,5],[3,6],[4,4]], source [[5,6],[7,8]], GE / add, window [3, 1],
  // strides [2, 1], padding [[0, 1], [0, 0]] -> [[0,0],[0,0],[5,14],[7,0]].
  check(select_and_scatter("tensor<4x2xE>", "tensor<2x2xE>", "GE",
                           "padding = dense<[[0, 1], [0, 0]]> : tensor<2x2xi64>, "
                           "window_dimensions = array<i64: 3, 1>, "
                           "window_strides = array<i64: 2, 1>"),
        {{{4, 2}, {1, 5, 2, 5, 3, 6, 4, 4}}, {{2, 2}, {5, 6, 7, 8}}}, {0, 0, 0, 0, 5, 14, 7, 0});
}

TEST_CASE(
    "select_and_scatter as the max- and min-pool gradient: GE/LE take the first, GT/LT the last") {
  // x = [[1,3,2],[3,0,5],[4,4,1]] padded to 4x4 (high side), 2x2 windows, stride 2.
  std::string attrs =
      "padding = dense<[[0, 0], [0, 1], [0, 1], [0, 0]]> : tensor<4x2xi64>, "
      "window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>";
  std::vector<Input> in = {{{1, 3, 3, 1}, {1, 3, 2, 3, 0, 5, 4, 4, 1}},
                           {{1, 2, 2, 1}, {10, 20, 30, 40}}};
  check(select_and_scatter("tensor<1x3x3x1xE>", "tensor<1x2x2x1xE>", "GE", attrs), in,
        {0, 10, 0, 0, 0, 20, 30, 0, 40});
  check(select_and_scatter("tensor<1x3x3x1xE>", "tensor<1x2x2x1xE>", "GT", attrs), in,
        {0, 0, 0, 10, 0, 20, 0, 30, 40});
  // The min-pool gradient: LE keeps the first minimum of a tie (the 4, 4 window), LT the last.
  check(select_and_scatter("tensor<1x3x3x1xE>", "tensor<1x2x2x1xE>", "LE", attrs), in,
        {0, 0, 20, 0, 10, 0, 30, 0, 40});
  check(select_and_scatter("tensor<1x3x3x1xE>", "tensor<1x2x2x1xE>", "LT", attrs), in,
        {0, 0, 20, 0, 10, 0, 0, 30, 40});
  // NaN, as the spec's sequential rule runs it: 1; NaN (1 >= NaN is false); 2 (NaN >= 2 is
  // false); 0 does not replace 2 -> the source goes to element 2.
  check(select_and_scatter("tensor<4xE>", "tensor<1xE>", "GE",
                           "window_dimensions = array<i64: 4>, window_strides = array<i64: 4>"),
        {{{4}, {1, kNaN, 2, 0}}, {{1}, {7}}}, {0, 0, 7, 0});
}

TEST_CASE("reduce_window and select_and_scatter: unsupported forms fail at file:line:col") {
  std::string sub = reduce_window("tensor<4xE>", "tensor<2xE>", "0.0", "subtract",
                                  "window_dimensions = array<i64: 2>, window_strides = "
                                  "array<i64: 2>");
  std::string e = lower_error(sub);
  CHECK(e.find("window.mlir:4:5: unimplemented: stablehlo.reduce_window whose region is not one "
               "binary op of its arguments (supported: one input, a region returning "
               "add/maximum/minimum/multiply") != std::string::npos);
  std::string big = reduce_window("tensor<300xE>", "tensor<300xE>", "0.0", "add",
                                  "padding = dense<[[299, 0]]> : tensor<1x2xi64>, "
                                  "window_dimensions = array<i64: 300>, "
                                  "window_strides = array<i64: 1>");
  CHECK(lower_error(big).find("stablehlo.reduce_window of 300 window positions") !=
        std::string::npos);
  // A window over an empty operand computes nothing, but a plan cannot return the empty result.
  std::string empty = reduce_window("tensor<0xE>", "tensor<0xE>", "0.0", "add",
                                    "window_dimensions = array<i64: 1>");
  CHECK(lower_error(empty).starts_with("window.mlir:"));
  CHECK(lower_error(empty).find("result 0 of @main is the zero-size tensor<0xf32>") !=
        std::string::npos);
  std::string wrong = reduce_window("tensor<4xE>", "tensor<3xE>", "0.0", "add",
                                    "window_dimensions = array<i64: 2>, window_strides = "
                                    "array<i64: 2>");
  CHECK(lower_error(wrong).find("window.mlir:4:5: stablehlo.reduce_window: result dim 0 is 3 "
                                "but the window gives 2") != std::string::npos);
  std::string ne = select_and_scatter("tensor<4xE>", "tensor<1xE>", "NE",
                                      "window_dimensions = array<i64: 4>, "
                                      "window_strides = array<i64: 4>");
  CHECK(lower_error(ne).find("window.mlir:3:3: unimplemented: stablehlo.select_and_scatter whose "
                             "select region is not compare GE/GT/LE/LT") != std::string::npos);
}

namespace {

/// A one-convolution module (pretty form, as JAX prints it).
std::string convolution(const std::string& x, const std::string& w, const std::string& r,
                        const std::string& dims, const std::string& window,
                        const std::string& groups =
                            "batch_group_count = 1 : i64, "
                            "feature_group_count = 1 : i64") {
  return "func.func public @main(%arg0: " + x + ", %arg1: " + w + ") -> " + r +
         " {\n"
         "  %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = " +
         dims + ", window = {" + window + "} {" + groups + "} : (" + x + ", " + w + ") -> " + r +
         "\n  return %0 : " + r + "\n}\n";
}

}  // namespace

TEST_CASE("1-D convolution (NWC/WIO and NCW/OIW) lowers onto conv2d with a unit dimension") {
  // x = [1..5], kernel [1, 2, 3]: x[i] + 2 x[i+1] + 3 x[i+2] = [14, 20, 26].
  auto g = check(convolution("tensor<1x5x1xE>", "tensor<3x1x1xE>", "tensor<1x3x1xE>",
                             "[b, 0, f]x[0, i, o]->[b, 0, f]",
                             "stride = [1], pad = [[0, 0]], lhs_dilate = [1], rhs_dilate = [1]"),
                 {{{1, 5, 1}, {1, 2, 3, 4, 5}}, {{3, 1, 1}, {1, 2, 3}}}, {14, 20, 26});
  CHECK(count(g, OpKind::conv2d) == 1);
  // Stride 2, padding [1, 1]: [0,1,2,3,4,5,0] -> [8, 20, 14]; NCW / OIW layout.
  check(convolution("tensor<1x1x5xE>", "tensor<1x1x3xE>", "tensor<1x1x3xE>",
                    "[b, f, 0]x[o, i, 0]->[b, f, 0]", "stride = [2], pad = [[1, 1]]"),
        {{{1, 1, 5}, {1, 2, 3, 4, 5}}, {{1, 1, 3}, {1, 2, 3}}}, {8, 20, 14});
}

TEST_CASE("convolution with lhs_dilate (transposed) and with batch_group_count") {
  // [1,2,3] dilated by 2 and padded by 2: [0,0,1,0,2,0,3,0,0] * [1,2,3] -> [3,2,7,4,11,6,3].
  check(convolution("tensor<1x3x1xE>", "tensor<3x1x1xE>", "tensor<1x7x1xE>",
                    "[b, 0, f]x[0, i, o]->[b, 0, f]", "pad = [[2, 2]], lhs_dilate = [2]"),
        {{{1, 3, 1}, {1, 2, 3}}, {{3, 1, 1}, {1, 2, 3}}}, {3, 2, 7, 4, 11, 6, 3});
  // 2-D transposed: a 2x2 input dilated by 2 (3x3 with zeros), 1x1 kernel of 2: 2x on the
  // input's pixels, 0 between them.
  check(convolution("tensor<1x2x2x1xE>", "tensor<1x1x1x1xE>", "tensor<1x3x3x1xE>",
                    "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "lhs_dilate = [2, 2]"),
        {{{1, 2, 2, 1}, {1, 2, 3, 4}}, {{1, 1, 1, 1}, {2}}}, {2, 0, 4, 0, 0, 0, 6, 0, 8});
  // batch_group_count 2: batch [1,2,3] with kernel [1,1], batch [4,5,6] with [1,-1]; the two
  // results are the output features: [[3, -1], [5, -1]].
  check(convolution("tensor<2x3x1xE>", "tensor<2x1x2xE>", "tensor<1x2x2xE>",
                    "[b, 0, f]x[0, i, o]->[b, 0, f]", "",
                    "batch_group_count = 2 : i64, feature_group_count = 1 : i64"),
        {{{2, 3, 1}, {1, 2, 3, 4, 5, 6}}, {{2, 1, 2}, {1, 1, 1, -1}}}, {3, -1, 5, -1});
}

TEST_CASE("3-D convolution (NDHWC/DHWIO): a sum of 2-D convolutions over the depth taps") {
  // x[d] = (1..4), (5..8), (9..12) over 2x2; kernel depth taps [1, 10]: x[d] + 10 x[d+1].
  auto g = check(
      convolution("tensor<1x3x2x2x1xE>", "tensor<2x1x1x1x1xE>", "tensor<1x2x2x2x1xE>",
                  "[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f]", ""),
      {{{1, 3, 2, 2, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}, {{2, 1, 1, 1, 1}, {1, 10}}},
      {51, 62, 73, 84, 95, 106, 117, 128});
  CHECK(count(g, OpKind::conv2d) == 2);
  // 2x2x2 ones, depth padding [1, 1]: slice sums 10 and 26 -> [0 + 10, 10 + 26, 26 + 0].
  check(convolution("tensor<1x2x2x2x1xE>", "tensor<2x2x2x1x1xE>", "tensor<1x3x1x1x1xE>",
                    "[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f]",
                    "pad = [[1, 1], [0, 0], [0, 0]]"),
        {{{1, 2, 2, 2, 1}, {1, 2, 3, 4, 5, 6, 7, 8}}, {{2, 2, 2, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1}}},
        {10, 36, 26});
}

TEST_CASE("convolution: a zero-size program result and 4-D are located refusals") {
  // A window of 3 over 2 positions: the result is empty, which a plan cannot return.
  std::string empty = convolution("tensor<1x2x1xE>", "tensor<3x1x1xE>", "tensor<1x0x1xE>",
                                  "[b, 0, f]x[0, i, o]->[b, 0, f]", "");
  CHECK(lower_error(empty).find("window.mlir:3:3: unimplemented: result 0 of @main is the "
                                "zero-size tensor<1x0x1xf32>") != std::string::npos);
  std::string four =
      convolution("tensor<1x2x2x2x2x1xE>", "tensor<1x1x1x1x1x1xE>", "tensor<1x2x2x2x2x1xE>",
                  "[b, 0, 1, 2, 3, f]x[0, 1, 2, 3, i, o]->[b, 0, 1, 2, 3, f]", "");
  CHECK(lower_error(four).find("window.mlir:2:3: unimplemented: stablehlo.convolution that is "
                               "not 1-D, 2-D or 3-D") != std::string::npos);
}

TEST_CASE("pools on a 1x2 mesh: batch-sharded max pool, H-sharded sum pool (replicated)") {
  // max_pool(x) + sum_pool(y), 2x2 windows stride 2, x split over the batch (the window does not
  // touch it), y over H (windowed: gathered first). Integer-valued data: exact in f32.
  const std::string t = "tensor<4x8x8x2xf32>", r = "tensor<4x4x4x2xf32>";
  const std::string attrs =
      "padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, "
      "window_strides = array<i64: 1, 2, 2, 1>";
  auto pool = [&](const std::string& res, const std::string& in, const std::string& init,
                  const std::string& body) {
    return "  " + res + " = \"stablehlo.reduce_window\"(" + in + ", " + init + ") <{" + attrs +
           "}> ({\n  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n    %s = stablehlo." + body +
           " %a, %b : tensor<f32>\n    stablehlo.return %s : tensor<f32>\n  }) : (" + t +
           ", tensor<f32>) -> " + r + "\n";
  };
  const std::string text =
      "sdy.mesh @mesh = <[\"x\"=2]>\n"
      "func.func public @main(%x: " +
      t + " {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {}, {}, {}]>}, %y: " + t +
      " {sdy.sharding = #sdy.sharding<@mesh, [{}, {\"x\"}, {}, {}]>}) -> " + r +
      " {\n"
      "  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>\n"
      "  %zero = stablehlo.constant dense<0.0> : tensor<f32>\n" +
      pool("%m", "%x", "%ninf", "maximum") + pool("%p", "%y", "%zero", "add") +
      "  %o = stablehlo.add %m, %p : " + r + "\n  return %o : " + r + "\n}\n";
  test::TempDir dir;
  const std::string mlir = dir.file("pools.mlir"), cache = dir.file("c.mpc");
  {
    FILE* f = std::fopen(mlir.c_str(), "w");
    REQUIRE(f);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  const std::string bin = MESHPLAN_BINARY_DIR;
  auto c =
      test::run_shell(bin + "/planner/meshplan-compile " + mlir + " -o " + cache + " --name pools");
  INFO(c.text);
  REQUIRE(c.status == 0);
  const int n = 4 * 8 * 8 * 2;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>((i * 37 + 11) % 19 - 9);
    y[i] = static_cast<float>((i * 13 + 5) % 7 - 3);
  }
  auto arg = [&](const std::vector<float>& v) {
    std::string s = " --input=4x8x8x2xf32=";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(int(v[i]));
    return s;
  };
  const std::string out = dir.file("o.npy");
  auto run = test::run_shell(bin + "/runtime/meshplan-run " + cache + " --name pools" + arg(x) +
                             arg(y) + " --output=@" + out);
  INFO(run.text);
  REQUIRE(run.status == 0);
  CHECK(run.text.find("bytes between chips") != std::string::npos);
  std::vector<uint8_t> bytes = test::read_bytes(out);
  const size_t m = 4 * 4 * 4 * 2;
  REQUIRE(bytes.size() >= m * 4);
  std::vector<float> got(m);
  std::memcpy(got.data(), bytes.data() + bytes.size() - m * 4, m * 4);
  int wrong = 0;
  for (int b = 0; b < 4; ++b)
    for (int oy = 0; oy < 4; ++oy)
      for (int ox = 0; ox < 4; ++ox)
        for (int ch = 0; ch < 2; ++ch) {
          float mx = -kInf, sum = 0;
          for (int dy = 0; dy < 2; ++dy)
            for (int dx = 0; dx < 2; ++dx) {
              int i = ((b * 8 + 2 * oy + dy) * 8 + 2 * ox + dx) * 2 + ch;
              mx = std::max(mx, x[i]);
              sum += y[i];
            }
          wrong += got[((b * 4 + oy) * 4 + ox) * 2 + ch] != mx + sum;
        }
  CHECK(wrong == 0);
}
