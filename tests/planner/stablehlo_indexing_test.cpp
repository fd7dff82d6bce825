// Conformance of the indexing ops as JAX exports them: stablehlo.gather (general form, generic
// syntax), dynamic_slice and dynamic_update_slice (pretty and generic). Each module is parsed,
// printed and parsed again (same graph key), lowered, planned under every policy and run on the
// emulated chip; results are compared with literals worked out by hand from the StableHLO spec's
// semantics (start indices clamped so that the slice fits), including the spec's own gather
// example. Start indices arrive both as run-time arguments (index arithmetic on the device) and
// as constants (folded at lowering time).
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lowering_check.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "meshplan/runtime/plan.hpp"
#include "plan_run.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;
using meshplan::test::lower_error;

namespace {

const char* const kPolicies[] = {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"};

using Input = std::pair<std::vector<int64_t>, std::vector<float>>;

std::vector<float> iota(int n, float from = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = from + static_cast<float>(i);
  return v;
}

/// Parses `text`, checks the print -> parse round trip, plans under every policy and runs on
/// the emulator: the one output must equal `want` exactly (gathered values are copied).
void check(const std::string& text, const std::vector<Input>& inputs,
           const std::vector<int64_t>& want_shape, const std::vector<float>& want) {
  const planner::Graph g = test::lower_round_trip(text, "indexing.mlir");
  std::vector<runtime::TensorView> views;
  for (const auto& [shape, data] : inputs) views.push_back({shape, data});
  for (const char* policy : kPolicies) {
    CAPTURE(policy);
    auto outputs = test::plan_and_run(g, policy, "indexing", views);
    REQUIRE(outputs.size() == 1);
    CHECK(outputs[0].shape == want_shape);
    // Bit for bit (moved values keep -0.0, NaN and infinities), NaN matching any NaN.
    const auto& out = outputs[0].data;
    REQUIRE(out.size() == want.size());
    size_t bad = out.size();
    for (size_t i = 0; i < out.size() && bad == out.size(); ++i)
      if (!(std::isnan(out[i]) && std::isnan(want[i])) &&
          std::bit_cast<uint32_t>(out[i]) != std::bit_cast<uint32_t>(want[i]))
        bad = i;
    if (bad < out.size()) FAIL_CHECK("element ", bad, " is ", out[bad], ", expected ", want[bad]);
  }
}

/// The StableHLO spec's gather example (operand 3x4x2, indices 2x3x2, the last start index 9
/// clamped to 2).
const std::vector<float> kSpecIndices = {0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9};
const std::vector<float> kSpecGather = {1, 2,  3,  4,  3,  4,  5,  6,  13, 14, 15, 16,
                                        9, 10, 11, 12, 11, 12, 13, 14, 17, 18, 19, 20};
const char* const kSpecGatherOp =
    R"("stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [2, 3], collapsed_slice_dims = [0], start_index_map = [1, 0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 2, 2>}> : (tensor<3x4x2xf32>, tensor<2x3x2xi64>) -> tensor<2x3x2x2xf32>)";

}  // namespace

TEST_CASE("gather: the spec's example, indices as an argument and as a constant") {
  check(std::string("func.func public @main(%arg0: tensor<3x4x2xf32>, %arg1: tensor<2x3x2xi64>) "
                    "-> tensor<2x3x2x2xf32> {\n  %0 = ") +
            kSpecGatherOp + "\n  return %0 : tensor<2x3x2x2xf32>\n}\n",
        {{{3, 4, 2}, iota(24, 1)}, {{2, 3, 2}, kSpecIndices}}, {2, 3, 2, 2}, kSpecGather);
  // The same with constant indices (folded at lowering time), under a JAX-style module.
  check(std::string("module @jit_f attributes {mhlo.num_partitions = 1 : i32} {\n"
                    "  func.func public @main(%arg0: tensor<3x4x2xf32>) -> (tensor<2x3x2x2xf32> "
                    "{jax.result_info = \"\"}) {\n"
                    "    %arg1 = stablehlo.constant dense<[[[0, 0], [1, 0], [2, 1]], [[0, 1], "
                    "[1, 1], [0, 9]]]> : tensor<2x3x2xi64>\n    %0 = ") +
            kSpecGatherOp + "\n    return %0 : tensor<2x3x2x2xf32>\n  }\n}\n",
        {{{3, 4, 2}, iota(24, 1)}}, {2, 3, 2, 2}, kSpecGather);
}

