// Matmul program configs: which core computes which output block, the rules validate() applies
// (and launch() enforces), circular-buffer sizes, the per-core CB/L1 clash at run time, out-of-L1
// errors, and that the core thread pool gives the same bytes and errors as serial execution.
#include "meshplan/device/matmul_program.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <random>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/placement.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

const std::vector<int64_t> kA{64, 96}, kB{96, 128}, kOut{64, 128};  // out 2x4 tiles, K 3 tiles

OpConfig program(MatmulProgram p, uint16_t gx, uint16_t gy) {
  OpConfig c;
  c.program = p;
  c.grid_x = gx;
  c.grid_y = gy;
  return c;
}

struct Launch {
  TensorPlacement a = make_interleaved("a", kA, DType::bf16, BufferType::dram, 0);
  TensorPlacement b = make_interleaved("b", kB, DType::bf16, BufferType::dram, 1 << 20);
  TensorPlacement out = make_interleaved("c", kOut, DType::bf16, BufferType::dram, 2 << 20);
  mutable const TensorPlacement* ins[2] = {};
  mutable const TensorPlacement* outs[1] = {};
  /// Points at this object's own placements (copies of a Launch stay independent).
  OpLaunch op(const OpConfig& c) const {
    ins[0] = &a;
    ins[1] = &b;
    outs[0] = &out;
    return OpLaunch{OpKind::matmul, "mm", ins, outs, c};
  }
};

std::string reason(const Launch& l, const OpConfig& c) {
  OpValidation v = OpModel(wormhole_b0()).validate(l.op(c));
  return v.ok ? std::string("accepted") : v.reason;
}

