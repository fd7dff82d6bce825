// Zero-size tensors (a dim of size 0) as JAX programs make them: empty arguments, slices past
// the end, concatenations and pads of empty pieces, reductions and matmuls over an empty axis.
// Each module is parsed, lowered, planned and run on the emulated chip; the expected values are
// worked out by hand from the StableHLO spec (a reduction over nothing is its init value, a sum
// of no products is 0, an empty operand contributes no element). A zero-size argument takes no
// input. What meshplan does not compute is a located error.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/stablehlo.hpp"
#include "plan_run.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

std::string corpus(const char* name) {
  std::ifstream in(test::source_path(std::string("tests/planner/jax/corpus/") + name));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs `text` on `inputs` (one per non-empty argument) with the greedy policy.
std::vector<std::vector<float>> run(const std::string& text,
                                    const std::vector<std::vector<int64_t>>& shapes,
                                    const std::vector<std::vector<float>>& inputs) {
  auto m = parse_module(text, "zero_size.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  auto g = lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  REQUIRE(g->arguments.size() >= inputs.size());
  std::vector<runtime::TensorView> views;
  for (size_t i = 0; i < inputs.size(); ++i) views.push_back({shapes[i], inputs[i]});
  auto out = test::plan_and_run(*g, "greedy", "zero_size", views);
  std::vector<std::vector<float>> result;
  for (const auto& t : out) result.emplace_back(t.data.begin(), t.data.end());
  return result;
}

}  // namespace

TEST_CASE("jnp.concatenate with a (0, 4) argument: the argument takes no input") {
  const std::vector<float> y = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, -0.0f};
  auto m = parse_module(corpus("empty.mlir"), "empty.mlir");
  REQUIRE(m);
  auto g = lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  CHECK(g->arguments.size() == 1);  // only y
  auto got = run(corpus("empty.mlir"), {{3, 4}}, {y});
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].size() == y.size());
  for (size_t i = 0; i < y.size(); ++i)
    CHECK(std::bit_cast<uint32_t>(got[0][i]) == std::bit_cast<uint32_t>(y[i]));
}

TEST_CASE("associative_scan's cumsum: its zero-size slices and concatenation") {
  // Prefix sums worked by hand.
  CHECK(run(corpus("cumsum_scan.mlir"), {{4}}, {{1, 2, 3, 4}})[0] ==
        std::vector<float>{1, 3, 6, 10});
  CHECK(run(corpus("cumsum_scan.mlir"), {{4}}, {{0.5f, -1, 2, 8}})[0] ==
        std::vector<float>{0.5f, -0.5f, 1.5f, 9.5f});
}

TEST_CASE("reductions over an empty axis give the init value; the mean is 0 / 0") {
  auto got = run(corpus("empty_reduce.mlir"), {{4}}, {{1, -2, 0.5f, -0.0f}});
  REQUIRE(got.size() == 2);
  // (y + 0) * 1, then maximum with -inf: y, except -0 + +0 = +0.
  CHECK(got[0] == std::vector<float>{1, -2, 0.5f, 0});
  CHECK_FALSE(std::signbit(got[0][3]));
  for (float v : got[1]) CHECK(std::isnan(v));
}

TEST_CASE("slices past the end, an empty constant and a pad of an empty array") {
  auto got = run(corpus("empty_slice.mlir"), {{4}}, {{1, 2, 3, -4}});
  REQUIRE(got.size() == 1);
  CHECK(got[0] == std::vector<float>{2, 4, 6, -8, 7, 7, 7});
}

TEST_CASE("a matmul over an empty contracting axis is zeros (a @ b + c == c)") {
  const std::vector<float> c = {1, -2, 3, 4.5f, -0.25f, 6};
  auto got = run(corpus("empty_matmul.mlir"), {{3, 2}}, {c});
  REQUIRE(got.size() == 1);
  CHECK(got[0] == c);
}

