// i64 and ui64 computed in 32-bit words: exact while every value fits the word, and a clear
// error — never a wrapped value — when one does not: at lowering for folded values, at run time
// for host inputs and for computed results of add, subtract, multiply, negate, abs, convert,
// and of sums and products (reduce, dot_general, power).
// Expected values are worked out by hand (46340 * 46341 = 2147441940 < 2^31 - 1; 65535 * 65537
// = 2^32 - 1; -65536 * 32768 = -2^31), each one 32-bit wrapping would get wrong. And Shardy's
// sdy.constant, which lowers as the constant it holds.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/stablehlo.hpp"
#include "meshplan/runtime/tensor.hpp"
#include "plan_run.hpp"

using namespace meshplan;
using meshplan::test::lower_error;

namespace {

using Values = std::vector<float>;

/// Compiles `text` (rank-1 arguments) for one chip and runs it on `inputs`; the run's error
/// message, or "" when it succeeded (its outputs in `outputs`).
std::string run_text(const std::string& text, const std::vector<Values>& inputs,
                     std::vector<Values>* outputs = nullptr) {
  planner::Graph g = test::lower_text(text, "wide.mlir");
  planner::PlannerOptions options;
  options.policy = "dram";
  auto plan = planner::compile(g, device::wormhole_b0(), options);
  REQUIRE_MESSAGE(plan, (plan ? "" : plan.error().message));
  auto ref = runtime::verify_plan(plan->bytes, "wide");
  REQUIRE_MESSAGE(ref, (ref ? "" : ref.error().message));
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto exe = runtime::Executable::bind(*ref, **dev);
  REQUIRE_MESSAGE(exe, (exe ? "" : exe.error().message));
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& v : inputs) shapes.push_back({static_cast<int64_t>(v.size())});
  std::vector<runtime::TensorView> views;
  for (size_t i = 0; i < inputs.size(); ++i) views.push_back({shapes[i], inputs[i]});
  auto got = (*exe)->run(views);
  if (!got) return got.error().to_string();
  if (outputs)
    for (const auto& t : got->outputs) outputs->emplace_back(t.data.begin(), t.data.end());
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("i64 arithmetic whose values fit 32 bits is exact") {
  // x = a * b = 2147441940 (f32 would round it to 2147441920); each result brings a 32-bit
  // value back to one f32 holds.
  const std::string text = R"(func.func public @main(%a: tensor<2xi64>, %b: tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) {
  %x = stablehlo.multiply %a, %b : tensor<2xi64>
  %c = stablehlo.constant dense<2147441939> : tensor<2xi64>
  %r0 = stablehlo.subtract %x, %c : tensor<2xi64>
  %d = stablehlo.constant dense<40000> : tensor<2xi64>
  %y = stablehlo.add %x, %d : tensor<2xi64>
  %e = stablehlo.constant dense<2147481900> : tensor<2xi64>
  %r1 = stablehlo.subtract %y, %e : tensor<2xi64>
  %n = stablehlo.negate %x : tensor<2xi64>
  %m = stablehlo.abs %n : tensor<2xi64>
  %r2 = stablehlo.subtract %m, %c : tensor<2xi64>
  %r3 = stablehlo.add %n, %x : tensor<2xi64>
  return %r0, %r1, %r2, %r3 : tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>
})";
  std::vector<Values> out;
  CHECK(run_text(text, {{46340, -46340}, {46341, -46341}}, &out) == "");
  // The results, then one overflow output per add, subtract, multiply, negate and abs (all 0).
  REQUIRE(out.size() == 4 + 8);
  for (size_t k = 4; k < out.size(); ++k) CHECK(out[k] == Values{0});
  CHECK(out[0] == Values{1, 1});
  CHECK(out[1] == Values{40, 40});
  CHECK(out[2] == Values{1, 1});
  CHECK(out[3] == Values{0, 0});
}

