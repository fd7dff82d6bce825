// Unary and broadcasting binary kernels, fused activations and linear against the host reference,
// on ragged (non-multiple-of-32) shapes.
#include <doctest/doctest.h>

#include "device/op_test_util.hpp"

using namespace meshplan;
using namespace meshplan::test;
using device::Activation;

TEST_CASE("every unary op matches the reference on a ragged 3-D tensor") {
  struct Case {
    OpKind kind;
    float lo, hi;
  };
  // Domains keep log/sqrt/rsqrt/reciprocal finite.
  const Case cases[] = {
      {OpKind::relu, -2, 2},         {OpKind::gelu, -3, 3}, {OpKind::silu, -3, 3},
      {OpKind::sigmoid, -4, 4},      {OpKind::tanh, -2, 2}, {OpKind::exp, -2, 2},
      {OpKind::log, 0.05f, 4},       {OpKind::sqrt, 0, 4},  {OpKind::rsqrt, 0.1f, 4},
      {OpKind::reciprocal, 0.2f, 3}, {OpKind::neg, -2, 2},  {OpKind::abs, -2, 2}};
  uint32_t seed = 1;
  for (const Case& c : cases) {
    CAPTURE(device::op_name(c.kind));
    OpRun r = run_op(c.kind, {rand_input("x", {2, 45, 70}, seed++, c.lo, c.hi)}, grid_config(4, 2));
    CHECK(r.shape == std::vector<int64_t>{2, 45, 70});
    CHECK(r.rel_err() < 0.01);
  }
}

TEST_CASE("unary ops compute what they say (spot values)") {
  OpInput x{"x", {1, 4}, {-1.0f, 0.0f, 1.0f, 4.0f}};
  CHECK(run_op(OpKind::neg, {x}, grid_config()).got ==
        std::vector<float>{1.0f, -0.0f, -1.0f, -4.0f});
  CHECK(run_op(OpKind::abs, {x}, grid_config()).got == std::vector<float>{1.0f, 0.0f, 1.0f, 4.0f});
  OpInput y{"y", {4}, {0.25f, 1.0f, 4.0f, 16.0f}};
  CHECK(run_op(OpKind::sqrt, {y}, grid_config()).got == std::vector<float>{0.5f, 1.0f, 2.0f, 4.0f});
  CHECK(run_op(OpKind::rsqrt, {y}, grid_config()).got ==
        std::vector<float>{2.0f, 1.0f, 0.5f, 0.25f});
  CHECK(run_op(OpKind::reciprocal, {y}, grid_config()).got ==
        std::vector<float>{4.0f, 1.0f, 0.25f, 0.0625f});
  OpRun s = run_op(OpKind::sigmoid, {OpInput{"z", {1}, {0.0f}}}, grid_config());
  CHECK(s.got[0] == 0.5f);
}

TEST_CASE("binary ops broadcast like numpy") {
  const OpKind kinds[] = {OpKind::add,    OpKind::subtract, OpKind::multiply,
                          OpKind::divide, OpKind::maximum,  OpKind::minimum};
  struct Shapes {
    std::vector<int64_t> a, b, out;
  };
  const Shapes shapes[] = {{{45, 70}, {45, 70}, {45, 70}},
                           {{45, 70}, {1, 70}, {45, 70}},
                           {{45, 70}, {70}, {45, 70}},
                           {{45, 1}, {45, 70}, {45, 70}},
                           {{2, 3, 33, 40}, {3, 1, 40}, {2, 3, 33, 40}},
                           {{33, 1}, {1, 40}, {33, 40}},
                           {{1}, {2, 35, 3}, {2, 35, 3}}};
  uint32_t seed = 10;
  for (OpKind k : kinds)
    for (const Shapes& s : shapes) {
      CAPTURE(device::op_name(k));
      CAPTURE(s.a.size());
      // Divisors stay away from zero.
      float lo = k == OpKind::divide ? 0.5f : -1.0f;
      OpRun r = run_op(k, {rand_input("a", s.a, seed), rand_input("b", s.b, seed + 1, lo, 2.0f)},
                       grid_config(4, 2));
      seed += 2;
      CHECK(r.shape == s.out);
      CHECK(r.rel_err() < 0.01);
    }
}

