// tt-metal's interleaved_to_sharded, sharded_to_interleaved and reshard rules for to_memory_config
// (docs/hardware-rules.md): what OpModel::validate refuses.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/placement.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

bool has(const std::string& s, const char* part) {
  if (s.find(part) != std::string::npos) return true;
  MESSAGE(s);
  return false;
}

}  // namespace

TEST_CASE("to_memory_config: row-major shard rows L1-aligned, casts between tiled tensors only") {
  ChipDesc chip = wormhole_b0();
  uint64_t lo = (chip.l1_usable_top() - 65536) / 64 * 64;
  const std::vector<int64_t> shape{32, 24};  // bf16 rows of 48 bytes
  TensorPlacement x =
      make_interleaved("x", shape, DType::bf16, BufferType::dram, 0, TileLayout::row_major);
  ShardSpec s;
  s.grid = CoreRange{0, 0, 2, 0};
  s.shape[0] = 32;
  s.shape[1] = 8;  // 16 bytes per shard row: aligned
  TensorPlacement ok =
      make_sharded("y", shape, DType::bf16, MemLayout::width_sharded, s, lo, TileLayout::row_major);
  OpConfig c;
  c.grid_x = 3;
  c.grid_y = 1;
  const TensorPlacement* ins[] = {&x};
  const TensorPlacement* outs[] = {&ok};
  OpValidation v = OpModel(chip).validate(OpLaunch{OpKind::to_memory_config, "op", ins, outs, c});
  CHECK_MESSAGE(v.ok, v.reason);
  // 4 shards of 6 values: 12-byte rows, not 16-byte aligned.
  s.grid = CoreRange{0, 0, 3, 0};
  s.shape[1] = 6;
  TensorPlacement bad =
      make_sharded("y", shape, DType::bf16, MemLayout::width_sharded, s, lo, TileLayout::row_major);
  c.grid_x = 4;
  outs[0] = &bad;
  v = OpModel(chip).validate(OpLaunch{OpKind::to_memory_config, "op", ins, outs, c});
  REQUIRE_FALSE(v.ok);
  CHECK(has(v.reason, "result 'y' shards rows of 12 bytes, not a multiple of the 16-byte L1"));
  // A cast out of a row-major tensor into shards.
  s.grid = CoreRange{0, 0, 2, 0};
  s.shape[1] = 8;
  TensorPlacement f32 =
      make_sharded("y", shape, DType::f32, MemLayout::width_sharded, s, lo, TileLayout::row_major);
  c.grid_x = 3;
  outs[0] = &f32;
  v = OpModel(chip).validate(OpLaunch{OpKind::to_memory_config, "op", ins, outs, c});
  REQUIRE_FALSE(v.ok);
  CHECK(has(v.reason, "converts dtypes between tiled tensors only"));
}

TEST_CASE("to_memory_config between shards: no cast, same layout, aligned rows unless height") {
  ChipDesc chip = wormhole_b0();
  uint64_t lo = (chip.l1_usable_top() - 65536) / 64 * 64;
  auto validate = [&](const TensorPlacement& in, const TensorPlacement& out, uint16_t gx) {
    OpConfig c;
    c.grid_x = gx;
    c.grid_y = 1;
    const TensorPlacement* ins[] = {&in};
    const TensorPlacement* outs[] = {&out};
    OpValidation v = OpModel(chip).validate(OpLaunch{OpKind::to_memory_config, "op", ins, outs, c});
    return v.ok ? std::string("accepted") : v.reason;
  };
  // Tiled [64, 128]: height shards on 2 cores to width shards on 4.
  const std::vector<int64_t> tiled{64, 128};
  auto hs = even_shard_spec(tiled, MemLayout::height_sharded, CoreRange{0, 0, 1, 0});
  auto ws = even_shard_spec(tiled, MemLayout::width_sharded, CoreRange{0, 0, 3, 0});
  REQUIRE(hs);
  REQUIRE(ws);
  TensorPlacement a = make_sharded("a", tiled, DType::bf16, MemLayout::height_sharded, *hs, lo);
  TensorPlacement b = make_sharded("b", tiled, DType::bf16, MemLayout::width_sharded, *ws, lo);
  CHECK(validate(a, b, 4) == "accepted");
  TensorPlacement b8 = make_sharded("b", tiled, DType::bf8b, MemLayout::width_sharded, *ws, lo);
  std::string r = validate(a, b8, 4);
  CHECK(has(r, "operand 'a' (bf16) and result 'b' (bf8b) are both sharded"));
  CHECK(has(r, "Input tensor dtype must equal output tensor dtype"));
  // Row-major [32, 24] bf16: 12-byte shard rows (4 shards of 6 values) reshard only between
  // height-sharded layouts.
  const std::vector<int64_t> rm{32, 24};
  ShardSpec w6;
  w6.grid = CoreRange{0, 0, 3, 0};
  w6.shape[0] = 32;
  w6.shape[1] = 6;
  ShardSpec w8 = w6;
  w8.grid = CoreRange{0, 0, 2, 0};
  w8.shape[1] = 8;
  TensorPlacement x8 =
      make_sharded("x", rm, DType::bf16, MemLayout::width_sharded, w8, lo, TileLayout::row_major);
  TensorPlacement y6 =
      make_sharded("y", rm, DType::bf16, MemLayout::width_sharded, w6, lo, TileLayout::row_major);
  r = validate(x8, y6, 4);
  CHECK(has(r, "tensor 'y' shards rows of 12 bytes"));
  CHECK(has(r, "only between height-sharded layouts"));
  // Height shards of rows of 20 values (40 bytes, unaligned) reshard to other height shards.
  const std::vector<int64_t> rm20{32, 20};
  ShardSpec h8;
  h8.grid = CoreRange{0, 0, 3, 0};
  h8.shape[0] = 8;
  h8.shape[1] = 20;
  ShardSpec h16 = h8;
  h16.grid = CoreRange{0, 0, 1, 0};
  h16.shape[0] = 16;
  TensorPlacement p = make_sharded("p", rm20, DType::bf16, MemLayout::height_sharded, h8, lo,
                                   TileLayout::row_major);
  TensorPlacement q = make_sharded("q", rm20, DType::bf16, MemLayout::height_sharded, h16, lo,
                                   TileLayout::row_major);
  CHECK(validate(p, q, 4) == "accepted");
}

