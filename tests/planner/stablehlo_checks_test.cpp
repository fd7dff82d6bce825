// StableHLO interpreter checks (`custom_call @check.expect_*`) in modules of the form of
// StableHLO's JAX-generated test programs, through the whole path: parse -> lower -> plan -> run
// -> the runtime's check evaluation. Expected values are literals worked out by hand (or with
// Python's math module, as noted).
#include <doctest/doctest.h>

#include <cmath>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/stablehlo.hpp"
#include "meshplan/runtime/program_checks.hpp"
#include "plan_run.hpp"

using namespace meshplan;

namespace {

struct Ran {
  std::vector<runtime::ProgramCheck> checks;
  std::vector<runtime::CheckOutcome> outcomes;
  std::vector<runtime::Tensor> outputs;
  std::vector<std::string> names;
};

/// Compiles `text` (a module whose @main takes no argument), runs it and evaluates its checks.
Ran run_checks(const std::string& text) {
  planner::Graph g = test::lower_text(text, "checks.mlir");
  auto plan = planner::compile(g, device::wormhole_b0(), planner::PlannerOptions{});
  REQUIRE_MESSAGE(plan, (plan ? "" : plan.error().message));
  auto ref = runtime::verify_plan(plan->bytes, "checks");
  REQUIRE_MESSAGE(ref, (ref ? "" : ref.error().message));
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto exe = runtime::Executable::bind(*ref, **dev);
  REQUIRE_MESSAGE(exe, (exe ? "" : exe.error().message));
  auto got = (*exe)->run(std::span<const runtime::TensorView>{});
  REQUIRE_MESSAGE(got, (got ? "" : got.error().message));
  Ran r;
  auto checks = runtime::program_checks(**exe);
  REQUIRE_MESSAGE(checks, (checks ? "" : checks.error().message));
  r.checks = *checks;
  r.outcomes = runtime::evaluate_checks(r.checks, got->outputs);
  r.outputs = std::move(got->outputs);
  for (size_t i = 0; i < (*exe)->output_count(); ++i) r.names.emplace_back((*exe)->output_name(i));
  return r;
}

/// A JAX-style test program: inputs and expected values behind private functions, one op, one
/// check, the op's result returned.
std::string program(const std::string& type, const std::string& a, const std::string& b,
                    const std::string& op, const std::string& expected,
                    const std::string& check = "check.expect_close") {
  return R"(module @jit_main attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main() -> (tensor<)" +
         type + R"(> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0:2 = call @inputs() : () -> (tensor<)" +
         type + ">, tensor<" + type + R"(>)
    %1 = call @expected() : () -> tensor<)" +
         type + R"(>
    %2 = )" +
         op + " %0#0, %0#1 : tensor<" + type + R"(>
    stablehlo.custom_call @)" +
         check + R"((%2, %1) {has_side_effect = true} : (tensor<)" + type + ">, tensor<" + type +
         R"(>) -> ()
    return %2 : tensor<)" +
         type + R"(>
  }
  func.func private @inputs() -> (tensor<)" +
         type + ">, tensor<" + type + R"(>) {
    %cst = stablehlo.constant dense<)" +
         a + "> : tensor<" + type + R"(>
    %cst_0 = stablehlo.constant dense<)" +
         b + "> : tensor<" + type + R"(>
    return %cst, %cst_0 : tensor<)" +
         type + ">, tensor<" + type + R"(>
  }
  func.func private @expected() -> (tensor<)" +
         type + R"(>) {
    %cst = stablehlo.constant dense<)" +
         expected + "> : tensor<" + type + R"(>
    return %cst : tensor<)" +
         type + R"(>
  }
}
)";
}

}  // namespace

TEST_CASE("a passing expect_close: the result, then the check's actual and expected outputs") {
  // [1.5, -2.25, 3, 0.5] + [0.25, 0.25, -1, 2] = [1.75, -2, 2, 2.5], exact in f32.
  Ran r = run_checks(program("4xf32", "[1.5, -2.25, 3.0, 0.5]", "[0.25, 0.25, -1.0, 2.0]",
                             "stablehlo.add", "[1.75, -2.0, 2.0, 2.5]"));
  REQUIRE(r.names.size() == 3);
  CHECK(r.names[1] == "check:0:expect_close:f32:actual@checks.mlir:6:5");
  CHECK(r.names[2] == "check:0:expect_close:f32:expected@checks.mlir:6:5");
  REQUIRE(r.checks.size() == 1);
  CHECK(r.checks[0].location == "checks.mlir:6:5");
  CHECK(r.checks[0].actual == 1);
  CHECK(r.checks[0].expected == 2);
  REQUIRE(r.outcomes.size() == 1);
  CHECK(r.outcomes[0].ok);
  CHECK(r.outcomes[0].exact);
  CHECK(r.outcomes[0].text() == "check 0 (expect_close, f32) at checks.mlir:6:5: PASS");
  CHECK(r.outputs[0].data[3] == 2.5f);
}