TEST_CASE("gather: jnp.take rows (embedding form), clamped out-of-range indices, bf16") {
  // x[idx] for idx = [4, 0, 7, -3] over 5 rows: 7 -> 4 and -3 -> 0 (the spec clamps).
  std::string text =
      R"(func.func public @main(%arg0: tensor<5x4xbf16>, %arg1: tensor<4x1xi32>) -> tensor<4x4xbf16> {
  %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 4>}> : (tensor<5x4xbf16>, tensor<4x1xi32>) -> tensor<4x4xbf16>
  return %0 : tensor<4x4xbf16>
}
)";
  check(text, {{{5, 4}, iota(20)}, {{4, 1}, {4, 0, 7, -3}}}, {4, 4},
        {16, 17, 18, 19, 0, 1, 2, 3, 16, 17, 18, 19, 0, 1, 2, 3});
}

TEST_CASE("gather: windows in two dims, offset dims before batch dims, index_vector_dim = rank") {
  // operand[r][c] = 6r + c; starts (1, 4) -> (1, 3) and (3, -2) -> (2, 0) for 2x3 windows.
  std::string text =
      R"(func.func public @main(%arg0: tensor<4x6xf32>, %arg1: tensor<2x2xi32>) -> tensor<2x2x3xf32> {
  %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1, 2], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 2, 3>}> : (tensor<4x6xf32>, tensor<2x2xi32>) -> tensor<2x2x3xf32>
  return %0 : tensor<2x2x3xf32>
}
)";
  check(text, {{{4, 6}, iota(24)}, {{2, 2}, {1, 4, 3, -2}}}, {2, 2, 3},
        {9, 10, 11, 15, 16, 17, 12, 13, 14, 18, 19, 20});
  // Columns by index (jnp.take(x, idx, axis=1)): offset dim 0 before the batch dim; the
  // indices have no index vector dim (index_vector_dim = their rank).
  std::string cols =
      R"(func.func public @main(%arg0: tensor<3x5xf32>, %arg1: tensor<2xi32>) -> tensor<3x2xf32> {
  %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 3, 1>}> : (tensor<3x5xf32>, tensor<2xi32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
)";
  check(cols, {{{3, 5}, iota(15)}, {{2}, {4, 1}}}, {3, 2}, {4, 1, 9, 6, 14, 11});
}

TEST_CASE("gather: operand and start-indices batching dims (vmap of a take)") {
  // operand[b][r][c] = 6b + 2r + c; row b reads operand[b][clamp(idx[b])]: idx = [2, -1].
  std::string text =
      R"(func.func public @main(%arg0: tensor<2x3x2xf32>, %arg1: tensor<2x1xi32>) -> tensor<2x2xf32> {
  %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 2>}> : (tensor<2x3x2xf32>, tensor<2x1xi32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
)";
  check(text, {{{2, 3, 2}, iota(12)}, {{2, 1}, {2, -1}}}, {2, 2}, {4, 5, 6, 7});
}