bool has(const std::string& s, const char* what) {
  return s.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("each program assigns output tiles to the cores TTNN's program would") {
  ChipDesc chip = wormhole_b0();
  Launch l;
  auto core_of = [&](const OpConfig& c, int64_t tr, int64_t tc) {
    auto m = resolve_matmul(l.op(c), chip);
    REQUIRE(m);
    return matmul_core_of(*m, tr, tc, chip.grid_x);
  };
  OpConfig two_d = program(MatmulProgram::mcast_2d, 4, 2);
  CHECK(core_of(two_d, 1, 3) == 1 * 8 + 3);  // block row -> y, block column -> x
  OpConfig transposed = program(MatmulProgram::mcast_2d, 2, 4);
  transposed.transpose_mcast = true;
  CHECK(core_of(transposed, 1, 3) == 3 * 8 + 1);
  OpConfig split_n = program(MatmulProgram::mcast_1d, 4, 2);
  CHECK(core_of(split_n, 1, 3) == 3);
  OpConfig split_m = program(MatmulProgram::mcast_1d, 4, 2);
  split_m.mcast_in0 = false;
  CHECK(core_of(split_m, 1, 3) == 1);
  // Work items: one rectangle per core, in core order, covering the output once.
  auto m = resolve_matmul(l.op(two_d), chip);
  REQUIRE(m);
  auto work = matmul_work(*m, chip.grid_x);
  REQUIRE(work.size() == 8);
  std::vector<int> covered(8, 0);
  for (const MatmulWork& w : work)
    for (int64_t r = w.r0; r < w.r1; ++r)
      for (int64_t c = w.c0; c < w.c1; ++c) {
        ++covered[r * 4 + c];
        CHECK(matmul_core_of(*m, r, c, chip.grid_x) == w.core);
      }
  for (int n : covered) CHECK(n == 1);
}

TEST_CASE("program rules: layouts, blocks, K steps and sub-blocks") {
  Launch l;
  OpConfig c = program(MatmulProgram::mcast_1d, 4, 2);
  c.per_core_m = 1;  // in0 multicast keeps all 2 tile rows per core
  CHECK(has(reason(l, c), "computes all 2 output tile rows"));
  c = program(MatmulProgram::mcast_2d, 4, 2);
  c.per_core_n = 0xffffffffu;  // as a corrupt plan might say
  CHECK(has(reason(l, c), "exceeds the 2x4 output tiles"));
  c = program(MatmulProgram::mcast_2d, 4, 2);
  c.program = static_cast<MatmulProgram>(7);
  CHECK(has(reason(l, c), "unknown matmul program 7"));
  c = program(MatmulProgram::mcast_2d, 4, 2);
  c.in0_block_w = 2;
  CHECK(has(reason(l, c), "in0_block_w 2 does not divide the 3 K tiles"));
  c = program(MatmulProgram::mcast_2d, 2, 1);
  c.per_core_n = 4;
  c.per_core_m = 2;
  c.out_subblock_h = 2;
  c.out_subblock_w = 4;  // 8 tiles: fits bf16, not f32
  CHECK(reason(l, c) == "accepted");
  Launch f32 = l;
  f32.out.dtype = DType::f32;
  f32.out.page_size = tile_bytes(DType::f32);
  CHECK(has(reason(f32, c), "exceeds the 4 destination-register tiles"));
  c.out_subblock_w = 2;
  CHECK(has(reason(l, c), "out_subblock_h must be 1"));
  c = program(MatmulProgram::mcast_2d, 2, 1);
  c.per_core_m = 1;  // 2 tile rows in blocks of 1 need 2 grid rows
  CHECK(has(reason(l, c),
            "2 output tile rows in blocks of per_core_m 1 need 2 cores, the grid offers 1"));
  // Layouts: 2-D wants block-sharded (or interleaved) in0, 1-D height or width.
  Launch hs = l;
  auto spec = even_shard_spec(kA, MemLayout::height_sharded, {0, 0, 1, 0});
  REQUIRE(spec);
  hs.a = make_sharded("a", kA, DType::bf16, MemLayout::height_sharded, *spec, 0);
  std::string r = reason(hs, program(MatmulProgram::mcast_2d, 4, 2));
  CHECK(has(r, "in0 'a' is height_sharded"));
  CHECK(has(r, "block_sharded"));
  CHECK(has(r, "op 'mm' (matmul)"));
  OpConfig m_split = program(MatmulProgram::mcast_1d, 2, 1);
  m_split.mcast_in0 = false;
  CHECK(reason(hs, m_split) == "accepted");
  // A block-sharded result must be held where each block is computed.
  Launch bo = l;
  auto ospec = even_shard_spec(kOut, MemLayout::block_sharded, {0, 0, 3, 1});
  REQUIRE(ospec);
  bo.out = make_sharded("c", kOut, DType::bf16, MemLayout::block_sharded, *ospec, 0);
  CHECK(reason(bo, program(MatmulProgram::mcast_2d, 4, 2)) == "accepted");
  bo.out.shard.orientation = ShardOrientation::col_major;
  bo.out.shard.grid = CoreRange{0, 0, 1, 3};
  r = reason(bo, program(MatmulProgram::mcast_2d, 4, 2));
  CHECK(has(r,
            "result 'c' keeps output tile (0,1) on core (0,1) but the program computes it on core "
            "(1,0)"));
  // Integer matmul is not supported.
  Launch ints = l;
  ints.a.dtype = DType::i32;
  ints.a.page_size = tile_bytes(DType::i32);
  CHECK(has(reason(ints, OpConfig{}), "matmul does not support dtype i32"));
}

TEST_CASE(
    "the plain multi-core program writes interleaved results and reads no width shards, as "
    "tt-metal's does") {
  // tt-metal's non-multicast programs: MatmulMultiCoreProgramConfig takes no sharded output;
  // sharded operands are read as MatmulMultiCoreReuseProgramConfig reads them, which refuses
  // width-sharded ones.
  Launch l;
  OpConfig none = program(MatmulProgram::none, 2, 1);
  CHECK(reason(l, none) == "accepted");
  Launch bo = l;
  auto ospec = even_shard_spec(kOut, MemLayout::block_sharded, {0, 0, 1, 0});
  REQUIRE(ospec);
  bo.out = make_sharded("c", kOut, DType::bf16, MemLayout::block_sharded, *ospec, 0);
  std::string r = reason(bo, none);
  CHECK(
      has(r, "op 'mm' (matmul): plain multi-core program (tt-metal MatmulMultiCoreProgramConfig)"));
  CHECK(has(r, "result 'c' is block_sharded; Output memory layout must be INTERLEAVED"));
  // The same result is fine for the 2-D program that computes each block where it is kept.
  CHECK(reason(bo, program(MatmulProgram::mcast_2d, 2, 1)) == "accepted");
  Launch hs = l;
  auto spec = even_shard_spec(kA, MemLayout::height_sharded, {0, 0, 1, 0});
  REQUIRE(spec);
  hs.a = make_sharded("a", kA, DType::bf16, MemLayout::height_sharded, *spec, 0);
  CHECK(reason(hs, none) == "accepted");
  // Width shards: the reuse program refuses them for in0 and in1. K = 3 tiles over 3 cores:
  // in0 shards of 64 x 32, in1 (N = 4 tiles over 2 cores) shards of 96 x 64.
  Launch ws = l;
  auto wspec = even_shard_spec(kA, MemLayout::width_sharded, {0, 0, 2, 0});
  REQUIRE(wspec);
  ws.a = make_sharded("a", kA, DType::bf16, MemLayout::width_sharded, *wspec, 0);
  r = reason(ws, none);
  CHECK(has(r, "(tt-metal MatmulMultiCoreReuseProgramConfig): in0 'a' is width_sharded"));
  CHECK(has(r, "memory layout, WIDTH_SHARDED, is not width sharded"));
  // The 1-D program multicasting in0 reads it (one K tile per step, as each shard holds one).
  OpConfig in0_mcast = program(MatmulProgram::mcast_1d, 3, 1);
  in0_mcast.mcast_in0 = true;
  in0_mcast.in0_block_w = 1;
  CHECK(reason(ws, in0_mcast) == "accepted");
  Launch wb = l;
  auto bspec = even_shard_spec(kB, MemLayout::width_sharded, {0, 0, 1, 0});
  REQUIRE(bspec);
  wb.b = make_sharded("b", kB, DType::bf16, MemLayout::width_sharded, *bspec, 0);
  r = reason(wb, none);
  CHECK(has(r, "in1 'b' is width_sharded"));
  CHECK(has(r, "Input B memory layout must not be WIDTH_SHARDED"));
  // A height-sharded in1 is read when each shard holds whole multiples of K rows: on 2 cores
  // its shards are 64 rows (2 tiles + 1) of K = 96, refused; on one core, 96 rows, accepted.
  Launch hb = l;
  auto hbspec = even_shard_spec(kB, MemLayout::height_sharded, {0, 0, 1, 0});
  REQUIRE(hbspec);
  hb.b = make_sharded("b", kB, DType::bf16, MemLayout::height_sharded, *hbspec, 0);
  r = reason(hb, none);
  CHECK(has(r, "(tt-metal MatmulMultiCoreReuseProgramConfig): in1 'b' has shards of 64 rows"));
  CHECK(has(r, "\"Input B shard shape[0] (64) must be divisible by K (96)\""));
  auto hb1 = even_shard_spec(kB, MemLayout::height_sharded, {0, 0, 0, 0});
  REQUIRE(hb1);
  hb.b = make_sharded("b", kB, DType::bf16, MemLayout::height_sharded, *hb1, 0);
  CHECK(reason(hb, none) == "accepted");
  // A block-sharded in1 over 2 columns holds 64 of N's 128 columns per shard.
  Launch bb = l;
  auto bbspec = even_shard_spec(kB, MemLayout::block_sharded, {0, 0, 1, 0});
  REQUIRE(bbspec);
  bb.b = make_sharded("b", kB, DType::bf16, MemLayout::block_sharded, *bbspec, 0);
  CHECK(has(reason(bb, none), "\"Input B shard shape[1] (64) must equal padded shape[-1] (128)\""));
  // in0 shards hold all of K: block shards over 3 columns hold one K tile of 3, refused; block
  // shards over one column (2 rows of cores) hold all 96 columns, accepted.
  Launch ba = l;
  auto baspec = even_shard_spec(kA, MemLayout::block_sharded, {0, 0, 2, 1});
  REQUIRE(baspec);
  ba.a = make_sharded("a", kA, DType::bf16, MemLayout::block_sharded, *baspec, 0);
  r = reason(ba, none);
  CHECK(has(r, "in0 'a' shards 32 of its 96 K columns"));
  CHECK(has(r, "\"Error: K, 96, needs to be equal to 32\""));
  auto ba1 = even_shard_spec(kA, MemLayout::block_sharded, {0, 0, 0, 1});
  REQUIRE(ba1);
  ba.a = make_sharded("a", kA, DType::bf16, MemLayout::block_sharded, *ba1, 0);
  CHECK(reason(ba, none) == "accepted");
  // Two sharded operands share memory layout and grid: a height-sharded in0 on 2 cores with an
  // in1 on one core is refused, both on one core accepted.
  Launch two = hs;
  two.b = hb.b;
  CHECK(has(reason(two, none), "\"Input tensors A and B must have matching shard spec grids\""));
  auto hs1 = even_shard_spec(kA, MemLayout::height_sharded, {0, 0, 0, 0});
  REQUIRE(hs1);
  two.a = make_sharded("a", kA, DType::bf16, MemLayout::height_sharded, *hs1, 0);
  CHECK(reason(two, none) == "accepted");
  auto bb1 = even_shard_spec(kB, MemLayout::block_sharded, {0, 0, 0, 0});
  REQUIRE(bb1);
  two.b = make_sharded("b", kB, DType::bf16, MemLayout::block_sharded, *bb1, 0);
  CHECK(has(reason(two, none), "\"Input tensors A and B must have matching memory layouts\""));
  // The launch refuses with the same reason.
  auto d = EmulatedDevice::create(wormhole_b0());
  REQUIRE(d);
  REQUIRE((*d)->allocate(bo.a));
  REQUIRE((*d)->allocate(bo.b));
  bo.out.address = wormhole_b0().l1_usable_top() - 8192;
  REQUIRE((*d)->allocate(bo.out));
  auto run = (*d)->launch(bo.op(none));
  REQUIRE_FALSE(run);
  CHECK(run.error().message == reason(bo, none));
}

TEST_CASE("in0 shard orientation: ROW_MAJOR for 1-D and 2-D, COL_MAJOR for transposed 2-D") {
  Launch l;
  Launch bs = l;
  // 2 tile rows of in0 over 2 cores: one grid column (ROW_MAJOR) or one grid row (COL_MAJOR).
  auto spec = even_shard_spec(kA, MemLayout::block_sharded, {0, 0, 0, 1});
  REQUIRE(spec);
  bs.a = make_sharded("a", kA, DType::bf16, MemLayout::block_sharded, *spec, 0);
  OpConfig two_d = program(MatmulProgram::mcast_2d, 1, 2);
  CHECK(reason(bs, two_d) == "accepted");
  auto cspec =
      even_shard_spec(kA, MemLayout::block_sharded, {0, 0, 1, 0}, ShardOrientation::col_major);
  REQUIRE(cspec);
  Launch cs = l;
  cs.a = make_sharded("a", kA, DType::bf16, MemLayout::block_sharded, *cspec, 0);
  OpConfig transposed = program(MatmulProgram::mcast_2d, 2, 1);
  transposed.transpose_mcast = true;
  CHECK(reason(cs, transposed) == "accepted");
  CHECK(has(reason(cs, program(MatmulProgram::mcast_2d, 2, 1)),
            "in0 'a' shards are COL_MAJOR; tt-metal requires ROW_MAJOR without transpose_mcast"));
  CHECK(has(reason(bs, transposed),
            "in0 'a' shards are ROW_MAJOR; tt-metal requires COL_MAJOR with transpose_mcast"));
  Launch hs = l;
  auto hspec = even_shard_spec(kA, MemLayout::height_sharded, {0, 0, 1, 0});
  REQUIRE(hspec);
  hs.a = make_sharded("a", kA, DType::bf16, MemLayout::height_sharded, *hspec, 0);
  hs.a.shard.orientation = ShardOrientation::col_major;
  OpConfig m_split = program(MatmulProgram::mcast_1d, 2, 1);
  m_split.mcast_in0 = false;
  CHECK(has(reason(hs, m_split), "tt-metal requires ROW_MAJOR for 1-D multicast"));
}

TEST_CASE("circular buffers per program config") {
  Launch l;
  ChipDesc chip = wormhole_b0();
  OpConfig c = program(MatmulProgram::mcast_2d, 2, 1);
  c.per_core_m = 2;
  c.per_core_n = 2;
  c.in0_block_w = 1;
  auto m = resolve_matmul(l.op(c), chip);
  REQUIRE(m);
  // in0 2x1 and in1 1x2 double-buffered, output 2x2 bf16, f32 partials (3 K blocks).
  uint64_t want = 2 * 2 * 2048 + 2 * 2 * 2048 + 4 * 2048 + 4 * 4096;
  CHECK(matmul_cb_bytes(*m, l.op(c)) == want);
  OpValidation v = OpModel(chip).validate(l.op(c));
  REQUIRE(v.ok);
  CHECK(v.cb_bytes_per_core == want);
  CHECK(v.output_l1_bytes_per_core == 0);
  // One K block: no partials. A sharded result is its own output buffer.
  c.in0_block_w = 3;
  Launch sharded = l;
  auto spec = even_shard_spec(kOut, MemLayout::block_sharded, {0, 0, 1, 0});
  REQUIRE(spec);
  sharded.out = make_sharded("c", kOut, DType::bf16, MemLayout::block_sharded, *spec, 0);
  v = OpModel(chip).validate(sharded.op(c));
  REQUIRE(v.ok);
  CHECK(v.cb_bytes_per_core == 2 * 2 * 3 * 2048 + 2 * 3 * 2 * 2048);
  CHECK(v.output_l1_bytes_per_core == 4 * 2048);
}

TEST_CASE("run time: circular buffers clash only with L1 buffers on the op's cores") {
  auto d = EmulatedDevice::create(wormhole_b0());
  REQUIRE(d);
  auto& dev = **d;
  ChipDesc chip = wormhole_b0();
  Launch l;
  REQUIRE(dev.allocate(l.a));
  REQUIRE(dev.allocate(l.b));
  REQUIRE(dev.allocate(l.out));
  OpConfig c = program(MatmulProgram::mcast_2d, 4, 2);
  std::vector<int64_t> small{32, 32};
  ShardSpec s;
  s.shape[0] = 32;
  s.shape[1] = 32;
  s.grid = CoreRange{1, 0, 1, 0};  // inside the op's 4x2 grid
  TensorPlacement low = make_sharded("low", small, DType::bf16, MemLayout::height_sharded, s,
                                     chip.l1_unreserved_base + 1024);
  REQUIRE(dev.allocate(low));
  auto r = dev.launch(l.op(c));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::resource_exhausted);
  CHECK(has(r.error().message, "clash on core (1,0) with L1 buffer 'low'"));
  REQUIRE(dev.deallocate(low));
  low.shard.grid = CoreRange{6, 6, 6, 6};  // outside it: no clash
  REQUIRE(dev.allocate(low));
  CHECK(dev.launch(l.op(c)));
}