TEST_CASE("an i64 add whose result leaves 32 bits is refused at run time, naming the op") {
  // 2147441940 + 43707 = 2147485647 > 2^31 - 1: 32-bit words would give -2147481649.
  const std::string text = R"(func.func public @main(%a: tensor<2xi64>, %b: tensor<2xi64>, %c: tensor<2xi64>) -> tensor<2xi64> {
  %x = stablehlo.multiply %a, %b : tensor<2xi64>
  %y = stablehlo.add %x, %c : tensor<2xi64>
  %k = stablehlo.constant dense<2147480000> : tensor<2xi64>
  %r = stablehlo.subtract %y, %k : tensor<2xi64>
  return %r : tensor<2xi64>
})";
  std::vector<Values> out;
  CHECK(run_text(text, {{46340, 46340}, {46341, 46341}, {38060, 0}}, &out) == "");
  REQUIRE(out.size() == 1 + 3);  // the result, the multiply's, add's and subtract's overflow flags
  CHECK(out[0] == Values{0, -38060});
  CHECK(out[1] == Values{0});
  CHECK(out[2] == Values{0});
  CHECK(out[3] == Values{0});
  std::string e = run_text(text, {{46340, 46340}, {46341, 46341}, {0, 43707}});
  CAPTURE(e);
  CHECK(has(e, "wide.mlir:3:"));
  CHECK(has(e, "stablehlo.add"));
  CHECK(has(e, "32-bit range"));
}

TEST_CASE("i64 subtract, multiply, negate and abs overflows are refused, INT_MIN itself is not") {
  // -65536 * 32768 = -2^31 fits; -2^31 - 1, -1 * -2^31, -(-2^31) and |-2^31| do not.
  auto program = [](const std::string& op) {
    return R"(func.func public @main(%a: tensor<1xi64>, %b: tensor<1xi64>, %c: tensor<1xi64>) -> tensor<1xi64> {
  %x = stablehlo.multiply %a, %b : tensor<1xi64>
  )" + op + R"(
  %k = stablehlo.constant dense<-2147483648> : tensor<1xi64>
  %r = stablehlo.subtract %y, %k : tensor<1xi64>
  return %r : tensor<1xi64>
})";
  };
  const std::vector<Values> int_min = {{-65536}, {32768}, {0}};
  std::vector<Values> out;
  CHECK(run_text(program("%y = stablehlo.add %x, %c : tensor<1xi64>"), int_min, &out) == "");
  REQUIRE(!out.empty());
  CHECK(out[0] == Values{0});
  struct Case {
    std::string op, name;
    Values c;
  };
  for (const Case& k : {Case{"%y = stablehlo.subtract %x, %c : tensor<1xi64>", "stablehlo.subtract", {1}},
                        Case{"%y = stablehlo.multiply %x, %c : tensor<1xi64>", "stablehlo.multiply", {-1}},
                        Case{"%y = stablehlo.negate %x : tensor<1xi64>", "stablehlo.negate", {0}},
                        Case{"%y = stablehlo.abs %x : tensor<1xi64>", "stablehlo.abs", {0}}}) {
    CAPTURE(k.op);
    std::string e = run_text(program(k.op), {int_min[0], int_min[1], k.c});
    CAPTURE(e);
    CHECK(has(e, "wide.mlir:3:"));
    CHECK(has(e, k.name));
  }
  // 65536 * 65536 = 2^32 wraps to 0 in 32-bit words.
  std::string e = run_text(program("%y = stablehlo.add %x, %c : tensor<1xi64>"),
                           {{65536}, {65536}, {0}});
  CHECK(has(e, "wide.mlir:2:"));
  CHECK(has(e, "stablehlo.multiply"));
}

TEST_CASE("ui64 add past 2^32 - 1 and subtract below 0 are refused") {
  const std::string text = R"(func.func public @main(%a: tensor<1xui64>, %b: tensor<1xui64>, %c: tensor<1xui64>) -> tensor<1xui64> {
  %x = stablehlo.multiply %a, %b : tensor<1xui64>
  %y = stablehlo.add %x, %c : tensor<1xui64>
  %k = stablehlo.constant dense<4294967290> : tensor<1xui64>
  %r = stablehlo.subtract %y, %k : tensor<1xui64>
  return %r : tensor<1xui64>
})";
  std::vector<Values> out;
  CHECK(run_text(text, {{65535}, {65537}, {0}}, &out) == "");  // 2^32 - 1 - 4294967290 = 5
  REQUIRE(!out.empty());
  CHECK(out[0] == Values{5});
  std::string e = run_text(text, {{65535}, {65537}, {1}});
  CHECK(has(e, "wide.mlir:3:"));
  CHECK(has(e, "stablehlo.add"));
  e = run_text(text, {{1}, {1}, {0}});  // 1 - 4294967290 is negative
  CHECK(has(e, "wide.mlir:5:"));
  CHECK(has(e, "stablehlo.subtract"));
}

