// Conformance of chlo's special functions as JAX emits them (chlo.lgamma, digamma, erfc,
// erf_inv, bessel_i1e): per op, a module of that one op (pretty syntax) -> parse -> lower ->
// plan -> run on the emulated chip, in f32 and in bf16, against values computed with mpmath by
// chlo_special_ref.py (its output is chlo_special_ref.inc): poles, infinities, NaN, signed
// zeros and both branches of each piecewise formula included.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "plan_run.hpp"

using namespace meshplan;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  std::string op;
  std::vector<double> x, want;
};

const Case kCases[] = {
#include "chlo_special_ref.inc"
};

/// A [64, 64] module (two tiles each way, so sharded layouts split it) applying `op`.
std::string module_text(const std::string& op, const std::string& el) {
  std::string t = "tensor<64x64x" + el + ">";
  return "func.func public @main(%a: " + t + ") -> " + t + " {\n  %0 = " + op + " %a : " + t +
         " -> " + t + "\n  return %0 : " + t + "\n}\n";
}

/// Within `rel` of `want`, or `abs` of it near a zero of the function; `x` = +-0 maps to a
/// zero of its own sign exactly.
bool matches(double x, float got, double want, double rel, double abs) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (x == 0.0 && want == 0.0) return got == 0.0f && std::signbit(got) == std::signbit(want);
  return std::fabs(got - want) <= rel * std::fabs(want) + abs;
}

}  // namespace

TEST_CASE("chlo special functions match mpmath in f32 and bf16 (poles, inf, NaN, -0.0)") {
  for (const Case& c : kCases) {
    REQUIRE(c.x.size() == c.want.size());
    for (std::string el : {"f32", "bf16"}) {
      CAPTURE(c.op);
      CAPTURE(el);
      // f32: a few ulps of f32 (the formulas cancel near the functions' zeros: lgamma(1) and
      // lgamma(2) come out within 1e-6 of 0); bf16: the result's rounding.
      const double rel = el == "f32" ? 2e-6 : 1.0 / 128, abs = el == "f32" ? 1e-6 : 1e-3;
      auto m = planner::shlo::parse_module(module_text(c.op, el), "special.mlir");
      REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
      auto g = planner::shlo::lower_to_graph(*m);
      REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
      std::vector<float> in(64 * 64);
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(c.x[i % c.x.size()]);
      for (const char* policy : {"dram", "greedy"}) {
        CAPTURE(std::string(policy));
        const std::vector<int64_t> shape{64, 64};
        std::vector<runtime::TensorView> views{{shape, in}};
        auto out = test::plan_and_run(*g, policy, "special", views);
        REQUIRE(out.size() == 1);
        REQUIRE(out[0].data.size() == in.size());
        for (size_t i = 0; i < c.x.size(); ++i) {
          CAPTURE(c.x[i]);
          CHECK_MESSAGE(matches(c.x[i], out[0].data[i], c.want[i], rel, abs), c.op, "(", c.x[i],
                        ") = ", out[0].data[i], ", expected ", c.want[i]);
        }
      }
    }
  }
}