TEST_CASE("dynamic_slice: pretty and generic forms, start indices clamped") {
  // The spec's example: starts (-1, 3) clamp to (0, 2).
  const std::vector<float> operand = {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  std::string pretty =
      R"(func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<i64>, %arg2: tensor<i64>) -> tensor<2x2xf32> {
  %0 = stablehlo.dynamic_slice %arg0, %arg1, %arg2, sizes = [2, 2] : (tensor<4x4xf32>, tensor<i64>, tensor<i64>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
)";
  check(pretty, {{{4, 4}, operand}, {{}, {-1}}, {{}, {3}}}, {2, 2}, {1, 1, 1, 1});
  // operand[r][c] = 6r + c, starts (3, -1) -> (2, 0) for a 2x3 slice; generic form.
  std::string generic =
      R"(func.func public @main(%arg0: tensor<4x6xf32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<2x3xf32> {
  %0 = "stablehlo.dynamic_slice"(%arg0, %arg1, %arg2) <{slice_sizes = array<i64: 2, 3>}> : (tensor<4x6xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
)";
  check(generic, {{{4, 6}, iota(24)}, {{}, {3}}, {{}, {-1}}}, {2, 3}, {12, 13, 14, 18, 19, 20});
  // Constant starts (1, 2): folded.
  std::string folded = R"(func.func public @main(%arg0: tensor<4x6xf32>) -> tensor<2x3xf32> {
  %c = stablehlo.constant dense<1> : tensor<i32>
  %c_0 = stablehlo.constant dense<2> : tensor<i32>
  %0 = stablehlo.dynamic_slice %arg0, %c, %c_0, sizes = [2, 3] : (tensor<4x6xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
)";
  check(folded, {{{4, 6}, iota(24)}}, {2, 3}, {8, 9, 10, 14, 15, 16});
}

TEST_CASE("dynamic_update_slice: pretty and generic forms, start indices clamped") {
  // operand[r][c] = 6r + c; a 2x3 update of 100.. at (3, 4), clamped to (2, 3).
  std::string pretty =
      R"(func.func public @main(%arg0: tensor<4x6xf32>, %arg1: tensor<2x3xf32>, %arg2: tensor<i32>, %arg3: tensor<i32>) -> tensor<4x6xf32> {
  %0 = stablehlo.dynamic_update_slice %arg0, %arg1, %arg2, %arg3 : (tensor<4x6xf32>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}
)";
  check(
      pretty, {{{4, 6}, iota(24)}, {{2, 3}, iota(6, 100)}, {{}, {3}}, {{}, {4}}}, {4, 6},
      {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 100, 101, 102, 18, 19, 20, 103, 104, 105});
  // Negative starts clamp to 0; generic form.
  std::string generic =
      R"(func.func public @main(%arg0: tensor<4x6xf32>, %arg1: tensor<2x3xf32>, %arg2: tensor<i32>, %arg3: tensor<i32>) -> tensor<4x6xf32> {
  %0 = "stablehlo.dynamic_update_slice"(%arg0, %arg1, %arg2, %arg3) : (tensor<4x6xf32>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}
)";
  check(generic, {{{4, 6}, iota(24)}, {{2, 3}, iota(6, 100)}, {{}, {-5}}, {{}, {1}}}, {4, 6},
        {0,  100, 101, 102, 4,  5,  6,  103, 104, 105, 10, 11,
         12, 13,  14,  15,  16, 17, 18, 19,  20,  21,  22, 23});
  // A KV-cache write: cache [2, 4, 3], one step [2, 1, 3] at position t = 2 (a constant).
  std::string cache =
      R"(func.func public @main(%arg0: tensor<2x4x3xf32>, %arg1: tensor<2x1x3xf32>) -> tensor<2x4x3xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %c_0 = stablehlo.constant dense<2> : tensor<i32>
  %0 = stablehlo.dynamic_update_slice %arg0, %arg1, %c, %c_0, %c : (tensor<2x4x3xf32>, tensor<2x1x3xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<2x4x3xf32>
  return %0 : tensor<2x4x3xf32>
}
)";
  std::vector<float> want = iota(24);
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 3; ++c) want[static_cast<size_t>(b * 12 + 2 * 3 + c)] = 100.0f + b * 3 + c;
  check(cache, {{{2, 4, 3}, iota(24)}, {{2, 1, 3}, iota(6, 100)}}, {2, 4, 3}, want);
}

TEST_CASE("reverse: rows and elements, -0.0 / NaN / inf moved unchanged; iota in dim 1") {
  // x[a][b][c] = 12a + 4b + c reversed in dims 0 and 2: 12(1 - a) + 4b + (3 - c).
  std::string text = R"(func.func public @main(%arg0: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = stablehlo.reverse %arg0, dims = [0, 2] : tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}
)";
  check(text, {{{2, 3, 4}, iota(24)}}, {2, 3, 4},
        {15, 14, 13, 12, 19, 18, 17, 16, 23, 22, 21, 20, 3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::string rows = R"(func.func public @main(%arg0: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = "stablehlo.reverse"(%arg0) <{dimensions = array<i64: 0>}> : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
)";
  check(rows, {{{3, 4}, {-0.0f, nan, inf, -inf, 4, 5, 6, 7, 8, 9, 10, 11}}}, {3, 4},
        {8, 9, 10, 11, 4, 5, 6, 7, -0.0f, nan, inf, -inf});
  // iota along dim 1 of a rank-3 tensor (folded), added to x = 10.
  std::string io = R"(func.func public @main(%arg0: tensor<2x3x2xf32>) -> tensor<2x3x2xf32> {
  %0 = stablehlo.iota dim = 1 : tensor<2x3x2xf32>
  %1 = stablehlo.add %arg0, %0 : tensor<2x3x2xf32>
  return %1 : tensor<2x3x2xf32>
}
)";
  check(io, {{{2, 3, 2}, std::vector<float>(12, 10.0f)}}, {2, 3, 2},
        {10, 10, 11, 11, 12, 12, 10, 10, 11, 11, 12, 12});
}

