// The JAX-style corpus (tests/planner/jax/corpus: common jnp / lax / jax.nn functions as
// `jax.jit(f).lower(...).as_text()` prints them) imports unchanged: every module either lowers
// and round-trips through --emit=stablehlo to the same graph key, or is one of the known
// refusals, which name file:line:col and the op. Integer indexing with a rank-0 index (a gather
// whose index_vector_dim is the printed-when-not-0 default and whose result has rank 0) and
// reshapes to rank 0 run and match hand-worked values bit for bit.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "plan_run.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs `text`'s one-output program on `inputs` (greedy plan, emulated chip).
std::vector<float> run(const std::string& text, const std::vector<std::vector<int64_t>>& shapes,
                       const std::vector<std::vector<float>>& inputs) {
  auto m = parse_module(text, "corpus.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  auto g = lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  std::vector<runtime::TensorView> views;
  for (size_t i = 0; i < inputs.size(); ++i) views.push_back({shapes[i], inputs[i]});
  auto out = test::plan_and_run(*g, "greedy", "corpus", views);
  REQUIRE(out.size() == 1);
  return std::vector<float>(out[0].data.begin(), out[0].data.end());
}

uint32_t bits(float f) {
  return std::bit_cast<uint32_t>(f);
}

}  // namespace

TEST_CASE("x[i] with a rank-0 index: gather with the default index_vector_dim, rank-0 result") {
  std::string text = read_text(test::source_path("tests/planner/jax/corpus/index_scalar.mlir"));
  const std::vector<float> x = {10, 11, 12, 13, 14, -0.0f};
  // i = 4 -> x[4]; i = -1 -> x[5] (JAX adds the size); i = 9 -> the start is clamped to 5.
  const std::map<float, float> want = {{4.0f, 14.0f}, {-1.0f, -0.0f}, {9.0f, -0.0f}};
  for (const auto& [i, w] : want) {
    CAPTURE(i);
    auto got = run(text, {{6}, {}}, {x, {i}});
    REQUIRE(got.size() == 1);
    CHECK(bits(got[0]) == bits(w));
  }
}

TEST_CASE("reshape to rank 0 keeps the value bit for bit (-0.0, NaN, inf)") {
  const std::string text = R"(func.func public @main(%arg0: tensor<1x1xf32>) -> tensor<f32> {
  %0 = stablehlo.reshape %arg0 : (tensor<1x1xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
)";
  for (float v : {-0.0f, 2.5f, -std::numeric_limits<float>::infinity()}) {
    auto got = run(text, {{1, 1}}, {{v}});
    REQUIRE(got.size() == 1);
    CHECK(bits(got[0]) == bits(v));
  }
  auto got = run(text, {{1, 1}}, {{std::numeric_limits<float>::quiet_NaN()}});
  CHECK(std::isnan(got[0]));
}

TEST_CASE("every module of the JAX corpus imports unchanged or is a located refusal") {
  // Known refusals: the op each must name (none today).
  const std::map<std::string, std::string> refused = {};
  int lowered = 0, files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(test::source_path("tests/planner/jax/corpus"))) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".mlir")) continue;
    CAPTURE(name);
    ++files;
    auto m = parse_module(read_text(entry.path()), name);
    if (auto r = refused.find(name); r != refused.end()) {
      // Refused when parsed (zero-size types) or lowered.
      std::string msg = m ? "" : m.error().message;
      if (m) {
        auto g = lower_to_graph(*m);
        REQUIRE_FALSE(g.has_value());
        msg = g.error().message;
      }
      CHECK(msg.starts_with(name + ":"));
      CHECK(msg.find(r->second) != std::string::npos);
      continue;
    }
    REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
    auto g = lower_to_graph(*m);
    REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
    ++lowered;
    const std::string printed = print_module(*m);
    auto again = parse_module(printed, "printed.mlir");
    REQUIRE_MESSAGE(again, (again ? "" : again.error().message + "\n" + printed));
    auto g2 = lower_to_graph(*again);
    REQUIRE_MESSAGE(g2, (g2 ? "" : g2.error().message));
    CHECK(planner::graph_key(*g) == planner::graph_key(*g2));
  }
  CHECK(files >= 68);
  CHECK(lowered == files - static_cast<int>(refused.size()));
}

