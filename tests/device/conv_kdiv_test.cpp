// conv2d K split (OpConfig::act_block_w_div, conv_blocking.hpp): circular buffers per split,
// OpModel's rejections naming the values, results bit-identical across splits and heights, and
// the timing model's gain when a split lets a streamed-weight conv take taller blocks.
#include <doctest/doctest.h>

#include "device/op_test_util.hpp"
#include "meshplan/device/conv_blocking.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/timing.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

/// A conv2d launch on DRAM placements the test owns: input x, weight w [o,kh,kw,c], result y,
/// on the default grid, padding 1.
struct KLaunch {
  std::vector<int64_t> xs, ws, ys;
  std::vector<device::TensorPlacement> ps;
  std::vector<const device::TensorPlacement*> in, out;
  OpConfig config = grid_config();

  KLaunch(std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> y)
      : xs(std::move(x)), ws(std::move(w)), ys(std::move(y)) {
    for (int i = 0; i < 4; ++i) config.padding[i] = 1;
    ps.push_back(device::make_interleaved("x", xs, DType::bf16, device::BufferType::dram, 0));
    ps.push_back(
        device::make_interleaved("w", ws, DType::bf16, device::BufferType::dram, 32 << 20));
    ps.push_back(
        device::make_interleaved("y", ys, DType::bf16, device::BufferType::dram, 64 << 20));
    in = {&ps[0], &ps[1]};
    out = {&ps[2]};
  }
  device::OpLaunch launch(uint32_t h, uint32_t div, bool stream = false) const {
    device::OpLaunch l{OpKind::conv2d, "conv", in, out, config};
    l.config.act_block_h = h;
    l.config.act_block_w_div = div;
    l.config.stream_weights = stream;
    return l;
  }
};

/// ResNet-50 stage 4 conv2 at batch 8: [8,7,7,512] 3x3 -> 512 on 64 cores, DRAM result, the
/// weight prepared [KH*KW*I, O] = [4608, 512] as the planner stores it (conv_weights.hpp).
/// 56 tile rows x 16 columns = 896 tiles, 14 per core spanning up to 2 rows and 14 columns;
/// K = 4608 = 144 tiles; the weight block (144 x 14 tiles, 4.1 MB) streams.
KLaunch stage4() {
  KLaunch l({8, 7, 7, 512}, {4608, 512}, {8, 7, 7, 512});
  l.config.kernel[0] = l.config.kernel[1] = 3;
  return l;
}

uint64_t usable_l1(const device::ChipDesc& chip) {
  return chip.l1_usable_top() - chip.l1_unreserved_base;
}

}  // namespace

TEST_CASE("conv2d K split: chunks of K tiles, circular buffers per split") {
  device::ChipDesc chip = device::wormhole_b0();
  device::OpModel model(chip);
  KLaunch l = stage4();
  auto b = device::resolve_conv(l.launch(1, 0), chip);
  REQUIRE_MESSAGE(b, b.error().message);
  CHECK(b->k_tiles == 144);
  CHECK(b->rows_per_core == 2);
  CHECK(b->cols_per_core == 14);
  CHECK(b->act_block_w_div == 1);  // auto
  CHECK(b->k_block_tiles == 144);
  CHECK_FALSE(b->weights_resident);
  for (uint32_t h : {1u, 2u})
    for (uint32_t div : {1u, 2u, 3u, 4u, 8u, 144u}) {
      CAPTURE(h);
      CAPTURE(div);
      auto r = device::resolve_conv(l.launch(h, div), chip);
      REQUIRE(r);
      CHECK(r->k_block_tiles == 144 / div);
      CHECK(r->n_blocks == 2 / h);
      uint64_t kb = 144 / div;
      // Activation chunk h x kb double-buffered, a streamed weight column of one chunk
      // double-buffered, the h x 14 bf16 output block, with div > 1 the f32 partials.
      uint64_t want = (2 * h * kb + 2 * kb + h * 14) * 2048 + (div > 1 ? h * 14 * 4096 : 0);
      CHECK(model.circular_buffer_bytes(l.launch(h, div)) == want);
    }
  // Height 2 does not fit with the whole K (2 x 2 x 144 tiles of activations), does with K/2.
  CHECK_FALSE(model.validate(l.launch(2, 1)).ok);
  device::OpValidation v = model.validate(l.launch(2, 2));
  CHECK_MESSAGE(v.ok, v.reason);
  // A conv whose weights fit keeps them resident whatever the split: k_tiles x cols tiles.
  KLaunch small({1, 16, 16, 64}, {64, 3, 3, 64}, {1, 16, 16, 64});
  auto s1 = device::resolve_conv(small.launch(1, 1), chip),
       s3 = device::resolve_conv(small.launch(1, 3), chip);
  REQUIRE(s1);
  REQUIRE(s3);
  CHECK(s1->weights_resident);
  CHECK(s3->weights_resident);
  uint64_t cols = static_cast<uint64_t>(s1->cols_per_core);
  CHECK(s3->k_tiles == 18);
  CHECK(model.circular_buffer_bytes(small.launch(1, 1)) == (2 * 18 + 18 * cols + cols) * 2048);
  CHECK(model.circular_buffer_bytes(small.launch(1, 3)) ==
        (2 * 6 + 18 * cols + cols) * 2048 + cols * 4096);
}

