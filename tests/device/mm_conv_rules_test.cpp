// tt-metal's per_core_M and batch rules of the matmul reuse program (the plain program reading
// sharded operands), the multicast programs' fused batch, and conv2d's width-sharded K split
// (docs/hardware-rules.md), as the OpModel/emulator contract: each accepted launch runs and matches
// the f32 reference, each refused one is refused with tt-metal's reason, and launch() refuses it
// the same way.
#include <doctest/doctest.h>

#include "device/layout_sweep.hpp"

using namespace meshplan;
using namespace meshplan::device;
using namespace meshplan::device::sweep;

namespace {

/// `shape` height-sharded in shards of `rows` rows on cores (0,0)..(cores-1,0).
TensorPlacement height_shards(std::string_view name, const std::vector<int64_t>& shape,
                              int64_t rows, uint16_t cores) {
  ShardSpec s;
  s.grid = CoreRange{0, 0, static_cast<uint16_t>(cores - 1), 0};
  s.shape[0] = rows;
  s.shape[1] = view_2d(shape, TileLayout::tile).cols;
  return make_sharded(name, shape, DType::bf16, MemLayout::height_sharded, s, 0);
}

/// `shape` evenly sharded as `m` on cores (0,0)..(cores-1,0).
TensorPlacement on_row(std::string_view name, const std::vector<int64_t>& shape, MemLayout m,
                       uint16_t cores) {
  auto spec = even_shard_spec(shape, m, CoreRange{0, 0, static_cast<uint16_t>(cores - 1), 0},
                              ShardOrientation::row_major, TileLayout::tile);
  REQUIRE(spec);
  return make_sharded(name, shape, DType::bf16, m, *spec, 0);
}

struct Expect {
  Sweep s;
  /// validate() accepts (`why` empty) or refuses with a reason containing `why`; then the
  /// contract (accepted: runs and matches the reference; refused: launch() says the same).
  void operator()(OpKind kind, std::vector<TensorPlacement> ins, const TensorPlacement& out,
                  const OpConfig& config, const std::vector<std::vector<float>>& host,
                  const std::string& why) {
    s.expect(kind, std::move(ins), out, config, host, why);
  }
};

}  // namespace

TEST_CASE(
    "the plain matmul program reading sharded operands: tt-metal's per_core_M and batch rules; "
    "validate() and launch() agree") {
  Expect expect;
  OpConfig c = grid_config();  // program none on a 4x2 grid
  auto dram = [](std::string_view name, const std::vector<int64_t>& shape) {
    return place(name, shape, DType::bf16, Kind::dram);
  };
  // Two batches of M = 64 rows (2 tiles), K = 96 (3 tiles), N = 128 (4 tiles), in1 batched too.
  const std::vector<int64_t> a2{2, 64, 96}, b2{2, 96, 128}, o2{2, 64, 128};
  auto ha = random_values(a2, 71), hb = random_values(b2, 72);
  // in0's shard rows are the reuse program's per_core_M: 2 tiles (= M) and 1 tile (divides M)
  // are accepted; 3 tiles (96 rows) exceed M = 2 without being a multiple of it.
  expect(OpKind::matmul, {height_shards("a", a2, 64, 2), dram("b", b2)}, dram("c", o2), c, {ha, hb},
         "");
  expect(OpKind::matmul, {height_shards("a", a2, 32, 4), dram("b", b2)}, dram("c", o2), c, {ha, hb},
         "");
  expect(OpKind::matmul, {height_shards("a", a2, 96, 2), dram("b", b2)}, dram("c", o2), c, {ha, hb},
         "\"per_core_M, 3, must be a multiple of M, 2 if per_core_M > M!\"");
  // Three batches of one tile row: shards of 2 tiles hold whole batches but 2 does not divide
  // the 3 tile rows in all.
  const std::vector<int64_t> a3{3, 32, 96}, b3{3, 96, 128}, o3{3, 32, 128};
  auto ha3 = random_values(a3, 73), hb3 = random_values(b3, 74);
  expect(OpKind::matmul, {height_shards("a", a3, 64, 2), dram("b", b3)}, dram("c", o3), c,
         {ha3, hb3}, "\"input a total height, 3, must be divisible by per_core_M, 2!\"");
  expect(OpKind::matmul, {height_shards("a", a3, 32, 3), dram("b", b3)}, dram("c", o3), c,
         {ha3, hb3}, "");
  // One batch of M = 3 tiles in shards of 2 tiles: 2 does not divide 3.
  const std::vector<int64_t> a1{96, 96}, b1{96, 128}, o1{96, 128};
  auto ha1 = random_values(a1, 75), hb1 = random_values(b1, 76);
  expect(OpKind::matmul, {height_shards("a", a1, 64, 2), dram("b", b1)}, dram("c", o1), c,
         {ha1, hb1}, "\"per_core_M, 2, must divide M, 3, if per_core_M < M!\"");
  expect(OpKind::matmul, {height_shards("a", a1, 32, 3), dram("b", b1)}, dram("c", o1), c,
         {ha1, hb1}, "");
  // A sharded in1 (each shard one batch's 96 K rows): per_core_M must hold whole batches, so
  // in0 shards of one tile row (per_core_M 1, M 2) are refused, of two accepted.
  expect(OpKind::matmul, {height_shards("a", a2, 32, 4), height_shards("b", b2, 96, 4)},
         dram("c", o2), c, {ha, hb},
         "\"per_core_M (1) must be a multiple of M (2) when input B is sharded\"");
  expect(OpKind::matmul, {height_shards("a", a2, 64, 2), height_shards("b", b2, 96, 2)},
         dram("c", o2), c, {ha, hb}, "");
  // Batch broadcasting: a batched in0 against one in1 runs on the plain program only with every
  // operand interleaved (MatmulMultiCoreProgramConfig); a sharded in0 makes it the reuse program,
  // which refuses it; the 1-D in1-multicast program fuses the batches and takes it.
  const std::vector<int64_t> bb{96, 128};
  auto hbb = random_values(bb, 77);
  expect(OpKind::matmul, {dram("a", a2), dram("b", bb)}, dram("c", o2), c, {ha, hbb}, "");
  expect(OpKind::matmul, {height_shards("a", a2, 64, 2), dram("b", bb)}, dram("c", o2), c,
         {ha, hbb}, "\"Batch broadcasting is not supported for the chosen program config\"");
  OpConfig in1_mcast = c;
  in1_mcast.program = MatmulProgram::mcast_1d;
  in1_mcast.mcast_in0 = false;
  in1_mcast.grid_x = 2;
  in1_mcast.grid_y = 1;
  expect(OpKind::matmul, {height_shards("a", a2, 64, 2), dram("b", bb)}, dram("c", o2), in1_mcast,
         {ha, hbb}, "");
  // The multicast programs fuse in0's batches into one M: a batched in1 is refused (the plain
  // program above ran the same operands).
  OpConfig two_d = c;
  two_d.program = MatmulProgram::mcast_2d;
  expect(OpKind::matmul, {dram("a", a2), dram("b", b2)}, dram("c", o2), two_d, {ha, hb},
         "\"Matmul with fused batch requires input tensors of shapes BCMK*11KN=BCMN or "
         "equivalent\"");
  expect(OpKind::matmul, {height_shards("a", a2, 64, 2), dram("b", b2)}, dram("c", o2), in1_mcast,
         {ha, hb}, "mcast_1d program: in1 'b' has 2 batches");
  MESSAGE("matmul rule cases: ", expect.s.accepted, " accepted, ", expect.s.rejected, " rejected");
  CHECK(expect.s.accepted == 7);
  CHECK(expect.s.rejected == 7);
}