TEST_CASE("pad: interior padding (the spec's example) and negative edges") {
  // The spec's example with padding value 9 instead of 0 (so that padding shows).
  std::string text = R"(func.func public @main(%arg0: tensor<2x3xf32>) -> tensor<5x9xf32> {
  %cst = stablehlo.constant dense<9.000000e+00> : tensor<f32>
  %0 = stablehlo.pad %arg0, %cst, low = [0, 1], high = [2, 1], interior = [1, 2] : (tensor<2x3xf32>, tensor<f32>) -> tensor<5x9xf32>
  return %0 : tensor<5x9xf32>
}
)";
  std::vector<float> want(45, 9.0f);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) want[static_cast<size_t>(2 * r * 9 + 1 + 3 * c)] = 1.0f + 3 * r + c;
  check(text, {{{2, 3}, iota(6, 1)}}, {5, 9}, want);
  // [x0, p, x1, p, x2, p, x3, p, x4] without its first and last two: [p, x1, p, x2, p, x3],
  // the padding value an argument.
  std::string neg =
      R"(func.func public @main(%arg0: tensor<2x5xf32>, %arg1: tensor<f32>) -> tensor<2x6xf32> {
  %0 = "stablehlo.pad"(%arg0, %arg1) <{edge_padding_high = array<i64: 0, -2>, edge_padding_low = array<i64: 0, -1>, interior_padding = array<i64: 0, 1>}> : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}
)";
  check(neg, {{{2, 5}, iota(10)}, {{}, {0.5f}}}, {2, 6},
        {0.5f, 1, 0.5f, 2, 0.5f, 3, 0.5f, 6, 0.5f, 7, 0.5f, 8});
}

namespace {

/// A scatter module (generic form, as JAX prints it) whose region applies `body` ("" returns
/// the update: replace).
std::string scatter_text(const std::string& types, const std::string& dn, const std::string& body,
                         const std::string& el = "f32", bool constant_indices = false,
                         const std::string& indices = "") {
  std::string region = body.empty() ? "    stablehlo.return %b : tensor<" + el + ">\n"
                                    : "    %s = " + body + " %a, %b : tensor<" + el +
                                          ">\n    stablehlo.return %s : tensor<" + el + ">\n";
  // types: "operand, indices, updates -> result" pieces.
  size_t c1 = types.find(';'), c2 = types.find(';', c1 + 1);
  std::string o = types.substr(0, c1), i = types.substr(c1 + 1, c2 - c1 - 1),
              u = types.substr(c2 + 1);
  std::string args = "%arg0: " + o + (constant_indices ? "" : ", %arg1: " + i) + ", %arg2: " + u;
  std::string s = "func.func public @main(" + args + ") -> " + o + " {\n";
  if (constant_indices) s += "  %arg1 = stablehlo.constant " + indices + " : " + i + "\n";
  s += "  %0 = \"stablehlo.scatter\"(%arg0, %arg1, %arg2) <{indices_are_sorted = false, "
       "scatter_dimension_numbers = #stablehlo.scatter<" +
       dn + ">, unique_indices = false}> ({\n  ^bb0(%a: tensor<" + el + ">, %b: tensor<" + el +
       ">):\n" + region + "  }) : (" + o + ", " + i + ", " + u + ") -> " + o +
       "\n  return %0 : " + o + "\n}\n";
  return s;
}

const char* const kRowsDn =
    "update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
    "index_vector_dim = 1";

}  // namespace

TEST_CASE("scatter: add with duplicate and out-of-range indices (x.at[idx].add)") {
  // Rows 1, 3, 1, 7, -1 of a 5x4 operand: row 1 gets updates 0 and 2, row 3 update 1; the
  // windows at 7 and -1 do not fit and are dropped (as XLA does).
  std::string text =
      scatter_text("tensor<5x4xf32>;tensor<5x1xi32>;tensor<5x4xf32>", kRowsDn, "stablehlo.add");
  std::vector<float> want = iota(20);
  for (int c = 0; c < 4; ++c) {
    want[static_cast<size_t>(4 + c)] = static_cast<float>(4 + c + 100 + c + 108 + c);
    want[static_cast<size_t>(12 + c)] = static_cast<float>(12 + c + 104 + c);
  }
  check(text, {{{5, 4}, iota(20)}, {{5, 1}, {1, 3, 1, 7, -1}}, {{5, 4}, iota(20, 100)}}, {5, 4},
        want);
}

TEST_CASE("scatter: replace keeps untouched rows bit for bit; max and min combine duplicates") {
  std::vector<float> operand = iota(20);
  for (int c = 0; c < 4; ++c) operand[static_cast<size_t>(8 + c)] = -0.0f;
  std::vector<float> want = operand;
  for (int c = 0; c < 4; ++c) {
    want[static_cast<size_t>(16 + c)] = static_cast<float>(1 + c);
    want[static_cast<size_t>(c)] = static_cast<float>(5 + c);
  }
  check(scatter_text("tensor<5x4xf32>;tensor<2x1xi32>;tensor<2x4xf32>", kRowsDn, ""),
        {{{5, 4}, operand}, {{2, 1}, {4, 0}}, {{2, 4}, iota(8, 1)}}, {5, 4}, want);
  // Row 0 twice: max(0, 5, 1), max(1, -1, 7), max(2, 2, -3); row 1 unchanged.
  const std::string types = "tensor<2x3xf32>;tensor<2x1xi32>;tensor<2x3xf32>";
  const std::vector<float> upd = {5, -1, 2, 1, 7, -3};
  check(scatter_text(types, kRowsDn, "stablehlo.maximum"),
        {{{2, 3}, iota(6)}, {{2, 1}, {0, 0}}, {{2, 3}, upd}}, {2, 3}, {5, 7, 2, 3, 4, 5});
  // min, with the indices a constant (folded).
  check(scatter_text(types, kRowsDn, "stablehlo.minimum", "f32", true, "dense<0>"),
        {{{2, 3}, iota(6)}, {{2, 3}, upd}}, {2, 3}, {0, -1, -3, 3, 4, 5});
}

