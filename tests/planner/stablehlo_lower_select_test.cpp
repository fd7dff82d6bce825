// StableHLO masks, bounds and min/product reductions, numerically: compare -> eq .. ge,
// select -> where, clamp -> clamp (or maximum / minimum), converts to and from i1, and reduce
// with minimum / multiply regions. Each module's host evaluation equals the device reference of
// the compiled lowered graph (lowering_check.hpp); the graphs hold the ops named.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "lowering_check.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;
using device::OpKind;

namespace {

std::string module(const std::string& signature, const std::string& body) {
  return "func.func @main(" + signature + ") {\n" + body + "}\n";
}

Module parsed(const std::string& text) {
  auto m = parse_module(text, "t.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::move(*m);
}

/// Inputs rounded to multiples of 0.25 in [-1, 1], so that comparisons see ties.
planner::Graph check_numerics(const std::string& text) {
  Module m = parsed(text);
  auto inputs = random_inputs(m, 17);
  for (auto& in : inputs)
    for (float& x : in.data) x = std::round(x * 4) / 4;
  auto g = lower_to_graph(m);
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  test::check_same_results(m, *g, inputs);
  return std::move(*g);
}

int count(const planner::Graph& g, OpKind kind) {
  int n = 0;
  for (const auto& op : g.ops) n += op.kind == kind;
  return n;
}

}  // namespace

TEST_CASE("every comparison direction lowers to its op, FLOAT and SIGNED, and selects to where") {
  const char* dirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  const OpKind kinds[] = {OpKind::eq, OpKind::ne, OpKind::lt, OpKind::le, OpKind::gt, OpKind::ge};
  for (int i = 0; i < 6; ++i) {
    CAPTURE(dirs[i]);
    std::string d = dirs[i];
    auto g = check_numerics(
        module("%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<8xf32>) -> (tensor<4x8xf32>, "
               "tensor<4x8xf32>",
               "  %0 = stablehlo.compare  " + d +
                   R"(, %a, %b,  FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %cb = stablehlo.broadcast_in_dim %c, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %1 = stablehlo.select %0, %cb, %b : tensor<4x8xi1>, tensor<4x8xf32>
  %2 = stablehlo.convert %0 : (tensor<4x8xi1>) -> tensor<4x8xf32>
  %3 = stablehlo.add %2, %a : tensor<4x8xf32>
  return %1, %3 : tensor<4x8xf32>, tensor<4x8xf32>
)"));
    CHECK(count(g, kinds[i]) == 1);  // one mask, used twice
    CHECK(count(g, OpKind::where) == 1);
    CHECK(count(g, OpKind::typecast) == 0);  // the mask is already f32 0/1
  }
  // Integer comparisons (SIGNED) on i32 values, the mask selecting f32 values.
  auto g = check_numerics(module(
      "%a: tensor<4x8xi32>, %b: tensor<4x8xi32>, %x: tensor<4x8xf32>) -> (tensor<4x8xf32>",
      R"(  %0 = stablehlo.compare  LE, %a, %b,  SIGNED : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi1>
  %z = stablehlo.constant dense<0.0> : tensor<4x8xf32>
  %1 = stablehlo.select %0, %x, %z : tensor<4x8xi1>, tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
)"));
  CHECK(count(g, OpKind::le) == 1);
  CHECK(count(g, OpKind::where) == 1);
}

TEST_CASE("iota masks fold; a folded mask selects through a bf16 0/1 constant") {
  // A causal mask: keep (i, j) with j <= i, else -1e9 (as attention masks do).
  auto g = check_numerics(module("%s: tensor<8x8xf32>) -> (tensor<8x8xf32>",
                                 R"(  %i = stablehlo.iota dim = 0 : tensor<8x8xi32>
  %j = stablehlo.iota dim = 1 : tensor<8x8xi32>
  %m = stablehlo.compare  LE, %j, %i,  SIGNED : (tensor<8x8xi32>, tensor<8x8xi32>) -> tensor<8x8xi1>
  %neg = stablehlo.constant dense<-1.0e9> : tensor<8x8xf32>
  %0 = stablehlo.select %m, %s, %neg : tensor<8x8xi1>, tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
)"));
  CHECK(count(g, OpKind::le) == 0);  // folded at lowering time
  REQUIRE(count(g, OpKind::where) == 1);
  for (const auto& op : g.ops)
    if (op.kind == OpKind::where) {
      const planner::Value& mask = g.values[op.operands[0]];
      CHECK(mask.kind == planner::ArgKind::constant);
      CHECK(mask.dtype == device::DType::bf16);
      CHECK(mask.data[0 * 8 + 1] == 0.0f);  // (0, 1): above the diagonal
      CHECK(mask.data[1 * 8 + 0] == 1.0f);
    }
  // A constant predicate picks one side: no op at all.
  auto k = check_numerics(module("%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>",
                                 R"(  %t = stablehlo.constant dense<true> : tensor<i1>
  %0 = stablehlo.select %t, %a, %b : tensor<i1>, tensor<4xf32>
  %1 = stablehlo.add %0, %b : tensor<4xf32>
  return %1 : tensor<4xf32>
)"));
  CHECK(k.ops.size() == 1);
}

TEST_CASE("masks combine with and / or / not, and convert to and from i1") {
  auto g = check_numerics(
      module("%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %x: tensor<4x8xf32>) -> (tensor<4x8xf32>, "
             "tensor<4x8xf32>, tensor<4x8xf32>",
             R"(  %z = stablehlo.constant dense<0.0> : tensor<4x8xf32>
  %p = stablehlo.compare  GT, %a, %z,  FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %q = stablehlo.compare  LT, %b, %z,  FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %i = stablehlo.iota dim = 1 : tensor<4x8xi32>
  %four = stablehlo.constant dense<4> : tensor<4x8xi32>
  %left = stablehlo.compare  LT, %i, %four,  SIGNED : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi1>
  %right = stablehlo.not %left : tensor<4x8xi1>
  %pq = stablehlo.and %p, %q : tensor<4x8xi1>
  %m = stablehlo.or %pq, %right : tensor<4x8xi1>
  %n = stablehlo.not %m : tensor<4x8xi1>
  %0 = stablehlo.select %m, %x, %z : tensor<4x8xi1>, tensor<4x8xf32>
  %1 = stablehlo.select %n, %x, %a : tensor<4x8xi1>, tensor<4x8xf32>
  %xb = stablehlo.convert %x : (tensor<4x8xf32>) -> tensor<4x8xi1>
  %xf = stablehlo.convert %xb : (tensor<4x8xi1>) -> tensor<4x8xf32>
  %2 = stablehlo.add %xf, %b : tensor<4x8xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
)"));
  CHECK(count(g, OpKind::multiply) == 1);  // and
  CHECK(count(g, OpKind::maximum) == 1);   // or (with the folded, negated column mask)
  CHECK(count(g, OpKind::eq) == 1);        // not of a lowered mask
  CHECK(count(g, OpKind::ne) == 1);        // convert to i1
  CHECK(count(g, OpKind::where) == 2);
}

TEST_CASE("xor of computed masks is their inequality") {
  auto g = check_numerics(
      module("%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %x: tensor<4x8xf32>) -> (tensor<4x8xf32>",
             R"(  %z = stablehlo.constant dense<0.0> : tensor<4x8xf32>
  %p = stablehlo.compare  GT, %a, %z,  FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %q = stablehlo.compare  LT, %b, %z,  FLOAT : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>
  %pq = stablehlo.xor %p, %q : tensor<4x8xi1>
  %0 = stablehlo.select %pq, %x, %z : tensor<4x8xi1>, tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
)"));
  CHECK(count(g, OpKind::ne) == 1);  // xor
  CHECK(count(g, OpKind::where) == 1);
}

TEST_CASE("a boolean argument is a bf16 0/1 mask") {
  auto g = check_numerics(module(
      "%mask: tensor<4x8xi1>, %x: tensor<4x8xf32>, %key: tensor<1x8xi1>) -> (tensor<4x8xf32>",
      R"(  %neg = stablehlo.constant dense<-1.0e9> : tensor<4x8xf32>
  %kb = stablehlo.broadcast_in_dim %key, dims = [0, 1] : (tensor<1x8xi1>) -> tensor<4x8xi1>
  %both = stablehlo.and %mask, %kb : tensor<4x8xi1>
  %0 = stablehlo.select %both, %x, %neg : tensor<4x8xi1>, tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
)"));
  CHECK(g.values[g.arguments[0]].dtype == device::DType::bf16);
  CHECK(count(g, OpKind::multiply) == 1);  // and, broadcasting the key mask
  CHECK(count(g, OpKind::where) == 1);
}

TEST_CASE("clamp with constant bounds lowers to clamp, with tensor bounds to maximum + minimum") {
  auto g = check_numerics(module(
      "%a: tensor<4x8xf32>, %lo: tensor<4x8xf32>, %hi: tensor<4x8xf32>) -> (tensor<4x8xf32>, "
      "tensor<4x8xf32>, tensor<4x8xf32>",
      R"(  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %six = stablehlo.constant dense<6.0> : tensor<f32>
  %eight = stablehlo.constant dense<8.0> : tensor<4x8xf32>
  %x = stablehlo.multiply %a, %eight : tensor<4x8xf32>
  %0 = stablehlo.clamp %z, %x, %six : (tensor<f32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = stablehlo.clamp %lo, %a, %hi : tensor<4x8xf32>
  %m1 = stablehlo.constant dense<-1.0> : tensor<f32>
  %2 = stablehlo.clamp %six, %x, %m1 : (tensor<f32>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
)"));
  CHECK(count(g, OpKind::clamp) == 2);
  CHECK(count(g, OpKind::maximum) == 1);
  CHECK(count(g, OpKind::minimum) == 1);
  for (const auto& op : g.ops)
    if (op.kind == OpKind::clamp && std::get<double>(op.attribute("min")->value) == 0.0)
      CHECK(std::get<double>(op.attribute("max")->value) == 6.0);  // ReLU6
  // min > max: every value becomes max (StableHLO's min(max(x, min), max)).
  int all_max = 0;
  for (const auto& op : g.ops)
    all_max += op.kind == OpKind::clamp && std::get<double>(op.attribute("min")->value) == -1.0 &&
               std::get<double>(op.attribute("max")->value) == -1.0;
  CHECK(all_max == 1);
  // The printer writes clamp back in a form the parser reads.
  Module m = parsed(module("%a: tensor<4xf32>) -> (tensor<4xf32>",
                           R"(  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.clamp %z, %a, %z : (tensor<f32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
)"));
  std::string text = print_module(m);
  CHECK(text.find("stablehlo.clamp %") != std::string::npos);
  auto again = parse_module(text, "printed.mlir");
  REQUIRE_MESSAGE(again.has_value(), again.error().message);
  CHECK(print_module(*again) == text);
}

TEST_CASE("reduce with a minimum or multiply region lowers to reduce_min / reduce_prod") {
  auto g = check_numerics(
      module("%a: tensor<4x6x8xf32>) -> (tensor<4x8xf32>, tensor<6xf32>, tensor<4x6xf32>, "
             "tensor<6x8xf32>",
             R"(  %inf = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %two = stablehlo.constant dense<2.0> : tensor<f32>
  %half = stablehlo.constant dense<-0.5> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %inf) applies stablehlo.minimum across dimensions = [1] : (tensor<4x6x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = stablehlo.reduce(%a init: %half) applies stablehlo.minimum across dimensions = [0, 2] : (tensor<4x6x8xf32>, tensor<f32>) -> tensor<6xf32>
  %2 = stablehlo.reduce(%a init: %one) applies stablehlo.multiply across dimensions = [2] : (tensor<4x6x8xf32>, tensor<f32>) -> tensor<4x6xf32>
  %3 = stablehlo.reduce(%a init: %two) applies stablehlo.multiply across dimensions = [0] : (tensor<4x6x8xf32>, tensor<f32>) -> tensor<6x8xf32>
  return %0, %1, %2, %3 : tensor<4x8xf32>, tensor<6xf32>, tensor<4x6xf32>, tensor<6x8xf32>
)"));
  CHECK(count(g, OpKind::reduce_min) == 2);
  CHECK(count(g, OpKind::reduce_prod) == 2);
  CHECK(count(g, OpKind::minimum) == 1);   // the -0.5 init joins once
  CHECK(count(g, OpKind::multiply) == 1);  // the 2.0 init
}

TEST_CASE("masks and bounds: unsupported forms and bad input name file:line:col") {
  auto error = [](const std::string& text) {
    Module m = parsed(text);
    auto g = lower_to_graph(m);
    REQUIRE_FALSE(g.has_value());
    return g.error().message;
  };
  CHECK(
      error(module(
          "%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>",
          R"(  %0 = stablehlo.compare  LT, %a, %b,  TOTALORDER : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %1 = stablehlo.select %0, %a, %a : tensor<4xi1>, tensor<4xf32>
  return %1 : tensor<4xf32>
)")) ==
      "t.mlir:2:3: unimplemented: stablehlo.compare with compare_type TOTALORDER (FLOAT, SIGNED "
      "and UNSIGNED lower)");
  // A NaN bound is no valid clamp attribute (min <= max fails): it lowers as the maximum /
  // minimum pair instead of failing validation.
  auto g = lower_to_graph(parsed(module("%a: tensor<4xf32>) -> (tensor<4xf32>",
                                        R"(  %n = stablehlo.constant dense<0x7FC00000> : tensor<f32>
  %z = stablehlo.constant dense<1.0> : tensor<f32>
  %0 = stablehlo.clamp %n, %a, %z : (tensor<f32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
)")));
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  CHECK(count(*g, OpKind::clamp) == 0);
  CHECK(count(*g, OpKind::maximum) == 1);
  // Parse errors: clamp takes 3 operands.
  auto bad = parse_module(module("%a: tensor<4xf32>) -> (tensor<4xf32>",
                                 R"(  %0 = stablehlo.clamp %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
)"),
                          "t.mlir");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.find("stablehlo.clamp takes 3 operands") != std::string::npos);
}