TEST_CASE("a failing check names the worst element") {
  // 3 + -1 is 2, not the 2.5 the (wrong) expected value says.
  Ran r = run_checks(program("2x2xf32", "[[1.5, -2.25], [3.0, 0.5]]", "[[0.25, 0.25], [-1.0, 2.0]]",
                             "stablehlo.add", "[[1.75, -2.0], [2.5, 2.5]]"));
  REQUIRE(r.outcomes.size() == 1);
  const auto& o = r.outcomes[0];
  CHECK_FALSE(o.ok);
  CHECK(o.failures == 1);
  CHECK(o.elements == 4);
  CHECK(o.worst_index == std::vector<int64_t>{1, 0});
  CHECK(o.worst_actual == 2.0);
  CHECK(o.worst_expected == 2.5);
  CHECK(o.text() ==
        "check 0 (expect_close, f32) at checks.mlir:6:5: FAIL: 1 of 4 elements outside the "
        "tolerance; worst at [1, 0]: actual 2, expected 2.5, |difference| 0.5");
}

TEST_CASE("expect_eq on integers and expect_almost_eq on floats") {
  // [3, -4] * [5, 6] = [15, -24].
  Ran i = run_checks(
      program("2xi32", "[3, -4]", "[5, 6]", "stablehlo.multiply", "[15, -24]", "check.expect_eq"));
  REQUIRE(i.outcomes.size() == 1);
  CHECK(i.outcomes[0].ok);
  CHECK(i.outcomes[0].exact);
  Ran w = run_checks(
      program("2xi32", "[3, -4]", "[5, 6]", "stablehlo.multiply", "[15, -23]", "check.expect_eq"));
  CHECK_FALSE(w.outcomes[0].ok);
  // 0.1 + 0.2 in f32 is 0.3 within the interpreter's 1e-3 (0.3004 too).
  Ran a = run_checks(
      program("1xf32", "[0.1]", "[0.2]", "stablehlo.add", "[0.3004]", "check.expect_almost_eq"));
  CHECK(a.outcomes[0].ok);
  CHECK(a.outcomes[0].exact);
}

TEST_CASE("f16 hex elements are f16 bits: NaN, inf and finite values through a check") {
  // 0x3C00 = 1, 0xC000 = -2, 0x7C00 = +inf, 0x7E00 = NaN, 0xFC00 = -inf (IEEE binary16);
  // max(x, y) elementwise: [1, 0.5, inf, NaN] (NaN propagates).
  Ran r = run_checks(program("4xf16", "[0x3C00, 0xC000, 0x7C00, 0x7E00]",
                             "[0xC000, 0x3800, 0xFC00, 0x3C00]", "stablehlo.maximum",
                             "[1.0, 0.5, 0x7C00, 0x7E00]"));
  REQUIRE(r.outcomes.size() == 1);
  CHECK_MESSAGE(r.outcomes[0].ok, r.outcomes[0].text());
  CHECK(r.outputs[0].data[0] == 1.0f);
  CHECK(r.outputs[0].data[1] == 0.5f);
  CHECK(std::isinf(r.outputs[0].data[2]));
  CHECK(std::isnan(r.outputs[0].data[3]));
}

TEST_CASE("a check of a value that is also returned, and of a rank-0 value, gets a copy") {
  const std::string text = R"(module @jit_main {
  func.func public @main() -> (tensor<f32>, tensor<f32>) {
    %0 = stablehlo.constant dense<2.5> : tensor<f32>
    %1 = stablehlo.constant dense<-1.0> : tensor<f32>
    %2 = stablehlo.multiply %0, %1 : tensor<f32>
    stablehlo.custom_call @check.expect_eq(%2, %2) {has_side_effect = true} : (tensor<f32>, tensor<f32>) -> ()
    %3 = stablehlo.constant dense<-2.5> : tensor<f32>
    stablehlo.custom_call @check.expect_close(%2, %3) {has_side_effect = true} : (tensor<f32>, tensor<f32>) -> ()
    return %2, %2 : tensor<f32>, tensor<f32>
  }
}
)";
  Ran r = run_checks(text);
  REQUIRE(r.names.size() == 6);
  REQUIRE(r.outcomes.size() == 2);
  for (const auto& o : r.outcomes) CHECK_MESSAGE(o.ok, o.text());
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    CHECK(r.outputs[i].shape.empty());
    CHECK(r.outputs[i].data[0] == -2.5f);
  }
}