TEST_CASE("converts into i64 of values beyond 32 bits are refused") {
  const std::string from_float = R"(func.func public @main(%a: tensor<2xf32>) -> tensor<2xi64> {
  %0 = stablehlo.convert %a : (tensor<2xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
})";
  std::vector<Values> out;
  CHECK(run_text(from_float, {{-2147483648.0f, 2147483520.0f}}, &out) == "");
  REQUIRE(!out.empty());
  CHECK(out[0] == Values{-2147483648.0f, 2147483520.0f});
  std::string e = run_text(from_float, {{1, 2147483648.0f}});
  CHECK(has(e, "wide.mlir:2:"));
  CHECK(has(e, "stablehlo.convert"));
  // ui32 3000000000 is no i64 value an i32 word holds.
  const std::string from_u32 = R"(func.func public @main(%a: tensor<1xui32>) -> tensor<1xi64> {
  %0 = stablehlo.convert %a : (tensor<1xui32>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
})";
  CHECK(run_text(from_u32, {{2147483520.0f}}) == "");
  e = run_text(from_u32, {{3000000000.0f}});
  CHECK(has(e, "wide.mlir:2:"));
  // A folded value beyond the word is refused when the program is lowered.
  e = lower_error(R"(func.func public @main() -> tensor<1xi64> {
  %c = stablehlo.constant dense<1.0e+10> : tensor<1xf32>
  %0 = stablehlo.convert %c : (tensor<1xf32>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
})");
  CHECK(has(e, "bad.mlir:3:"));
  CHECK(has(e, "10000000000"));
  CHECK(has(e, "i32"));
}

TEST_CASE("integer host inputs beyond the 32-bit word are refused, naming the input") {
  const std::string text = R"(func.func public @main(%a: tensor<2xi64>, %b: tensor<2xui64>) -> (tensor<2xi64>, tensor<2xui64>) {
  return %a, %b : tensor<2xi64>, tensor<2xui64>
})";
  std::vector<Values> out;
  CHECK(run_text(text, {{-2147483648.0f, 7}, {4294967040.0f, 0}}, &out) == "");
  REQUIRE(out.size() == 2);
  CHECK(out[0] == Values{-2147483648.0f, 7});
  CHECK(out[1] == Values{4294967040.0f, 0});
  std::string e = run_text(text, {{1, 3.0e9f}, {0, 0}});
  CAPTURE(e);
  CHECK(has(e, "input 0"));
  CHECK(has(e, "element 1"));
  e = run_text(text, {{1, 2}, {-1, 0}});
  CAPTURE(e);
  CHECK(has(e, "input 1"));
  CHECK(has(e, "u32"));
}

TEST_CASE("sdy.constant (Shardy's per-use constant) lowers as the constant it holds") {
  const std::string text = R"(func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %c = sdy.constant dense<[1.5, -2.0]> : tensor<2xf32>
  %s = sdy.constant dense<3.0> : tensor<2xf32>
  %0 = stablehlo.add %a, %c : tensor<2xf32>
  %1 = stablehlo.multiply %0, %s : tensor<2xf32>
  return %1 : tensor<2xf32>
})";
  std::vector<Values> out;
  CHECK(run_text(text, {{0.5f, 4.0f}}, &out) == "");
  REQUIRE(out.size() == 1);
  CHECK(out[0] == Values{6.0f, 6.0f});  // (0.5 + 1.5) * 3, (4 - 2) * 3
}

