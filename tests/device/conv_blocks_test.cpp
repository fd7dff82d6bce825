// conv2d activation blocks (conv_blocking.hpp): circular buffers grow with act_block_h, a height
// that does not divide runs as the closest smaller divisor, OpModel rejects heights that do not
// fit, the kernel's results do not depend on the height,
// and the timing model's pipeline terms follow the block count.
#include <doctest/doctest.h>

#include "device/op_test_util.hpp"
#include "meshplan/device/conv_blocking.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/timing.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

/// A conv2d launch on placements the test owns: input [n,h,w,c], weight [o,kh,kw,c/groups], the
/// result in `result_buffer` (height-sharded over `cores` cores when L1 and cores > 1).
struct ConvLaunch {
  std::vector<int64_t> xs, ws, ys;  ///< The shapes the placements view.
  std::vector<device::TensorPlacement> ps;
  std::vector<const device::TensorPlacement*> in, out;
  OpConfig config = grid_config();

  ConvLaunch(std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> y,
             std::array<int, 4> pad, uint16_t cores = 0)
      : xs(std::move(x)), ws(std::move(w)), ys(std::move(y)) {
    for (int i = 0; i < 4; ++i) config.padding[i] = pad[i];
    ps.push_back(device::make_interleaved("x", xs, DType::bf16, device::BufferType::dram, 0));
    ps.push_back(
        device::make_interleaved("w", ws, DType::bf16, device::BufferType::dram, 32 << 20));
    ps.push_back(
        device::make_interleaved("y", ys, DType::bf16, device::BufferType::dram, 64 << 20));
    if (cores > 1) {
      device::TensorPlacement& r = ps.back();
      device::TileGrid g = device::tile_grid(r.shape);
      r.buffer = device::BufferType::l1;
      r.memory = device::MemLayout::height_sharded;
      uint16_t gx = std::min<uint16_t>(cores, 8), gy = static_cast<uint16_t>(cores / gx);
      r.shard.grid =
          device::CoreRange{0, 0, static_cast<uint16_t>(gx - 1), static_cast<uint16_t>(gy - 1)};
      r.shard.shape[0] = g.tiles_h / cores * device::kTileH;
      r.shard.shape[1] = g.tiles_w * device::kTileW;
      r.address = 0;
      config.grid_x = gx;
      config.grid_y = gy;
    }
    in = {&ps[0], &ps[1]};
    out = {&ps[2]};
  }
  device::OpLaunch launch(uint32_t act_block_h) const {
    device::OpLaunch l{OpKind::conv2d, "conv", in, out, config};
    l.config.act_block_h = act_block_h;
    return l;
  }
};

}  // namespace

TEST_CASE("conv2d blocking: rows per core, K from the window and the input channels") {
  // [8,14,14,64] -> [8,14,14,64]: 8*14 image rows of one tile row each = 112 tile rows, 2 tile
  // columns; over 56 cores (height sharded) 2 tile rows per core. K = 3*3*64 = 576 = 18 tiles.
  ConvLaunch l({8, 14, 14, 64}, {64, 3, 3, 64}, {8, 14, 14, 64}, {1, 1, 1, 1}, 56);
  auto b = device::resolve_conv(l.launch(0), device::wormhole_b0());
  REQUIRE_MESSAGE(b, b.error().message);
  CHECK(b->rows == 112);
  CHECK(b->cols == 2);
  CHECK(b->cores == 56);
  CHECK(b->rows_per_core == 2);
  CHECK(b->cols_per_core == 2);
  CHECK(b->k == 576);
  CHECK(b->k_tiles == 18);
  CHECK(b->act_block_h == 1);  // auto
  CHECK(b->n_blocks == 2);
  // The window comes from OpConfig::kernel when the config gives one.
  device::OpLaunch k5 = l.launch(2);
  k5.config.kernel[0] = k5.config.kernel[1] = 5;
  CHECK(device::resolve_conv(k5, device::wormhole_b0())->k == 5 * 5 * 64);
  CHECK(device::resolve_conv(k5, device::wormhole_b0())->n_blocks == 1);
  CHECK(device::conv_block_heights(12, 8) == std::vector<uint32_t>{12, 6, 4, 3, 2, 1});
  CHECK(device::conv_block_heights(360, 3) == std::vector<uint32_t>{360, 20, 1});
}

