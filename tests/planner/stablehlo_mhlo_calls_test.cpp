// XLA's `custom_call @mhlo.<op>` encoding of CHLO ops StableHLO lacks (mhlo.erf, mhlo.asinh with
// empty mhlo.attributes): lowered as the chlo op, run on the emulated chip against values of
// the functions worked out independently; other targets stay located refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "plan_run.hpp"

using namespace meshplan;

namespace {

std::string call(const std::string& target, const std::string& attrs) {
  return "func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
         "  %0 = stablehlo.custom_call @" +
         target + "(%x) {mhlo.attributes = " + attrs +
         ", mhlo.version = 1 : i64} : (tensor<3xf32>) -> tensor<3xf32>\n"
         "  return %0 : tensor<3xf32>\n}\n";
}

void check(const std::string& text, const std::vector<float>& x, const std::vector<float>& want) {
  planner::Graph g = test::lower_text(text, "mhlo.mlir");
  auto got = test::run_rank1(g, "dram", "mhlo", {x});
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(got[0][i] - want[i]) <= 2e-3f * (1 + std::fabs(want[i])));
  }
}

}  // namespace

TEST_CASE("custom_call @mhlo.erf and @mhlo.asinh lower as chlo.erf and chlo.asinh") {
  // erf(0) = 0, erf(0.5) = 0.5204999, erf(-1) = -0.8427008.
  check(call("mhlo.erf", "{}"), {0, 0.5f, -1}, {0, 0.5204999f, -0.8427008f});
  // asinh(x) = ln(x + sqrt(x^2 + 1)): asinh(0) = 0, asinh(1) = 0.8813736, asinh(-2) = -1.4436355.
  check(call("mhlo.asinh", "{}"), {0, 1, -2}, {0, 0.8813736f, -1.4436355f});
}

TEST_CASE("mhlo custom calls with attributes or without a chlo op are located refusals") {
  CHECK(test::lower_error(call("mhlo.erf", "{mode = 1 : i64}")) ==
        "bad.mlir:2:3: unimplemented: stablehlo.custom_call @mhlo.erf has no meshplan op");
  CHECK(test::lower_error(call("mhlo.nope", "{}")) ==
        "bad.mlir:2:3: unimplemented: stablehlo.custom_call @mhlo.nope has no meshplan op");
}
