// Conformance of the elementwise ops lowered from StableHLO: per op, a module of that one op
// (generic syntax) -> parse -> lower -> plan under every policy -> run on the emulated chip, in
// f32 and in bf16, against literal results worked out from the StableHLO spec and the C math
// library (NaN, infinities and signed zeros included). The inputs are exact in bf16, so the
// bf16 runs differ from the literals only by the rounding of the result.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"
#include "plan_run.hpp"

using namespace meshplan;
using device::OpKind;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kPi = 3.141592653589793;
const char* const kPolicies[] = {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"};

struct Case {
  std::string op;           ///< The StableHLO (or CHLO) op.
  OpKind kind;              ///< The device op it lowers to.
  std::vector<float> a, b;  ///< b empty: a unary op.
  std::vector<double> want;
  bool boolean = false;  ///< i1 result, converted back to the operand type in the module.
};

/// A [64, 64] module (two tiles each way, so sharded layouts split it) applying c.op.
std::string module_text(const Case& c, const std::string& el) {
  std::string t = "tensor<64x64x" + el + ">", rt = c.boolean ? "tensor<64x64xi1>" : t;
  bool binary = !c.b.empty();
  std::string s =
      "func.func @main(%a: " + t + (binary ? ", %b: " + t : "") + ") -> (" + t + ") {\n";
  s += "  %0 = \"" + c.op + "\"(%a" + (binary ? ", %b" : "") + ") : (" + t +
       (binary ? ", " + t : "") + ") -> " + rt + "\n";
  if (c.boolean) s += "  %1 = stablehlo.convert %0 : (" + rt + ") -> " + t + "\n";
  s += "  return " + std::string(c.boolean ? "%1" : "%0") + " : " + t + "\n}\n";
  return s;
}

std::vector<float> tiled(const std::vector<float>& v) {
  std::vector<float> out(64 * 64);
  for (size_t i = 0; i < out.size(); ++i) out[i] = v[i % v.size()];
  return out;
}

bool matches(float got, double want, double rel) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (want == 0.0) return got == 0.0f && std::signbit(got) == std::signbit(want);
  return std::fabs(got - want) <= rel * std::fabs(want);
}

void check(const Case& c) {
  REQUIRE(c.want.size() == c.a.size());
  for (std::string el : {"f32", "bf16"}) {
    CAPTURE(c.op);
    CAPTURE(el);
    // f32: the C library's float functions; bf16: the rounding of the result (bf16 tolerance).
    double rel = el == "f32" ? 1e-6 : 1.0 / 128;
    auto m = planner::shlo::parse_module(module_text(c, el), "conformance.mlir");
    REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
    auto g = planner::shlo::lower_to_graph(*m);
    REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
    int n = 0;
    for (const auto& op : g->ops) n += op.kind == c.kind;
    CHECK(n == 1);
    std::vector<std::vector<float>> data{tiled(c.a)};
    if (!c.b.empty()) data.push_back(tiled(c.b));
    const std::vector<int64_t> shape{64, 64};
    std::vector<runtime::TensorView> views;
    for (const auto& d : data) views.push_back({shape, d});
    for (const char* policy : kPolicies) {
      CAPTURE(policy);
      auto outputs = test::plan_and_run(*g, policy, "conformance", views);
      REQUIRE(outputs.size() == 1);
      const auto& out = outputs[0].data;
      REQUIRE(out.size() == 64u * 64u);
      size_t bad = out.size();
      for (size_t i = 0; i < out.size() && bad == out.size(); ++i)
        if (!matches(out[i], c.want[i % c.want.size()], rel)) bad = i;
      if (bad < out.size()) {
        size_t k = bad % c.want.size();
        FAIL_CHECK("element ", bad, ": op(", c.a[k], (c.b.empty() ? "" : ", "),
                   (c.b.empty() ? 0.0f : c.b[k]), ") = ", out[bad], ", expected ", c.want[k]);
      }
    }
  }
}

}  // namespace

TEST_CASE("sine, cosine and tan") {
  check(
      {"stablehlo.sine",
       OpKind::sin,
       {0.0f, -0.0f, 0.5f, -1.5f, 3.0f, kInf, -kInf, kNaN},
       {},
       {0.0, -0.0, 0.479425538604203, -0.9974949866040544, 0.1411200080598672, kNaN, kNaN, kNaN}});
  check(
      {"stablehlo.cosine",
       OpKind::cos,
       {0.0f, -0.0f, 0.5f, -1.5f, 3.0f, kInf, -kInf, kNaN},
       {},
       {1.0, 1.0, 0.8775825618903728, 0.0707372016677029, -0.9899924966004454, kNaN, kNaN, kNaN}});
  check({"stablehlo.tan",
         OpKind::tan,
         {0.0f, -0.0f, 0.5f, -1.5f, 3.0f, 1.0f, kInf, kNaN},
         {},
         {0.0, -0.0, 0.5463024898437905, -14.101419947171719, -0.1425465430742778,
          1.5574077246549023, kNaN, kNaN}});
}

