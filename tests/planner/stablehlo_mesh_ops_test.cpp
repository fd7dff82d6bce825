// JAX programs with sharded inputs on a mesh of 2 chips: pooling and cumsum
// (reduce_window), max-pool's gradient (select_and_scatter), fori_loop/scan (while, unrolled),
// and the ops whose sharding rules replicate what cannot be split (chlo's decomposed functions,
// reduce_precision, jnp.all's `and` reduction, top_k). Each module is planned on the mesh, run
// with global inputs that the runtime splits, and compared with hand-worked values and with the
// same module run on one chip (bit for bit: integers and moved values are exact).
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/device/mesh_spec.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"
#include "plan_run.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

using Input = std::pair<std::vector<int64_t>, std::vector<float>>;
using Outputs = std::vector<std::vector<float>>;

std::vector<runtime::TensorView> views_of(const std::vector<Input>& inputs) {
  std::vector<runtime::TensorView> views;
  for (const auto& [shape, data] : inputs) views.push_back({shape, data});
  return views;
}

/// `text` planned for the mesh its sdy.mesh declares (2 devices) and run on two emulated chips
/// with global inputs; `collectives` receives how many collectives that communicate the
/// per-device program has.
Outputs run_on_mesh(const std::string& text, const std::vector<Input>& inputs,
                    int* collectives = nullptr) {
  auto m = parse_module(text, "mesh.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  PipelineOptions options;
  options.mesh_rows = 0;
  options.mesh_cols = 0;
  auto st = run_pipeline(*m, options);
  REQUIRE_MESSAGE(st, (st ? "" : st.error().message));
  auto g = lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  REQUIRE(g->mesh.rows * g->mesh.cols == 2);
  if (collectives)
    *collectives = static_cast<int>(std::ranges::count_if(g->ops, [](const planner::Op& op) {
      // all_slice takes each chip's own piece of a replicated value: no communication.
      return device::is_collective(op.kind) && op.kind != device::OpKind::all_slice;
    }));
  // The system of the grid the mesh axes were mapped onto (2x1 or 1x2).
  auto desc = device::resolve_mesh_spec(
      std::to_string(g->mesh.rows) + "x" + std::to_string(g->mesh.cols), device::wormhole_b0());
  REQUIRE_MESSAGE(desc, (desc ? "" : desc.error().message));
  auto mesh = device::EmulatedMesh::create(*desc);
  REQUIRE(mesh);
  auto plan = planner::compile(*g, (*mesh)->descriptor().chip,
                               planner::PlannerOptions::with_policy("greedy"));
  REQUIRE_MESSAGE(plan, (plan ? "" : plan.error().message));
  auto ref = runtime::verify_plan(plan->bytes, "mesh");
  REQUIRE_MESSAGE(ref, (ref ? "" : ref.error().message));
  auto exe = runtime::Executable::bind(*ref, **mesh);
  REQUIRE_MESSAGE(exe, (exe ? "" : exe.error().message));
  auto views = views_of(inputs);
  auto run = (*exe)->run(views);
  REQUIRE_MESSAGE(run, (run ? "" : run.error().message));
  Outputs out;
  for (const auto& t : run->outputs) out.emplace_back(t.data.begin(), t.data.end());
  return out;
}

/// The same module without its mesh and shardings, on one chip.
Outputs run_on_one_chip(const std::string& text, const std::vector<Input>& inputs) {
  std::string plain = std::regex_replace(text, std::regex(R"(sdy\.mesh @mesh = <[^\n]*\n)"), "");
  plain =
      std::regex_replace(plain, std::regex(R"( \{sdy\.sharding = #sdy\.sharding<[^>]*>\})"), "");
  plain = std::regex_replace(plain, std::regex(R"(mhlo\.num_partitions = 2)"),
                             "mhlo.num_partitions = 1");
  REQUIRE(plain.find("sdy.") == std::string::npos);
  planner::Graph g = test::lower_text(plain, "one_chip.mlir");
  auto views = views_of(inputs);
  Outputs out;
  for (const auto& t : test::plan_and_run(g, "greedy", "one_chip", views))
    out.emplace_back(t.data.begin(), t.data.end());
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i])) return false;
  return true;
}