// Sums and products: reduce, dot_general and power on i64/ui64 are checked against an f32
// bound of their exact value. Host inputs are f32, so the values below are multiples of 128
// (or small); every expected value is worked out by hand.
TEST_CASE("i64 reduce sums are exact when the sum fits 32 bits, partial sums beyond it too") {
  const std::string text = R"(func.func public @main(%a: tensor<4xi64>) -> tensor<i64> {
  %z = stablehlo.constant dense<0> : tensor<i64>
  %r = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  return %r : tensor<i64>
})";
  std::vector<Values> out;
  // 2e9 + 2e9 = 4e9 passes 2^31 on the way; the sum is 128.
  CHECK(run_text(text, {{2000000000, 2000000000, -2000000000, -1999999872}}, &out) == "");
  REQUIRE(out.size() == 2);  // the result, the reduce's overflow flag
  CHECK(out[0] == Values{128});
  CHECK(out[1] == Values{0});
  out.clear();
  CHECK(run_text(text, {{2100000000, 0, 0, 0}}, &out) == "");  // 2.1e9 < 2^31 - 1
  REQUIRE(!out.empty());
  CHECK(out[0] == Values{2100000000});
  out.clear();
  CHECK(run_text(text, {{-2000000000, -100000000, 0, 0}}, &out) == "");  // -2.1e9 >= -2^31
  REQUIRE(!out.empty());
  CHECK(out[0] == Values{-2100000000});
  // 2e9 + 2e9 - 1e9 = 3e9 > 2^31 - 1 (32-bit words: -1294967296); -4e9 < -2^31.
  for (const Values& a : {Values{2000000000, 2000000000, -1000000000, 0},
                          Values{-2000000000, -2000000000, 0, 0},
                          Values{1200000000, 1200000000, 0, 0}}) {
    CAPTURE(a);
    std::string e = run_text(text, {a});
    CAPTURE(e);
    CHECK(has(e, "wide.mlir:3:"));
    CHECK(has(e, "stablehlo.reduce"));
    CHECK(has(e, "left the 32-bit range"));
  }
}

TEST_CASE("i64 reduce products and ui64 reduce sums are checked") {
  const std::string prod = R"(func.func public @main(%a: tensor<4xi64>) -> tensor<i64> {
  %one = stablehlo.constant dense<1> : tensor<i64>
  %p = stablehlo.reduce(%a init: %one) applies stablehlo.multiply across dimensions = [0] : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %k = stablehlo.constant dense<2147441939> : tensor<i64>
  %r = stablehlo.subtract %p, %k : tensor<i64>
  return %r : tensor<i64>
})";
  std::vector<Values> out;
  CHECK(run_text(prod, {{46340, 46341, 1, 1}}, &out) == "");  // 2147441940
  REQUIRE(!out.empty());
  CHECK(out[0] == Values{1});
  // 65536 * 32768 = 2^31 (32-bit words: -2^31); 65536 * 65536 * 3 wraps to 0.
  for (const Values& a : {Values{65536, 32768, 1, 1}, Values{65536, 65536, 3, 1}}) {
    std::string e = run_text(prod, {a});
    CAPTURE(e);
    CHECK(has(e, "wide.mlir:3:"));
    CHECK(has(e, "stablehlo.reduce"));
  }
  const std::string usum = R"(func.func public @main(%a: tensor<4xui64>) -> tensor<ui64> {
  %z = stablehlo.constant dense<0> : tensor<ui64>
  %r = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xui64>, tensor<ui64>) -> tensor<ui64>
  return %r : tensor<ui64>
})";
  out.clear();
  CHECK(run_text(usum, {{4000000000, 200000000, 0, 0}}, &out) == "");  // 4.2e9 < 2^32 - 1
  REQUIRE(!out.empty());
  CHECK(out[0] == Values{4200000000});
  std::string e = run_text(usum, {{4000000000, 300000000, 0, 0}});  // 4.3e9 > 2^32 - 1
  CAPTURE(e);
  CHECK(has(e, "wide.mlir:3:"));
  CHECK(has(e, "stablehlo.reduce"));
}

