// i64 and ui64 computed in 32-bit words: exact while every value fits the word, and a clear
// error — never a wrapped value — when one does not: at lowering for folded values, at run time
// for host inputs and for computed results of add, subtract, multiply, negate, abs and convert.
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