/// Runs `text` on the mesh and on one chip: the two runs agree bit for bit, and the mesh's
/// outputs are returned.
Outputs check_mesh_equals_one_chip(const std::string& text, const std::vector<Input>& inputs,
                                   int* collectives = nullptr) {
  Outputs mesh = run_on_mesh(text, inputs, collectives);
  Outputs one = run_on_one_chip(text, inputs);
  REQUIRE(mesh.size() == one.size());
  for (size_t o = 0; o < mesh.size(); ++o) {
    CAPTURE(o);
    CHECK(same_bits(mesh[o], one[o]));
  }
  return mesh;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
  }
}

}  // namespace

TEST_CASE("max pool with the batch split over the mesh: each chip pools its own images") {
  // nn.max_pool(x, (2, 2), strides=(2, 2)) on NHWC; x[n, h, w, c] = (37n + 11h + 5w + 3c) % 17
  // - 8 (integers, exact in f32). The expected maximum of each 2x2 window is taken here.
  const std::string text =
      R"(module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<2x8x8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {}, {}]>}) -> (tensor<2x4x4x4xf32> {jax.result_info = ""}) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = "stablehlo.reduce_window"(%arg0, %cst) <{padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %1 = stablehlo.maximum %arg1, %arg2 : tensor<f32>
      stablehlo.return %1 : tensor<f32>
    }) : (tensor<2x8x8x4xf32>, tensor<f32>) -> tensor<2x4x4x4xf32>
    return %0 : tensor<2x4x4x4xf32>
  }
}
)";
  auto at = [](int n, int h, int w, int c) {
    return static_cast<float>((37 * n + 11 * h + 5 * w + 3 * c) % 17 - 8);
  };
  std::vector<float> x, want;
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 8; ++h)
      for (int w = 0; w < 8; ++w)
        for (int c = 0; c < 4; ++c) x.push_back(at(n, h, w, c));
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 4; ++h)
      for (int w = 0; w < 4; ++w)
        for (int c = 0; c < 4; ++c)
          want.push_back(std::max({at(n, 2 * h, 2 * w, c), at(n, 2 * h + 1, 2 * w, c),
                                   at(n, 2 * h, 2 * w + 1, c), at(n, 2 * h + 1, 2 * w + 1, c)}));
  int collectives = -1;
  Outputs got = check_mesh_equals_one_chip(text, {{{2, 8, 8, 4}, x}}, &collectives);
  CHECK(collectives == 0);  // the batch dim is no window dim: nothing moves
  CHECK(got[0] == want);
}

TEST_CASE("cumsum of i32 along the split dim: the windowed dim is gathered first") {
  // jnp.cumsum(x, axis=1) as reduce_window (window 8, low padding 7) on i32, with axis 1 split
  // over "x". x[r, j] = 1000 * (r + 1) - 7j^2 (the prefix sums are worked out here).
  const std::string text =
      R"(module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<4x8xi32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<4x8xi32> {jax.result_info = ""}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = "stablehlo.reduce_window"(%arg0, %c) <{padding = dense<[[0, 0], [7, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 8>}> ({
    ^bb0(%arg1: tensor<i32>, %arg2: tensor<i32>):
      %1 = stablehlo.add %arg1, %arg2 : tensor<i32>
      stablehlo.return %1 : tensor<i32>
    }) : (tensor<4x8xi32>, tensor<i32>) -> tensor<4x8xi32>
    return %0 : tensor<4x8xi32>
  }
}
)";
  std::vector<float> x, want;
  for (int r = 0; r < 4; ++r) {
    int sum = 0;
    for (int j = 0; j < 8; ++j) {
      int v = 1000 * (r + 1) - 7 * j * j;
      x.push_back(static_cast<float>(v));
      want.push_back(static_cast<float>(sum += v));
    }
  }
  CHECK(want[15] == 16000.0f - 7 * 140);  // row 1: 8 * 2000 - 7 * (0 + 1 + 4 + ... + 49)
  int collectives = -1;
  Outputs got = check_mesh_equals_one_chip(text, {{{4, 8}, x}}, &collectives);
  CHECK(collectives >= 1);  // the split window dim is gathered
  CHECK(got[0] == want);
}