TEST_CASE("floor, ceil and the two roundings (halves to even; halves away from zero)") {
  std::vector<float> x{-2.5f, -0.5f, -0.0f, 0.5f, 2.5f, 3.0f, kInf, kNaN};
  check({"stablehlo.floor", OpKind::floor, x, {}, {-3, -1, -0.0, 0, 2, 3, kInf, kNaN}});
  check({"stablehlo.ceil", OpKind::ceil, x, {}, {-2, -0.0, -0.0, 1, 3, 3, kInf, kNaN}});
  std::vector<float> h{-2.5f, -0.5f, 0.5f, 1.5f, 2.5f, 0.25f, -kInf, kNaN};
  check({"stablehlo.round_nearest_even",
         OpKind::round_even,
         h,
         {},
         {-2, -0.0, 0, 2, 2, 0, -kInf, kNaN}});
  check(
      {"stablehlo.round_nearest_afz", OpKind::round_afz, h, {}, {-3, -1, 1, 2, 3, 0, -kInf, kNaN}});
}

TEST_CASE("sign keeps signed zeros and NaN") {
  check({"stablehlo.sign",
         OpKind::sign,
         {-2.5f, -0.0f, 0.0f, 0.5f, kInf, -kInf, kNaN, 3.0f},
         {},
         {-1, -0.0, 0.0, 1, 1, -1, kNaN, 1}});
}

TEST_CASE("log_plus_one, exponential_minus_one, cbrt and erf") {
  check({"stablehlo.log_plus_one",
         OpKind::log1p,
         {0.0f, -0.0f, 0.5f, -0.5f, -1.0f, -2.0f, kInf, kNaN},
         {},
         {0.0, -0.0, 0.4054651081081644, -0.6931471805599453, -kInf, kNaN, kInf, kNaN}});
  check(
      {"stablehlo.exponential_minus_one",
       OpKind::expm1,
       {0.0f, -0.0f, 0.5f, -0.5f, 1.0f, -kInf, kInf, kNaN},
       {},
       {0.0, -0.0, 0.6487212707001282, -0.3934693402873666, 1.718281828459045, -1.0, kInf, kNaN}});
  check({"stablehlo.cbrt",
         OpKind::cbrt,
         {0.0f, -0.0f, 8.0f, -27.0f, 0.125f, 2.0f, -kInf, kNaN},
         {},
         {0.0, -0.0, 2.0, -3.0, 0.5, 1.2599210498948732, -kInf, kNaN}});
  check(
      {"chlo.erf",
       OpKind::erf,
       {0.0f, -0.0f, 0.5f, -1.5f, 3.0f, kInf, -kInf, kNaN},
       {},
       {0.0, -0.0, 0.5204998778130465, -0.9661051464753108, 0.9999779095030014, 1.0, -1.0, kNaN}});
}

TEST_CASE("is_finite gives an i1 that is 1 for finite values only") {
  check({"stablehlo.is_finite",
         OpKind::isfinite,
         {0.0f, -0.0f, 1.5f, -3.0f, kInf, -kInf, kNaN, 1.0e30f},
         {},
         {1, 1, 1, 1, 0, 0, 0, 1},
         true});
}

TEST_CASE("atan2, power and remainder (the dividend's sign)") {
  check({"stablehlo.atan2",
         OpKind::atan2,
         {0.0f, -0.0f, 1.0f, 1.0f, -1.0f, 0.0f, kInf, kNaN},
         {1.0f, 1.0f, 0.0f, -1.0f, -1.0f, -1.0f, kInf, 1.0f},
         {0.0, -0.0, kPi / 2, 3 * kPi / 4, -3 * kPi / 4, kPi, kPi / 4, kNaN}});
  // pow(1, NaN) = 1 and pow(NaN, 0) = 1 (C99 Annex F); a negative base with a fractional
  // exponent is NaN; 0^-1 = +inf.
  check({"stablehlo.power",
         OpKind::power,
         {2.0f, -2.0f, 4.0f, -2.0f, 0.0f, 2.0f, kNaN, 1.0f},
         {3.0f, 2.0f, 0.5f, 0.5f, -1.0f, -2.0f, 0.0f, kNaN},
         {8, 4, 2, kNaN, kInf, 0.25, 1, 1}});
  check({"stablehlo.remainder",
         OpKind::remainder,
         {17.0f, -17.0f, 17.0f, -17.0f, 5.5f, -0.0f, kInf, 1.0f},
         {3.0f, 3.0f, -3.0f, -3.0f, 2.0f, 1.0f, 1.0f, 0.0f},
         {2, -2, 2, -2, 1.5, -0.0, kNaN, kNaN}});
}

TEST_CASE("maximum and minimum propagate NaN") {
  std::vector<float> a{kInf, kNaN, 1.0f, -1.0f, kNaN, -kInf, 3.0f, 0.5f};
  std::vector<float> b{kNaN, kInf, 2.0f, -2.0f, kNaN, 1.0f, 3.0f, -0.5f};
  check({"stablehlo.maximum", OpKind::maximum, a, b, {kNaN, kNaN, 2, -1, kNaN, 1, 3, 0.5}});
  check({"stablehlo.minimum", OpKind::minimum, a, b, {kNaN, kNaN, 1, -2, kNaN, -kInf, 3, -0.5}});
}