TEST_CASE("a reduce over an empty axis with a run-time init broadcasts the init") {
  const std::string text =
      R"(func.func public @main(%arg0: tensor<2x0xf32>, %arg1: tensor<f32>) -> tensor<2x3xf32> {
  %0 = stablehlo.reduce(%arg0 init: %arg1) applies stablehlo.maximum across dimensions = [1] : (tensor<2x0xf32>, tensor<f32>) -> tensor<2xf32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
)";
  auto got = run(text, {{}}, {{-3.5f}});
  REQUIRE(got.size() == 1);
  CHECK(got[0] == std::vector<float>(6, -3.5f));
}

TEST_CASE("dynamic_update_slice and scatter with no update elements leave the operand") {
  const std::string dus =
      R"(func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<0xf32>, %arg2: tensor<i32>) -> tensor<4xf32> {
  %0 = stablehlo.dynamic_update_slice %arg0, %arg1, %arg2 : (tensor<4xf32>, tensor<0xf32>, tensor<i32>) -> tensor<4xf32>
  %1 = stablehlo.add %0, %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
)";
  CHECK(run(dus, {{4}, {}}, {{1, 2, 3, 4}, {2}})[0] == std::vector<float>{2, 4, 6, 8});
  const std::string scatter =
      R"(func.func public @main(%arg0: tensor<5x3xf32>, %arg1: tensor<0x1xi32>, %arg2: tensor<0x3xf32>) -> tensor<5x3xf32> {
  %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
  ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
    %2 = stablehlo.add %arg3, %arg4 : tensor<f32>
    stablehlo.return %2 : tensor<f32>
  }) : (tensor<5x3xf32>, tensor<0x1xi32>, tensor<0x3xf32>) -> tensor<5x3xf32>
  %1 = stablehlo.negate %0 : tensor<5x3xf32>
  return %1 : tensor<5x3xf32>
}
)";
  std::vector<float> x(15), want(15);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(i) - 7;
    want[i] = 7 - static_cast<float>(i);
  }
  CHECK(run(scatter, {{5, 3}}, {x})[0] == want);
}

TEST_CASE("reduce_window and select_and_scatter with nothing to reduce or scatter: the init") {
  // The spec pads the operand with the init value: over a (0, 3) operand padded by 2 and 1 rows,
  // windows of 2 rows hold only init values, so max gives its init (-inf here), a sum from 0
  // gives 0. select_and_scatter with a window larger than its operand has no window, so no
  // source value: every element is the init (2.5), here added to the operand.
  const std::string text =
      R"(func.func public @main(%arg0: tensor<0x3xf32>, %arg1: tensor<4xf32>, %arg2: tensor<0xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>) {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %init = stablehlo.constant dense<2.500000e+00> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%arg0, %ninf) <{padding = dense<[[2, 1], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 2, 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<0x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = "stablehlo.reduce_window"(%arg0, %zero) <{padding = dense<[[2, 1], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 2, 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<0x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %2 = "stablehlo.select_and_scatter"(%arg1, %arg2, %init) <{window_dimensions = array<i64: 5>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = stablehlo.compare  GE, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }, {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4xf32>, tensor<0xf32>, tensor<f32>) -> tensor<4xf32>
  %3 = stablehlo.add %2, %arg1 : tensor<4xf32>
  return %0, %1, %3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xf32>
}
)";
  auto got = run(text, {{4}}, {{1, 2, 3, 4}});
  REQUIRE(got.size() == 3);
  CHECK(got[0] == std::vector<float>(6, -std::numeric_limits<float>::infinity()));
  CHECK(got[1] == std::vector<float>(6, 0.0f));
  CHECK(got[2] == std::vector<float>{3.5f, 4.5f, 5.5f, 6.5f});  // 2.5 + x
}