TEST_CASE("i64 and ui64 dot_general results beyond 32 bits are refused, ones that fit are exact") {
  const std::string text = R"(func.func public @main(%a: tensor<2xi64>, %b: tensor<2xi64>) -> tensor<i64> {
  %r = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<2xi64>, tensor<2xi64>) -> tensor<i64>
  return %r : tensor<i64>
})";
  std::vector<Values> out;
  // Each product 2.5e9 leaves 32 bits; their sum is 0.
  CHECK(run_text(text, {{50000, 50000}, {50000, -50000}}, &out) == "");
  REQUIRE(out.size() == 2);
  CHECK(out[0] == Values{0});
  CHECK(out[1] == Values{0});
  out.clear();
  // 40000 * 50000 + 10000 * 14000 = 2140000000 < 2^31 - 1.
  CHECK(run_text(text, {{40000, 10000}, {50000, 14000}}, &out) == "");
  REQUIRE(!out.empty());
  CHECK(out[0] == Values{2140000000});
  // 2.5e9 + 2.5e9 = 5e9 (32-bit words: 705032704); 2e9 + 1.5e8 = 2.15e9 > 2^31 - 1.
  for (const auto& [a, b] : {std::pair{Values{50000, 50000}, Values{50000, 50000}},
                             std::pair{Values{40000, 10000}, Values{50000, 15000}}}) {
    std::string e = run_text(text, {a, b});
    CAPTURE(e);
    CHECK(has(e, "wide.mlir:2:"));
    CHECK(has(e, "stablehlo.dot_general"));
    CHECK(has(e, "left the 32-bit range"));
  }
  const std::string utext = R"(func.func public @main(%a: tensor<2xui64>, %b: tensor<2xui64>) -> tensor<ui64> {
  %r = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<2xui64>, tensor<2xui64>) -> tensor<ui64>
  return %r : tensor<ui64>
})";
  out.clear();
  CHECK(run_text(utext, {{60000, 10000}, {60000, 50000}}, &out) == "");  // 3.6e9 + 5e8 = 4.1e9
  REQUIRE(!out.empty());
  CHECK(out[0] == Values{4100000000});
  std::string e = run_text(utext, {{60000, 20000}, {60000, 50000}});  // 4.6e9 > 2^32 - 1
  CAPTURE(e);
  CHECK(has(e, "wide.mlir:2:"));
  CHECK(has(e, "stablehlo.dot_general"));
}

TEST_CASE("i64 power results beyond 32 bits are refused") {
  const std::string text = R"(func.func public @main(%a: tensor<2xi64>, %b: tensor<2xi64>) -> tensor<2xi64> {
  %p = stablehlo.power %a, %b : tensor<2xi64>
  %k = stablehlo.constant dense<[1073741824, -1594323]> : tensor<2xi64>
  %r = stablehlo.subtract %p, %k : tensor<2xi64>
  return %r : tensor<2xi64>
})";
  std::vector<Values> out;
  CHECK(run_text(text, {{2, -3}, {30, 13}}, &out) == "");  // 2^30, (-3)^13 = -1594323
  REQUIRE(!out.empty());
  CHECK(out[0] == Values{0, 0});
  // 2^31 (32-bit words: -2^31); 3^20 = 3486784401; (-2)^33.
  for (const auto& [a, b] : {std::pair{Values{2, 1}, Values{31, 1}},
                             std::pair{Values{1, 3}, Values{5, 20}},
                             std::pair{Values{-2, 1}, Values{33, 1}}}) {
    std::string e = run_text(text, {a, b});
    CAPTURE(e);
    CHECK(has(e, "wide.mlir:2:"));
    CHECK(has(e, "stablehlo.power"));
  }
}

TEST_CASE("i64 sums on a mesh of more than one chip are a located error") {
  // The per-chip program of a manual computation: its overflow check would read one chip's
  // piece, so it is refused like the elementwise ones.
  const std::string e = lower_error(R"(sdy.mesh @mesh = <["x"=2]>
func.func public @main(%a: tensor<8x4xi64>) -> tensor<8xi64> {
  %0 = sdy.manual_computation(%a) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%b: tensor<4x4xi64>) {
    %z = stablehlo.constant dense<0> : tensor<i64>
    %r = stablehlo.reduce(%b init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x4xi64>, tensor<i64>) -> tensor<4xi64>
    sdy.return %r : tensor<4xi64>
  } : (tensor<8x4xi64>) -> tensor<8xi64>
  return %0 : tensor<8xi64>
})");
  CAPTURE(e);
  CHECK(has(e, "bad.mlir:5:"));
  CHECK(has(e, "stablehlo.reduce of 64-bit integers"));
  CHECK(has(e, "2x1 mesh"));
}

