// Reductions (sum/mean/max over any dims, keepdim), softmax and the norms against the host
// reference, on ragged shapes.
#include <doctest/doctest.h>

#include "device/op_test_util.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {
OpConfig reduce_config(std::vector<int> dims, bool keepdim) {
  OpConfig c = grid_config();
  c.num_dims = static_cast<uint8_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) c.dims[i] = static_cast<int8_t>(dims[i]);
  c.keepdim = keepdim;
  return c;
}
}  // namespace

TEST_CASE("reduce_sum / mean / max over dims, with and without keepdim") {
  struct Case {
    std::vector<int> dims;
    bool keepdim;
    std::vector<int64_t> out;
  };
  const Case cases[] = {{{-1}, false, {2, 45}}, {{-1}, true, {2, 45, 1}},
                        {{0}, false, {45, 70}}, {{1}, true, {2, 1, 70}},
                        {{0, 2}, false, {45}},  {{2, 0}, true, {1, 45, 1}},
                        {{}, false, {}},        {{}, true, {1, 1, 1}}};
  uint32_t seed = 1;
  for (OpKind k : {OpKind::reduce_sum, OpKind::reduce_mean, OpKind::reduce_max})
    for (const Case& c : cases) {
      CAPTURE(device::op_name(k));
      CAPTURE(c.dims.size());
      CAPTURE(c.keepdim);
      OpRun r = run_op(k, {rand_input("x", {2, 45, 70}, seed++)}, reduce_config(c.dims, c.keepdim));
      CHECK(r.shape == c.out);
      CHECK(r.rel_err() < 0.01);
    }
}

TEST_CASE("reductions: exact small values") {
  OpInput x{"x", {2, 3}, {1, 2, 3, -4, 5, -6}};
  CHECK(run_op(OpKind::reduce_sum, {x}, reduce_config({1}, false)).got ==
        std::vector<float>{6, -5});
  CHECK(run_op(OpKind::reduce_max, {x}, reduce_config({0}, false)).got ==
        std::vector<float>{1, 5, 3});
  CHECK(run_op(OpKind::reduce_mean, {x}, reduce_config({}, false)).got ==
        std::vector<float>{device::round_bf16(1.0f / 6.0f)});
}

TEST_CASE("softmax over the last dim is numerically stable") {
  OpConfig c = grid_config();
  CHECK(run_op(OpKind::softmax, {rand_input("x", {3, 45, 70}, 1, -3, 3)}, c).rel_err() < 0.01);
  // Large logits: a naive exp would overflow to inf.
  OpRun big = run_op(OpKind::softmax, {rand_input("x", {40, 130}, 2, 100, 140)}, c);
  CHECK(big.rel_err() < 0.02);
  for (float v : big.got) CHECK(std::isfinite(v));
  // Each row sums to one.
  OpRun r = run_op(OpKind::softmax, {rand_input("x", {5, 37}, 3)}, c);
  for (int row = 0; row < 5; ++row) {
    double s = 0;
    for (int j = 0; j < 37; ++j) s += r.got[row * 37 + j];
    CHECK(s == doctest::Approx(1.0).epsilon(0.02));
  }
  c.num_dims = 1;
  c.dims[0] = -1;
  CHECK(run_op(OpKind::softmax, {rand_input("x", {45, 70}, 4)}, c).rel_err() < 0.01);
  c.dims[0] = 2;
  CHECK(contains(shape_error(OpKind::softmax, {{45, 70}}, c), "softmax dim 2 is out of range"));
}

TEST_CASE("softmax over every dim, positive and negative, matches the reference") {
  OpInput x = rand_input("x", {3, 5, 45, 70}, 11, -4, 4);
  for (int d = -4; d < 4; ++d) {
    CAPTURE(d);
    OpConfig c = grid_config(4, 2);
    c.num_dims = 1;
    c.dims[0] = static_cast<int8_t>(d);
    OpRun r = run_op(OpKind::softmax, {x}, c);
    CHECK(r.rel_err() < 0.01);
  }
  // Over dim 0 of [4, 37]: each column sums to one, large logits stay finite.
  OpConfig c = grid_config();
  c.num_dims = 1;
  c.dims[0] = 0;
  OpRun r = run_op(OpKind::softmax, {rand_input("x", {4, 37}, 12, 100, 140)}, c);
  CHECK(r.rel_err() < 0.02);
  for (int col = 0; col < 37; ++col) {
    double s = 0;
    for (int row = 0; row < 4; ++row) {
      CHECK(std::isfinite(r.got[row * 37 + col]));
      s += r.got[row * 37 + col];
    }
    CHECK(s == doctest::Approx(1.0).epsilon(0.02));
  }
}

TEST_CASE("layer_norm and rms_norm, with and without weight and bias") {
  OpConfig c = grid_config();
  OpInput x = rand_input("x", {2, 45, 70}, 1, -2, 3);
  OpInput w = rand_input("w", {70}, 2, 0.5f, 1.5f), b = rand_input("b", {70}, 3);
  CHECK(run_op(OpKind::layer_norm, {x}, c).rel_err() < 0.01);
  CHECK(run_op(OpKind::layer_norm, {x, w}, c).rel_err() < 0.01);
  CHECK(run_op(OpKind::layer_norm, {x, w, b}, c).rel_err() < 0.01);
  CHECK(run_op(OpKind::rms_norm, {x}, c).rel_err() < 0.01);
  CHECK(run_op(OpKind::rms_norm, {x, w}, c).rel_err() < 0.01);
  // Weight given as [1, N]; a large epsilon changes the result (so it is really used).
  OpInput w2 = rand_input("w", {1, 70}, 4, 0.5f, 1.5f);
  c.epsilon = 0.5f;
  OpRun eps = run_op(OpKind::layer_norm, {x, w2}, c);
  CHECK(eps.rel_err() < 0.01);
  c.epsilon = 1e-5f;
  OpRun small = run_op(OpKind::layer_norm, {x, w2}, c);
  CHECK(std::fabs(eps.got[0] - small.got[0]) > 1e-3);
  // Normalised rows: mean 0, variance 1.
  OpRun n = run_op(OpKind::layer_norm, {rand_input("x", {3, 100}, 5, 2, 6)}, c);
  double mean = 0, var = 0;
  for (int j = 0; j < 100; ++j) mean += n.got[j];
  mean /= 100;
  for (int j = 0; j < 100; ++j) var += (n.got[j] - mean) * (n.got[j] - mean);
  CHECK(std::fabs(mean) < 0.02);
  CHECK(var / 100 == doctest::Approx(1.0).epsilon(0.03));
}

TEST_CASE("reduction and norm shape errors name the shapes") {
  CHECK(contains(shape_error(OpKind::reduce_sum, {{4, 5}}, reduce_config({1, -1}, false)),
                 "listed twice"));
  CHECK(contains(shape_error(OpKind::reduce_max, {{4, 5}}, reduce_config({2}, false)),
                 "out of range for rank 2"));
  std::string e = shape_error(OpKind::layer_norm, {{4, 5}, {4}}, grid_config());
  CHECK(contains(e, "weight [4]"));
  CHECK(contains(e, "5 values"));
  CHECK(contains(shape_error(OpKind::rms_norm, {{4, 5}, {5}, {5}}, grid_config()),
                 "rms_norm takes 1 to 2 operand"));
}
