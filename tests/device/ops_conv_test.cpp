// conv2d (direct, per output tile) and pooling kernels against the host reference, NHWC.
#include <doctest/doctest.h>

#include "device/op_test_util.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {
OpConfig window_config(int kh, int kw, int sh, int sw, std::array<int, 4> pad, int dh = 1,
                       int dw = 1, int groups = 1) {
  OpConfig c = grid_config();
  c.kernel[0] = kh, c.kernel[1] = kw;
  c.stride[0] = sh, c.stride[1] = sw;
  for (int i = 0; i < 4; ++i) c.padding[i] = pad[i];
  c.dilation[0] = dh, c.dilation[1] = dw;
  c.groups = groups;
  return c;
}
}  // namespace

TEST_CASE("conv2d matches the reference: padding, stride, dilation, groups, bias") {
  OpInput x = rand_input("x", {2, 12, 11, 8}, 1);
  SUBCASE("3x3, same padding") {
    OpRun r = run_op(OpKind::conv2d, {x, rand_input("w", {16, 3, 3, 8}, 2)},
                     window_config(1, 1, 1, 1, {1, 1, 1, 1}));
    CHECK(r.shape == std::vector<int64_t>{2, 12, 11, 16});
    CHECK(r.rel_err() < 0.01);
  }
  SUBCASE("stride 2, dilation 2, asymmetric padding, bias, relu") {
    OpConfig c = window_config(1, 1, 2, 2, {0, 1, 2, 0}, 2, 2);
    c.activation = device::Activation::relu;
    OpRun r =
        run_op(OpKind::conv2d, {x, rand_input("w", {40, 3, 2, 8}, 3), rand_input("b", {40}, 4)}, c);
    CHECK(r.shape == std::vector<int64_t>{2, 5, 6, 40});
    CHECK(r.rel_err() < 0.01);
  }
  SUBCASE("grouped and depthwise") {
    CHECK(run_op(OpKind::conv2d, {x, rand_input("w", {6, 3, 3, 4}, 5)},
                 window_config(1, 1, 1, 1, {0, 0, 0, 0}, 1, 1, 2))
              .rel_err() < 0.01);
    OpRun dw =
        run_op(OpKind::conv2d, {x, rand_input("w", {8, 3, 3, 1}, 6), rand_input("b", {1, 8}, 7)},
               window_config(1, 1, 1, 1, {1, 1, 1, 1}, 1, 1, 8));
    CHECK(dw.rel_err() < 0.01);
  }
  SUBCASE("1x1 conv is a per-pixel matmul") {
    OpInput one{"x", {1, 1, 1, 2}, {1, 2}}, w{"w", {2, 1, 1, 2}, {1, 1, 3, -1}};
    CHECK(run_op(OpKind::conv2d, {one, w}, grid_config()).got == std::vector<float>{3, 1});
  }
}

TEST_CASE("max_pool2d, avg_pool2d and global_avg_pool2d") {
  OpInput x = rand_input("x", {2, 13, 10, 40}, 1);
  OpRun mp = run_op(OpKind::max_pool2d, {x}, window_config(3, 3, 2, 2, {1, 1, 1, 1}));
  CHECK(mp.shape == std::vector<int64_t>{2, 7, 5, 40});
  CHECK(mp.rel_err() == 0.0);
  OpRun ap = run_op(OpKind::avg_pool2d, {x}, window_config(2, 2, 2, 2, {0, 0, 0, 0}));
  CHECK(ap.shape == std::vector<int64_t>{2, 6, 5, 40});
  CHECK(ap.rel_err() < 0.01);
  CHECK(run_op(OpKind::avg_pool2d, {x}, window_config(3, 2, 1, 2, {1, 1, 0, 1})).rel_err() < 0.01);
  OpRun gp = run_op(OpKind::global_avg_pool2d, {x}, grid_config());
  CHECK(gp.shape == std::vector<int64_t>{2, 1, 1, 40});
  CHECK(gp.rel_err() < 0.01);
  OpInput tiny{"t", {1, 2, 2, 1}, {1, 2, 3, 6}};
  CHECK(run_op(OpKind::max_pool2d, {tiny}, window_config(2, 2, 1, 1, {0, 0, 0, 0})).got ==
        std::vector<float>{6});
  CHECK(run_op(OpKind::avg_pool2d, {tiny}, window_config(2, 2, 1, 1, {0, 0, 0, 0})).got ==
        std::vector<float>{3});
}

TEST_CASE("conv and pool shape errors name the shapes") {
  std::string e = shape_error(OpKind::conv2d, {{1, 8, 8, 6}, {4, 3, 3, 4}}, grid_config());
  CHECK(contains(e, "[4x3x3x4]"));
  CHECK(contains(e, "[1x8x8x6]"));
  CHECK(
      contains(shape_error(OpKind::conv2d, {{1, 8, 8}, {4, 3, 3, 4}}, grid_config()), "not NHWC"));
  CHECK(contains(shape_error(OpKind::conv2d, {{1, 8, 8, 6}, {4, 3, 3, 3}},
                             window_config(1, 1, 1, 1, {0, 0, 0, 0}, 1, 1, 4)),
                 "groups 4"));
  CHECK(contains(
      shape_error(OpKind::max_pool2d, {{1, 2, 2, 3}}, window_config(3, 3, 1, 1, {0, 0, 0, 0})),
      "does not fit"));
  CHECK(contains(shape_error(OpKind::conv2d, {{1, 4, 4, 2}, {3, 1, 1, 2}, {4}}, grid_config()),
                 "conv2d bias [4]"));
}
