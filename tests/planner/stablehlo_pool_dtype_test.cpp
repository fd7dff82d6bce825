// JAX's max pooling (stablehlo.reduce_window with a maximum body and a -inf init over H and W of
// NHWC) lowers to max_pool2d only in bf16, the one dtype tt-metal's pools read ("Only BFLOAT16
// supported for now", docs/hardware-rules.md); in f32 it lowers to strided slices and
// elementwise maximums, which keep f32 values exactly. Results are literals worked out by hand
// from the StableHLO spec's reduce_window.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "plan_run.hpp"

using namespace meshplan;

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

/// A JAX-style max pool over a [1, 4, 4, 1] input of element type `dt` (f32 or bf16): windows
/// and strides `k` and `s` over H and W, `pad` -inf elements on each side of H and W, `out` the
/// result's H and W.
std::string max_pool(const std::string& dt, int k, int s, int pad, int out) {
  std::string t = R"(func.func public @main(%arg0: tensor<1x4x4x1xE>) -> tensor<1xOxOx1xE> {
  %cst = stablehlo.constant dense<INIT> : tensor<E>
  %0 = "stablehlo.reduce_window"(%arg0, %cst) <{padding = dense<[[0, 0], [P, P], [P, P], [0, 0]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, K, K, 1>, window_strides = array<i64: 1, S, S, 1>}> ({
  ^bb0(%a: tensor<E>, %b: tensor<E>):
    %m = stablehlo.maximum %a, %b : tensor<E>
    stablehlo.return %m : tensor<E>
  }) : (tensor<1x4x4x1xE>, tensor<E>) -> tensor<1xOxOx1xE>
  return %0 : tensor<1xOxOx1xE>
}
)";
  t = replace_all(t, "xOxOx", "x" + std::to_string(out) + "x" + std::to_string(out) + "x");
  t = replace_all(t, "INIT", dt == "f32" ? "0xFF800000" : "0xFF80");
  t = replace_all(t, "[P, P]", "[" + std::to_string(pad) + ", " + std::to_string(pad) + "]");
  t = replace_all(t, "K, K", std::to_string(k) + ", " + std::to_string(k));
  t = replace_all(t, "S, S", std::to_string(s) + ", " + std::to_string(s));
  return replace_all(t, "E>", dt + ">");
}

bool has_pool(const planner::Graph& g) {
  for (const auto& op : g.ops)
    if (op.kind == device::OpKind::max_pool2d) return true;
  return false;
}

std::vector<float> run(const planner::Graph& g, const char* policy, const std::vector<float>& x) {
  const std::vector<int64_t> shape{1, 4, 4, 1};
  std::vector<runtime::TensorView> views{{shape, x}};
  auto out = test::plan_and_run(g, policy, "pool", views);
  REQUIRE(out.size() == 1);
  return {out[0].data.begin(), out[0].data.end()};
}

}  // namespace

TEST_CASE("f32 max pooling lowers to slices and maximums, exact; bf16 keeps max_pool2d") {
  // x (H rows, W columns); 10 + 2^-9 and -1 - 2^-10 have no bf16 form, so a bf16 pool would
  // change them.
  const float big = 10.001953125f, low = -1.0009765625f;
  const std::vector<float> x = {3,   7,  1, 0,  //
                                2,   5,  9, 4,  //
                                low, -6, 8, 8,  //
                                -3,  -2, 6, big};
  // 2x2 windows at stride 2: the max of each quarter.
  const std::vector<float> quarters = {7, 9, low, big};
  // 3x3 windows at stride 1, one -inf on every side: the max of each element's neighbourhood.
  const std::vector<float> around = {7,   9, 9,   9,    //
                                     7,   9, 9,   9,    //
                                     5,   9, big, big,  //
                                     low, 8, big, big};
  planner::Graph g2 = test::lower_text(max_pool("f32", 2, 2, 0, 2), "pool.mlir");
  planner::Graph g3 = test::lower_text(max_pool("f32", 3, 1, 1, 4), "pool.mlir");
  CHECK_FALSE(has_pool(g2));
  CHECK_FALSE(has_pool(g3));
  for (const char* policy : {"greedy", "dram"}) {
    CAPTURE(policy);
    CHECK(run(g2, policy, x) == quarters);
    CHECK(run(g3, policy, x) == around);
  }
  // bf16 keeps the pool: integer inputs, exact in bf16.
  planner::Graph b = test::lower_text(max_pool("bf16", 2, 2, 0, 2), "pool.mlir");
  CHECK(has_pool(b));
  const std::vector<float> ints = {3, 7, 1, 0, 2, 5, 9, 4, -1, -6, 8, 8, -3, -2, 6, 10};
  CHECK(run(b, "greedy", ints) == std::vector<float>{7, 9, -1, 10});
}