TEST_CASE("convolution of an empty input or kernel: zeros, NaN where 0 meets an infinity") {
  // 1-D, [b, 0, f]x[0, i, o]->[b, 0, f]. An input of no positions padded by 2 on each side gives
  // 2 output positions whose windows hold only padding zeros: each output is the sum of 0 * w
  // over the kernel of its feature, 0 for feature 1 and NaN for feature 0 (whose kernel holds
  // inf). A kernel of no input features gives zeros (no product at all).
  const std::string text =
      R"(func.func public @main(%arg0: tensor<1x0x2xf32>, %arg1: tensor<3x2x2xf32>, %arg2: tensor<1x4x0xf32>, %arg3: tensor<3x0x2xf32>) -> (tensor<1x2x2xf32>, tensor<1x2x2xf32>) {
  %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [1], pad = [[2, 2]], lhs_dilate = [1], rhs_dilate = [1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x0x2xf32>, tensor<3x2x2xf32>) -> tensor<1x2x2xf32>
  %1 = stablehlo.convolution(%arg2, %arg3) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [1], pad = [[0, 0]], lhs_dilate = [1], rhs_dilate = [1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x0xf32>, tensor<3x0x2xf32>) -> tensor<1x2x2xf32>
  return %0, %1 : tensor<1x2x2xf32>, tensor<1x2x2xf32>
}
)";
  // w[k, i, o]: o = 0 holds inf at (1, 0); o = 1 is finite (negatives included).
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> w = {1, -2, 3, 4, inf, -5, 6, 7, -8, 9, 10, -11};
  auto got = run(text, {{3, 2, 2}}, {w});
  REQUIRE(got.size() == 2);
  REQUIRE(got[0].size() == 4);
  CHECK(std::isnan(got[0][0]));
  CHECK(got[0][1] == 0.0f);
  CHECK(std::isnan(got[0][2]));
  CHECK(got[0][3] == 0.0f);
  CHECK(got[1] == std::vector<float>(4, 0.0f));
}

TEST_CASE("zero-size values meshplan does not compute are located errors") {
  // An empty result of @main: a plan has no zero-size outputs.
  std::string e =
      test::lower_error(R"(func.func public @main(%arg0: tensor<4xf32>) -> tensor<0xf32> {
  %0 = stablehlo.slice %arg0 [4:4] : (tensor<4xf32>) -> tensor<0xf32>
  return %0 : tensor<0xf32>
}
)");
  CHECK(e.starts_with("bad.mlir:3:3:"));
  CHECK(e.find("result 0 of @main is the zero-size tensor<0xf32>") != std::string::npos);
  // A window over only padding summed from an init that is not 0: 3 * 1.5 is not computed.
  e = test::lower_error(R"(func.func public @main(%arg0: tensor<0xf32>) -> tensor<1xf32> {
  %cst = stablehlo.constant dense<1.500000e+00> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%arg0, %cst) <{padding = dense<[[1, 1]]> : tensor<1x2xi64>, window_dimensions = array<i64: 2>}> ({
  ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
    %1 = stablehlo.add %arg1, %arg2 : tensor<f32>
    stablehlo.return %1 : tensor<f32>
  }) : (tensor<0xf32>, tensor<f32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}
)");
  CHECK(e.starts_with("bad.mlir:3:3:"));
  CHECK(e.find("unimplemented: stablehlo.reduce_window of the zero-size tensor<0xf32> with a "
               "stablehlo.add body and this init value") != std::string::npos);
  // Malformed: a select of an empty and a non-empty operand is refused before it is folded.
  e = test::lower_error(R"(func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %e = stablehlo.constant dense<> : tensor<0xf32>
  %p = stablehlo.constant dense<true> : tensor<4xi1>
  %0 = stablehlo.select %p, %e, %arg0 : (tensor<4xi1>, tensor<0xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)");
  CHECK(
      e.starts_with("bad.mlir:4:3: unimplemented: stablehlo.select of the zero-size "
                    "tensor<0xf32> with a non-empty result"));
}