TEST_CASE("i64 reduce_window sums and scatter adds are checked, i64 convolution is refused") {
  const std::string window = R"(func.func public @main(%a: tensor<6xi64>) -> tensor<4xi64> {
  %z = stablehlo.constant dense<0> : tensor<i64>
  %r = "stablehlo.reduce_window"(%a, %z) ({
  ^bb0(%x: tensor<i64>, %y: tensor<i64>):
    %s = stablehlo.add %x, %y : tensor<i64>
    stablehlo.return %s : tensor<i64>
  }) {window_dimensions = array<i64: 3>} : (tensor<6xi64>, tensor<i64>) -> tensor<4xi64>
  return %r : tensor<4xi64>
})";
  std::vector<Values> out;
  // Windows of 3: 2e9 + 2e9 - 2e9 (4e9 on the way), 2e9 - 2e9 - 1e9, -2e9 - 1e9 + 1e9,
  // -1e9 + 1e9 + 1e9.
  CHECK(run_text(window, {{2e9f, 2e9f, -2e9f, -1e9f, 1e9f, 1e9f}}, &out) == "");
  REQUIRE(out.size() == 2);
  CHECK(out[0] == Values{2e9f, -1e9f, -2e9f, 1e9f});
  CHECK(out[1] == Values{0});
  std::string e = run_text(window, {{2e9f, 2e8f, 0, 0, 0, 0}});  // 2.2e9 > 2^31 - 1
  CAPTURE(e);
  CHECK(has(e, "wide.mlir:3:"));
  CHECK(has(e, "stablehlo.reduce_window"));
  CHECK(has(e, "left the 32-bit range"));

  const std::string scatter = R"(func.func public @main(%a: tensor<5xi64>, %i: tensor<2xi32>, %u: tensor<2xi64>) -> tensor<5xi64> {
  %j = stablehlo.reshape %i : (tensor<2xi32>) -> tensor<2x1xi32>
  %r = "stablehlo.scatter"(%a, %j, %u) ({
  ^bb0(%x: tensor<i64>, %y: tensor<i64>):
    %s = stablehlo.add %x, %y : tensor<i64>
    stablehlo.return %s : tensor<i64>
  }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<5xi64>, tensor<2x1xi32>, tensor<2xi64>) -> tensor<5xi64>
  return %r : tensor<5xi64>
})";
  out.clear();
  // 2e9 + 1e9 - 1e9 at index 0 (3e9 on the way).
  CHECK(run_text(scatter, {{2e9f, 0, 0, 0, 5}, {0, 0}, {1e9f, -1e9f}}, &out) == "");
  REQUIRE(!out.empty());
  CHECK(out[0] == Values{2e9f, 0, 0, 0, 5});
  e = run_text(scatter, {{2e9f, 0, 0, 0, 5}, {0, 4}, {2e8f, 1}});  // 2.2e9 at index 0
  CAPTURE(e);
  CHECK(has(e, "wide.mlir:3:"));
  CHECK(has(e, "stablehlo.scatter"));
  CHECK(has(e, "left the 32-bit range"));

  e = lower_error(R"(func.func public @main(%a: tensor<1x6x1xi64>, %w: tensor<3x1x1xi64>) -> tensor<1x4x1xi64> {
  %r = stablehlo.convolution(%a, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [1], pad = [[0, 0]], rhs_dilate = [1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x6x1xi64>, tensor<3x1x1xi64>) -> tensor<1x4x1xi64>
  return %r : tensor<1x4x1xi64>
})");
  CAPTURE(e);
  CHECK(has(e, "bad.mlir:2:"));
  CHECK(has(e, "stablehlo.convolution: i64 result may leave the 32-bit range"));
}