TEST_CASE("scatter whose region returns the operand's value leaves the operand as it is") {
  // update_computation(old, update) = old at every scattered element: the result is the
  // operand, -0.0 included, whatever the indices and updates.
  std::string text = scatter_text("tensor<3x2xf32>;tensor<2x1xi32>;tensor<2x2xf32>", kRowsDn, "");
  const std::string ret = "stablehlo.return %b";
  text.replace(text.find(ret), ret.size(), "stablehlo.return %a");
  check(text, {{{3, 2}, {1, -0.0f, 3, 4, 5, 6}}, {{2, 1}, {0, 2}}, {{2, 2}, {9, 9, 9, 9}}}, {3, 2},
        {1, -0.0f, 3, 4, 5, 6});
}

TEST_CASE("scatter: multiply combines duplicates; untouched rows keep -0.0 and inf (x.at[i].mul)") {
  // Row 0 twice: [1*2*3, 2*-1*4, 3*0.5*-2]; row 1 is out of range for index 5 (dropped), row 2
  // untouched.
  const float inf = std::numeric_limits<float>::infinity();
  check(scatter_text("tensor<3x3xf32>;tensor<3x1xi32>;tensor<3x3xf32>", kRowsDn,
                     "stablehlo.multiply"),
        {{{3, 3}, {1, 2, 3, 4, 5, 6, -0.0f, inf, -inf}},
         {{3, 1}, {0, 0, 5}},
         {{3, 3}, {2, -1, 0.5f, 3, 4, -2, 9, 9, 9}}},
        {3, 3}, {6, -8, -3, 4, 5, 6, -0.0f, inf, -inf});
}

TEST_CASE("scatter: single elements by (row, column) pairs (x.at[i, j].add)") {
  std::string text = scatter_text(
      "tensor<3x3xf32>;tensor<2x2xi32>;tensor<2xf32>",
      "inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1",
      "stablehlo.add");
  std::vector<float> want = iota(9);
  want[2] += 10;
  want[7] += 20;
  check(text, {{{3, 3}, iota(9)}, {{2, 2}, {0, 2, 2, 1}}, {{2}, {10, 20}}}, {3, 3}, want);
}

namespace {

/// JAX's float sort comparator: both keys canonicalised (-0 -> +0, NaN -> one NaN), then LT in
/// total order.
const char* const kJaxFloatLess = R"(  ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_0 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %1 = stablehlo.compare  EQ, %arg1, %cst,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %2 = stablehlo.select %1, %cst, %arg1 : tensor<i1>, tensor<f32>
    %3 = stablehlo.compare  NE, %arg1, %arg1,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %4 = stablehlo.select %3, %cst_0, %2 : tensor<i1>, tensor<f32>
    %5 = stablehlo.compare  EQ, %arg2, %cst,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %6 = stablehlo.select %5, %cst, %arg2 : tensor<i1>, tensor<f32>
    %7 = stablehlo.compare  NE, %arg2, %arg2,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %8 = stablehlo.select %7, %cst_0, %6 : tensor<i1>, tensor<f32>
    %9 = stablehlo.compare  LT, %4, %8,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %9 : tensor<i1>
)";

}  // namespace

TEST_CASE("sort: jnp.sort's comparator, NaN last, -0.0 equal to +0.0 and stable") {
  std::string text = std::string(
                         R"(func.func public @main(%arg0: tensor<2x6xf32>) -> tensor<2x6xf32> {
  %0 = "stablehlo.sort"(%arg0) <{dimension = 1 : i64, is_stable = true}> ({
)") + kJaxFloatLess + R"(  }) : (tensor<2x6xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}
)";
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  check(text, {{{2, 6}, {3, -0.0f, nan, -inf, 0.0f, 3, 5, 4, 1, 2, inf, -1}}}, {2, 6},
        {-inf, -0.0f, 0.0f, 3, 3, nan, -1, 1, 2, 4, 5, inf});
}