TEST_CASE(
    "conv2d: a width-sharded input's channels split into act_block_w_div whole tiles per core; "
    "an act_block_h that does not divide runs as the closest smaller divisor") {
  Expect expect;
  OpConfig c = grid_config();
  c.kernel[0] = c.kernel[1] = 3;
  c.padding[0] = c.padding[1] = c.padding[2] = c.padding[3] = 1;
  // [1,8,8,128] 3x3 -> 32 channels: K = 9 x 128 = 1152 = 36 tiles, which 2 and 4 divide.
  const std::vector<int64_t> xs{1, 8, 8, 128}, ws{32, 3, 3, 128}, ys{1, 8, 8, 32};
  auto hx = random_values(xs, 81), hw = random_values(ws, 82);
  auto w = place("w", ws, DType::bf16, Kind::dram);
  auto y = place("y", ys, DType::bf16, Kind::dram);
  auto with_div = [&](uint32_t div) {
    OpConfig k = c;
    k.act_block_w_div = div;
    return k;
  };
  // Width-sharded over 2 cores: 128 channels pad to 128 (a multiple of 32 x 2); split in 2 they
  // are 128 = 32 x 2 x 2, accepted; split in 4 they would need a multiple of 256.
  expect(OpKind::conv2d, {on_row("x", xs, MemLayout::width_sharded, 2), w}, y, with_div(2),
         {hx, hw}, "");
  expect(OpKind::conv2d, {on_row("x", xs, MemLayout::width_sharded, 2), w}, y, with_div(4),
         {hx, hw}, "\"Padded In Channels = 128, num_cores = 2, act_block_w_div = 4\"");
  // Over 3 cores the channels pad to 192 (a multiple of 96): split in 2 needs a multiple of 192.
  expect(OpKind::conv2d, {on_row("x", xs, MemLayout::width_sharded, 3), w}, y, with_div(2),
         {hx, hw}, "");
  expect(OpKind::conv2d, {on_row("x", xs, MemLayout::width_sharded, 3), w}, y, with_div(3),
         {hx, hw}, "\"Padded In Channels = 192, num_cores = 3, act_block_w_div = 3\"");
  // The rule is the width-sharded conv's: height-sharded and interleaved inputs split in 4.
  expect(OpKind::conv2d, {on_row("x", xs, MemLayout::height_sharded, 2), w}, y, with_div(4),
         {hx, hw}, "");
  expect(OpKind::conv2d, {place("x", xs, DType::bf16, Kind::dram), w}, y, with_div(4), {hx, hw},
         "");
  // 64 output rows of 8 pixels = 8 image rows x 1 tile row each: 8 tile rows x 1 column over
  // the 8 cores, one row each; act_block_h 3 runs as 1 (and matches the reference).
  OpConfig odd = c;
  odd.act_block_h = 3;
  expect(OpKind::conv2d, {place("x", xs, DType::bf16, Kind::dram), w}, y, odd, {hx, hw}, "");
  MESSAGE("conv2d rule cases: ", expect.s.accepted, " accepted, ", expect.s.rejected, " rejected");
  CHECK(expect.s.accepted == 5);
  CHECK(expect.s.rejected == 2);
}
