// conv2d with prepared 2-D weights [KH*KW*I/groups, O]: the host preparation's layout, device vs
// reference, bit-equality with the [O, KH, KW, I/groups] form, shape errors and the timing model.
#include <doctest/doctest.h>

#include "device/op_test_util.hpp"
#include "meshplan/device/conv_weights.hpp"
#include "meshplan/device/timing.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

OpConfig conv_config(int kh, int kw, int stride, std::array<int, 4> pad, int dilation = 1,
                     int groups = 1) {
  OpConfig c = grid_config();
  c.kernel[0] = kh, c.kernel[1] = kw;
  c.stride[0] = c.stride[1] = stride;
  for (int i = 0; i < 4; ++i) c.padding[i] = pad[i];
  c.dilation[0] = c.dilation[1] = dilation;
  c.groups = groups;
  return c;
}

/// The prepared form of a test weight, through the host helper.
OpInput prepared(const OpInput& w, int groups) {
  auto data = device::prepare_conv_weight(device::HostView{w.shape, w.data}, groups);
  REQUIRE_MESSAGE(data, data.error().message);
  auto shape = device::prepared_conv_weight_shape(w.shape, groups);
  REQUIRE(shape);
  return OpInput{w.name + "_prepared", *shape, *data, w.dtype};
}

}  // namespace

TEST_CASE("prepare_conv_weight puts element (o, kh, kw, i) at row (kh*KW + kw)*I + i, column o") {
  // O=2, KH=1, KW=2, I=3: w[o][0][kw][i] = 100*o + 10*kw + i.
  std::vector<int64_t> shape{2, 1, 2, 3};
  std::vector<float> w;
  for (int o = 0; o < 2; ++o)
    for (int kw = 0; kw < 2; ++kw)
      for (int i = 0; i < 3; ++i) w.push_back(static_cast<float>(100 * o + 10 * kw + i));
  auto out = device::prepare_conv_weight(device::HostView{shape, w}, 1);
  REQUIRE(out);
  // Rows (kw, i) in order, columns o.
  CHECK(*out == std::vector<float>{0, 100, 1, 101, 2, 102, 10, 110, 11, 111, 12, 112});
  CHECK(*device::prepared_conv_weight_shape(shape, 1) == std::vector<int64_t>{6, 2});
  CHECK(*device::prepared_conv_weight_shape(std::vector<int64_t>{64, 3, 3, 32}, 2) ==
        std::vector<int64_t>{288, 64});

  SUBCASE("bad host shapes and sizes are errors, never writes out of bounds") {
    std::vector<float> small(5);
    auto r = device::prepare_conv_weight(device::HostView{shape, w}, 1, small);
    REQUIRE_FALSE(r);
    CHECK(contains(r.error().message, "[2x1x2x3]"));
    CHECK_FALSE(device::prepared_conv_weight_shape(std::vector<int64_t>{2, 3, 3}, 1));
    CHECK(contains(device::prepared_conv_weight_shape(shape, 4).error().message, "groups 4"));
    std::vector<float> out6(12);
    CHECK_FALSE(device::prepare_conv_weight(device::HostView{shape, small}, 1, out6));
  }
}