TEST_CASE("conv2d circular buffers grow with the block height") {
  // [1,64,64,32] -> 64 image rows x 2 tile rows = 128 tile rows; 8 cores: 16 rows per core.
  ConvLaunch l({1, 64, 64, 32}, {64, 3, 3, 32}, {1, 64, 64, 64}, {1, 1, 1, 1}, 8);
  device::OpModel model(device::wormhole_b0());
  uint64_t previous = 0;
  for (uint32_t h : {1u, 2u, 4u, 8u, 16u}) {
    uint64_t cb = model.circular_buffer_bytes(l.launch(h));
    // 2 x h x 9 activation tiles, 9 x 2 weight tiles, h x 2 output tiles, bf16.
    CHECK(cb == (2ull * h * 9 + 9 * 2 + h * 2) * 2048);
    CHECK(cb > previous);
    previous = cb;
    device::OpValidation v = model.validate(l.launch(h));
    CHECK_MESSAGE(v.ok, v.reason);
    CHECK(v.cb_bytes_per_core == cb);
  }
  CHECK(model.circular_buffer_bytes(l.launch(0)) == model.circular_buffer_bytes(l.launch(1)));
}

TEST_CASE(
    "a block height that does not divide runs as the closest smaller divisor; one that "
    "does not fit is rejected, naming it") {
  device::OpModel model(device::wormhole_b0());
  SUBCASE("does not divide the rows per core") {
    // 16 tile rows per core (see above). tt-metal replaces an act_block_h_override that does not
    // divide them by the largest divisor below it: 3 -> 2 (8 blocks), 7 -> 4 (4 blocks), 32 ->
    // 16 (one block); the circular buffers are those of the height that runs.
    ConvLaunch l({1, 64, 64, 32}, {64, 3, 3, 32}, {1, 64, 64, 64}, {1, 1, 1, 1}, 8);
    for (auto [asked, runs, blocks] : {std::array<int64_t, 3>{3, 2, 8}, {7, 4, 4}, {32, 16, 1}}) {
      CAPTURE(asked);
      auto b = device::resolve_conv(l.launch(static_cast<uint32_t>(asked)), device::wormhole_b0());
      REQUIRE_MESSAGE(b, b.error().message);
      CHECK(b->act_block_h == runs);
      CHECK(b->n_blocks == blocks);
      device::OpValidation v = model.validate(l.launch(static_cast<uint32_t>(asked)));
      CHECK_MESSAGE(v.ok, v.reason);
      CHECK(v.cb_bytes_per_core == (2ull * runs * 9 + 9 * 2 + runs * 2) * 2048);
    }
    // What is timed is what runs.
    CHECK(model.cost(l.launch(3)).duration_ns == model.cost(l.launch(2)).duration_ns);
    CHECK(model.cost(l.launch(32)).duration_ns == model.cost(l.launch(16)).duration_ns);
    CHECK(device::conv_block_height(16, 3) == 2);
    CHECK(device::conv_block_height(12, 5) == 4);
    CHECK(device::conv_block_height(7, 6) == 1);
    CHECK(device::conv_block_height(5, 5) == 5);
  }
  SUBCASE("too large for L1") {
    // [1,256,256,64] 3x3 -> 64 out channels (DRAM) on 64 cores: 2048 tile rows x 2 columns,
    // 64 tiles = 32 tile rows per core; K = 576 = 18 tiles: 32 x 18 tiles x 2 buffers is 2.3 MB.
    ConvLaunch l({1, 256, 256, 64}, {64, 3, 3, 64}, {1, 256, 256, 64}, {1, 1, 1, 1});
    device::OpValidation big = model.validate(l.launch(32));
    CHECK_FALSE(big.ok);
    CHECK(contains(big.reason, "op 'conv' (conv2d)"));
    CHECK(contains(big.reason, "act_block_h 32 with act_block_w_div 1 needs"));
    uint64_t cb = model.circular_buffer_bytes(l.launch(32));
    CHECK(contains(big.reason, std::to_string(cb) + " bytes of circular buffers"));
    uint64_t usable =
        device::wormhole_b0().l1_usable_top() - device::wormhole_b0().l1_unreserved_base;
    CHECK(contains(big.reason, std::to_string(usable) + " available"));
    CHECK(model.validate(l.launch(4)).ok);
  }
}