TEST_CASE("other check targets and malformed checks are located errors") {
  std::string bad = program("2xf32", "[1.0, 2.0]", "[1.0, 2.0]", "stablehlo.add", "[2.0, 4.0]",
                            "check.expect_serialized_eq");
  std::string e = test::lower_error(bad);
  CHECK(e.find("bad.mlir:6:5") != std::string::npos);
  CHECK(e.find("@check.expect_serialized_eq") != std::string::npos);
  CHECK(e.find("@check.expect_close") != std::string::npos);  // what is supported
  const std::string mixed = R"(module @m {
  func.func public @main() -> tensor<2xf32> {
    %0 = stablehlo.constant dense<1.0> : tensor<2xf32>
    %1 = stablehlo.constant dense<1.0> : tensor<3xf32>
    stablehlo.custom_call @check.expect_eq(%0, %1) {has_side_effect = true} : (tensor<2xf32>, tensor<3xf32>) -> ()
    return %0 : tensor<2xf32>
  }
}
)";
  e = test::lower_error(mixed);
  CHECK(e.find("bad.mlir:5:5") != std::string::npos);
  CHECK(e.find("compares tensor<2xf32> with tensor<3xf32>") != std::string::npos);
}

TEST_CASE("chlo.atanh of bf16 near +-1 is computed in f32 and rounded once") {
  // Python: math.atanh(x) for x = -0.95703125, 0.5, -0.9921875, 0.98046875 is -1.909355,
  // 0.549306, -2.770632, 2.309537; rounded to bf16: -1.90625, 0.55078125, -2.765625, 2.3125.
  const std::string text = R"(module @jit_main {
  func.func public @main() -> tensor<4xbf16> {
    %0 = stablehlo.constant dense<[-0.95703125, 0.5, -0.9921875, 0.98046875]> : tensor<4xbf16>
    %1 = chlo.atanh %0 : tensor<4xbf16> -> tensor<4xbf16>
    %2 = stablehlo.constant dense<[-1.90625, 0.55078125, -2.765625, 2.3125]> : tensor<4xbf16>
    stablehlo.custom_call @check.expect_close(%1, %2) {has_side_effect = true} : (tensor<4xbf16>, tensor<4xbf16>) -> ()
    return %1 : tensor<4xbf16>
  }
}
)";
  Ran r = run_checks(text);
  REQUIRE(r.outcomes.size() == 1);
  CHECK_MESSAGE(r.outcomes[0].ok, r.outcomes[0].text());
  CHECK_MESSAGE(r.outcomes[0].exact, r.outcomes[0].text());  // within 3 bf16 ULP
}

TEST_CASE("chlo.top_k orders NaN, infinities and signed zeros in IEEE total order") {
  // Descending total order: +NaN, +inf, 3, +0, -0, -inf, -NaN; indices of the input
  // [inf, NaN, -NaN, -inf, 3, -0, +0] in that order: 1, 0, 4, 6, 5, 3, 2.
  const std::string text = R"(module @jit_main {
  func.func public @main() -> (tensor<7xf32>, tensor<7xi32>) {
    %0 = stablehlo.constant dense<[0x7F800000, 0x7FC00000, 0xFFC00000, 0xFF800000, 3.0, -0.0, 0.0]> : tensor<7xf32>
    %values, %indices = chlo.top_k(%0, k = 7) : tensor<7xf32> -> (tensor<7xf32>, tensor<7xi32>)
    %1 = stablehlo.constant dense<[1, 0, 4, 6, 5, 3, 2]> : tensor<7xi32>
    stablehlo.custom_call @check.expect_eq(%indices, %1) {has_side_effect = true} : (tensor<7xi32>, tensor<7xi32>) -> ()
    return %values, %indices : tensor<7xf32>, tensor<7xi32>
  }
}
)";
  Ran r = run_checks(text);
  REQUIRE(r.outcomes.size() == 1);
  CHECK_MESSAGE(r.outcomes[0].ok, r.outcomes[0].text());
  const auto& v = r.outputs[0].data;
  CHECK((std::isnan(v[0]) && !std::signbit(v[0])));
  CHECK(v[1] == INFINITY);
  CHECK(v[2] == 3.0f);
  CHECK((v[3] == 0.0f && !std::signbit(v[3])));
  CHECK((v[4] == 0.0f && std::signbit(v[4])));
  CHECK(v[5] == -INFINITY);
  CHECK((std::isnan(v[6]) && std::signbit(v[6])));
}