TEST_CASE(
    "out of L1: validate and allocate name the op, tensor and core; the device stays usable") {
  auto d = EmulatedDevice::create(wormhole_b0());
  REQUIRE(d);
  auto& dev = **d;
  ChipDesc chip = wormhole_b0();
  std::vector<int64_t> big{768, 1024};  // 3 MiB of f32 on one core
  ShardSpec s;
  s.grid = CoreRange{2, 3, 2, 3};
  s.shape[0] = 768;
  s.shape[1] = 1024;
  TensorPlacement huge =
      make_sharded("huge", big, DType::f32, MemLayout::height_sharded, s, chip.l1_unreserved_base);
  TensorPlacement x = make_interleaved("x", big, DType::f32, BufferType::dram, 0);
  const TensorPlacement* ins[] = {&x};
  const TensorPlacement* outs[] = {&huge};
  OpConfig c;
  OpLaunch op{OpKind::relu, "act", ins, outs, c};
  OpValidation v = OpModel(chip).validate(op);
  REQUIRE_FALSE(v.ok);
  CHECK(has(v.reason, "op 'act'"));
  CHECK(has(v.reason, "usable"));
  auto a = dev.allocate(huge);
  REQUIRE_FALSE(a);
  CHECK(has(a.error().message, "huge"));
  REQUIRE(dev.allocate(x));
  auto r = dev.launch(op);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == v.reason);
  // Usable afterwards.
  TensorPlacement y = make_interleaved("y", big, DType::f32, BufferType::dram, 64 << 20);
  REQUIRE(dev.allocate(y));
  outs[0] = &y;
  CHECK(dev.launch(OpLaunch{OpKind::relu, "act", ins, outs, c}));
}

