// The comparisons (eq .. ge), where, clamp, reduce_min and reduce_prod: spot values, broadcasting,
// dtypes, the f32 reference against the kernels on ragged shapes, and bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "device/op_test_util.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

OpConfig reduce_config(std::vector<int> dims, bool keepdim) {
  OpConfig c = grid_config(4, 2);
  c.num_dims = static_cast<uint8_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) c.dims[i] = static_cast<int8_t>(dims[i]);
  c.keepdim = keepdim;
  return c;
}

OpConfig clamp_config(float lo, float hi) {
  OpConfig c = grid_config(4, 2);
  c.clamp_min = lo;
  c.clamp_max = hi;
  return c;
}

}  // namespace

TEST_CASE("comparisons give 1 where the relation holds and 0 elsewhere, in the operands' dtype") {
  OpInput a{"a", {1, 5}, {1, 2, 3, 4, 5}};
  OpInput b{"b", {1, 5}, {5, 2, 1, 4, 0}};
  using V = std::vector<float>;
  CHECK(run_op(OpKind::eq, {a, b}, grid_config()).got == V{0, 1, 0, 1, 0});
  CHECK(run_op(OpKind::ne, {a, b}, grid_config()).got == V{1, 0, 1, 0, 1});
  CHECK(run_op(OpKind::lt, {a, b}, grid_config()).got == V{1, 0, 0, 0, 0});
  CHECK(run_op(OpKind::le, {a, b}, grid_config()).got == V{1, 1, 0, 1, 0});
  CHECK(run_op(OpKind::gt, {a, b}, grid_config()).got == V{0, 0, 1, 0, 1});
  CHECK(run_op(OpKind::ge, {a, b}, grid_config()).got == V{0, 1, 1, 1, 1});
  // The result keeps the operands' dtype (TTNN's convention), here i32.
  OpRun r =
      run_op(OpKind::gt, {with_dtype(a, DType::i32), with_dtype(b, DType::i32)}, grid_config());
  CHECK(r.got == V{0, 0, 1, 0, 1});
  std::vector<DType> dts{DType::i32, DType::i32};
  CHECK(*device::infer_dtype(OpKind::gt, dts, grid_config()) == DType::i32);
  // NaN compares unequal to everything, itself included.
  float nan = std::numeric_limits<float>::quiet_NaN();
  OpInput n{"n", {1, 2}, {nan, 1}}, m{"m", {1, 2}, {nan, nan}};
  CHECK(run_op(OpKind::eq, {n, m}, grid_config(), DType::f32).got == V{0, 0});
  CHECK(run_op(OpKind::ne, {n, m}, grid_config(), DType::f32).got == V{1, 1});
}

TEST_CASE("comparisons broadcast like the other binary ops and match the reference") {
  struct Shapes {
    std::vector<int64_t> a, b, out;
  };
  const Shapes shapes[] = {{{45, 70}, {45, 70}, {45, 70}},
                           {{45, 70}, {1, 70}, {45, 70}},
                           {{45, 1}, {45, 70}, {45, 70}},
                           {{2, 3, 33, 40}, {3, 1, 40}, {2, 3, 33, 40}}};
  uint32_t seed = 40;
  for (OpKind k : {OpKind::eq, OpKind::ne, OpKind::lt, OpKind::le, OpKind::gt, OpKind::ge})
    for (const Shapes& s : shapes) {
      CAPTURE(device::op_name(k));
      // Values from a small set so that ties (eq, le, ge) happen often.
      OpInput a = rand_input("a", s.a, seed++), b = rand_input("b", s.b, seed++);
      for (float& v : a.data) v = std::round(v * 2);
      for (float& v : b.data) v = std::round(v * 2);
      OpRun r = run_op(k, {a, b}, grid_config(4, 2));
      CHECK(r.shape == s.out);
      CHECK(r.got == r.want);
      int ones = 0;
      for (float v : r.got) ones += v == 1.0f;
      CHECK(ones > 0);  // both answers occur
      CHECK(ones < static_cast<int>(r.got.size()));
    }
}

TEST_CASE("where picks the true value where the condition is nonzero, broadcasting all three") {
  using V = std::vector<float>;
  OpInput cond{"c", {1, 4}, {1, 0, -2, 0}};
  OpInput x{"x", {1, 4}, {10, 20, 30, 40}}, y{"y", {1, 4}, {-1, -2, -3, -4}};
  CHECK(run_op(OpKind::where, {cond, x, y}, grid_config()).got == V{10, -2, 30, -4});
  // Scalar-like false value, column condition, row true values.
  OpInput col{"c", {3, 1}, {1, 0, 1}}, row{"x", {1, 4}, {1, 2, 3, 4}}, one{"y", {1}, {9}};
  OpRun r = run_op(OpKind::where, {col, row, one}, grid_config());
  CHECK(r.shape == std::vector<int64_t>{3, 4});
  CHECK(r.got == V{1, 2, 3, 4, 9, 9, 9, 9, 1, 2, 3, 4});
  // A condition of another dtype than the values (a mask in f32 selecting bf16 values).
  std::vector<DType> dts{DType::f32, DType::bf16, DType::bf16};
  CHECK(*device::infer_dtype(OpKind::where, dts, grid_config()) == DType::bf16);
  CHECK(run_op(OpKind::where, {with_dtype(cond, DType::f32), x, y}, grid_config()).got ==
        V{10, -2, 30, -4});
  // Ragged shapes against the reference.
  OpInput rc = rand_input("c", {2, 45, 1}, 60), rx = rand_input("x", {45, 70}, 61),
          ry = rand_input("y", {2, 1, 70}, 62);
  for (float& v : rc.data) v = v > 0 ? 1.0f : 0.0f;
  OpRun big = run_op(OpKind::where, {rc, rx, ry}, grid_config(4, 2));
  CHECK(big.shape == std::vector<int64_t>{2, 45, 70});
  CHECK(big.got == big.want);
}

