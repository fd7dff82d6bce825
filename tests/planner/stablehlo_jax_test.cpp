// Modules as JAX prints them (`jax.jit(f).lower(...).as_text()`, with and without debug info)
// import unchanged: module attributes, public/private functions and calls (inlined), loc(...)
// everywhere, argument/result attribute dictionaries, pretty custom_call. A JAX-style
// transformer block compiles and matches an independent float64 reference
// (tests/planner/jax/transformer_block_ref.py).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "jax/transformer_block_data.hpp"
#include "meshplan/device/descriptor.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

Module parsed(const std::string& text, const std::string& file = "j.mlir") {
  auto m = parse_module(text, file);
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::move(*m);
}

std::string parse_error(const std::string& text) {
  auto m = parse_module(text, "j.mlir");
  REQUIRE_FALSE(m.has_value());
  return m.error().message;
}

std::string lower_error(const std::string& text) {
  Module m = parsed(text);
  auto g = lower_to_graph(m);
  REQUIRE_FALSE(g.has_value());
  return g.error().message;
}

/// Parse, print, parse again: both lower to graphs with the same key.
planner::Graph round_trip(const std::string& text) {
  Module m = parsed(text);
  auto g = lower_to_graph(m);
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  std::string printed = print_module(m);
  Module again = parsed(printed, "printed.mlir");
  auto g2 = lower_to_graph(again);
  REQUIRE_MESSAGE(g2.has_value(), g2.error().message);
  CHECK(planner::graph_key(*g) == planner::graph_key(*g2));
  CHECK(print_module(again) == printed);
  return std::move(*g);
}

