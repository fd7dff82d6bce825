// tt-metal's interleaved_to_sharded rules for to_memory_config (docs/hardware-rules.md): what
// OpModel::validate refuses.
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