TEST_CASE("clamp bounds every value to [min, max]") {
  using V = std::vector<float>;
  OpInput x{"x", {1, 6}, {-8, -1, 0, 3, 6, 7}};
  CHECK(run_op(OpKind::clamp, {x}, clamp_config(0, 6)).got == V{0, 0, 0, 3, 6, 6});  // ReLU6
  CHECK(run_op(OpKind::clamp, {x}, clamp_config(-1, -1)).got == V{-1, -1, -1, -1, -1, -1});
  // One-sided: the default bound is infinite.
  OpConfig lower = grid_config();
  lower.clamp_min = 2;
  CHECK(run_op(OpKind::clamp, {x}, lower).got == V{2, 2, 2, 3, 6, 7});
  OpRun r =
      run_op(OpKind::clamp, {rand_input("x", {2, 45, 70}, 70, -3, 3)}, clamp_config(-0.5f, 1.25f));
  CHECK(r.got == r.want);
  for (float v : r.got) CHECK((v >= -0.5f && v <= 1.25f));
}

TEST_CASE("reduce_min and reduce_prod reduce any dims, with and without keepdim") {
  using V = std::vector<float>;
  OpInput x{"x", {2, 3}, {1, -2, 3, 4, 5, 0.5f}};
  CHECK(run_op(OpKind::reduce_min, {x}, reduce_config({1}, false)).got == V{-2, 0.5f});
  CHECK(run_op(OpKind::reduce_min, {x}, reduce_config({0}, true)).got == V{1, -2, 0.5f});
  CHECK(run_op(OpKind::reduce_min, {x}, reduce_config({}, false)).got == V{-2});
  CHECK(run_op(OpKind::reduce_prod, {x}, reduce_config({1}, false)).got == V{-6, 10});
  CHECK(run_op(OpKind::reduce_prod, {x}, reduce_config({0}, false)).got == V{4, -10, 1.5f});
  OpRun all = run_op(OpKind::reduce_prod, {x}, reduce_config({}, true));
  CHECK(all.shape == std::vector<int64_t>{1, 1});
  CHECK(all.got == V{-60});
  struct Case {
    std::vector<int> dims;
    bool keepdim;
  };
  const Case cases[] = {{{2}, false}, {{1}, true}, {{0, 2}, false}, {{-2, -1}, true}, {{}, false}};
  uint32_t seed = 80;
  for (OpKind k : {OpKind::reduce_min, OpKind::reduce_prod})
    for (const Case& c : cases) {
      CAPTURE(device::op_name(k));
      CAPTURE(c.dims.size());
      // Products of values near 1 stay in range over the 6300 elements of the largest case.
      OpRun r = run_op(k, {rand_input("x", {2, 45, 70}, seed++, 0.99f, 1.01f)},
                       reduce_config(c.dims, c.keepdim), DType::f32);
      CHECK(r.rel_err() < 1e-5);
    }
}

TEST_CASE("bad input to the new ops fails with messages naming the op and shapes") {
  CHECK(contains(shape_error(OpKind::lt, {{4, 5}, {4, 6}}, grid_config()),
                 "shapes [4x5] and [4x6] do not broadcast"));
  std::string w = shape_error(OpKind::where, {{4, 5}, {4, 5}, {3, 5}}, grid_config());
  CHECK(contains(w, "condition [4x5], true values [4x5] and false values [3x5] do not broadcast"));
  CHECK(contains(shape_error(OpKind::where, {{4, 5}, {4, 5}}, grid_config()),
                 "where takes 3 operand(s), got 2"));
  std::string c = shape_error(OpKind::clamp, {{4, 5}}, clamp_config(2, 1));
  CHECK(contains(c, "clamp min 2 is not <= max 1"));
  CHECK(contains(c, "[4x5]"));
  CHECK(contains(
      shape_error(OpKind::clamp, {{4}}, clamp_config(std::numeric_limits<float>::quiet_NaN(), 1)),
      "clamp min nan is not <= max 1"));
  std::string r = shape_error(OpKind::reduce_prod, {{4, 5}}, reduce_config({2}, false));
  CHECK(contains(r, "reduce_prod of [4x5]"));
  CHECK(contains(r, "out of range for rank 2"));
  CHECK(contains(shape_error(OpKind::reduce_min, {{4, 5}}, reduce_config({0, -2}, false)),
                 "listed twice"));
  std::vector<DType> mixed{DType::f32, DType::bf16, DType::f32};
  auto d = device::infer_dtype(OpKind::where, mixed, grid_config());
  REQUIRE_FALSE(d);
  CHECK(contains(d.error().message, "where's true values are bf16, its false values f32"));
  std::vector<DType> cmp{DType::f32, DType::bf16};
  REQUIRE_FALSE(device::infer_dtype(OpKind::eq, cmp, grid_config()));
}