/// Compiles `g` for one chip and runs the device f32 reference on `inputs`.
std::vector<runtime::Tensor> run(
    const planner::Graph& g,
    const std::vector<std::pair<std::vector<int64_t>, std::vector<float>>>& inputs) {
  auto plan =
      planner::compile(g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE_MESSAGE(plan.has_value(), plan.error().message);
  auto ref = runtime::verify_plan(plan->bytes, "jax");
  REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
  std::vector<runtime::TensorView> views;
  for (const auto& [shape, data] : inputs) views.push_back({shape, data});
  auto got = runtime::run_reference(*ref, views);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  return std::move(*got);
}

std::vector<float> values(const runtime::Tensor& t) {
  return std::vector<float>(t.data.begin(), t.data.end());
}

std::string read_text(const std::string& rel) {
  std::ifstream in(test::source_path(rel));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count_ops(const Module& m, std::string_view name) {
  size_t n = 0;
  for (const Func& f : m.funcs)
    for (OpId o : f.body.ops) n += m.ops[o].name == name;
  return n;
}

}  // namespace

TEST_CASE(
    "a JAX-exported transformer block (private functions, calls, locations) compiles "
    "unchanged and matches the float64 reference") {
  std::string text = read_text("tests/planner/jax/transformer_block.mlir");
  Module m = parsed(text);
  REQUIRE(m.funcs.size() == 1);  // @layer_norm, @_softmax, @mlp, @gelu inlined and dropped
  CHECK(m.funcs[0].name == "main");
  CHECK(m.funcs[0].results.size() == 2);
  CHECK(m.module_name == "jit_block");
  CHECK(count_ops(m, "func.call") == 0);
  CHECK(m.notes.empty());  // only {replicated} mhlo.sharding
  planner::Graph g = round_trip(text);
  // The tool's path: the mesh pipeline (one chip) first, then the lowering.
  PipelineOptions one_chip;
  one_chip.mesh_rows = 1;
  one_chip.mesh_cols = 1;
  auto piped = run_pipeline(m, one_chip);
  REQUIRE_MESSAGE(piped.has_value(), piped.error().message);
  auto gp = lower_to_graph(m);
  REQUIRE_MESSAGE(gp.has_value(), gp.error().message);
  CHECK(gp->ops.size() == g.ops.size());
  auto out = run(g, {{{4, 8}, jax_block::kX},
                     {{8, 8}, jax_block::kWq},
                     {{8, 8}, jax_block::kWk},
                     {{8, 8}, jax_block::kWv},
                     {{8, 8}, jax_block::kWo},
                     {{8, 16}, jax_block::kW1},
                     {{16, 8}, jax_block::kW2},
                     {{8}, jax_block::kGamma},
                     {{8}, jax_block::kBeta}});
  REQUIRE(out.size() == 2);
  REQUIRE(out[0].shape == std::vector<int64_t>{4, 8});
  double worst = 0;
  for (size_t i = 0; i < jax_block::kY.size(); ++i)
    worst = std::max(worst, std::fabs(double(out[0].data[i]) - jax_block::kY[i]));
  CAPTURE(worst);
  CHECK(worst < 2e-4);
  REQUIRE(out[1].shape == std::vector<int64_t>{4});
  CHECK(values(out[1]) == jax_block::kArgmax);
}

TEST_CASE("calls: several results, calls inside calls, the same callee twice, generic form") {
  std::string text =
      R"(module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4xf32> loc("a"), %arg1: tensor<2x4xf32> loc("b")) -> (tensor<2x4xf32> {jax.result_info = "result[0]"}, tensor<2x4xf32> {jax.result_info = "result[1]"}) {
    %0:2 = call @pair(%arg0, %arg1) : (tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) loc(#loc3)
    %1 = func.call @relu(%0#1) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %2 = "func.call"(%0#0) <{callee = @relu}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
    return %1, %2 : tensor<2x4xf32>, tensor<2x4xf32> loc(#loc)
  } loc(#loc)
  func.func private @pair(%arg0: tensor<2x4xf32>, %arg1: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
    %0 = stablehlo.subtract %arg0, %arg1 : tensor<2x4xf32>
    %1 = call @twice(%0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    return %1, %arg0 : tensor<2x4xf32>, tensor<2x4xf32>
  }
  func.func private @twice(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
  func.func private @relu(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<2x4xf32>
    return %1 : tensor<2x4xf32>
  }
} loc(#loc)
#loc = loc(unknown)
#loc1 = loc("/tmp/f.py":3:4)
#loc3 = loc("jit(f)/jit(main)/pjit[name=pair]"(#loc1))
)";
  Module m = parsed(text);
  REQUIRE(m.funcs.size() == 1);
  planner::Graph g = round_trip(text);
  std::vector<float> a = {1, -2, 3, -4, 0.5f, 6, -7, 8};
  std::vector<float> b = {2, 2, -1, -5, 0.25f, 9, -9, 1};
  auto out = run(g, {{{2, 4}, a}, {{2, 4}, b}});
  REQUIRE(out.size() == 2);
  // @pair returns (2 * (a - b), a): result[0] = relu(a), result[1] = relu(2 * (a - b)).
  std::vector<float> r0 = {1, 0, 3, 0, 0.5f, 6, 0, 8}, r1 = {0, 0, 8, 2, 0.5f, 0, 4, 14};
  CHECK(values(out[0]) == r0);
  CHECK(values(out[1]) == r1);
}

TEST_CASE("call errors are located: unknown callee, recursion, type mismatch") {
  const std::string head =
      "module @jit_f {\n  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n";
  CHECK(parse_error(head + "    %0 = call @nope(%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n"
                           "    return %0 : tensor<2xf32>\n  }\n}\n") ==
        "j.mlir:3:5: func.call: no function @nope in the module");
  CHECK(parse_error(head + "    %0 = call @f(%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n"
                           "    return %0 : tensor<2xf32>\n  }\n"
                           "  func.func private @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
                           "    %0 = call @g(%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n"
                           "    return %0 : tensor<2xf32>\n  }\n"
                           "  func.func private @g(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n"
                           "    %0 = call @f(%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n"
                           "    return %0 : tensor<2xf32>\n  }\n}\n") ==
        "j.mlir:11:5: func.call: recursive call to @f (recursion cannot be inlined)");
  CHECK(parse_error(head +
                    "    %0 = call @f(%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n"
                    "    return %0 : tensor<2xf32>\n  }\n"
                    "  func.func private @f(%arg0: tensor<3xf32>) -> tensor<2xf32> {\n"
                    "    %0 = stablehlo.slice %arg0 [0:2] : (tensor<3xf32>) -> tensor<2xf32>\n"
                    "    return %0 : tensor<2xf32>\n  }\n}\n") ==
        "j.mlir:3:5: func.call: argument 0 of @f has type tensor<3xf32> but the call passes "
        "tensor<2xf32>");
}

TEST_CASE("pretty custom_call: unknown targets are located errors; GSPMD @Sharding is dropped") {
  const std::string head =
      "module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {\n"
      "  func.func public @main(%arg0: tensor<8x4xf32> {mhlo.sharding = \"{devices=[2,1]<=[2]}\"}) "
      "-> (tensor<8x4xf32> {jax.result_info = \"result\"}) {\n";
  std::string sharded = head +
                        "    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = \"\", "
                        "mhlo.sharding = \"{devices=[2,1]<=[2]}\"} : (tensor<8x4xf32>) -> "
                        "tensor<8x4xf32> loc(#loc2)\n"
                        "    %1 = stablehlo.abs %0 : tensor<8x4xf32>\n"
                        "    return %1 : tensor<8x4xf32>\n  }\n}\n#loc2 = loc(\"x\")\n";
  Module m = parsed(sharded);
  REQUIRE(m.notes.size() == 2);
  CHECK(
      m.notes[0].starts_with("j.mlir:2:13: note: mhlo.sharding \"{devices=[2,1]<=[2]}\" on "
                             "argument 0 of @main ignored"));
  CHECK(m.notes[1].starts_with("j.mlir:3:5: note: custom_call @Sharding"));
  CHECK(count_ops(m, "stablehlo.custom_call") == 0);
  planner::Graph g = round_trip(sharded);
  CHECK(g.ops.size() == 1);
  CHECK(lower_error(
            head + "    %0 = stablehlo.custom_call @cu_threefry2x32(%arg0) {api_version = 2 : i32} "
                   ": (tensor<8x4xf32>) -> tensor<8x4xf32>\n"
                   "    return %0 : tensor<8x4xf32>\n  }\n}\n")
            .starts_with("j.mlir:3:5: unimplemented: stablehlo.custom_call @cu_threefry2x32 "));
  CHECK(parse_error(head +
                    "    %0 = stablehlo.custom_call @SPMDFullToShardShape(%arg0) {mhlo.sharding = "
                    "\"{manual}\"} : (tensor<8x4xf32>) -> tensor<4x4xf32>\n"
                    "    %1 = stablehlo.custom_call @SPMDShardToFullShape(%0) {mhlo.sharding = "
                    "\"{devices=[2,1]<=[2]}\"} : (tensor<4x4xf32>) -> tensor<8x4xf32>\n"
                    "    return %1 : tensor<8x4xf32>\n  }\n}\n")
            .starts_with("j.mlir:3:5: unimplemented: custom_call @SPMDFullToShardShape of a "
                         "value no custom_call @Sharding annotates (GSPMD shard_map"));
}

TEST_CASE("rank-0 tensors as the first argument, inside, and as a result") {
  // A rank-0 first argument gave a plan whose verifier called its empty shape misaligned.
  std::string text =
      R"(func.func @main(%arg0: tensor<f32>, %arg1: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %1 = stablehlo.add %0, %arg1 : tensor<4xf32>
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %2 = stablehlo.reduce(%arg1 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  %3 = stablehlo.multiply %2, %arg0 : tensor<f32>
  return %3, %1 : tensor<f32>, tensor<4xf32>
}
)";
  planner::Graph g = round_trip(text);
  auto out = run(g, {{{}, {2.5f}}, {{4}, {1, 2, 3, 4}}});
  REQUIRE(out.size() == 2);
  CHECK(out[0].shape.empty());
  CHECK(values(out[0]) == std::vector<float>{25});
  CHECK(values(out[1]) == std::vector<float>{3.5f, 4.5f, 5.5f, 6.5f});
}

TEST_CASE("element types map onto the device's dtypes; unrepresentable constants are errors") {
  // f64 and f16 compute in f32; a hex f16 splat decodes as binary16 (0x3E00 = 1.5).
  std::string text =
      R"(func.func @main(%arg0: tensor<4xf64>, %arg1: tensor<4xf16>) -> (tensor<4xf64>, tensor<4xf16>) {
  %cst = stablehlo.constant dense<[1.5, -2.25, 1.0e+30, 0.125]> : tensor<4xf64>
  %0 = stablehlo.add %arg0, %cst : tensor<4xf64>
  %cst_0 = stablehlo.constant dense<0x3E00> : tensor<4xf16>
  %1 = stablehlo.multiply %arg1, %cst_0 : tensor<4xf16>
  return %0, %1 : tensor<4xf64>, tensor<4xf16>
}
)";
  planner::Graph g = round_trip(text);
  for (const auto& v : g.values) CHECK(v.dtype == device::DType::f32);
  auto out = run(g, {{{4}, {1, 2, 3, 4}}, {{4}, {2, -4, 0.5f, 8}}});
  CHECK(values(out[0]) == std::vector<float>{2.5f, -0.25f, 1.0e30f, 4.125f});
  CHECK(values(out[1]) == std::vector<float>{3, -6, 0.75f, 12});
  // Integer types compute in i32 / u32: constants outside that range are refused, not wrapped.
  const std::string sig = "func.func @main(%arg0: tensor<2xi64>) -> tensor<2xi64> {\n";
  CHECK(lower_error(sig + "  %c = stablehlo.constant dense<[1, 4294967296]> : tensor<2xi64>\n"
                          "  %0 = stablehlo.add %arg0, %c : tensor<2xi64>\n"
                          "  return %0 : tensor<2xi64>\n}\n") ==
        "j.mlir:2:3: stablehlo.constant: value 4294967296 of type i64 (element 1) is outside "
        "the range of i32, the device dtype it is computed in");
  CHECK(lower_error("func.func @main(%arg0: tensor<2xui8>) -> tensor<2xui8> {\n"
                    "  %c = stablehlo.constant dense<-1> : tensor<2xui8>\n"
                    "  %0 = stablehlo.add %arg0, %c : tensor<2xui8>\n"
                    "  return %0 : tensor<2xui8>\n}\n")
            .starts_with("j.mlir:2:3: stablehlo.constant: value -1 of type ui8"));
  CHECK(lower_error("func.func @main(%arg0: tensor<2xf64>) -> tensor<2xf64> {\n"
                    "  %c = stablehlo.constant dense<1.0e+300> : tensor<2xf64>\n"
                    "  %0 = stablehlo.add %arg0, %c : tensor<2xf64>\n"
                    "  return %0 : tensor<2xf64>\n}\n")
            .find("outside the range of f32") != std::string::npos);
  CHECK(parse_error("func.func @main(%arg0: tensor<2xcomplex<f32>>) -> tensor<2xf32> {}") ==
        "j.mlir:1:33: element type complex<f32> is not supported (supported: i1 i8 i16 i32 i64 "
        "ui8 ui16 ui32 ui64 f16 bf16 f32 f64)");
  CHECK(parse_error("func.func @main(%arg0: tensor<2x!quant.uniform<i8:f32, 0.5:3>>) -> "
                    "tensor<2xf32> {}")
            .starts_with("j.mlir:1:33: element type !quant.uniform<i8:f32, 0.5:3> is not "
                         "supported"));
  CHECK(parse_error("func.func @main(%arg0: tensor<2xf8E4M3FN>) -> tensor<2xf32> {}")
            .starts_with("j.mlir:1:33: element type f8E4M3FN is not supported"));
}

TEST_CASE("argmax / argmin as JAX emits them: first index on ties, NaN wins") {
  std::string text = R"(module @jit_f {
  func.func public @main(%arg0: tensor<3x4xf32>) -> (tensor<3xi32>, tensor<3xi32>) {
    %0 = stablehlo.iota dim = 1 : tensor<3x4xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<3x4xf32>, tensor<3x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<3xf32>, tensor<3xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %6 = stablehlo.compare  GT, %arg1, %arg3,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %7 = stablehlo.compare  NE, %arg1, %arg1,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %8 = stablehlo.or %6, %7 : tensor<i1>
      %9 = stablehlo.compare  EQ, %arg1, %arg3,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %10 = stablehlo.compare  LT, %arg2, %arg4,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %11 = stablehlo.and %9, %10 : tensor<i1>
      %12 = stablehlo.or %8, %11 : tensor<i1>
      %13 = stablehlo.select %8, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %14 = stablehlo.select %12, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %13, %14 : tensor<f32>, tensor<i32>
    }
    %cst_0 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %2:2 = "stablehlo.reduce"(%arg0, %0, %cst_0, %c) <{dimensions = array<i64: 1>}> ({
    ^bb0(%a: tensor<f32>, %ai: tensor<i32>, %b: tensor<f32>, %bi: tensor<i32>):
      %6 = stablehlo.compare  LT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %7 = stablehlo.compare  NE, %a, %a,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %8 = stablehlo.or %6, %7 : tensor<i1>
      %9 = stablehlo.compare  EQ, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %10 = stablehlo.compare  LT, %ai, %bi,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %11 = stablehlo.and %9, %10 : tensor<i1>
      %12 = stablehlo.or %8, %11 : tensor<i1>
      %13 = stablehlo.select %8, %a, %b : tensor<i1>, tensor<f32>
      %14 = stablehlo.select %12, %ai, %bi : tensor<i1>, tensor<i32>
      stablehlo.return %13, %14 : tensor<f32>, tensor<i32>
    }) : (tensor<3x4xf32>, tensor<3x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<3xf32>, tensor<3xi32>)
    return %1#1, %2#1 : tensor<3xi32>, tensor<3xi32>
  }
}
)";
  planner::Graph g = round_trip(text);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto out = run(g, {{{3, 4}, {1, 5, 5, 2, nan, 1, nan, 9, 2, -9, 3, nan}}});
  REQUIRE(out.size() == 2);
  CHECK(values(out[0]) == std::vector<float>{1, 0, 3});  // argmax
  CHECK(values(out[1]) == std::vector<float>{0, 0, 3});  // argmin
  // A reducer that is neither rule is refused at the reduce, naming what lowers.
  std::string sum_pair = text;
  sum_pair.replace(sum_pair.find("GT, %arg1"), 2, "GE");
  CHECK(lower_error(sum_pair).starts_with(
      "j.mlir:6:5: unimplemented: variadic stablehlo.reduce whose region is "
      "not an argmax/argmin rule (supported: jnp.argmax/argmin's"));
}

TEST_CASE("every JAX-style module of the tests and the fuzz corpus round-trips to the same key") {
  int files = 0;
  for (const char* dir : {"tests/planner/jax", "tests/fuzz/corpus/stablehlo"})
    for (const auto& entry : std::filesystem::directory_iterator(test::source_path(dir))) {
      std::string name = entry.path().filename().string();
      bool corpus = std::string_view(dir).find("fuzz") != std::string_view::npos;
      if (!name.ends_with(".mlir") || (corpus && !name.starts_with("jax"))) continue;
      CAPTURE(name);
      std::string text = read_text(std::string(dir) + "/" + name);
      ++files;
      round_trip(text);
    }
  CHECK(files >= 5);
}