TEST_CASE("conv2d stream_weights streams weights that would fit") {
  device::ChipDesc chip = device::wormhole_b0();
  device::OpModel model(chip);
  KLaunch small({1, 16, 16, 64}, {64, 3, 3, 64}, {1, 16, 16, 64});
  auto resident = device::resolve_conv(small.launch(1, 1), chip);
  auto streamed = device::resolve_conv(small.launch(1, 1, true), chip);
  REQUIRE(resident);
  REQUIRE(streamed);
  CHECK(resident->weights_resident);
  CHECK_FALSE(streamed->weights_resident);
  // 18 K tiles: resident 18 x cols; streamed 2 x 18 (one column, double-buffered).
  uint64_t cols = static_cast<uint64_t>(resident->cols_per_core);
  CHECK(model.circular_buffer_bytes(small.launch(1, 1)) == (2 * 18 + 18 * cols + cols) * 2048);
  CHECK(model.circular_buffer_bytes(small.launch(1, 1, true)) == (2 * 18 + 2 * 18 + cols) * 2048);
  CHECK(model.circular_buffer_bytes(small.launch(1, 3, true)) ==
        (2 * 6 + 2 * 6 + cols) * 2048 + cols * 4096);
  // Streaming re-reads the weights per block: never cheaper in the model.
  CHECK(device::estimate(chip, small.launch(1, 1, true)).dram_ns >=
        device::estimate(chip, small.launch(1, 1)).dram_ns);
}

TEST_CASE("OpModel rejects a K split that does not divide or does not fit, naming it") {
  device::ChipDesc chip = device::wormhole_b0();
  device::OpModel model(chip);
  KLaunch l = stage4();
  SUBCASE("does not divide the K tiles") {
    device::OpValidation v = model.validate(l.launch(1, 5));
    CHECK_FALSE(v.ok);
    CHECK(contains(v.reason, "op 'conv' (conv2d)"));
    CHECK(contains(v.reason, "act_block_w_div 5 does not divide the im2col K of 144 tiles"));
    CHECK(contains(v.reason, "3x3x512 = 4608 elements"));
    CHECK_FALSE(model.validate(l.launch(1, 288)).ok);
  }
  SUBCASE("too large for L1") {
    device::OpValidation v = model.validate(l.launch(2, 1));
    CHECK_FALSE(v.ok);
    CHECK(contains(v.reason, "op 'conv' (conv2d)"));
    CHECK(contains(v.reason, "act_block_h 2 with act_block_w_div 1 needs"));
    uint64_t cb = model.circular_buffer_bytes(l.launch(2, 1));
    CHECK(cb == (2 * 2 * 144 + 2 * 144 + 2 * 14) * 2048ull);
    CHECK(contains(v.reason, std::to_string(cb) + " bytes of circular buffers"));
    CHECK(contains(v.reason, "activation block 2x144 tiles"));
    CHECK(contains(v.reason, std::to_string(usable_l1(chip)) + " available"));
    // With a split the message names the chunk and the partials.
    l.config.grid_x = l.config.grid_y = 1;  // one core: 56 rows, all 16 columns
    device::OpValidation w = model.validate(l.launch(56, 2));
    CHECK_FALSE(w.ok);
    CHECK(contains(w.reason, "act_block_h 56 with act_block_w_div 2 needs"));
    CHECK(contains(w.reason, "activation block 56x72 tiles"));
    CHECK(contains(w.reason, "f32 partials 56x16"));
  }
}

