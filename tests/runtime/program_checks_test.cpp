// evaluate_checks: StableHLO's check semantics (3 ULP, 1e-3, equality; NaN matches NaN) and the
// device tolerance, on hand-made output tensors with hand-worked values.
#include "meshplan/runtime/program_checks.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace meshplan;
using namespace meshplan::runtime;

namespace {

CheckOutcome one(const std::string& kind, const std::string& element, std::vector<float> actual,
                 std::vector<float> expected) {
  std::vector<Tensor> outs(2);
  outs[0] = Tensor({static_cast<int64_t>(actual.size())});
  outs[1] = Tensor({static_cast<int64_t>(expected.size())});
  std::copy(actual.begin(), actual.end(), outs[0].data.begin());
  std::copy(expected.begin(), expected.end(), outs[1].data.begin());
  ProgramCheck c{0, kind, element, "m.mlir:3:5", 0, 1};
  auto r = evaluate_checks({c}, outs);
  REQUIRE(r.size() == 1);
  return r[0];
}

float ulps_up(float x, int n) {
  for (int i = 0; i < n; ++i) x = std::nextafter(x, INFINITY);
  return x;
}

}  // namespace

TEST_CASE("expect_close: 3 f32 ULP meet the check; 4 pass only within the device tolerance") {
  CheckOutcome three = one("expect_close", "f32", {1.0f}, {ulps_up(1.0f, 3)});
  CHECK(three.ok);
  CHECK(three.exact);
  CheckOutcome four = one("expect_close", "f32", {1.0f}, {ulps_up(1.0f, 4)});
  CHECK(four.ok);
  CHECK_FALSE(four.exact);
  // 1 vs 1.02: |d| = 0.02 > 2^-10 + 2^-6 * 1.02 = 0.01692.
  CheckOutcome far = one("expect_close", "f32", {1.0f}, {1.02f});
  CHECK_FALSE(far.ok);
  CHECK(far.failures == 1);
}

TEST_CASE("expect_close on bf16 counts bf16 ULPs (2^-7 at 1)") {
  // 1 + 3 * 2^-7 = 1.0234375: three bf16 steps.
  CHECK(one("expect_close", "bf16", {1.0f}, {1.0234375f}).exact);
  // Four steps (1.03125): |d| = 0.03125 > 2^-10 + 2^-6 * 1.03125 = 0.01709: a failure.
  CHECK_FALSE(one("expect_close", "bf16", {1.0f}, {1.03125f}).ok);
}

TEST_CASE("non-finite values: NaN matches NaN, infinities only themselves") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(one("expect_close", "f32", {nan, INFINITY}, {-nan, INFINITY}).exact);
  CHECK_FALSE(one("expect_close", "f32", {3.0e38f}, {INFINITY}).ok);
  CHECK_FALSE(one("expect_eq", "f32", {nan}, {1.0f}).ok);
  CHECK_FALSE(one("expect_almost_eq", "f32", {-INFINITY}, {INFINITY}).ok);
}

TEST_CASE("expect_eq: exact for integers; -0 vs +0 passes floats only within the tolerance") {
  CHECK(one("expect_eq", "i32", {16777216.0f, -3.0f}, {16777216.0f, -3.0f}).exact);
  CheckOutcome off = one("expect_eq", "i32", {1.0f, 4.0f}, {1.0f, 3.0f});
  CHECK_FALSE(off.ok);
  CHECK(off.worst_index == std::vector<int64_t>{1});
  CheckOutcome zeros = one("expect_eq", "f32", {-0.0f}, {0.0f});
  CHECK(zeros.ok);
  CHECK_FALSE(zeros.exact);
  CHECK_FALSE(one("expect_eq", "i1", {0.0f}, {1.0f}).ok);
}

TEST_CASE("expect_almost_eq: within 1e-3 absolute") {
  CHECK(one("expect_almost_eq", "f32", {1.0f}, {1.0009f}).exact);
  CHECK_FALSE(one("expect_almost_eq", "f32", {1.0f}, {1.0011f}).exact);
}

TEST_CASE("f64 is computed in f32: only equality meets expect_close, the tolerance does the rest") {
  CHECK(one("expect_close", "f64", {0.5f}, {0.5f}).exact);
  CheckOutcome near = one("expect_close", "f64", {0.1f}, {ulps_up(0.1f, 1)});
  CHECK(near.ok);
  CHECK_FALSE(near.exact);
}