TEST_CASE("conv2d results are byte-identical for every block height and match the reference") {
  // 2 images, 20x18 -> 20 image rows x 1 tile row each per image = 40 tile rows over 8 cores.
  OpInput x = rand_input("x", {2, 20, 18, 12}, 11);
  OpInput w = rand_input("w", {40, 3, 3, 6}, 12);
  OpInput bias = rand_input("b", {40}, 13);
  OpConfig c = grid_config(4, 2);
  c.padding[0] = c.padding[1] = c.padding[2] = c.padding[3] = 1;
  c.groups = 2;
  c.activation = device::Activation::relu;
  std::vector<float> first;
  // 40 tile rows x 2 tile columns = 80 tiles over 8 cores: 10 tiles = 5 rows per core.
  // 4 does not divide the 5 rows per core: it runs as 1 (tt-metal's replacement).
  for (uint32_t h : {0u, 1u, 5u, 4u}) {
    c.act_block_h = h;
    OpRun r = run_op(OpKind::conv2d, {x, w, bias}, c);
    CHECK(r.rel_err() < 0.01);
    if (first.empty())
      first = r.got;
    else
      CHECK(r.got == first);
  }
  // A single core walks all 40 tile rows: blocks of 1, 8, 20 and 40 rows, and 12 (runs as 10).
  c.grid_x = c.grid_y = 1;
  for (uint32_t h : {1u, 8u, 20u, 40u, 12u}) {
    c.act_block_h = h;
    CHECK(run_op(OpKind::conv2d, {x, w, bias}, c).got == first);
  }
}

TEST_CASE("conv2d timing: pipeline fill per block and one hand-off per block") {
  // One core, 64 tile rows: n_blocks = 64 / h. The model says
  //   busy(n) = max(compute, movement) + min(compute, movement) / n + n x hand-off,
  // so three block counts determine the constants: fit two, predict the third.
  ConvLaunch l({1, 32, 64, 32}, {32, 3, 3, 32}, {1, 32, 64, 32}, {1, 1, 1, 1});
  l.config.grid_x = l.config.grid_y = 1;
  device::ChipDesc chip = device::wormhole_b0();
  auto busy = [&](uint32_t h) {
    return static_cast<double>(device::estimate(chip, l.launch(h)).duration_ns - chip.dispatch_ns);
  };
  double d64 = busy(1), d8 = busy(8), d2 = busy(32), d1 = busy(64);
  // One block: nothing overlaps. Many blocks: the hand-offs dominate the difference.
  CHECK(d1 > d2);  // 1 block: compute waits for all of its data
  double sync = 500.0 / chip.clock_ghz;
  // Solve base + M/n + n*sync at n = 1 and n = 64 for base and M, predict n = 8 and n = 2.
  double m = (d1 - sync - (d64 - 64 * sync)) / (1.0 - 1.0 / 64);
  double base = d1 - m - sync;
  CHECK(std::abs(base + m / 8 + 8 * sync - d8) <= 2.0);
  CHECK(std::abs(base + m / 2 + 2 * sync - d2) <= 2.0);
  CHECK(m > 0);
  // The unoverlapped block is the faster stage's: m = min(compute, movement) while base =
  // max(compute, movement), so compute is one of the two (a movement-bound op is not charged
  // its movement twice).
  double compute = static_cast<double>(device::estimate(chip, l.launch(1)).compute_ns);
  CHECK(m <= base + 2.0);
  CHECK((std::abs(m - compute) <= 2.0 || std::abs(base - compute) <= 2.0));
  // Compute does not depend on the block height.
  CHECK(device::estimate(chip, l.launch(1)).compute_ns ==
        device::estimate(chip, l.launch(64)).compute_ns);
}

