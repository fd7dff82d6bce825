// Sorts as JAX exports them beyond jnp.sort: descending sorts (a GT comparator, JAX's total
// order or a plain GT), jnp.lexsort / lax.sort with several keys (num_keys), chlo.top_k, and
// stablehlo.reduce_precision and chlo's pretty form. Each module is parsed, printed and parsed
// again (same graph key), lowered, planned and run on the emulated chip; results are compared
// bit for bit with literals worked out by hand from the StableHLO spec and JAX's semantics
// (stable sorts: equal keys keep their order; -0.0 equals +0.0; NaN after every number
// ascending, before every number descending). Refusals name file:line:col and the op.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lowering_check.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "plan_run.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;
using meshplan::test::lower_error;

namespace {

using Input = std::pair<std::vector<int64_t>, std::vector<float>>;
const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

/// Parses, checks the print -> parse round trip (same graph key), plans (greedy and dram) and
/// runs; every output must equal `want` bit for bit (NaN matching any NaN).
void check(const std::string& text, const std::vector<Input>& inputs,
           const std::vector<std::vector<float>>& want) {
  const planner::Graph g = test::lower_round_trip(text, "sort.mlir");
  std::vector<runtime::TensorView> views;
  for (const auto& [shape, data] : inputs) views.push_back({shape, data});
  for (const char* policy : {"greedy", "dram"}) {
    CAPTURE(policy);
    auto outputs = test::plan_and_run(g, policy, "sort", views);
    REQUIRE(outputs.size() == want.size());
    for (size_t r = 0; r < want.size(); ++r) {
      CAPTURE(r);
      const auto& out = outputs[r].data;
      REQUIRE(out.size() == want[r].size());
      for (size_t i = 0; i < out.size(); ++i) {
        CAPTURE(i);
        const float w = want[r][i];
        if (std::isnan(w))
          CHECK(std::isnan(out[i]));
        else
          CHECK(std::bit_cast<uint32_t>(out[i]) == std::bit_cast<uint32_t>(w));
      }
    }
  }
}

/// JAX's _canonicalize_float_for_sort of block argument `arg` (-0 -> +0, NaN -> one NaN) into
/// %<out>; needs %cst (0.0) and %cst_0 (NaN) defined.
std::string canon(const std::string& arg, const std::string& out) {
  return "    %" + out + "z = stablehlo.compare  EQ, %" + arg +
         ", %cst,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n    %" + out +
         "a = stablehlo.select %" + out + "z, %cst, %" + arg + " : tensor<i1>, tensor<f32>\n    %" +
         out + "n = stablehlo.compare  NE, %" + arg + ", %" + arg +
         ",  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n    %" + out +
         " = stablehlo.select %" + out + "n, %cst_0, %" + out + "a : tensor<i1>, tensor<f32>\n";
}

const char* const kConsts =
    "    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
    "    %cst_0 = stablehlo.constant dense<0x7FC00000> : tensor<f32>\n";

/// A float sort of (x, iota) along dim 1 of a 2x6 tensor with JAX's total-order comparator in
/// direction `dir`, returning the sorted keys and the permutation.
std::string float_sort(const std::string& dir) {
  return std::string(
             R"(module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x6xf32> {mhlo.layout_mode = "default"}) -> (tensor<2x6xf32> {jax.result_info = "[0]"}, tensor<2x6xi32> {jax.result_info = "[1]"}) {
    %i = stablehlo.iota dim = 1 : tensor<2x6xi32>
    %0:2 = "stablehlo.sort"(%arg0, %i) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<i32>, %arg4: tensor<i32>):
)") + kConsts +
         canon("arg1", "l") + canon("arg2", "r") + "    %c = stablehlo.compare  " + dir +
         R"(, %l, %r,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }) : (tensor<2x6xf32>, tensor<2x6xi32>) -> (tensor<2x6xf32>, tensor<2x6xi32>)
    return %0#0, %0#1 : tensor<2x6xf32>, tensor<2x6xi32>
  }
}
)";
}

const std::vector<float> kRows = {3, -0.0f, kNan, -kInf, 0.0f, 3, 5, 4, 1, 2, kInf, -1};

