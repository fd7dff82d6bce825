// The timing model's data movement (timing.hpp): interleaved L1 pays NoC link contention, shards
// used in place pay local L1 only, DRAM pays its bandwidth, matmul programs multicast their blocks
// instead of re-reading them. Simulated-time relations computed from the model's documented
// parameters, not wall time.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "meshplan/device/formats.hpp"
#include "meshplan/device/matmul_program.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/placement.hpp"
#include "meshplan/device/timing.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

const std::vector<int64_t> kSquare{2048, 2048};  // 64 x 64 tiles, 4096 tiles, 8 MiB in bf16

TensorPlacement placed(const char* name, const std::vector<int64_t>& shape, BufferType buffer,
                       MemLayout memory = MemLayout::interleaved, uint16_t gx = 8,
                       uint16_t gy = 8) {
  if (memory == MemLayout::interleaved)
    return make_interleaved(name, shape, DType::bf16, buffer, 0);
  CoreRange grid{0, 0, static_cast<uint16_t>(gx - 1), static_cast<uint16_t>(gy - 1)};
  auto spec = even_shard_spec(shape, memory, grid);
  REQUIRE(spec);
  return make_sharded(name, shape, DType::bf16, memory, *spec, 0);
}

OpTiming time_of(OpKind kind, std::vector<const TensorPlacement*> in, const TensorPlacement& out,
                 const OpConfig& c) {
  const TensorPlacement* outs[1] = {&out};
  OpLaunch op{kind, "op", in, outs, c};
  REQUIRE(OpModel(wormhole_b0()).validate(op).ok);
  return estimate(wormhole_b0(), op);
}

OpConfig grid(uint16_t gx, uint16_t gy) {
  OpConfig c;
  c.grid_x = gx;
  c.grid_y = gy;
  return c;
}

}  // namespace

TEST_CASE("eltwise: shards in place beat interleaved L1, which beats DRAM") {
  ChipDesc chip = wormhole_b0();
  auto dram_a = placed("a", kSquare, BufferType::dram),
       dram_b = placed("b", kSquare, BufferType::dram),
       dram_o = placed("o", kSquare, BufferType::dram);
  auto l1_a = placed("a", kSquare, BufferType::l1), l1_b = placed("b", kSquare, BufferType::l1),
       l1_o = placed("o", kSquare, BufferType::l1);
  auto sh_a = placed("a", kSquare, BufferType::l1, MemLayout::block_sharded),
       sh_b = placed("b", kSquare, BufferType::l1, MemLayout::block_sharded),
       sh_o = placed("o", kSquare, BufferType::l1, MemLayout::block_sharded);
  OpTiming dram = time_of(OpKind::add, {&dram_a, &dram_b}, dram_o, grid(8, 8));
  OpTiming l1 = time_of(OpKind::add, {&l1_a, &l1_b}, l1_o, grid(8, 8));
  OpTiming sharded = time_of(OpKind::add, {&sh_a, &sh_b}, sh_o, grid(8, 8));
  // DRAM: 24 MiB over the achievable 267 GB/s.
  CHECK(dram.dram_ns == (3 * 8388608 + 266) / 267);
  CHECK(dram.duration_ns == chip.dispatch_ns + dram.dram_ns);
  // Interleaved L1: each of 64 cores reads 2 x 131072 B through its read port, weighted by the
  // contention of 64 readers on an 8x8 torus: max(1, 64 x 3.5 / 64) = 3.5; 32 B/cycle at 1 GHz.
  CHECK(l1.dram_ns == 0);
  CHECK(l1.duration_ns == chip.dispatch_ns + 2 * 131072 * 35 / 10 / 32);
  // In place: 3 x 131072 B of the core's own L1 at 64 B/cycle; compute 64 tiles x 1024 / 32.
  CHECK(sharded.duration_ns == chip.dispatch_ns + 3 * 131072 / 64);
  CHECK(sharded.compute_ns == 64 * 1024 / 32);
  CHECK(sharded.duration_ns < l1.duration_ns);
  CHECK(l1.duration_ns < dram.duration_ns);
}

TEST_CASE("eltwise: a shard on other cores than the result's is read over the NoC") {
  // A unary op: tt-metal's binary op gives a sharded result only in its operand's shard spec
  // (docs/hardware-rules.md).
  auto a = placed("a", kSquare, BufferType::l1, MemLayout::height_sharded, 8, 8);
  auto same = placed("o", kSquare, BufferType::l1, MemLayout::height_sharded, 8, 8);
  auto other = placed("o", kSquare, BufferType::l1, MemLayout::block_sharded, 8, 8);
  OpTiming in_place = time_of(OpKind::relu, {&a}, same, grid(8, 8));
  OpTiming moved = time_of(OpKind::relu, {&a}, other, grid(8, 8));
  CHECK(in_place.duration_ns < moved.duration_ns);
}

