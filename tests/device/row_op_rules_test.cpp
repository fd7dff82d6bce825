// tt-metal's rules for sharded softmax, layer norm, RMS norm and reshards (docs/hardware-rules.md):
// what OpModel::validate refuses, and that the emulator's launch refuses it with the same reason.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/placement.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

const std::vector<int64_t> kShape{64, 128};  // 2x4 tiles

TensorPlacement height(const char* name, uint64_t address) {
  auto spec = even_shard_spec(kShape, MemLayout::height_sharded, {0, 0, 1, 0});
  REQUIRE(spec);
  return make_sharded(name, kShape, DType::bf16, MemLayout::height_sharded, *spec, address);
}

TensorPlacement width(const char* name, uint64_t address) {
  auto spec = even_shard_spec(kShape, MemLayout::width_sharded, {0, 0, 1, 0});
  REQUIRE(spec);
  return make_sharded(name, kShape, DType::bf16, MemLayout::width_sharded, *spec, address);
}

TensorPlacement dram(const char* name, uint64_t address) {
  return make_interleaved(name, kShape, DType::bf16, BufferType::dram, address);
}

/// validate()'s reason ("accepted" when it accepts); a rejection must also be launch()'s error.
std::string verdict(OpKind kind, const TensorPlacement& x, const TensorPlacement& y,
                    OpConfig c = {}) {
  c.grid_x = 2;
  c.grid_y = 1;
  const TensorPlacement* ins[] = {&x};
  const TensorPlacement* outs[] = {&y};
  OpLaunch op{kind, "op", ins, outs, c};
  OpValidation v = OpModel(wormhole_b0()).validate(op);
  if (v.ok) return "accepted";
  auto d = EmulatedDevice::create(wormhole_b0());
  REQUIRE(d);
  REQUIRE((*d)->allocate(x));
  REQUIRE((*d)->allocate(y));
  auto r = (*d)->launch(op);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == v.reason);
  return v.reason;
}

bool has(const std::string& s, const char* part) {
  if (s.find(part) != std::string::npos) return true;
  MESSAGE(s);
  return false;
}

}  // namespace

TEST_CASE("sharded softmax runs in place over the last dim with whole rows per shard") {
  uint64_t top = wormhole_b0().l1_usable_top();
  uint64_t hi = (top - 8192) / 64 * 64, lo = (top - 16384) / 64 * 64;
  CHECK(verdict(OpKind::softmax, dram("x", 0), dram("y", 1 << 20)) == "accepted");
  CHECK(verdict(OpKind::softmax, height("x", hi), height("y", lo)) == "accepted");
  // Interleaved in, sharded out: not in place.
  CHECK(has(verdict(OpKind::softmax, dram("x", 0), height("y", lo)),
            "Operation must be inplace for sharded multi-core program config"));
  // Width shards split the rows the softmax reduces.
  CHECK(has(verdict(OpKind::softmax, width("x", hi), width("y", lo)),
            "shards are 64 wide, not the 128 of the last dim"));
  // Over the rows dim, the sharded program does not apply.
  OpConfig rows;
  rows.num_dims = 1;
  rows.dims[0] = 0;
  CHECK(has(verdict(OpKind::softmax, height("x", hi), height("y", lo), rows),
            "reduces over the last dim only"));
  CHECK(verdict(OpKind::softmax, dram("x", 0), dram("y", 1 << 20), rows) == "accepted");
  // Input dtype.
  TensorPlacement f32 = make_interleaved("x", kShape, DType::f32, BufferType::dram, 0);
  CHECK(verdict(OpKind::softmax, f32, dram("y", 1 << 20)) == "accepted");
}

TEST_CASE("sharded layer and RMS norm keep the input's buffer and memory layout") {
  uint64_t top = wormhole_b0().l1_usable_top();
  uint64_t hi = (top - 8192) / 64 * 64, lo = (top - 16384) / 64 * 64;
  for (OpKind k : {OpKind::layer_norm, OpKind::rms_norm}) {
    CAPTURE(static_cast<int>(k));
    CHECK(verdict(k, height("x", hi), height("y", lo)) == "accepted");
    CHECK(verdict(k, dram("x", 0), dram("y", 1 << 20)) == "accepted");
    CHECK(has(verdict(k, dram("x", 0), height("y", lo)),
              "result 'y' is height_sharded but operand 'x' is interleaved"));
    CHECK(has(verdict(k, height("x", hi), dram("y", 0)),
              "needs the same buffer type and memory layout for input and output"));
    CHECK(has(verdict(k, height("x", hi), width("y", lo)),
              "operand 'x' is height_sharded and result 'y' is width_sharded"));
  }
}

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