/// jnp.lexsort-style: keys (k0: i32 in direction `dir0`, k1: f32 ascending, canonicalised),
/// then an iota; returns the permutation.
std::string lexsort(const std::string& dir0) {
  return std::string(R"(module @jit_f {
  func.func public @main(%arg0: tensor<6xi32>, %arg1: tensor<6xf32>) -> tensor<6xi32> {
    %0 = stablehlo.iota dim = 0 : tensor<6xi32>
    %1:3 = "stablehlo.sort"(%arg0, %arg1, %0) <{dimension = 0 : i64, is_stable = true, num_keys = 2 : i64}> ({
    ^bb0(%arg2: tensor<i32>, %arg3: tensor<i32>, %arg4: tensor<f32>, %arg5: tensor<f32>, %arg6: tensor<i32>, %arg7: tensor<i32>):
)") + kConsts +
         canon("arg4", "l") + canon("arg5", "r") + "    %2 = stablehlo.compare  " + dir0 +
         R"(, %arg2, %arg3,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %3 = stablehlo.compare  EQ, %arg2, %arg3,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %4 = stablehlo.compare  LT, %l, %r,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %5 = stablehlo.and %3, %4 : tensor<i1>
    %6 = stablehlo.or %2, %5 : tensor<i1>
    stablehlo.return %6 : tensor<i1>
    }) : (tensor<6xi32>, tensor<6xf32>, tensor<6xi32>) -> (tensor<6xi32>, tensor<6xf32>, tensor<6xi32>)
    return %1#2 : tensor<6xi32>
  }
}
)";
}

}  // namespace

TEST_CASE("sort descending with JAX's total order: NaN first, -0.0 equal to +0.0, stable") {
  check(float_sort("GT"), {{{2, 6}, kRows}},
        {{kNan, 3, 3, -0.0f, 0.0f, -kInf, kInf, 5, 4, 2, 1, -1},
         {2, 0, 5, 1, 4, 3, 4, 0, 1, 3, 2, 5}});
  // The same comparator ascending (the argsort jnp.argsort emits) for contrast.
  check(float_sort("LT"), {{{2, 6}, kRows}},
        {{-kInf, -0.0f, 0.0f, 3, 3, kNan, -1, 1, 2, 4, 5, kInf},
         {3, 1, 4, 0, 5, 2, 5, 2, 3, 1, 0, 4}});
}

TEST_CASE("sort descending with a plain GT; argsort keeps equal keys in order") {
  check(R"(func.func public @main(%arg0: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xi32>) {
  %i = stablehlo.iota dim = 0 : tensor<5xi32>
  %0:2 = "stablehlo.sort"(%arg0, %i) ({
  ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<i32>, %arg4: tensor<i32>):
    %1 = stablehlo.compare  GT, %arg1, %arg2,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }) {dimension = 0 : i64, is_stable = true} : (tensor<5xf32>, tensor<5xi32>) -> (tensor<5xf32>, tensor<5xi32>)
  return %0#0, %0#1 : tensor<5xf32>, tensor<5xi32>
}
)",
        {{{5}, {2, 7, -1, 7, 0}}}, {{7, 7, 2, 0, -1}, {1, 3, 0, 4, 2}});
}

TEST_CASE("lexsort: two keys (i32 then f32), ascending or descending on the first") {
  // Keys (k0, k1): (1, 0.0) (0, 3) (1, -2) (0, 3) (2, 1) (1, -0.0).
  const std::vector<Input> in = {{{6}, {1, 0, 1, 0, 2, 1}}, {{6}, {0.0f, 3, -2, 3, 1, -0.0f}}};
  // k0 ascending: (0,3) (0,3) tie -> 1, 3; k0 = 1: -2 (2), then 0.0 and -0.0 tie -> 0, 5; then 4.
  check(lexsort("LT"), in, {{1, 3, 2, 0, 5, 4}});
  // k0 descending: 4; k0 = 1 by k1 ascending: 2, 0, 5; k0 = 0: 1, 3.
  check(lexsort("GT"), in, {{4, 2, 0, 5, 1, 3}});
}

TEST_CASE("chlo.top_k: the k largest along the last dim, ties by lower index, NaN largest") {
  const std::string text =
      R"(module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x6xf32> {mhlo.layout_mode = "default"}) -> (tensor<2x3xf32> {jax.result_info = "[0]"}, tensor<2x3xi32> {jax.result_info = "[1]"}) {
    %values, %indices = chlo.top_k(%arg0, k = 3) : tensor<2x6xf32> -> (tensor<2x3xf32>, tensor<2x3xi32>)
    return %values, %indices : tensor<2x3xf32>, tensor<2x3xi32>
  }
}
)";
  check(text, {{{2, 6}, kRows}}, {{kNan, 3, 3, kInf, 5, 4}, {2, 0, 5, 4, 0, 1}});
  CHECK(lower_error("func.func @main(%arg0: tensor<4xf32>) -> (tensor<5xf32>, tensor<5xi32>) {\n"
                    "  %v, %i = chlo.top_k(%arg0, k = 5) : tensor<4xf32> -> (tensor<5xf32>, "
                    "tensor<5xi32>)\n  return %v, %i : tensor<5xf32>, tensor<5xi32>\n}\n")
            .starts_with("bad.mlir:2:3: chlo.top_k: k = 5 is outside [0, 4]"));
}

