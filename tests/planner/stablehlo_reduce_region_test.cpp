// Reduce regions recognised by what they compute, not how they are written: i1 regions by
// their truth table (select/or as Torch-XLA prints jnp.any, and via select, or of nots), float
// regions by agreement with maximum/minimum on probes, NaN included. Programs run on the
// emulated chip; expected values are worked out by hand from the StableHLO spec.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "meshplan/planner/key.hpp"
#include "meshplan/planner/stablehlo.hpp"
#include "plan_run.hpp"

using namespace meshplan;
using meshplan::test::lower_error;

namespace {

using Values = std::vector<float>;

/// Runs `text` on rank-1 `inputs` under the dram policy; each result must equal `want`'s row
/// (NaN matching NaN).
void check(const std::string& text, const std::vector<Values>& inputs,
           const std::vector<Values>& want) {
  planner::Graph g = test::lower_text(text, "reduce_region.mlir");
  std::vector<Values> got = test::run_rank1(g, "dram", "reduce_region", inputs);
  REQUIRE(got.size() == want.size());
  for (size_t r = 0; r < want.size(); ++r) {
    CAPTURE(r);
    REQUIRE(got[r].size() == want[r].size());
    for (size_t i = 0; i < want[r].size(); ++i) {
      CAPTURE(i);
      if (std::isnan(want[r][i]))
        CHECK(std::isnan(got[r][i]));
      else
        CHECK(got[r][i] == want[r][i]);
    }
  }
}

/// The module printed (as --emit=stablehlo prints it) parses back to the same text and lowers
/// to a graph of the same key.
void check_round_trip(const std::string& text) {
  auto m = planner::shlo::parse_module(text, "rt.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  const std::string printed = planner::shlo::print_module(*m);
  auto again = planner::shlo::parse_module(printed, "printed.mlir");
  REQUIRE_MESSAGE(again, (again ? "" : again.error().message));
  CHECK(planner::shlo::print_module(*again) == printed);
  auto g1 = planner::shlo::lower_to_graph(*m);
  auto g2 = planner::shlo::lower_to_graph(*again);
  REQUIRE_MESSAGE(g1, (g1 ? "" : g1.error().message));
  REQUIRE_MESSAGE(g2, (g2 ? "" : g2.error().message));
  CHECK(planner::graph_key(*g1) == planner::graph_key(*g2));
}

/// x: [8] -> (x > 0) as 2x4 i1, reduced over dim 1 by `region` from init `init`, as f32 [2].
std::string mask_reduce(const std::string& init, const std::string& region) {
  return R"(func.func @main(%x: tensor<8xf32>) -> tensor<2xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<8xf32>
  %init = stablehlo.constant dense<)" +
         init + R"(> : tensor<i1>
  %m = stablehlo.compare GT, %x, %zero : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
  %m2 = stablehlo.reshape %m : (tensor<8xi1>) -> tensor<2x4xi1>
  %r = stablehlo.reduce(%m2 init: %init) across dimensions = [1] : (tensor<2x4xi1>, tensor<i1>) -> tensor<2xi1>
   reducer(%a: tensor<i1>, %b: tensor<i1>) {
)" + region +
         R"(  }
  %f = stablehlo.convert %r : (tensor<2xi1>) -> tensor<2xf32>
  return %f : tensor<2xf32>
}
)";
}

// Rows of x > 0: row 0 = {0, 1, 0, 0}, row 1 = {1, 1, 1, 1}.
const Values kMaskInput = {-1, 2, 0, -3, 5, 1, 0.5f, 7};

// select(or(a, b), true, false) with sdy.constant, as tt-mlir's Torch-XLA programs write any.
const char* const kSelectOr = R"(    %t = sdy.constant dense<true> : tensor<i1>
    %f = sdy.constant dense<false> : tensor<i1>
    %o = stablehlo.or %a, %b : tensor<i1>
    %s = stablehlo.select %o, %t, %f : tensor<i1>, tensor<i1>
    stablehlo.return %s : tensor<i1>
)";