TEST_CASE("conv2d results are bit-identical for every K split and block height") {
  // K = 3*3*20 = 180 elements = 6 tiles (the last chunk of every split is short by 12 padding
  // columns); 2 images of 20x18 -> 40 tile rows over 8 cores, 5 rows per core.
  OpInput x = rand_input("x", {2, 20, 18, 20}, 21);
  OpInput w = rand_input("w", {40, 3, 3, 20}, 22);
  OpInput bias = rand_input("b", {40}, 23);
  OpConfig c = grid_config(4, 2);
  c.padding[0] = c.padding[1] = c.padding[2] = c.padding[3] = 1;
  c.activation = device::Activation::relu;
  std::vector<float> first;
  for (uint32_t h : {1u, 5u})
    for (uint32_t div : {0u, 1u, 2u, 3u, 6u}) {
      CAPTURE(h);
      CAPTURE(div);
      c.act_block_h = h;
      c.act_block_w_div = div;
      OpRun r = run_op(OpKind::conv2d, {x, w, bias}, c);
      CHECK(r.rel_err() < 0.01);
      if (first.empty())
        first = r.got;
      else
        CHECK(r.got == first);
    }
  // One core walking all 40 rows, and streamed weights: the same bits.
  c.grid_x = c.grid_y = 1;
  c.stream_weights = true;
  for (uint32_t h : {8u, 40u})
    for (uint32_t div : {2u, 6u}) {
      c.act_block_h = h;
      c.act_block_w_div = div;
      CHECK(run_op(OpKind::conv2d, {x, w, bias}, c).got == first);
    }
  // Grouped: K per group = 3*3*6 = 54 elements = 2 tiles.
  OpInput xg = rand_input("x", {2, 20, 18, 12}, 11);
  OpInput wg = rand_input("w", {40, 3, 3, 6}, 12);
  OpConfig cg = grid_config(4, 2);
  cg.padding[0] = cg.padding[1] = cg.padding[2] = cg.padding[3] = 1;
  cg.groups = 2;
  cg.act_block_h = 5;
  std::vector<float> one = run_op(OpKind::conv2d, {xg, wg, bias}, cg).got;
  cg.act_block_w_div = 2;
  OpRun two = run_op(OpKind::conv2d, {xg, wg, bias}, cg);
  CHECK(two.rel_err() < 0.01);
  CHECK(two.got == one);
}

TEST_CASE(
    "conv2d timing: a K split that lets a streamed-weight conv take taller blocks is faster") {
  device::ChipDesc chip = device::wormhole_b0();
  KLaunch l = stage4();
  device::OpTiming h1 = device::estimate(chip, l.launch(1, 1));  // what fits without a split
  device::OpTiming h2 = device::estimate(chip, l.launch(2, 2));  // one block: weights read once
  CHECK(h2.duration_ns < h1.duration_ns);
  CHECK(h2.compute_ns == h1.compute_ns);  // compute does not depend on the blocking
  // Weights and input come from DRAM: the weight blocks (14 of 16 columns, sent by the 2
  // senders of the two column ranges) are fetched once instead of twice.
  double block_bytes = 4608.0 * 512 * 2 * 14 / 16 * 2;
  double saved_ns = static_cast<double>(h1.dram_ns) - static_cast<double>(h2.dram_ns);
  CHECK(saved_ns == doctest::Approx(block_bytes / chip.dram_gbps).epsilon(0.01));
  // At a fixed height a split moves the same bytes; only the pipeline terms change:
  //   fill min(compute, movement) / (n_blocks x div) and (n_blocks x div) hand-offs.
  device::OpTiming h1d2 = device::estimate(chip, l.launch(1, 2));
  CHECK(h1d2.dram_ns == h1.dram_ns);
  CHECK(h1d2.compute_ns == h1.compute_ns);
  double sync = 500.0 / chip.clock_ghz;
  // busy(n) = base + m / n + n x sync at n = 2 (1,1) and n = 4 (1,2), n = 8 (1,4): fit two,
  // predict the third.
  auto busy = [&](uint32_t div) {
    return static_cast<double>(device::estimate(chip, l.launch(1, div)).duration_ns -
                               chip.dispatch_ns);
  };
  double d2 = busy(1) - 2 * sync, d4 = busy(2) - 4 * sync, d8 = busy(4) - 8 * sync;
  double m = (d2 - d4) / (1.0 / 2 - 1.0 / 4);
  double base = d2 - m / 2;
  CHECK(std::abs(base + m / 8 - d8) <= 2.0);
  CHECK(m == doctest::Approx(static_cast<double>(h1.compute_ns)).epsilon(0.01));
}