TEST_CASE("interleaved L1 contention grows with the readers, up to the hop count") {
  ChipDesc chip = wormhole_b0();
  std::vector<int64_t> s{256, 256};  // 64 tiles, 131072 B
  auto a = placed("a", s, BufferType::l1), o = placed("o", s, BufferType::l1);
  // One core: its ports alone (131072 B in and out at 32 B/cycle each); no contention
  // (1 x 3.5 / 64 < 1).
  OpTiming one = time_of(OpKind::relu, {&a}, o, grid(1, 1));
  CHECK(one.duration_ns == chip.dispatch_ns + 131072 / 32);
  // 64 cores: 2048 B in and out each, weighted 3.5.
  OpTiming all = time_of(OpKind::relu, {&a}, o, grid(8, 8));
  CHECK(all.duration_ns == chip.dispatch_ns + 2048 * 35 / 10 / 32);
}

TEST_CASE("matmul: multicast programs read DRAM weights once, program none per core") {
  // [256, 2048] x [2048, 2048]: out 8 x 64 tiles, K 64 tiles; weights 8 MiB in DRAM.
  std::vector<int64_t> as{256, 2048}, bs{2048, 2048}, os{256, 2048};
  auto a = placed("a", as, BufferType::l1), b = placed("w", bs, BufferType::dram),
       o = placed("o", os, BufferType::l1);
  OpConfig none = grid(8, 8);
  OpConfig mc2 = none;
  mc2.program = MatmulProgram::mcast_2d;
  OpTiming t_none = time_of(OpKind::matmul, {&a, &b}, o, none);
  OpTiming t_mc2 = time_of(OpKind::matmul, {&a, &b}, o, mc2);
  // Program none: 512 output tiles, 8 per core, every core reads 8 in1 columns of 64 K tiles:
  // 64 x 8 x 64 x 2048 B from DRAM, the weights 8 times over.
  CHECK(t_none.dram_ns == (64ull * 8 * 64 * 2048 + 266) / 267);
  // mcast_2d: one sender per column reads its 8 columns once: the weights once.
  CHECK(t_mc2.dram_ns == (2048ull * 2048 * 2 + 266) / 267);
  CHECK(t_mc2.duration_ns < t_none.duration_ns);
  CHECK(t_mc2.compute_ns == t_none.compute_ns);  // same 8 tiles x 64 K tiles per core
}

TEST_CASE("matmul: block-sharded in0 and result stay on their cores under mcast_2d") {
  std::vector<int64_t> as{1024, 1024}, bs{1024, 1024}, os{1024, 1024};
  auto b = placed("w", bs, BufferType::l1);
  OpConfig mc2 = grid(8, 8);
  mc2.program = MatmulProgram::mcast_2d;
  mc2.in0_block_w = 4;  // divides the 4 K tiles of each in0 shard
  auto a_sh = placed("a", as, BufferType::l1, MemLayout::block_sharded);
  auto o_sh = placed("o", os, BufferType::l1, MemLayout::block_sharded);
  auto a_il = placed("a", as, BufferType::l1), o_il = placed("o", os, BufferType::l1);
  OpTiming sharded = time_of(OpKind::matmul, {&a_sh, &b}, o_sh, mc2);
  OpTiming interleaved = time_of(OpKind::matmul, {&a_il, &b}, o_il, mc2);
  CHECK(sharded.duration_ns <= interleaved.duration_ns);
  CHECK(sharded.dram_ns == 0);
  // Each core takes part in the multicast of its in0 block (4 x 32 tiles, read locally by its
  // sender) and its in1 block (32 x 4, read by the sender from interleaved L1 with 8 senders'
  // contention, max(1, 8 x 3.5 / 64) = 1: 32 B/cycle); each block at the slower of the read and
  // the measured multicast rate, 22 B/cycle: (128 + 128) x 2048 B / 22. The result is written
  // in place.
  CHECK(sharded.duration_ns ==
        wormhole_b0().dispatch_ns + std::max<uint64_t>(sharded.compute_ns, (256 * 2048 + 21) / 22));
}