TEST_CASE("strided sum pooling over a split dim, and max pool's gradient (select_and_scatter)") {
  // avg_pool's sum: windows of 2 with stride 2 along dim 0, which is split over "x"; then
  // select_and_scatter (the gradient of a 2x1 max pool along dim 1) with the source split too.
  const std::string text =
      R"(module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4x4xf32> {jax.result_info = "[0]"}, tensor<8x4xf32> {jax.result_info = "[1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = "stablehlo.reduce_window"(%arg0, %cst) <{window_dimensions = array<i64: 2, 1>, window_strides = array<i64: 2, 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<8x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    %1 = "stablehlo.select_and_scatter"(%arg0, %arg1, %cst) <{window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 1, 2>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare  GE, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }, {
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<8x4xf32>, tensor<8x2xf32>, tensor<f32>) -> tensor<8x4xf32>
    return %0, %1 : tensor<4x4xf32>, tensor<8x4xf32>
  }
}
)";
  // x[r, c] = (5r + 3c) % 7 - 3; the source s[r, k] = 10r + k + 1.
  std::vector<float> x, s, sum, grad(32, 0.0f);
  auto xv = [](int r, int c) { return static_cast<float>((5 * r + 3 * c) % 7 - 3); };
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 4; ++c) x.push_back(xv(r, c));
  for (int r = 0; r < 8; ++r)
    for (int k = 0; k < 2; ++k) s.push_back(static_cast<float>(10 * r + k + 1));
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) sum.push_back(xv(2 * r, c) + xv(2 * r + 1, c));
  // GE selects the first of equal elements: the source lands on the window's first maximum.
  for (int r = 0; r < 8; ++r)
    for (int k = 0; k < 2; ++k) {
      int c = xv(r, 2 * k) >= xv(r, 2 * k + 1) ? 2 * k : 2 * k + 1;
      grad[static_cast<size_t>(r * 4 + c)] = static_cast<float>(10 * r + k + 1);
    }
  Outputs got = check_mesh_equals_one_chip(text, {{{8, 4}, x}, {{8, 2}, s}});
  CHECK(got[0] == sum);
  CHECK(got[1] == grad);
}

TEST_CASE("fori_loop and scan with a split carry: the unrolled body runs on each chip's piece") {
  // fori_loop(0, 3, lambda i, x: x * 3 + i, x) on i32 (x -> 27x + 0*9 + 1*3 + 2 = 27x + 5), and
  // a scan whose carry is a split f32 vector (c -> c * 0.5 + 1, three times: c/8 + 1.75).
  const std::string text =
      R"(module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<8xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, %arg1: tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8xi32> {jax.result_info = "[0]"}, tensor<4x2xf32> {jax.result_info = "[1]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<3> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_1 = %arg0) : tensor<i32>, tensor<8xi32>
     cond {
      %2 = stablehlo.compare  LT, %iterArg, %c_0,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2 = func.call @body(%iterArg, %iterArg_1) : (tensor<i32>, tensor<8xi32>) -> tensor<8xi32>
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %3 = stablehlo.add %iterArg, %c_2 : tensor<i32>
      stablehlo.return %3, %2 : tensor<i32>, tensor<8xi32>
    }
    %1:2 = stablehlo.while(%iterArg = %c, %iterArg_1 = %arg1) : tensor<i32>, tensor<4x2xf32>
     cond {
      %2 = stablehlo.compare  LT, %iterArg, %c_0,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %cst = stablehlo.constant dense<5.000000e-01> : tensor<4x2xf32>
      %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<4x2xf32>
      %2 = stablehlo.multiply %iterArg_1, %cst : tensor<4x2xf32>
      %3 = stablehlo.add %2, %cst_1 : tensor<4x2xf32>
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %4 = stablehlo.add %iterArg, %c_2 : tensor<i32>
      stablehlo.return %4, %3 : tensor<i32>, tensor<4x2xf32>
    }
    return %0#1, %1#1 : tensor<8xi32>, tensor<4x2xf32>
  }
  func.func private @body(%arg0: tensor<i32>, %arg1: tensor<8xi32>) -> tensor<8xi32> {
    %c = stablehlo.constant dense<3> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<8xi32>
    %1 = stablehlo.multiply %arg1, %0 : tensor<8xi32>
    %2 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<i32>) -> tensor<8xi32>
    %3 = stablehlo.add %1, %2 : tensor<8xi32>
    return %3 : tensor<8xi32>
  }
}
)";
  const std::vector<float> x = {0, 1, -1, 7, -40, 1000, 123456, -99999};
  std::vector<float> want_x;
  for (float v : x) want_x.push_back(27 * v + 5);
  const std::vector<float> c = {0, 8, -8, 16, 2, -2, 0.5f, 100};
  std::vector<float> want_c;
  for (float v : c) want_c.push_back(v / 8 + 1.75f);  // exact in binary
  int collectives = -1;
  Outputs got = check_mesh_equals_one_chip(text, {{{8}, x}, {{4, 2}, c}}, &collectives);
  CHECK(collectives == 0);
  CHECK(got[0] == want_x);
  CHECK(got[1] == want_c);
}