TEST_CASE("sort: jnp.argsort (keys and an iota, stable) and a plain LT along dim 0") {
  std::string text = R"(func.func public @main(%arg0: tensor<5xi32>) -> tensor<5xi32> {
  %0 = stablehlo.iota dim = 0 : tensor<5xi32>
  %1:2 = "stablehlo.sort"(%arg0, %0) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%arg1: tensor<i32>, %arg2: tensor<i32>, %arg3: tensor<i32>, %arg4: tensor<i32>):
    %2 = stablehlo.compare  LT, %arg1, %arg2,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %2 : tensor<i1>
  }) : (tensor<5xi32>, tensor<5xi32>) -> (tensor<5xi32>, tensor<5xi32>)
  return %1#1 : tensor<5xi32>
}
)";
  check(text, {{{5}, {3, 1, 3, 0, 1}}}, {5}, {3, 1, 4, 0, 2});
  std::string cols = R"(func.func public @main(%arg0: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %0 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64}> ({
  ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
    %1 = stablehlo.compare  LT, %arg1, %arg2,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
)";
  check(cols, {{{3, 2}, {3, -1, 1, 5, 2, 0}}}, {3, 2}, {1, -1, 2, 0, 3, 5});
}

TEST_CASE("indexing ops refuse bad or unsupported forms at file:line:col") {
  const std::string sig =
      "func.func @main(%arg0: tensor<5x4xf32>, %arg1: tensor<3x1xi32>) -> tensor<3x4xf32> {\n";
  auto gather = [&](const std::string& dn, const std::string& sizes, const std::string& out) {
    return sig +
           "  %0 = \"stablehlo.gather\"(%arg0, %arg1) <{dimension_numbers = "
           "#stablehlo.gather<" +
           dn + ">, slice_sizes = array<i64: " + sizes +
           ">}> : (tensor<5x4xf32>, "
           "tensor<3x1xi32>) -> " +
           out + "\n  return %0 : tensor<3x4xf32>\n}\n";
  };
  const std::string ok_dn =
      "offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1";
  CHECK(lower_error(gather("offset_dims = [1], collapsed_slice_dims = [0], start_index_map = "
                           "[0], index_vector_dim = 1, window = [2]",
                           "1, 4", "tensor<3x4xf32>"))
            .starts_with("bad.mlir:2:3: stablehlo.gather: unknown field 'window'"));
  CHECK(lower_error(gather(ok_dn, "1, 5", "tensor<3x4xf32>"))
            .starts_with("bad.mlir:2:3: stablehlo.gather: slice_sizes[1] = 5 is outside [0, 4]"));
  CHECK(lower_error(gather(ok_dn, "2, 4", "tensor<3x4xf32>"))
            .starts_with("bad.mlir:2:3: stablehlo.gather: operand dim 0 is collapsed or batching "
                         "but its slice size is 2"));
  CHECK(lower_error(gather(ok_dn, "1, 2", "tensor<3x4xf32>"))
            .starts_with("bad.mlir:2:3: stablehlo.gather: the result shape 3x4 differs from the "
                         "shape the attributes give, 3x2"));
  CHECK(lower_error("func.func @main(%arg0: tensor<5x4xf32>) -> tensor<2x2xf32> {\n"
                    "  %c = stablehlo.constant dense<0> : tensor<i32>\n"
                    "  %0 = stablehlo.dynamic_slice %arg0, %c, sizes = [2, 2] : "
                    "(tensor<5x4xf32>, tensor<i32>) -> tensor<2x2xf32>\n"
                    "  return %0 : tensor<2x2xf32>\n}\n")
            .starts_with("bad.mlir:3:3: stablehlo.dynamic_slice of a rank-2 operand takes 2 start "
                         "indices, got 1"));
  CHECK(lower_error(scatter_text("tensor<5x4xf32>;tensor<2x1xi32>;tensor<2x4xf32>", kRowsDn,
                                 "stablehlo.divide"))
            .starts_with("bad.mlir:2:3: unimplemented: stablehlo.scatter whose update region "
                         "computes stablehlo.divide (supported: add, multiply, maximum, minimum of "
                         "the two arguments of each result, returning the update: replace, or the "
                         "operand's value: keep)"));
  CHECK(lower_error(R"(func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64}> ({
  ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
    %1 = stablehlo.compare  NE, %arg1, %arg2,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)")
            .starts_with("bad.mlir:2:3: unimplemented: stablehlo.sort whose comparator is not a "
                         "lexicographic order on its operands"));
}