TEST_CASE("matmul: DRAM reads and multicasts at the chip's measured per-core rates") {
  // [32, 2048] x [2048, 2048] on 8x1 cores, mcast_2d: 8 in1 senders, each reading 64 K x 8 N
  // tiles (1 MiB) of DRAM weights and multicasting them; in0 (1 x 64 tiles, 128 KiB) read from
  // interleaved L1 by its one sender and multicast along the row.
  std::vector<int64_t> as{32, 2048}, bs{2048, 2048}, os{32, 2048};
  auto a = placed("a", as, BufferType::l1), b = placed("w", bs, BufferType::dram),
       o = placed("o", os, BufferType::l1);
  OpConfig mc2 = grid(8, 1);
  mc2.program = MatmulProgram::mcast_2d;
  const TensorPlacement* outs[1] = {&o};
  const TensorPlacement* ins[2] = {&a, &b};
  OpLaunch op{OpKind::matmul, "op", ins, outs, mc2};
  ChipDesc chip = wormhole_b0();
  REQUIRE(OpModel(chip).validate(op).ok);
  OpTiming measured = estimate(chip, op);
  // The weights once over DRAM: 8 MiB / 267 GB/s = 31418 ns, less than the senders' ports:
  // (1048576 + 131072) B at 22 B/cycle (DRAM read and multicast both 22) = 53620.4 cycles.
  CHECK(measured.dram_ns == (8388608ull + 266) / 267);
  CHECK(measured.duration_ns == chip.dispatch_ns + (1048576 + 131072 + 21) / 22);
  // At the NoC's full width (32 B/cycle for both) the senders take 36864 cycles, still above
  // the DRAM time: the per-core rates come from the descriptor.
  chip.dram_read_bytes_per_cycle = 32;
  chip.mcast_bytes_per_cycle = 32;
  CHECK(estimate(chip, op).duration_ns == chip.dispatch_ns + (1048576 + 131072) / 32);
  // The compute: 1 x 8 x 64 tile-matmuls per core at HiFi2, 32 cycles over matmul_utilization.
  CHECK(measured.compute_ns == static_cast<uint64_t>(std::ceil(512 * 32 / 0.89)));
  chip.matmul_utilization = 0.5;
  CHECK(estimate(chip, op).compute_ns == 512 * 64);
}

TEST_CASE("slice: a tiled slice off the tile grid is timed as ttnn runs it, through row-major") {
  // ttnn::slice converts a tiled input whose last two begins are not whole tiles to row-major,
  // slices that and tilizes the result (docs/hardware-rules.md): three launches. One core, DRAM
  // interleaved bf16, Wormhole figures: dispatch 1000 ns, clock 1 GHz, one core's DRAM reads at
  // 22 B/cycle, its write port 32 B/cycle, DRAM 267 GB/s.
  const std::vector<int64_t> in_shape{64, 64}, out_shape{32, 64}, narrow{64, 32};
  auto x = make_interleaved("x", in_shape, DType::bf16, BufferType::dram, 0);
  auto rows = make_interleaved("z", out_shape, DType::bf16, BufferType::dram, 0);
  auto cols = make_interleaved("z", narrow, DType::bf16, BufferType::dram, 0);
  auto sliced = [&](int64_t b0, int64_t b1, const TensorPlacement& out) {
    OpConfig c = grid(1, 1);
    c.num_slice = 2;
    c.begins[0] = b0, c.begins[1] = b1;
    c.ends[0] = b0 + out.shape[0], c.ends[1] = b1 + out.shape[1];
    c.steps[0] = c.steps[1] = 1;
    return time_of(OpKind::slice, {&x}, out, c);
  };
  // Aligned (rows 32..63): the tiled program reads the 4 input tiles (8192 B) from DRAM,
  // ceil(8192 / 22) = 373 cycles, and writes 2 tiles (4096 B / 32 = 128 cycles).
  OpTiming aligned = sliced(32, 0, rows);
  CHECK(aligned.duration_ns == 1000 + 373);
  CHECK(aligned.dram_ns == (12288 + 266) / 267);
  // Rows 1..32: untilize reads 8192 B of tiles (373 cycles) and writes 64 rows x 128 B = 8192 B
  // (256 cycles); the row-major slice reads those 8192 B (373) and writes 32 rows x 128 B =
  // 4096 B (128); tilize reads 4096 B (ceil(4096 / 22) = 187) and writes 2 tiles (128). DRAM:
  // 16384, 12288 and 8192 B at 267 GB/s, 62 + 47 + 31 ns, under each read.
  OpTiming off_rows = sliced(1, 0, rows);
  CHECK(off_rows.duration_ns == (1000 + 373) + (1000 + 373) + (1000 + 187));
  CHECK(off_rows.dram_ns == 62 + 47 + 31);
  CHECK(off_rows.compute_ns == 0);
  // Columns 16..47: the width begin is off the grid; the same bytes (64 rows x 64 B = 4096 B).
  OpTiming off_cols = sliced(0, 16, cols);
  CHECK(off_cols.duration_ns == (1000 + 373) + (1000 + 373) + (1000 + 187));
  // Columns 32..63 are whole tiles: one launch.
  CHECK(sliced(0, 32, cols).duration_ns == 1000 + 373);
}