TEST_CASE("conv2d with a prepared weight: device matches the reference, bit-equal to [O,KH,KW,I]") {
  OpInput x = rand_input("x", {2, 12, 11, 8}, 11);
  struct Case {
    const char* name;
    std::vector<int64_t> w;
    OpConfig config;
    bool bias;
  };
  OpConfig relu = conv_config(3, 2, 2, {0, 1, 2, 0}, 2);
  relu.activation = device::Activation::relu;
  const Case cases[] = {
      {"3x3 same padding", {16, 3, 3, 8}, conv_config(3, 3, 1, {1, 1, 1, 1}), false},
      {"1x1", {40, 1, 1, 8}, conv_config(1, 1, 1, {0, 0, 0, 0}), true},
      {"3x2 stride 2 dilation 2 bias relu", {40, 3, 2, 8}, relu, true},
      {"grouped", {6, 3, 3, 4}, conv_config(3, 3, 1, {0, 0, 0, 0}, 1, 2), false},
      {"depthwise", {8, 3, 3, 1}, conv_config(3, 3, 1, {1, 1, 1, 1}, 1, 8), true},
  };
  uint32_t seed = 20;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    OpInput w = rand_input("w", c.w, ++seed);
    OpInput b = rand_input("b", {c.w[0]}, ++seed);
    std::vector<OpInput> plain{x, w}, prep{x, prepared(w, c.config.groups)};
    if (c.bias) {
      plain.push_back(b);
      prep.push_back(b);
    }
    // The 4-D form takes its window from the weight; the default kernel says nothing.
    OpConfig plain_config = c.config;
    plain_config.kernel[0] = plain_config.kernel[1] = 1;
    OpRun a = run_op(OpKind::conv2d, plain, plain_config);
    OpRun p = run_op(OpKind::conv2d, prep, c.config);
    CHECK(p.shape == a.shape);
    CHECK(p.rel_err() < 0.01);
    // Same math in the same order: the device results are identical, and so are the references.
    CHECK(p.got == a.got);
    CHECK(p.want == a.want);
    // A 4-D weight with the kernel given explicitly is the same op.
    CHECK(run_op(OpKind::conv2d, plain, c.config).got == a.got);
  }
}

TEST_CASE("prepared conv2d weight shape errors name the op's expected and given shapes") {
  std::string e =
      shape_error(OpKind::conv2d, {{1, 8, 8, 6}, {100, 16}}, conv_config(3, 3, 1, {0, 0, 0, 0}));
  CHECK(contains(e, "[100x16]"));
  CHECK(contains(e, "[54x16]"));
  CHECK(contains(e, "[1x8x8x6]"));
  // The window of a 4-D weight is the weight's own.
  e = shape_error(OpKind::conv2d, {{1, 8, 8, 6}, {4, 3, 3, 6}}, conv_config(5, 5, 1, {0, 0, 0, 0}));
  CHECK(contains(e, "kernel [5,5]"));
  CHECK(contains(e, "[4x3x3x6]"));
  e = shape_error(OpKind::conv2d, {{1, 8, 8, 6}, {54, 16, 1}}, conv_config(3, 3, 1, {0, 0, 0, 0}));
  CHECK(contains(e, "neither"));
  // Output channels of a prepared weight must split into the groups.
  e = shape_error(OpKind::conv2d, {{1, 8, 8, 6}, {27, 5}},
                  conv_config(3, 3, 1, {0, 0, 0, 0}, 1, 2));
  CHECK(contains(e, "groups 2"));
  CHECK(shape_error(OpKind::conv2d, {{1, 8, 8, 6}, {54, 16}}, conv_config(3, 3, 1, {1, 1, 1, 1}))
            .empty());
}

TEST_CASE("timing: both weight forms cost the same compute; the prepared one reads fewer bytes") {
  device::ChipDesc chip = device::wormhole_b0();
  std::vector<int64_t> xs{1, 28, 28, 256}, ws{512, 1, 1, 256}, ps{256, 512}, ys{1, 28, 28, 512};
  auto dram = [](std::string name, std::span<const int64_t> s) {
    return device::make_interleaved(std::move(name), s, DType::bf16, device::BufferType::dram, 0);
  };
  device::TensorPlacement x = dram("x", xs), w = dram("w", ws), p = dram("p", ps),
                          y = dram("y", ys);
  OpConfig c = conv_config(1, 1, 1, {0, 0, 0, 0});
  std::vector<const device::TensorPlacement*> plain{&x, &w}, prep{&x, &p}, out{&y};
  device::OpTiming a = device::estimate(chip, device::OpLaunch{OpKind::conv2d, "a", plain, out, c});
  device::OpTiming b = device::estimate(chip, device::OpLaunch{OpKind::conv2d, "b", prep, out, c});
  CHECK(a.compute_ns == b.compute_ns);
  CHECK(a.compute_ns > 0);
  // [512,1,1,256] pads each (o, kh) row block to 32 rows: 32x the bytes of [256, 512].
  CHECK(device::page_count(w) == 32 * device::page_count(p));
  CHECK(b.duration_ns < a.duration_ns);
}