TEST_CASE("gather and dynamic_update_slice on a 2-device mesh: sharded indices pass through") {
  // Rows of a [6, 32] table for 64 indices split over the mesh; the table split by columns must
  // be gathered first (the gather addresses it whole). idx[r] = (5r + 3) mod 11 - 2 covers
  // negative and too-large starts; the expected rows are clamped here, as the spec says.
  const std::string text = R"(sdy.mesh @mesh = <["y"=1, "x"=2]>
func.func public @main(%arg0: tensor<6x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, %arg1: tensor<64x1xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg2: tensor<i32>) -> (tensor<64x32xf32>, tensor<6x32xf32>) {
  %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 32>}> : (tensor<6x32xf32>, tensor<64x1xi32>) -> tensor<64x32xf32>
  %1 = stablehlo.slice %0 [0:2, 0:32] : (tensor<64x32xf32>) -> tensor<2x32xf32>
  %c = stablehlo.constant dense<0> : tensor<i32>
  %2 = stablehlo.dynamic_update_slice %arg0, %1, %arg2, %c : (tensor<6x32xf32>, tensor<2x32xf32>, tensor<i32>, tensor<i32>) -> tensor<6x32xf32>
  return %0, %2 : tensor<64x32xf32>, tensor<6x32xf32>
}
)";
  auto m = parse_module(text, "mesh.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  planner::shlo::PipelineOptions options;
  options.mesh_rows = 0;
  options.mesh_cols = 0;
  auto st = run_pipeline(*m, options);
  REQUIRE_MESSAGE(st, (st ? "" : st.error().message));
  auto g = lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  CHECK(g->mesh.rows * g->mesh.cols == 2);
  // The per-device gather reads its own 32 indices and the whole table.
  bool local_gather = false;
  for (const auto& op : g->ops)
    if (op.kind == device::OpKind::embedding) {
      const auto& shape = g->values[op.results[0]].shape;
      local_gather |= shape.front() == 32 && shape.back() == 32;
    }
  CHECK(local_gather);

  std::vector<float> table = iota(6 * 32), idx(64);
  for (int r = 0; r < 64; ++r)
    idx[static_cast<size_t>(r)] = static_cast<float>((5 * r + 3) % 11 - 2);
  std::vector<float> want(64 * 32);
  for (int r = 0; r < 64; ++r) {
    int row = std::clamp(static_cast<int>(idx[static_cast<size_t>(r)]), 0, 5);
    for (int c = 0; c < 32; ++c)
      want[static_cast<size_t>(r * 32 + c)] = table[static_cast<size_t>(row * 32 + c)];
  }
  // Rows 0 and 1 of the result written at row 5 (clamped to 4).
  std::vector<float> want2 = table;
  std::copy(want.begin(), want.begin() + 64, want2.begin() + 4 * 32);

  auto desc = device::builtin_mesh("n300");
  REQUIRE(desc);
  auto mesh = device::EmulatedMesh::create(*desc);
  REQUIRE(mesh);
  for (const char* policy : {"dram", "greedy"}) {
    CAPTURE(policy);
    planner::PlannerOptions po;
    po.policy = policy;
    auto plan = planner::compile(*g, (*mesh)->descriptor().chip, po);
    REQUIRE_MESSAGE(plan, (plan ? "" : plan.error().message));
    auto ref = runtime::verify_plan(plan->bytes, "mesh");
    REQUIRE_MESSAGE(ref, (ref ? "" : ref.error().message));
    auto exe = runtime::Executable::bind(*ref, **mesh);
    REQUIRE_MESSAGE(exe, (exe ? "" : exe.error().message));
    const std::vector<float> start = {5};
    const std::vector<int64_t> table_shape = {6, 32}, idx_shape = {64, 1}, scalar;
    runtime::TensorView views[] = {{table_shape, table}, {idx_shape, idx}, {scalar, start}};
    auto run = (*exe)->run(views);
    REQUIRE_MESSAGE(run, (run ? "" : run.error().message));
    REQUIRE(run->outputs.size() == 2);
    CHECK(run->outputs[0].shape == std::vector<int64_t>{64, 32});
    CHECK(std::vector<float>(run->outputs[0].data.begin(), run->outputs[0].data.end()) == want);
    CHECK(std::vector<float>(run->outputs[1].data.begin(), run->outputs[1].data.end()) == want2);
  }
}