TEST_CASE("chlo.sinh, reduce_precision, jnp.all and top_k on a split operand") {
  // jnp.sinh, x.astype(bf16)-style rounding (reduce_precision e8m7), jnp.all(x > 0, axis=1)
  // with axis 1 split (an `and` reduction no collective combines: it is gathered), and
  // lax.top_k(x, 2) along the split last dim.
  const std::string text =
      R"(module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xi1>, tensor<2x2xf32>, tensor<2x2xi32>) {
    %0 = chlo.sinh %arg0 : tensor<2x4xf32> -> tensor<2x4xf32>
    %1 = stablehlo.reduce_precision %arg0, format = e8m7 : tensor<2x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<2x4xf32>
    %2 = stablehlo.compare  GT, %arg0, %cst,  FLOAT : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %3 = stablehlo.reduce(%2 init: %c) applies stablehlo.and across dimensions = [1] : (tensor<2x4xi1>, tensor<i1>) -> tensor<2xi1>
    %4:2 = chlo.top_k(%arg0, k = 2) : tensor<2x4xf32> -> (tensor<2x2xf32>, tensor<2x2xi32>)
    return %0, %1, %3, %4#0, %4#1 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xi1>, tensor<2x2xf32>, tensor<2x2xi32>
  }
}
)";
  // bf16 keeps 7 mantissa bits: 1 + 2^-9 rounds down to 1, 1 + 3 * 2^-9 up to 1 + 2^-7.
  const float a = 1.0f + 0x1p-9f, b = 1.0f + 3 * 0x1p-9f;
  const std::vector<float> x = {a, 3, -0.5f, 2, b, 0.25f, 4, 1};
  Outputs got = check_mesh_equals_one_chip(text, {{{2, 4}, x}});
  // sinh: (e^x - e^-x) / 2.
  std::vector<float> sinh;
  for (float v : x) sinh.push_back(static_cast<float>((std::exp(v) - std::exp(-v)) / 2));
  check_close(got[0], sinh, 1e-5f);
  CHECK(got[1] == std::vector<float>{1, 3, -0.5f, 2, 1 + 0x1p-7f, 0.25f, 4, 1});
  CHECK(got[2] == std::vector<float>{0, 1});
  CHECK(got[3] == std::vector<float>{3, 2, 4, b});
  CHECK(got[4] == std::vector<float>{1, 3, 2, 0});
}

TEST_CASE("chlo.lgamma, erfc, next_after and a multiplying scatter on a split operand") {
  const std::string text =
      R"(module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, %arg1: tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
    %0 = chlo.lgamma %arg0 : tensor<2x4xf32> -> tensor<2x4xf32>
    %1 = chlo.erfc %arg0 : tensor<2x4xf32> -> tensor<2x4xf32>
    %2 = chlo.next_after %arg0, %arg1 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %c = stablehlo.constant dense<[[1], [1]]> : tensor<2x1xi32>
    %3 = "stablehlo.scatter"(%arg0, %c, %arg1) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.multiply %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }) : (tensor<2x4xf32>, tensor<2x1xi32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    return %0, %1, %2, %3 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
}
)";
  const std::vector<float> x = {0.5f, 3, -0.5f, 10, 2, -2, 9, 1};
  const std::vector<float> y = {1, 2, -1, 11, -4, 0.5f, 9, 3};
  Outputs got = check_mesh_equals_one_chip(text, {{{2, 4}, x}, {{2, 4}, y}});
  // mpmath: log|gamma(x)| and erfc(x).
  std::vector<float> lgamma = got[0];
  CHECK(lgamma[5] == std::numeric_limits<float>::infinity());  // a pole
  lgamma[5] = 0;
  check_close(lgamma,
              {0.5723649429247001f, 0.6931471805599453f, 1.2655121234846454f, 12.801827480081469f,
               0, 0, 10.60460290274525f, 0},
              2e-6f);
  check_close(
      got[1],
      {0.4795001221869535f, 2.209049699858544e-05f, 1.5204998778130465f, 2.088487583762545e-45f,
       0.004677734981047266f, 1.9953222650189528f, 4.13703174651381e-37f, 0.15729920705028513f},
      2e-6f);
  // next_after: one ulp toward y (x == y gives y).
  CHECK(got[2] == std::vector<float>{std::nextafter(0.5f, 1.0f), std::nextafter(3.0f, 2.0f),
                                     std::nextafter(-0.5f, -1.0f), std::nextafter(10.0f, 11.0f),
                                     std::nextafter(2.0f, -4.0f), std::nextafter(-2.0f, 0.5f), 9,
                                     std::nextafter(1.0f, 3.0f)});
  // Row 1 of x times both update rows (row 1 twice): 2*1*-4, -2*2*0.5, 9*-1*9, 1*11*3.
  CHECK(got[3] == std::vector<float>{0.5f, 3, -0.5f, 10, -8, -2, -81, 33});
}

