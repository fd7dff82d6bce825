// gelu_tanh (gelu's tanh approximation): spot values worked out from its formula, the kernel
// against the reference on a ragged 3-D tensor, and bf16 storage.
#include <doctest/doctest.h>

#include "device/op_test_util.hpp"

using namespace meshplan;
using namespace meshplan::test;

TEST_CASE("gelu_tanh is 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))") {
  // Expected values from the formula in double precision (not from meshplan), differing from
  // erf-gelu in the 4th digit (gelu(-1) = -0.158655).
  OpInput x{"x", {1, 8}, {-3.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 2.0f, 3.0f}};
  const double want[] = {
      -0.0036373920817729943, -0.15880800939172324, -0.15428599017485606, 0.0,
      0.34571400982514394,    0.8411919906082768,   1.954597694087775,    2.996362607918227};
  OpRun f = run_op(OpKind::gelu_tanh, {with_dtype(x, DType::f32)}, grid_config(), DType::f32);
  OpRun b = run_op(OpKind::gelu_tanh, {x}, grid_config());
  for (size_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(f.got[i] == doctest::Approx(want[i]).epsilon(1e-5));
    CHECK(b.got[i] == doctest::Approx(want[i]).epsilon(1.0 / 128));  // bf16 storage
  }
  CHECK(device::op_family(OpKind::gelu_tanh) == device::OpFamily::eltwise_unary);
}

TEST_CASE("gelu_tanh: the kernel matches the reference on a ragged tensor over a 4x2 grid") {
  OpRun r = run_op(OpKind::gelu_tanh, {rand_input("x", {2, 45, 70}, 7, -4, 4)}, grid_config(4, 2));
  CHECK(r.shape == std::vector<int64_t>{2, 45, 70});
  CHECK(r.rel_err() < 0.01);
}