TEST_CASE("the core thread pool gives the same bytes and the same errors as serial execution") {
  std::vector<int64_t> as{256, 256}, bs{256, 256};
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> ha(256 * 256), hb(256 * 256);
  for (float& v : ha) v = round_bf16(dist(rng));
  for (float& v : hb) v = round_bf16(dist(rng));
  auto run = [&](unsigned threads, DType out_dtype,
                 bool poison) -> std::pair<std::vector<float>, std::string> {
    auto d = EmulatedDevice::create(wormhole_b0());
    REQUIRE(d);
    auto& dev = **d;
    dev.set_core_threads(threads);
    CHECK(dev.core_threads() == threads);
    TensorPlacement a = make_interleaved("a", as, DType::bf16, BufferType::dram, 0);
    TensorPlacement b = make_interleaved("b", bs, DType::bf16, BufferType::dram, 1 << 20);
    TensorPlacement o = make_interleaved("o", as, out_dtype, BufferType::dram, 2 << 20);
    REQUIRE(dev.allocate(a));
    REQUIRE(dev.allocate(b));
    REQUIRE(dev.allocate(o));
    std::vector<float> pa = ha;
    if (poison) pa[5 * 256 + 7] = std::numeric_limits<float>::infinity();  // inf * 0 -> NaN
    REQUIRE(dev.write(a, pa));
    REQUIRE(dev.write(b, hb));
    const TensorPlacement* ins[] = {&a, &b};
    const TensorPlacement* outs[] = {&o};
    OpConfig c = program(MatmulProgram::mcast_2d, 8, 8);
    auto r = dev.launch(OpLaunch{OpKind::matmul, "mm", ins, outs, c});
    if (!r) return {{}, r.error().message};
    std::vector<float> got(256 * 256);
    REQUIRE(dev.read(o, got));
    return {got, ""};
  };
  auto serial = run(1, DType::bf16, false), pooled = run(4, DType::bf16, false);
  CHECK(serial.second.empty());
  CHECK(serial.first == pooled.first);
  // Work items fail on their own threads; the lowest failing item's error wins either way.
  auto bad1 = run(1, DType::bf8b, true), bad4 = run(4, DType::bf8b, true);
  CHECK(has(bad1.second, "bf8b cannot hold"));
  CHECK(bad1.second == bad4.second);
}

TEST_CASE("CB queries on placements without shapes fall back instead of crashing") {
  TensorPlacement a, b, out;  // dtype only, as a plan report builds them
  const TensorPlacement* ins[] = {&a, &b};
  const TensorPlacement* outs[] = {&out};
  OpLaunch op{OpKind::matmul, "mm", ins, outs, OpConfig{}};
  CHECK_FALSE(resolve_matmul(op, wormhole_b0()));
  CHECK(OpModel(wormhole_b0()).circular_buffer_bytes(op) == 2 * 3 * 2048 + 4096);
  CHECK_FALSE(OpModel(wormhole_b0()).validate(op).ok);
}