TEST_CASE("jnp.take's fill mode: an and-reduce of the in-bounds mask selects NaN rows") {
  std::string text = read_text(test::source_path("tests/planner/jax/corpus/take_fill.mlir"));
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  // Index 2 -> row 2; -1 -> row 5 (JAX adds the size); 7 is out of bounds -> NaN.
  auto got = run(text, {{6, 4}, {3}}, {x, {2, -1, 7}});
  REQUIRE(got.size() == 12);
  const std::vector<float> rows = {8, 9, 10, 11, 20, 21, 22, 23};
  for (size_t i = 0; i < 8; ++i) CHECK(got[i] == rows[i]);
  for (size_t i = 8; i < 12; ++i) CHECK(std::isnan(got[i]));
}

TEST_CASE("jnp.all / jnp.any: reduce of i1 with and / or; a non-identity init folds") {
  auto module = [](const std::string& body, const std::string& init) {
    return R"(func.func public @main(%arg0: tensor<3x4xf32>) -> tensor<3xf32> {
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
  %1 = stablehlo.compare  GT, %arg0, %0,  FLOAT : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xi1>
  %c = stablehlo.constant dense<)" +
           init + R"(> : tensor<i1>
  %2 = stablehlo.reduce(%1 init: %c) applies stablehlo.)" +
           body + R"( across dimensions = [1] : (tensor<3x4xi1>, tensor<i1>) -> tensor<3xi1>
  %3 = stablehlo.convert %2 : (tensor<3xi1>) -> tensor<3xf32>
  return %3 : tensor<3xf32>
}
)";
  };
  // Row 0 all positive, row 1 mixed, row 2 none positive.
  const std::vector<float> x = {1, 2, 3, 4, 1, -2, 3, 0, -1, -2, 0, -0.5f};
  CHECK(run(module("and", "true"), {{3, 4}}, {x}) == std::vector<float>{1, 0, 0});
  CHECK(run(module("or", "false"), {{3, 4}}, {x}) == std::vector<float>{1, 1, 0});
  CHECK(run(module("and", "false"), {{3, 4}}, {x}) == std::vector<float>{0, 0, 0});
  CHECK(run(module("or", "true"), {{3, 4}}, {x}) == std::vector<float>{1, 1, 1});
}

TEST_CASE("jnp.dot of two vectors: a dot_general with a rank-0 result") {
  std::string text = read_text(test::source_path("tests/planner/jax/corpus/matmul_vec.mlir"));
  // 1 + 2 + ... + 7 - 8 = 20.
  auto got = run(text, {{8}, {8}}, {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 1, 1, 1, 1, 1, -1}});
  REQUIRE(got.size() == 1);
  CHECK(got[0] == 20.0f);
}

TEST_CASE("chlo's hyperbolic and inverse trigonometric ops (jnp.sinh ... jnp.arctanh)") {
  std::string text = read_text(test::source_path("tests/planner/jax/corpus/chlo_trig.mlir"));
  auto m = parse_module(text, "chlo_trig.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  auto g = lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  const std::vector<float> x = {0, -0.0f, 0.5f, -0.9f, 1e-6f, 3, 100, 2};
  const std::vector<int64_t> shape = {8};
  std::vector<runtime::TensorView> views;
  views.push_back({shape, x});
  auto out = test::plan_and_run(*g, "greedy", "chlo_trig", views);
  REQUIRE(out.size() == 9);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // Python's math module in double precision (sinh(100) overflows f32).
  const std::vector<std::vector<float>> want = {
      {0, -0.0f, 0.521095f, -1.02652f, 1e-06f, 10.0179f, inf, 3.62686f},            // sinh
      {1, 1, 1.12763f, 1.43309f, 1, 10.0677f, inf, 3.7622f},                        // cosh
      {0, -0.0f, 0.546302f, -1.26016f, 1e-06f, -0.142547f, -0.587214f, -2.18504f},  // tan
      {0, -0.0f, 0.523599f, -1.11977f, 1e-06f, nan, nan, nan},                      // asin
      {1.5708f, 1.5708f, 1.0472f, 2.69057f, 1.5708f, nan, nan, nan},                // acos
      {0, -0.0f, 0.463648f, -0.732815f, 1e-06f, 1.24905f, 1.5608f, 1.10715f},       // atan
      {0, -0.0f, 0.481212f, -0.808867f, 1e-06f, 1.81845f, 5.29834f, 1.44364f},      // asinh
      {nan, nan, nan, nan, nan, 1.76275f, 5.29829f, 1.31696f},                      // acosh
      {0, -0.0f, 0.549306f, -1.47222f, 1e-06f, nan, nan, nan}};                     // atanh
  for (size_t r = 0; r < want.size(); ++r)
    for (size_t i = 0; i < x.size(); ++i) {
      CAPTURE(r);
      CAPTURE(i);
      const float w = want[r][i], o = out[r].data[i];
      if (std::isnan(w))
        CHECK(std::isnan(o));
      else if (std::isinf(w))
        CHECK(o == w);
      else
        CHECK(o == doctest::Approx(w).epsilon(1e-4));
    }
}

TEST_CASE("jax.lax.fori_loop with its bound in the loop state is unrolled") {
  std::string text = read_text(test::source_path("tests/planner/jax/corpus/fori_loop.mlir"));
  auto got = run(text, {{4}}, {{0.5f, -1, 2, 3}});
  // x <- sin(x * x / 2) three times, in double precision (Python's math module).
  const std::vector<double> want = {3.0200564548195863e-05, 0.0065747417925877015,
                                    0.08060804150140705, 0.10551637903231102};
  REQUIRE(got.size() == 4);
  for (size_t i = 0; i < 4; ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-3));
  // A bound slot the body changes is no trip count: the loop stays and is refused, located.
  std::string changed = text;
  const std::string ret = "stablehlo.return %2, %iterArg_1, %1";
  REQUIRE(changed.find(ret) != std::string::npos);
  changed.replace(changed.find(ret), ret.size(), "stablehlo.return %2, %2, %1");
  auto m2 = parse_module(changed, "fori_loop.mlir");
  REQUIRE_MESSAGE(m2, (m2 ? "" : m2.error().message));
  auto g2 = lower_to_graph(*m2);
  REQUIRE_FALSE(g2.has_value());
  CHECK(g2.error().message.starts_with("fori_loop.mlir:"));
  CHECK(g2.error().message.find("stablehlo.while whose trip count") != std::string::npos);
}

