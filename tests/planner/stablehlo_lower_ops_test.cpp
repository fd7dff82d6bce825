// Every StableHLO op the lowering handles, numerically: evaluate_reference(module) on random
// inputs equals the device f32 reference (runtime::run_reference) of the plan compile() makes
// from the lowered graph. Plus the graph each form lowers to, and the unsupported forms'
// file:line:col errors.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "lowering_check.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

std::string module(const std::string& signature, const std::string& body) {
  return "func.func @main(" + signature + ") {\n" + body + "}\n";
}

Module parsed(const std::string& text) {
  auto m = parse_module(text, "t.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::move(*m);
}

std::string lower_error(const std::string& text) {
  Module m = parsed(text);
  auto g = lower_to_graph(m);
  REQUIRE_FALSE(g.has_value());
  CHECK(g.error().code == ErrorCode::unimplemented);
  return g.error().message;
}

/// Module reference == device reference of the compiled lowered graph, on random inputs.
/// `positive`: inputs in [0.5, 1.5) instead of [-1, 1) (for log, sqrt, rsqrt).
planner::Graph check_numerics(const std::string& text, bool positive = false) {
  Module m = parsed(text);
  auto inputs = random_inputs(m, 11);
  if (positive)
    for (auto& in : inputs)
      for (float& x : in.data) x = std::fabs(x) + 0.5f;
  auto g = lower_to_graph(m);
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  test::check_same_results(m, *g, inputs);
  return std::move(*g);
}

int count(const planner::Graph& g, device::OpKind kind) {
  int n = 0;
  for (const auto& op : g.ops) n += op.kind == kind;
  return n;
}

using device::OpKind;

}  // namespace