TEST_CASE("zero-size tensors on a 2-device mesh: an empty argument takes no input, folds away") {
  // jnp.concatenate([jnp.zeros((0, 4)), y]) = y; x.sum(0) of the (0, 4) argument is its init
  // (0); the max over the rows of a slice past the end is -inf; all with dim 1 split over "x".
  const std::string text =
      R"(module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<0x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, %arg1: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<4x4xf32> {jax.result_info = "[0]"}, tensor<4xf32> {jax.result_info = "[1]"}, tensor<4xf32> {jax.result_info = "[2]"}) {
    %0 = stablehlo.concatenate %arg0, %arg1, dim = 0 : (tensor<0x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<0x4xf32>, tensor<f32>) -> tensor<4xf32>
    %2 = stablehlo.slice %arg1 [4:4, 0:4] : (tensor<4x4xf32>) -> tensor<0x4xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %3 = stablehlo.reduce(%2 init: %cst_0) applies stablehlo.maximum across dimensions = [0] : (tensor<0x4xf32>, tensor<f32>) -> tensor<4xf32>
    return %0, %1, %3 : tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
)";
  std::vector<float> y(16);
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i) * 1.5f - 7;
  y[5] = -0.0f;
  Outputs got = check_mesh_equals_one_chip(text, {{{4, 4}, y}});
  REQUIRE(got.size() == 3);
  CHECK(same_bits(got[0], y));
  CHECK(got[1] == std::vector<float>(4, 0.0f));
  CHECK(got[2] == std::vector<float>(4, -std::numeric_limits<float>::infinity()));
}

TEST_CASE("two-input reduce_window (argmin pooling) with its rows split over the mesh") {
  // a = [[3, 1, 4, 1], [5, 9, 2, 6], [5, 3, 5, 8], [9, 7, 9, 3]], payload p = flat index;
  // windows of 1x2 at stride 1x2, LE: the smaller of each pair with its payload.
  const std::string text =
      R"(module @jit_f attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%a: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %p: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4x2xf32> {jax.result_info = ""}, tensor<4x2xf32> {jax.result_info = ""}) {
    %iv = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %ip = stablehlo.constant dense<0.0> : tensor<f32>
    %0:2 = "stablehlo.reduce_window"(%a, %p, %iv, %ip) <{window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 1, 2>}> ({
    ^bb0(%a0: tensor<f32>, %a1: tensor<f32>, %a2: tensor<f32>, %a3: tensor<f32>):
      %c = stablehlo.compare  LE, %a0, %a2,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %v = stablehlo.select %c, %a0, %a2 : tensor<i1>, tensor<f32>
      %w = stablehlo.select %c, %a1, %a3 : tensor<i1>, tensor<f32>
      stablehlo.return %v, %w : tensor<f32>, tensor<f32>
    }) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4x2xf32>, tensor<4x2xf32>)
    return %0#0, %0#1 : tensor<4x2xf32>, tensor<4x2xf32>
  }
}
)";
  std::vector<float> a = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3}, p;
  for (int i = 0; i < 16; ++i) p.push_back(static_cast<float>(i));
  Outputs got = check_mesh_equals_one_chip(text, {{{4, 4}, a}, {{4, 4}, p}});
  CHECK(got[0] == std::vector<float>{1, 1, 5, 2, 3, 5, 7, 3});
  CHECK(got[1] == std::vector<float>{1, 3, 4, 6, 9, 10, 13, 15});
}