TEST_CASE("to_memory_config out of shards: aligned row-major rows, casts between tiled only") {
  ChipDesc chip = wormhole_b0();
  uint64_t lo = (chip.l1_usable_top() - 65536) / 64 * 64;
  auto validate = [&](const TensorPlacement& in, const TensorPlacement& out) {
    OpConfig c;
    c.grid_x = static_cast<uint16_t>(in.shard.grid.x1 + 1);
    c.grid_y = 1;
    const TensorPlacement* ins[] = {&in};
    const TensorPlacement* outs[] = {&out};
    OpValidation v = OpModel(chip).validate(OpLaunch{OpKind::to_memory_config, "op", ins, outs, c});
    return v.ok ? std::string("accepted") : v.reason;
  };
  // Row-major [32, 24] bf16 width-sharded: 3 shards of 8 values (16-byte rows, aligned) go to
  // DRAM; 4 shards of 6 values (12-byte rows) do not.
  const std::vector<int64_t> rm{32, 24};
  ShardSpec w8;
  w8.grid = CoreRange{0, 0, 2, 0};
  w8.shape[0] = 32;
  w8.shape[1] = 8;
  ShardSpec w6 = w8;
  w6.grid = CoreRange{0, 0, 3, 0};
  w6.shape[1] = 6;
  TensorPlacement dram =
      make_interleaved("y", rm, DType::bf16, BufferType::dram, 0, TileLayout::row_major);
  TensorPlacement x8 =
      make_sharded("x", rm, DType::bf16, MemLayout::width_sharded, w8, lo, TileLayout::row_major);
  TensorPlacement x6 =
      make_sharded("x", rm, DType::bf16, MemLayout::width_sharded, w6, lo, TileLayout::row_major);
  CHECK(validate(x8, dram) == "accepted");
  std::string r = validate(x6, dram);
  CHECK(has(r, "operand 'x' shards rows of 12 bytes, not a multiple of the 16-byte L1"));
  CHECK(has(r, "Shard page size must be aligned to 16B for L1 Tensor"));
  // A cast on the way out: refused row-major, accepted tiled ([64, 128] on 2 height shards).
  TensorPlacement dram_f32 =
      make_interleaved("y", rm, DType::f32, BufferType::dram, 0, TileLayout::row_major);
  r = validate(x8, dram_f32);
  CHECK(has(r, "operand 'x' (bf16, sharded) and result 'y' (f32)"));
  CHECK(has(r, "If diff output type, tensor must be TILED"));
  const std::vector<int64_t> tiled{64, 128};
  auto hs = even_shard_spec(tiled, MemLayout::height_sharded, CoreRange{0, 0, 1, 0});
  REQUIRE(hs);
  TensorPlacement a = make_sharded("a", tiled, DType::bf16, MemLayout::height_sharded, *hs, lo);
  CHECK(validate(a, make_interleaved("b", tiled, DType::f32, BufferType::dram, 0)) == "accepted");
  // The emulator refuses the same launch with the same reason.
  auto dev = EmulatedDevice::create(chip);
  REQUIRE(dev);
  const TensorPlacement* ins[] = {&x6};
  const TensorPlacement* outs[] = {&dram};
  OpConfig c;
  c.grid_x = 4;
  c.grid_y = 1;
  auto run = (*dev)->launch(OpLaunch{OpKind::to_memory_config, "op", ins, outs, c});
  REQUIRE_FALSE(run);
  CHECK(run.error().message == validate(x6, dram));
}