const std::string kFloatMax = R"(func.func @main(%x: tensor<8xf32>) -> tensor<2xf32> {
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %x2 = stablehlo.reshape %x : (tensor<8xf32>) -> tensor<2x4xf32>
  %r = stablehlo.reduce(%x2 init: %init) across dimensions = [1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
   reducer(%a: tensor<f32>, %b: tensor<f32>) {
    %gt = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %nan = stablehlo.compare NE, %a, %a : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %take = stablehlo.or %gt, %nan : tensor<i1>
    %s = stablehlo.select %take, %a, %b : tensor<i1>, tensor<f32>
    stablehlo.return %s : tensor<f32>
  }
  return %r : tensor<2xf32>
}
)";

}  // namespace

TEST_CASE("an i1 reduce whose region is select(or(a, b), true, false) is any") {
  check(mask_reduce("false", kSelectOr), {kMaskInput}, {{1, 1}});
  check(mask_reduce("false", kSelectOr), {{-1, -2, 0, -3, 5, -1, -0.5f, -7}}, {{0, 1}});
  // A true init makes the result true whatever the input.
  check(mask_reduce("true", kSelectOr), {{-1, -2, 0, -3, -5, -1, -0.5f, -7}}, {{1, 1}});
  check_round_trip(mask_reduce("false", kSelectOr));
}

TEST_CASE("i1 regions computing and, written with select or with or of nots, are all") {
  // and(a, b) = select(a, b, false).
  const std::string via_select = R"(    %f = stablehlo.constant dense<false> : tensor<i1>
    %s = stablehlo.select %a, %b, %f : tensor<i1>, tensor<i1>
    stablehlo.return %s : tensor<i1>
)";
  // and(a, b) = not(or(not a, not b)).
  const std::string de_morgan = R"(    %na = stablehlo.not %a : tensor<i1>
    %nb = stablehlo.not %b : tensor<i1>
    %o = stablehlo.or %na, %nb : tensor<i1>
    %n = stablehlo.not %o : tensor<i1>
    stablehlo.return %n : tensor<i1>
)";
  for (const std::string& region : {via_select, de_morgan}) {
    check(mask_reduce("true", region), {kMaskInput}, {{0, 1}});
    check(mask_reduce("false", region), {kMaskInput}, {{0, 0}});  // and with false: false
    check_round_trip(mask_reduce("true", region));
  }
}

TEST_CASE("a float region select(a > b or a != a, a, b) is maximum, NaN propagating") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  check(kFloatMax, {{-1, 2, 0, -3, -5, -1, -0.5f, -7}}, {{2, -0.5f}});
  check(kFloatMax, {{-1, nan, 0, -3, -5, -1, -0.5f, -7}}, {{nan, -0.5f}});
  check_round_trip(kFloatMax);
  // With LT it is minimum.
  std::string min = kFloatMax;
  min.replace(min.find("GT,"), 3, "LT,");
  min.replace(min.find("0xFF800000"), 10, "0x7F800000");
  check(min, {{-1, 2, 0, -3, -5, -1, -0.5f, -7}}, {{-3, -7}});
}

TEST_CASE("regions computing no reduction the device has are located refusals") {
  // select(a > b, a, b) is not maximum: it drops a NaN in a.
  std::string no_nan = kFloatMax;
  const std::string take = "%take = stablehlo.or %gt, %nan";
  no_nan.replace(no_nan.find(take), take.size(), "%take = stablehlo.and %gt, %gt");
  CHECK(lower_error(no_nan) ==
        "bad.mlir:4:3: unimplemented: stablehlo.reduce with a stablehlo.compare region that "
        "computes none of add, maximum, minimum and multiply of its two arguments (and/or on i1; "
        "maximum/minimum also written with compare and select, NaN propagating)");
  // xor on i1 (parity) is no and/or.
  const std::string xor_region = R"(    %x = stablehlo.xor %a, %b : tensor<i1>
    stablehlo.return %x : tensor<i1>
)";
  CHECK(lower_error(mask_reduce("false", xor_region)) ==
        "bad.mlir:6:3: unimplemented: stablehlo.reduce with a stablehlo.xor region (only add, "
        "maximum, minimum and multiply lower)");
}