TEST_CASE("a variadic scatter: each result combines its own input and update") {
  std::string text = read_text(test::source_path("tests/planner/jax/corpus/scatter_variadic.mlir"));
  auto m = parse_module(text, "scatter_variadic.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  auto g = lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  std::vector<float> x(15), n(15);
  for (size_t i = 0; i < 15; ++i) {
    x[i] = static_cast<float>(i);
    n[i] = 100.0f + static_cast<float>(i);
  }
  const std::vector<float> idx = {4, 1}, u = {1, 2, 3, 10, 20, 30}, v = {-1, -2, -3, 7, 8, 9};
  const std::vector<std::vector<int64_t>> shapes = {{5, 3}, {5, 3}, {2}, {2, 3}, {2, 3}};
  const std::vector<const std::vector<float>*> data = {&x, &n, &idx, &u, &v};
  std::vector<runtime::TensorView> views;
  for (size_t i = 0; i < shapes.size(); ++i) views.push_back({shapes[i], *data[i]});
  auto out = test::plan_and_run(*g, "greedy", "scatter_variadic", views);
  REQUIRE(out.size() == 2);
  // Row 4 of x gets u[0] added, row 1 gets u[1]; the same rows of n become v[0] and v[1].
  CHECK(std::vector<float>(out[0].data.begin(), out[0].data.end()) ==
        std::vector<float>{0, 1, 2, 13, 24, 35, 6, 7, 8, 9, 10, 11, 13, 15, 17});
  CHECK(std::vector<float>(out[1].data.begin(), out[1].data.end()) ==
        std::vector<float>{100, 101, 102, 7, 8, 9, 106, 107, 108, 109, 110, 111, -1, -2, -3});
  // A result whose combiner reads another result's update is refused, located.
  std::string cross =
      R"(func.func public @main(%arg0: tensor<5x3xf32>, %arg1: tensor<5x3xf32>, %arg2: tensor<2x1xi32>, %arg3: tensor<2x3xf32>, %arg4: tensor<2x3xf32>) -> tensor<5x3xf32> {
  %0:2 = "stablehlo.scatter"(%arg0, %arg1, %arg2, %arg3, %arg4) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a0: tensor<f32>, %a1: tensor<f32>, %u0: tensor<f32>, %u1: tensor<f32>):
    %1 = stablehlo.add %a0, %u1 : tensor<f32>
    stablehlo.return %1, %u1 : tensor<f32>, tensor<f32>
  }) : (tensor<5x3xf32>, tensor<5x3xf32>, tensor<2x1xi32>, tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<5x3xf32>, tensor<5x3xf32>)
  return %0#0 : tensor<5x3xf32>
}
)";
  std::string e = test::lower_error(cross);
  CHECK(
      e.starts_with("bad.mlir:2:3: unimplemented: stablehlo.scatter whose update region "
                    "computes stablehlo.add of something other than its arguments"));
}