TEST_CASE("conv2d timing: a movement-bound conv pays its movement once, plus one block's compute") {
  // A 1x1 conv from 512 to 32 channels on one core: 64 tile rows x K = 16 tiles reading a DRAM
  // input, resident 16-tile weights. The reader is the bottleneck, so
  //   busy(n) = movement + compute / n + n x hand-off:
  // fitted from two block counts, the per-block term is the compute, not the movement again.
  ConvLaunch l({1, 64, 32, 512}, {32, 1, 1, 512}, {1, 64, 32, 32}, {0, 0, 0, 0});
  l.config.grid_x = l.config.grid_y = 1;
  device::ChipDesc chip = device::wormhole_b0();
  REQUIRE(device::resolve_conv(l.launch(1), chip)->weights_resident);
  auto busy = [&](uint32_t h) {
    return static_cast<double>(device::estimate(chip, l.launch(h)).duration_ns - chip.dispatch_ns);
  };
  double sync = 500.0 / chip.clock_ghz;
  double d1 = busy(16) - 4 * sync, d4 = busy(4) - 16 * sync;  // 4 and 16 blocks
  double per_block_total = (d4 - d1) / (1.0 / 16 - 1.0 / 4);  // the term divided by n
  double compute = static_cast<double>(device::estimate(chip, l.launch(1)).compute_ns);
  CHECK(std::abs(per_block_total - compute) <= 8.0);
  double movement = d1 - compute / 4;
  CHECK(movement > compute);  // movement-bound, as the case means to be
}

TEST_CASE("weights that do not fit beside the blocks stream through, re-read per block") {
  // [8,14,14,256] 3x3 -> 256 (a ResNet-50 stage-3 conv at batch 8), DRAM result on 64 cores:
  // 112 tile rows x 8 columns, 14 tiles per core spanning up to 3 rows; K = 2304 = 72 tiles.
  // The resident weight block (72 x 8 tiles, 1.18 MB) and any activation block exceed L1.
  ConvLaunch l({8, 14, 14, 256}, {256, 3, 3, 256}, {8, 14, 14, 256}, {1, 1, 1, 1});
  device::ChipDesc chip = device::wormhole_b0();
  device::OpModel model(chip);
  auto b = device::resolve_conv(l.launch(1), chip);
  REQUIRE(b);
  CHECK(b->k_tiles == 72);
  CHECK(b->cols_per_core == 8);
  CHECK(b->rows_per_core == 3);
  CHECK_FALSE(b->weights_resident);
  // 2 x 72 activation tiles, 2 x 72 streamed weight tiles, 1 x 8 output tiles.
  CHECK(model.circular_buffer_bytes(l.launch(1)) == (2ull * 72 + 2 * 72 + 8) * 2048);
  device::OpValidation v = model.validate(l.launch(1));
  CHECK_MESSAGE(v.ok, v.reason);
  CHECK(model.validate(l.launch(3)).ok);
  // A small conv keeps its weights resident.
  ConvLaunch small({1, 16, 16, 32}, {32, 3, 3, 32}, {1, 16, 16, 32}, {1, 1, 1, 1});
  CHECK(device::resolve_conv(small.launch(0), chip)->weights_resident);
  // Streaming re-reads the weights once per block: one block of 3 rows moves less than three
  // blocks of one row, by more than the fill and hand-off terms alone would explain.
  device::OpTiming t1 = device::estimate(chip, l.launch(1)),
                   t3 = device::estimate(chip, l.launch(3));
  CHECK(t3.duration_ns < t1.duration_ns);
}