TEST_CASE("elementwise ops, constants and numpy-foldable broadcasts lower exactly") {
  auto g = check_numerics(
      module("%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<8xf32>, %d: tensor<4xf32>) -> "
             "(tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>",
             R"(  %one = stablehlo.constant dense<1.5> : tensor<4x8xf32>
  %0 = stablehlo.add %a, %b : tensor<4x8xf32>
  %1 = stablehlo.subtract %0, %one : tensor<4x8xf32>
  %2 = stablehlo.multiply %1, %a : tensor<4x8xf32>
  %3 = stablehlo.divide %2, %one : tensor<4x8xf32>
  %4 = stablehlo.maximum %3, %b : tensor<4x8xf32>
  %5 = stablehlo.minimum %4, %a : tensor<4x8xf32>
  %6 = stablehlo.negate %5 : tensor<4x8xf32>
  %7 = stablehlo.abs %6 : tensor<4x8xf32>
  %8 = stablehlo.exponential %7 : tensor<4x8xf32>
  %9 = stablehlo.tanh %8 : tensor<4x8xf32>
  %10 = stablehlo.logistic %9 : tensor<4x8xf32>
  %bc = stablehlo.broadcast_in_dim %c, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %11 = stablehlo.add %10, %bc : tensor<4x8xf32>
  %bd = stablehlo.broadcast_in_dim %d, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
  %12 = stablehlo.multiply %bd, %11 : tensor<4x8xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %zb = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
  %13 = stablehlo.maximum %12, %zb : tensor<4x8xf32>
  return %13, %bd, %9 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
)"));
  CHECK(count(g, OpKind::relu) == 1);
  CHECK(count(g, OpKind::sigmoid) == 1);
  CHECK(count(g, OpKind::neg) == 1);
  CHECK(count(g, OpKind::exp) == 1);
  // %c folds into add's broadcast as it is; %d is reshaped to [4,1] and broadcast implicitly by
  // the multiply, and once explicitly (it is returned) by a multiply with ones.
  CHECK(count(g, OpKind::reshape) == 1);
  CHECK(count(g, OpKind::multiply) == 3);
  for (const auto& v : g.values)
    if (v.kind == planner::ArgKind::constant) CHECK(v.data.size() <= 8);  // splats stay small
}

TEST_CASE("log, sqrt and rsqrt lower to the ops of the same name") {
  auto g = check_numerics(module("%a: tensor<3x5xf32>) -> (tensor<3x5xf32>",
                                 R"(  %0 = stablehlo.log %a : tensor<3x5xf32>
  %1 = stablehlo.sqrt %a : tensor<3x5xf32>
  %2 = stablehlo.rsqrt %a : tensor<3x5xf32>
  %3 = stablehlo.add %0, %1 : tensor<3x5xf32>
  %4 = stablehlo.add %3, %2 : tensor<3x5xf32>
  return %4 : tensor<3x5xf32>
)"),
                          true);
  CHECK(count(g, OpKind::log) == 1);
  CHECK(count(g, OpKind::sqrt) == 1);
  CHECK(count(g, OpKind::rsqrt) == 1);
}

TEST_CASE("convert, iota, dense constants, reshape, transpose, concatenate and slice") {
  auto g = check_numerics(
      module("%a: tensor<4x6xf32>) -> (tensor<6x4xf32>, tensor<4x6xi32>, tensor<3x2xf32>, "
             "tensor<8x6xf32>",
             R"(  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %i = stablehlo.iota dim = 1 : tensor<6x4xi32>
  %f = stablehlo.convert %i : (tensor<6x4xi32>) -> tensor<6x4xf32>
  %1 = stablehlo.add %0, %f : tensor<6x4xf32>
  %ten = stablehlo.constant dense<10.0> : tensor<4x6xf32>
  %s = stablehlo.multiply %a, %ten : tensor<4x6xf32>
  %2 = stablehlo.convert %s : (tensor<4x6xf32>) -> tensor<4x6xi32>
  %k = stablehlo.constant dense<[[1.0, -2.0], [3.0, 4.5], [0.25, 8.0]]> : tensor<3x2xf32>
  %r = stablehlo.reshape %a : (tensor<4x6xf32>) -> tensor<2x12xf32>
  %sl = stablehlo.slice %r [0:2:1, 1:12:4] : (tensor<2x12xf32>) -> tensor<2x3xf32>
  %t = stablehlo.transpose %sl, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %3 = stablehlo.add %t, %k : tensor<3x2xf32>
  %4 = stablehlo.concatenate %a, %a, dim = 0 : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  return %1, %2, %3, %4 : tensor<6x4xf32>, tensor<4x6xi32>, tensor<3x2xf32>, tensor<8x6xf32>
)"));
  CHECK(count(g, OpKind::permute) == 2);
  CHECK(count(g, OpKind::typecast) == 1);  // the iota's convert is folded
  CHECK(count(g, OpKind::slice) == 1);
  CHECK(count(g, OpKind::concat) == 1);
  CHECK(count(g, OpKind::reshape) == 1);
}

TEST_CASE("dot_general: 2-D, transposed, batched, multi-dim contracting, vector results") {
  auto g = check_numerics(module(
      "%a: tensor<4x8xf32>, %b: tensor<8x6xf32>, %bt: tensor<6x8xf32>, %at: tensor<8x4xf32>, "
      "%x: tensor<2x4x8xf32>, %y: tensor<2x8x5xf32>, %p: tensor<3x2x4xf32>, %q: "
      "tensor<4x2x3x5xf32>) "
      "-> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<2x4x5xf32>, "
      "tensor<2x4x6xf32>, "
      "tensor<3x5xf32>, tensor<2x4xf32>",
      R"(  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %1 = stablehlo.dot_general %a, %bt, contracting_dims = [1] x [1] : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
  %2 = stablehlo.dot_general %at, %b, contracting_dims = [0] x [0] : (tensor<8x4xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %3 = stablehlo.dot_general %x, %y, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x8xf32>, tensor<2x8x5xf32>) -> tensor<2x4x5xf32>
  %4 = stablehlo.dot_general %x, %b, contracting_dims = [2] x [0] : (tensor<2x4x8xf32>, tensor<8x6xf32>) -> tensor<2x4x6xf32>
  %5 = stablehlo.dot_general %p, %q, contracting_dims = [1, 2] x [1, 0] : (tensor<3x2x4xf32>, tensor<4x2x3x5xf32>) -> tensor<3x3x5xf32>
  %6 = stablehlo.slice %5 [0:3, 0:1, 0:5] : (tensor<3x3x5xf32>) -> tensor<3x1x5xf32>
  %7 = stablehlo.reshape %6 : (tensor<3x1x5xf32>) -> tensor<3x5xf32>
  %8 = stablehlo.dot_general %x, %x, batching_dims = [0, 1] x [0, 1], contracting_dims = [2] x [2] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4xf32>
  return %0, %1, %2, %3, %4, %7, %8 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<2x4x5xf32>, tensor<2x4x6xf32>, tensor<3x5xf32>, tensor<2x4xf32>
)"));
  CHECK(count(g, OpKind::matmul) == 7);
  int ta = 0, tb = 0;
  for (const auto& op : g.ops) {
    ta += op.attribute("transpose_a") != nullptr;
    tb += op.attribute("transpose_b") != nullptr;
  }
  CHECK(ta == 1);  // %2
  CHECK(tb == 1);  // %1
}

TEST_CASE("reduce with an add or maximum region lowers to reduce_sum / reduce_max") {
  auto g = check_numerics(
      module("%a: tensor<4x6x8xf32>) -> (tensor<4x8xf32>, tensor<6xf32>, tensor<4x6xf32>",
             R"(  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %two = stablehlo.constant dense<2.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x6x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = stablehlo.reduce(%a init: %ninf) applies stablehlo.maximum across dimensions = [0, 2] : (tensor<4x6x8xf32>, tensor<f32>) -> tensor<6xf32>
  %2 = stablehlo.reduce(%a init: %two) across dimensions = [2] : (tensor<4x6x8xf32>, tensor<f32>) -> tensor<4x6xf32>
   reducer(%p: tensor<f32>, %q: tensor<f32>)  {
    %s = stablehlo.add %p, %q : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }
  return %0, %1, %2 : tensor<4x8xf32>, tensor<6xf32>, tensor<4x6xf32>
)"));
  CHECK(count(g, OpKind::reduce_sum) == 2);
  CHECK(count(g, OpKind::reduce_max) == 1);
  CHECK(count(g, OpKind::add) == 1);  // the non-zero init
}

TEST_CASE("convolution in JAX's NHWC/HWIO layout and in NCHW/OIHW lowers to conv2d") {
  auto g = check_numerics(module(
      "%x: tensor<1x9x9x4xf32>, %w: tensor<3x3x4x6xf32>, %xc: tensor<1x4x9x9xf32>, "
      "%wc: tensor<6x2x3x3xf32>) -> (tensor<1x5x5x6xf32>, tensor<1x6x9x9xf32>",
      R"(  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x9x9x4xf32>, tensor<3x3x4x6xf32>) -> tensor<1x5x5x6xf32>
  %1 = stablehlo.convolution(%xc, %wc) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {pad = [[2, 2], [2, 2]], rhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x9x9xf32>
  return %0, %1 : tensor<1x5x5x6xf32>, tensor<1x6x9x9xf32>
)"));
  CHECK(count(g, OpKind::conv2d) == 2);
  CHECK(count(g, OpKind::permute) == 4);  // HWIO weight; NCHW input, OIHW weight, NCHW result
}

TEST_CASE("select(compare(a, b), a, b) lowers to maximum / minimum; other selects to where") {
  auto g = check_numerics(module(
      "%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>",
      R"(  %0 = stablehlo.compare  GT, %a, %b,  FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %1 = stablehlo.select %0, %a, %b : tensor<4x8xi1>, tensor<4x8xf32>
  %2 = stablehlo.select %0, %b, %a : tensor<4x8xi1>, tensor<4x8xf32>
  return %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>
)"));
  CHECK(count(g, OpKind::maximum) == 1);
  CHECK(count(g, OpKind::minimum) == 1);
  CHECK(count(g, OpKind::gt) == 0);  // the compare feeds only maximum / minimum: no mask
  auto w = check_numerics(module(
      "%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4x8xf32>) -> (tensor<4x8xf32>",
      R"(  %0 = stablehlo.compare  GT, %a, %b,  FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %1 = stablehlo.select %0, %a, %c : tensor<4x8xi1>, tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
)"));
  CHECK(count(w, OpKind::gt) == 1);
  CHECK(count(w, OpKind::where) == 1);
}

TEST_CASE("stablehlo.custom_call @meshplan.* lowers to that op with its attributes") {
  auto g = check_numerics(module(
      "%a: tensor<4x8xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, "
      "tensor<4x1xf32>, tensor<8x4xf32>",
      R"(  %0 = "stablehlo.custom_call"(%a) {call_target_name = "meshplan.softmax", meshplan.dim = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "stablehlo.custom_call"(%0, %g) {call_target_name = "meshplan.rms_norm", meshplan.epsilon = 1.0000000000000001e-05 : f64} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "stablehlo.custom_call"(%1) {call_target_name = "meshplan.reduce_mean", meshplan.dims = array<i64: 1>, meshplan.keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %3 = "stablehlo.custom_call"(%a) {call_target_name = "meshplan.permute", meshplan.perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %4 = "stablehlo.custom_call"(%1) {call_target_name = "meshplan.gelu"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %4, %0, %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x1xf32>, tensor<8x4xf32>
)"));
  REQUIRE(g.ops.size() == 5);
  CHECK(g.ops[0].kind == OpKind::softmax);
  CHECK(std::get<int64_t>(g.ops[0].attribute("dim")->value) == -1);
  CHECK(std::get<double>(g.ops[1].attribute("epsilon")->value) == 1e-5);
  CHECK(std::get<std::vector<int64_t>>(g.ops[2].attribute("dims")->value) ==
        std::vector<int64_t>{1});
  CHECK(std::get<bool>(g.ops[2].attribute("keepdim")->value));
  CHECK(g.ops[4].kind == OpKind::gelu);
  // array<f64: ...> parses and prints back.
  Module m = parsed(module(
      "%a: tensor<4xf32>) -> (tensor<4xf32>",
      R"(  %0 = "stablehlo.custom_call"(%a) {call_target_name = "meshplan.gelu", meshplan.w = array<f64: 0.5, 1.25>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
)"));
  CHECK(print_module(m).find("meshplan.w = array<f64: 5.000000e-01, 1.250000e+00>") !=
        std::string::npos);
}

TEST_CASE("graph errors of lowered ops name the module op's file:line:col, not internal ids") {
  // Each reaches the lowered graph's validation; its message speaks of the source op.
  auto invalid = [](const std::string& text) {
    auto g = lower_to_graph(parsed(text));
    REQUIRE_FALSE(g.has_value());
    CHECK(g.error().code == ErrorCode::invalid_argument);
    return g.error().message;
  };
  CHECK(
      invalid(module(
          "%a: tensor<4x8xf32>) -> (tensor<4x8xf32>",
          R"(  %0 = "stablehlo.custom_call"(%a) {call_target_name = "meshplan.permute", meshplan.perm = array<i64: 0, 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
)")) ==
      "t.mlir:2:3: stablehlo.custom_call (lowered to permute): shape mismatch: perm lists "
      "dim 0 twice (operands 'arg0' [4x8])");
  CHECK(invalid(module("%a: tensor<4x8xf32>) -> (tensor<4x8xf32>",
                       R"(  %t = stablehlo.exponential %a : tensor<4x8xf32>
  %0 = "stablehlo.custom_call"(%t, %a) {call_target_name = "meshplan.gelu"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
)")) == "t.mlir:3:3: stablehlo.custom_call (lowered to gelu) takes 1 operand(s), got 2");
  std::string declared = invalid(module(
      "%a: tensor<4x8xf32>) -> (tensor<4x4xf32>",
      R"(  %0 = "stablehlo.custom_call"(%a) {call_target_name = "meshplan.gelu"} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
)"));
  CHECK(declared ==
        "t.mlir:2:3: stablehlo.custom_call (lowered to gelu): result is declared [4x4] but the "
        "operands give [4x8]");
  CHECK(declared.find("'v") == std::string::npos);
  CHECK(declared.find("'op") == std::string::npos);
}

TEST_CASE("unsupported forms name file:line:col and what") {
  CHECK(
      lower_error(module(
          "%a: tensor<4xf32>) -> (tensor<4xf32>",
          R"(  %0 = "stablehlo.custom_call"(%a) {call_target_name = "foo"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
)")) == "t.mlir:2:3: unimplemented: stablehlo.custom_call @foo has no meshplan op");
  CHECK(
      lower_error(module(
          "%a: tensor<4xf32>) -> (tensor<4xf32>",
          R"(  %0 = "stablehlo.custom_call"(%a) {call_target_name = "meshplan.nope"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
)")) == "t.mlir:2:3: unimplemented: custom_call @meshplan.nope: no meshplan op 'nope'");
  CHECK(lower_error(module("%a: tensor<4x6xf32>) -> (tensor<4xf32>",
                           R"(  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.divide across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
)")) == "t.mlir:3:3: unimplemented: stablehlo.reduce with a stablehlo.divide region (only add, "
        "maximum, minimum and multiply lower)");
  CHECK(
      lower_error(module(
          "%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>",
          R"(  %0 = stablehlo.compare  LT, %a, %b,  TOTALORDER : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %1 = stablehlo.select %0, %b, %a : tensor<4xi1>, tensor<4xf32>
  %2 = stablehlo.select %0, %a, %a : tensor<4xi1>, tensor<4xf32>
  return %2 : tensor<4xf32>
)")) ==
      "t.mlir:2:3: unimplemented: stablehlo.compare with compare_type TOTALORDER (FLOAT, "
      "SIGNED and UNSIGNED lower)");
  // f16 computes in f32 (stablehlo_jax_test.cpp covers the element type mapping).
  CHECK(
      lower_to_graph(parsed(module("%a: tensor<4xf32>) -> (tensor<4xf16>",
                                   R"(  %0 = stablehlo.convert %a : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
)")))
          .has_value());
  CHECK(
      lower_error(module(
          "%x: tensor<1x2x2x2x2x2xf32>, %w: tensor<1x1x1x1x2x2xf32>) -> (tensor<1x2x2x2x2x2xf32>",
          R"(  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, 2, 3, f]x[0, 1, 2, 3, i, o]->[b, 0, 1, 2, 3, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x2x2x2x2x2xf32>, tensor<1x1x1x1x2x2xf32>) -> tensor<1x2x2x2x2x2xf32>
  return %0 : tensor<1x2x2x2x2x2xf32>
)")) ==
      "t.mlir:2:3: unimplemented: stablehlo.convolution that is not 1-D, 2-D or 3-D (4-D and "
      "more are not supported)");
  // A compare whose direction is none of EQ .. GE is named where it is written.
  Module m = parsed(module(
      "%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xi1>",
      R"(  %0 = stablehlo.compare  GX, %a, %b,  FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
)"));
  auto g = lower_to_graph(m);
  REQUIRE_FALSE(g.has_value());
  CHECK(g.error().message ==
        "t.mlir:2:3: stablehlo.compare: comparison_direction is not one of EQ, NE, LT, LE, GT, "
        "GE");
}

TEST_CASE("dims outside the operands are errors at the op, not crashes") {
  auto bad = [](const std::string& sig, const std::string& body) {
    auto m = parse_module(module(sig, body), "t.mlir");
    if (!m) return m.error().message;  // rejected at parse (stablehlo_verify): also located
    auto g = lower_to_graph(*m);
    REQUIRE_FALSE(g.has_value());
    return g.error().message;
  };
  CHECK(bad("%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> (tensor<4x6xf32>",
            "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [5] x [0] : "
            "(tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>\n  return %0 : "
            "tensor<4x6xf32>\n")
            .starts_with("t.mlir:2:3"));
  CHECK(bad("%a: tensor<4x8xf32>) -> (tensor<8x4xf32>",
            "  %0 = stablehlo.transpose %a, dims = [1, 7] : (tensor<4x8xf32>) -> "
            "tensor<8x4xf32>\n  return %0 : tensor<8x4xf32>\n")
            .starts_with("t.mlir:2:3"));
  CHECK(bad("%a: tensor<4x8xf32>) -> (tensor<4xf32>",
            "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
            "  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [3] : "
            "(tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n")
            .starts_with("t.mlir:3:3"));
  CHECK(bad("%a: tensor<8xf32>) -> (tensor<4x8xf32>",
            "  %0 = stablehlo.broadcast_in_dim %a, dims = [9] : (tensor<8xf32>) -> "
            "tensor<4x8xf32>\n  return %0 : tensor<4x8xf32>\n")
            .starts_with("t.mlir:2:3"));
}