TEST_CASE("binary ops: exact small cases and operand order") {
  OpInput a{"a", {2, 2}, {1, 2, 3, 4}}, b{"b", {2}, {10, 1}};
  CHECK(run_op(OpKind::subtract, {a, b}, grid_config()).got == std::vector<float>{-9, 1, -7, 3});
  CHECK(run_op(OpKind::subtract, {b, a}, grid_config()).got == std::vector<float>{9, -1, 7, -3});
  CHECK(run_op(OpKind::multiply, {a, b}, grid_config()).got == std::vector<float>{10, 2, 30, 4});
  CHECK(run_op(OpKind::divide, {b, a}, grid_config()).got ==
        std::vector<float>{10, 0.5f, device::round_bf16(10.0f / 3.0f), 0.25f});
  CHECK(run_op(OpKind::maximum, {a, b}, grid_config()).got == std::vector<float>{10, 2, 10, 4});
  CHECK(run_op(OpKind::minimum, {a, b}, grid_config()).got == std::vector<float>{1, 1, 3, 1});
}

TEST_CASE("fused activations on add and matmul") {
  for (Activation act : {Activation::relu, Activation::gelu, Activation::silu, Activation::sigmoid,
                         Activation::tanh}) {
    CAPTURE(device::activation_name(act));
    OpConfig c = grid_config();
    c.activation = act;
    CHECK(
        run_op(OpKind::add, {rand_input("a", {45, 70}, 1), rand_input("b", {70}, 2)}, c).rel_err() <
        0.01);
    CHECK(run_op(OpKind::multiply, {rand_input("a", {45, 70}, 3), rand_input("b", {45, 1}, 4)}, c)
              .rel_err() < 0.01);
    CHECK(run_op(OpKind::matmul, {rand_input("a", {45, 70}, 5), rand_input("b", {70, 33}, 6)}, c)
              .rel_err() < 0.01);
  }
}

TEST_CASE("linear = matmul + broadcast bias (+ activation)") {
  OpConfig c = grid_config();
  SUBCASE("bias [N], ragged") {
    CHECK(run_op(OpKind::linear,
                 {rand_input("x", {45, 70}, 1), rand_input("w", {70, 33}, 2),
                  rand_input("b", {33}, 3)},
                 c)
              .rel_err() < 0.01);
  }
  SUBCASE("bias [1, N], batched x, gelu") {
    c.activation = Activation::gelu;
    CHECK(run_op(OpKind::linear,
                 {rand_input("x", {3, 40, 64}, 4), rand_input("w", {64, 50}, 5),
                  rand_input("b", {1, 50}, 6)},
                 c)
              .rel_err() < 0.01);
  }
  SUBCASE("transposed weight (torch layout [N, K]), bias per row") {
    c.transpose_b = true;
    CHECK(run_op(OpKind::linear,
                 {rand_input("x", {45, 70}, 7), rand_input("w", {33, 70}, 8),
                  rand_input("b", {45, 1}, 9)},
                 c)
              .rel_err() < 0.01);
  }
  SUBCASE("the bias really is added") {
    OpInput x{"x", {1, 2}, {1, 2}}, w{"w", {2, 2}, {1, 0, 0, 1}}, b{"b", {2}, {10, 20}};
    CHECK(run_op(OpKind::linear, {x, w, b}, c).got == std::vector<float>{11, 22});
  }
  CHECK(contains(shape_error(OpKind::linear, {{4, 8}, {8, 16}, {4, 16, 1}}, OpConfig{}),
                 "bias [4x16x1]"));
}

TEST_CASE("elementwise shape errors name the shapes") {
  OpConfig c;
  std::string e = shape_error(OpKind::subtract, {{45, 70}, {44, 70}}, c);
  CHECK(contains(e, "[45x70]"));
  CHECK(contains(e, "[44x70]"));
  CHECK(contains(shape_error(OpKind::gelu, {{4}, {4}}, c), "gelu takes 1 operand"));
}