TEST_CASE("reduce_precision to bf16's e8m7: round to nearest even, overflow to inf") {
  const std::string text = R"(func.func public @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.reduce_precision %arg0, format = e8m7 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
)";
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even (1). 1 + 3 * 2^-8 is halfway between
  // 1 + 2^-7 and 1 + 2^-6: even (1 + 2^-6). 1 + 2^-8 + 2^-20 is past halfway: 1 + 2^-7.
  const float max = std::numeric_limits<float>::max();
  check(
      text,
      {{{8}, {1.0f, 1.00390625f, 1.01171875f, 1.0f + 0x1p-8f + 0x1p-20f, max, -2.5f, kNan, -0.0f}}},
      {{1.0f, 1.0f, 1.015625f, 1.0078125f, kInf, -2.5f, kNan, -0.0f}});
  // A format every value fits is the identity; the generic form reads the same.
  check(R"(func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.reduce_precision"(%arg0) <{exponent_bits = 8 : i32, mantissa_bits = 23 : i32}> : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
)",
        {{{2}, {1.00390625f, -3.0f}}}, {{1.00390625f, -3.0f}});
  CHECK(
      lower_error(R"(func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.reduce_precision %arg0, format = e5m10 : tensor<2xf32>
  return %0 : tensor<2xf32>
}
)")
          .starts_with("bad.mlir:2:3: unimplemented: stablehlo.reduce_precision of f32 to e5m10"));
}

TEST_CASE("chlo ops in pretty form: chlo.erf as jax.nn.gelu(approximate=False) emits it") {
  auto m = parse_module(R"(func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = chlo.erf %arg0 : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)",
                        "erf.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  auto g = lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  auto again = parse_module(print_module(*m), "printed.mlir");
  REQUIRE_MESSAGE(again, (again ? "" : again.error().message));
  auto g2 = lower_to_graph(*again);
  REQUIRE(g2);
  CHECK(planner::graph_key(*g) == planner::graph_key(*g2));
  std::vector<float> x = {0.0f, 0.5f, 1.0f, -2.0f};
  std::vector<int64_t> shape = {4};
  std::vector<runtime::TensorView> views;
  views.push_back({shape, x});
  auto out = test::plan_and_run(*g, "greedy", "erf", views);
  // erf from tables (Abramowitz & Stegun 7.1): 0, 0.5204999, 0.8427008, -0.9953223.
  const std::vector<float> want = {0.0f, 0.5204999f, 0.8427008f, -0.9953223f};
  REQUIRE(out.size() == 1);
  for (size_t i = 0; i < 4; ++i) CHECK(out[0].data[i] == doctest::Approx(want[i]).epsilon(2e-3));
  auto bad = parse_module(
      "func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {\n"
      "  %0 = chlo.erf %arg0 : tensor<4xf16> -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
      "bad.mlir");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.starts_with("bad.mlir:2:"));
  CHECK(bad.error().message.find("chlo.erf: operand 0 has type tensor<4xf32>") !=
        std::string::npos);
}

TEST_CASE("sort refusals name file:line:col and the op") {
  // Compares operand 0 of one element with operand 1 of the other: no lexicographic order.
  CHECK(lower_error(
            R"(func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
  %0:2 = "stablehlo.sort"(%arg0, %arg1) <{dimension = 0 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %d: tensor<f32>):
    %1 = stablehlo.compare  LT, %a, %d,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %0#0 : tensor<4xf32>
}
)")
            .starts_with("bad.mlir:2:3: unimplemented: stablehlo.sort whose comparator is not a "
                         "lexicographic order on its operands"));
  // An order by |x| (an op the probe evaluator does not know) is refused, not guessed.
  CHECK(lower_error(R"(func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.sort"(%arg0) <{dimension = 0 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %x = stablehlo.abs %a : tensor<f32>
    %y = stablehlo.abs %b : tensor<f32>
    %1 = stablehlo.compare  LT, %x, %y,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)")
            .starts_with("bad.mlir:2:3: unimplemented: stablehlo.sort whose comparator is not a "
                         "lexicographic order"));
}