TEST_CASE("sort on a 2-device mesh: rows split over the mesh sort on their own chip") {
  // Row r holds (3j + r) mod 8 for j < 8 (a permutation): each sorted row is 0..7; the argsort
  // is the j with 3j + r = k (mod 8), i.e. j = 3 (k - r) mod 8.
  const std::string text = R"(sdy.mesh @mesh = <["y"=1, "x"=2]>
func.func public @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4x8xf32>, tensor<4x8xi32>) {
  %0 = stablehlo.iota dim = 1 : tensor<4x8xi32>
  %1:2 = "stablehlo.sort"(%arg0, %0) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<i32>, %arg4: tensor<i32>):
    %2 = stablehlo.compare  LT, %arg1, %arg2,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %2 : tensor<i1>
  }) : (tensor<4x8xf32>, tensor<4x8xi32>) -> (tensor<4x8xf32>, tensor<4x8xi32>)
  return %1#0, %1#1 : tensor<4x8xf32>, tensor<4x8xi32>
}
)";
  auto m = parse_module(text, "mesh_sort.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  planner::shlo::PipelineOptions options;
  options.mesh_rows = 0;
  options.mesh_cols = 0;
  auto st = run_pipeline(*m, options);
  REQUIRE_MESSAGE(st, (st ? "" : st.error().message));
  auto g = lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  for (const auto& op : g->ops) CHECK_FALSE(device::is_collective(op.kind));
  std::vector<float> x(32), sorted(32), order(32);
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 8; ++j) {
      x[static_cast<size_t>(r * 8 + j)] = static_cast<float>((3 * j + r) % 8);
      sorted[static_cast<size_t>(r * 8 + j)] = static_cast<float>(j);
      order[static_cast<size_t>(r * 8 + j)] = static_cast<float>(((3 * (j - r)) % 8 + 8) % 8);
    }
  auto desc = device::builtin_mesh("n300");
  REQUIRE(desc);
  auto mesh = device::EmulatedMesh::create(*desc);
  REQUIRE(mesh);
  auto plan = planner::compile(*g, (*mesh)->descriptor().chip,
                               planner::PlannerOptions::with_policy("dram"));
  REQUIRE_MESSAGE(plan, (plan ? "" : plan.error().message));
  auto ref = runtime::verify_plan(plan->bytes, "mesh_sort");
  REQUIRE_MESSAGE(ref, (ref ? "" : ref.error().message));
  auto exe = runtime::Executable::bind(*ref, **mesh);
  REQUIRE_MESSAGE(exe, (exe ? "" : exe.error().message));
  const std::vector<int64_t> shape = {4, 8};
  runtime::TensorView views[] = {{shape, x}};
  auto run = (*exe)->run(views);
  REQUIRE_MESSAGE(run, (run ? "" : run.error().message));
  REQUIRE(run->outputs.size() == 2);
  CHECK(std::vector<float>(run->outputs[0].data.begin(), run->outputs[0].data.end()) == sorted);
  CHECK(std::vector<float>(run->outputs[1].data.begin(), run->outputs[1].data.end()) == order);
}

TEST_CASE(
    "variadic reduce whose results each combine their own arguments (lax.reduce of a tuple)") {
  // max of f32 columns from init 3, min of i32 columns from init 0: independent reductions.
  const std::string text =
      R"(func.func public @main(%x: tensor<3x4xf32>, %i: tensor<3x4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.reduce(%x init: %cst), (%i init: %c) across dimensions = [0] : (tensor<3x4xf32>, tensor<3x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
   reducer(%a: tensor<f32>, %b: tensor<f32>) (%p: tensor<i32>, %q: tensor<i32>)  {
    %1 = stablehlo.maximum %a, %b : tensor<f32>
    %2 = stablehlo.minimum %p, %q : tensor<i32>
    stablehlo.return %1, %2 : tensor<f32>, tensor<i32>
  }
  return %0#0, %0#1 : tensor<4xf32>, tensor<4xi32>
}
)";
  planner::Graph g = test::lower_text(text, "variadic.mlir");
  const std::vector<float> x = {-1, 5.5f, 2, -0.5f, 4, 0, 2.5f, -7, 1, 1, 3.5f, 2};
  const std::vector<float> i = {1, 5, -1, 0, 3, -2, 7, 4, 0, 9, -3, 2};
  const std::vector<int64_t> shape{3, 4};
  std::vector<runtime::TensorView> views{{shape, x}, {shape, i}};
  auto out = test::plan_and_run(g, "greedy", "variadic", views);
  REQUIRE(out.size() == 2);
  CHECK(std::vector<float>(out[0].data.begin(), out[0].data.end()) ==
        std::vector<float>{4, 5.5f, 3.5f, 3});
  CHECK(std::vector<float>(out[1].data.begin(), out[1].data.end()) ==
        std::vector<float>{0, -2, -3, 0});
}

TEST_CASE("broadcast_in_dim adding only leading unit dims keeps its declared rank (concatenate)") {
  // [1] -> [1, 1] by dims = [1], twice, concatenated along dim 0 (after an empty operand, as
  // jnp.concatenate of an empty piece prints it): [[a], [b]].
  const std::string text =
      R"(func.func public @main(%a: tensor<1xf32>, %b: tensor<1xf32>) -> tensor<2x1xf32> {
  %z = stablehlo.constant dense<> : tensor<0x1xf32>
  %0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<1xf32>) -> tensor<1x1xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<1xf32>) -> tensor<1x1xf32>
  %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<2x1xf32>
  %3 = stablehlo.concatenate %z, %2, dim = 0 : (tensor<0x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  return %3 : tensor<2x1xf32>
}
)";
  check(text, {{{1}, {-0.0f}}, {{1}, {7.5f}}}, {2, 1}, {-0.0f, 7.5f});
}