TEST_CASE("f16 computed in f32 overflows to infinity past f16's range") {
  // 300 * 300 = 90000 > 65504 (f16's largest): +inf; -300 * 300: -inf; 2 * 2 = 4;
  // 255 * 257 = 65535 >= 65520 rounds past 65504: +inf.
  Ran r = run_checks(program("4xf16", "[300.0, -300.0, 2.0, 255.0]", "[300.0, 300.0, 2.0, 257.0]",
                             "stablehlo.multiply", "[0x7C00, 0xFC00, 4.0, 0x7C00]"));
  REQUIRE(r.outcomes.size() == 1);
  CHECK_MESSAGE(r.outcomes[0].exact, r.outcomes[0].text());
  CHECK(r.outputs[0].data[0] == INFINITY);
  CHECK(r.outputs[0].data[1] == -INFINITY);
  CHECK(r.outputs[0].data[2] == 4.0f);
}

TEST_CASE("xor of booleans: true where exactly one operand is true") {
  // [T, T, F, F] xor [T, F, T, F] = [F, T, T, F].
  Ran r = run_checks(program("4xi1", "[true, true, false, false]", "[true, false, true, false]",
                             "stablehlo.xor", "[false, true, true, false]", "check.expect_eq"));
  REQUIRE(r.outcomes.size() == 1);
  CHECK(r.outcomes[0].ok);
  CHECK(std::vector<float>(r.outputs[0].data.begin(), r.outputs[0].data.end()) ==
        std::vector<float>{0, 1, 1, 0});
}

TEST_CASE("bitcast_convert to its own element type is the value itself") {
  // ui8 bits read as ui8: [0, 7, 200, 255] unchanged, exactly.
  std::string text = program("4xui8", "[0, 7, 200, 255]", "[0, 0, 0, 0]", "stablehlo.add",
                             "[0, 7, 200, 255]", "check.expect_eq");
  const std::string add = "%2 = stablehlo.add %0#0, %0#1 : tensor<4xui8>";
  REQUIRE(text.find(add) != std::string::npos);
  text.replace(text.find(add), add.size(),
               "%2 = stablehlo.bitcast_convert %0#0 : (tensor<4xui8>) -> tensor<4xui8>");
  Ran r = run_checks(text);
  REQUIRE(r.outcomes.size() == 1);
  CHECK(r.outcomes[0].ok);
  CHECK(std::vector<float>(r.outputs[0].data.begin(), r.outputs[0].data.end()) ==
        std::vector<float>{0, 7, 200, 255});
}

TEST_CASE("convert of constant negative integers to ui32 wraps modulo 2^32") {
  // i16 [1, 0, -1, -32768] as ui32: [1, 0, 2^32 - 1, 2^32 - 32768] = [1, 0, 4294967295,
  // 4294934528] (the spec's two's complement reading, as XLA converts).
  const std::string text =
      R"(module @jit_main attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main() -> (tensor<4xui32>) {
    %c = stablehlo.constant dense<[1, 0, -1, -32768]> : tensor<4xi16>
    %e = stablehlo.constant dense<[1, 0, 4294967295, 4294934528]> : tensor<4xui32>
    %0 = stablehlo.convert %c : (tensor<4xi16>) -> tensor<4xui32>
    stablehlo.custom_call @check.expect_eq(%0, %e) {has_side_effect = true} : (tensor<4xui32>, tensor<4xui32>) -> ()
    return %0 : tensor<4xui32>
  }
})";
  Ran r = run_checks(text);
  REQUIRE(r.outcomes.size() == 1);
  CHECK(r.outcomes[0].ok);
  CHECK(r.outputs[0].data[0] == 1.0f);
  CHECK(r.outputs[0].data[1] == 0.0f);
  CHECK(r.outputs[0].data[2] == 4294967296.0f);  // 4294967295 as the nearest f32
  // ui64 is computed in ui32: -1 -> 2^64 - 1 would not come out; a located error.
  std::string e = test::lower_error(R"(func.func public @main() -> tensor<2xui64> {
  %c = stablehlo.constant dense<[1, -1]> : tensor<2xi32>
  %0 = stablehlo.convert %c : (tensor<2xi32>) -> tensor<2xui64>
  return %0 : tensor<2xui64>
})");
  CHECK(e.find("bad.mlir:3:") != std::string::npos);
  CHECK(e.find("ui64") != std::string::npos);
}