TEST_CASE("a one-device mesh compiles ops without a sharding rule (cumsum's reduce_window)") {
  auto m = parse_module(
      R"(module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x5xf32> {mhlo.layout_mode = "default"}) -> (tensor<1x5xf32> {jax.result_info = ""}) {
    %0 = call @cumsum(%arg0) : (tensor<1x5xf32>) -> tensor<1x5xf32>
    return %0 : tensor<1x5xf32>
  }
  func.func private @cumsum(%arg0: tensor<1x5xf32>) -> tensor<1x5xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = "stablehlo.reduce_window"(%arg0, %cst) <{padding = dense<[[0, 0], [4, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 5>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %1 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %1 : tensor<f32>
    }) : (tensor<1x5xf32>, tensor<f32>) -> tensor<1x5xf32>
    return %0 : tensor<1x5xf32>
  }
}
)",
      "cumsum.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  PipelineOptions o;
  auto s = run_pipeline(*m, o);
  REQUIRE_MESSAGE(s, (s ? "" : s.error().message));
  auto g = lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  std::vector<float> x = {1, 2, 3, 4, 5};
  std::vector<int64_t> shape = {1, 5};
  std::vector<runtime::TensorView> views;
  views.push_back({shape, x});
  auto out = test::plan_and_run(*g, "greedy", "cumsum", views);
  REQUIRE(out.size() == 1);
  CHECK(std::vector<float>(out[0].data.begin(), out[0].data.end()) ==
        std::vector<float>{1, 3, 6, 10, 15});
}

namespace {

/// A two-input reduce_window as JAX's argmin/argmax pooling emits it: `compare DIR` of the
/// values, both pairs selected by it.
std::string pair_window(const std::string& dir, const std::string& attrs, const std::string& in,
                        const std::string& out, const std::string& init_v,
                        const std::string& init_p) {
  return R"(func.func public @main(%a: tensor<)" + in + R"(xf32>, %p: tensor<)" + in +
         R"(xf32>) -> (tensor<)" + out + "xf32>, tensor<" + out + R"(xf32>) {
  %iv = stablehlo.constant dense<)" +
         init_v + R"(> : tensor<f32>
  %ip = stablehlo.constant dense<)" +
         init_p + R"(> : tensor<f32>
  %0:2 = "stablehlo.reduce_window"(%a, %p, %iv, %ip) <{)" +
         attrs + R"(}> ({
  ^bb0(%a0: tensor<f32>, %a1: tensor<f32>, %a2: tensor<f32>, %a3: tensor<f32>):
    %c = stablehlo.compare  )" +
         dir + R"(, %a0, %a2,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %v = stablehlo.select %c, %a0, %a2 : tensor<i1>, tensor<f32>
    %w = stablehlo.select %c, %a1, %a3 : tensor<i1>, tensor<f32>
    stablehlo.return %v, %w : tensor<f32>, tensor<f32>
  }) : (tensor<)" +
         in + "xf32>, tensor<" + in + "xf32>, tensor<f32>, tensor<f32>) -> (tensor<" + out +
         "xf32>, tensor<" + out + R"(xf32>)
  return %0#0, %0#1 : tensor<)" +
         out + "xf32>, tensor<" + out + R"(xf32>
})";
}

}  // namespace

TEST_CASE("two-input reduce_window: argmin/argmax pooling, init first, row-major window order") {
  // a = [[3, 1, 4, 1], [1, 9, 2, 6]], payload p = 10 + flat index; 2x2 windows, stride 2.
  // Window 0 holds 3, 1, 1, 9 in row-major order: LE keeps the earlier of equal minima, (0, 1)
  // -> 11; LT takes the later, (1, 0) -> 14. Window 1 holds 4, 1, 2, 6: min 1 at (0, 3) -> 13.
  const std::vector<Input> in = {{{2, 4}, {3, 1, 4, 1, 1, 9, 2, 6}},
                                 {{2, 4}, {10, 11, 12, 13, 14, 15, 16, 17}}};
  const std::string attrs =
      "window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>";
  check(pair_window("LE", attrs, "2x4", "1x2", "0x7F800000", "0.0"), in, {{1, 1}, {11, 13}});
  check(pair_window("LT", attrs, "2x4", "1x2", "0x7F800000", "0.0"), in, {{1, 1}, {14, 13}});
  // Padding takes the inits: a = [7, 2, 8], p = [20, 21, 22], one -inf in front, windows of 2
  // at stride 2: (-inf, 7) -> (7, 20) and (2, 8) -> (8, 22) under GE with init (-inf, -1).
  check(pair_window("GE",
                    "padding = dense<[[0, 0], [1, 0]]> : tensor<2x2xi64>, window_dimensions = "
                    "array<i64: 1, 2>, window_strides = array<i64: 1, 2>",
                    "1x3", "1x2", "0xFF800000", "-1.0"),
        {{{1, 3}, {7, 2, 8}}, {{1, 3}, {20, 21, 22}}}, {{7, 8}, {20, 22}});
  // A region of another form is a located refusal naming the op.
  std::string text = pair_window("LE", attrs, "2x4", "1x2", "0x7F800000", "0.0");
  text.replace(text.find("%w = stablehlo.select %c, %a1, %a3"), 34,
               "%w = stablehlo.select %c, %a3, %a1");
  std::string e = lower_error(text);
  CHECK(e.find("bad.mlir:4:") != std::string::npos);
  CHECK(e.find("reduce_window with 2 inputs") != std::string::npos);
}
