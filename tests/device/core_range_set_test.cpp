// Height and width sharding over a core range set: shards continue range by range, each range
// walked in orientation order; bad sets fail clearly; data round-trips and reshards to and from
// a set; per-core accounting covers every range.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/placement.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

uint32_t core(uint32_t x, uint32_t y) {
  return y * 8 + x;
}

/// Ranges (0,0)-(1,0) then (4,4)-(4,5): four cores.
ShardSpec two_ranges(int64_t h, int64_t w, ShardOrientation o = ShardOrientation::row_major) {
  ShardSpec s;
  s.grid = CoreRange{0, 0, 1, 0};
  s.extra_ranges = 1;
  s.extra[0] = CoreRange{4, 4, 4, 5};
  s.shape[0] = h;
  s.shape[1] = w;
  s.orientation = o;
  return s;
}

}  // namespace

TEST_CASE("shards continue on the next range of the set") {
  ChipDesc chip = wormhole_b0();
  std::vector<int64_t> shape{128, 64};  // 4 tile rows, one per core
  TensorPlacement t =
      make_sharded("set", shape, DType::bf16, MemLayout::height_sharded, two_ranges(32, 64), 0);
  REQUIRE(check_placement(t, chip));
  AddressMap map(t, chip);
  CHECK(map.page(0 * 2).bank == core(0, 0));
  CHECK(map.page(1 * 2).bank == core(1, 0));
  CHECK(map.page(2 * 2).bank == core(4, 4));
  CHECK(map.page(3 * 2 + 1).bank == core(4, 5));
  CHECK(map.page(3 * 2 + 1).offset == 2048);
  CHECK(map.holds(core(4, 5)));
  CHECK_FALSE(map.holds(core(2, 0)));
  // Width sharding over the set, col-major inside each range.
  std::vector<int64_t> wide{32, 128};
  TensorPlacement w = make_sharded("wset", wide, DType::bf16, MemLayout::width_sharded,
                                   two_ranges(32, 32, ShardOrientation::col_major), 0);
  REQUIRE(check_placement(w, chip));
  CHECK(AddressMap(w, chip).page(1).bank == core(1, 0));
  CHECK(AddressMap(w, chip).page(3).bank == core(4, 5));
}

TEST_CASE("bad core range sets fail naming the tensor and the core") {
  ChipDesc chip = wormhole_b0();
  std::vector<int64_t> shape{128, 64};
  TensorPlacement block =
      make_sharded("blk", shape, DType::bf16, MemLayout::block_sharded, two_ranges(32, 64), 0);
  auto s = check_placement(block, chip);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("'blk'") != std::string::npos);
  CHECK(s.error().message.find("one core rectangle") != std::string::npos);
  ShardSpec overlap = two_ranges(32, 64);
  overlap.extra[0] = CoreRange{1, 0, 1, 1};
  s = check_placement(
      make_sharded("ovl", shape, DType::bf16, MemLayout::height_sharded, overlap, 0), chip);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("overlap at core (1,0)") != std::string::npos);
  ShardSpec outside = two_ranges(32, 64);
  outside.extra[0] = CoreRange{7, 7, 7, 8};
  s = check_placement(
      make_sharded("out", shape, DType::bf16, MemLayout::height_sharded, outside, 0), chip);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("core (7,8) does not exist") != std::string::npos);
  std::vector<int64_t> tall{160, 64};  // 5 shards for 4 cores
  s = check_placement(
      make_sharded("tall", tall, DType::bf16, MemLayout::height_sharded, two_ranges(32, 64), 0),
      chip);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("the grid has 4 cores") != std::string::npos);
  ShardSpec too_many = two_ranges(32, 64);
  too_many.extra_ranges = kMaxCoreRanges;
  s = check_placement(
      make_sharded("many", shape, DType::bf16, MemLayout::height_sharded, too_many, 0), chip);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("at most") != std::string::npos);
}

TEST_CASE("a tensor on a core range set round-trips, reshards, and counts on every range's cores") {
  auto d = EmulatedDevice::create(wormhole_b0());
  REQUIRE(d);
  auto& dev = **d;
  ChipDesc chip = wormhole_b0();
  std::vector<int64_t> shape{128, 64};
  uint64_t top = chip.l1_usable_top();
  TensorPlacement set = make_sharded("set", shape, DType::bf16, MemLayout::height_sharded,
                                     two_ranges(32, 64), top - 4096);
  REQUIRE(dev.allocate(set));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> host(128 * 64), back(host.size());
  for (float& v : host) v = round_bf16(dist(rng));
  REQUIRE(dev.write(set, host));
  REQUIRE(dev.read(set, back));
  CHECK(back == host);
  CHECK(dev.l1_core_stats(core(4, 5)).used_bytes == 4096);
  CHECK(dev.l1_core_stats(core(2, 0)).used_bytes == 0);
  // Reshard: set -> block sharded on a 2x2 rectangle -> DRAM interleaved.
  auto bspec = even_shard_spec(shape, MemLayout::block_sharded, CoreRange{2, 2, 3, 3});
  REQUIRE(bspec);
  TensorPlacement block =
      make_sharded("block", shape, DType::bf16, MemLayout::block_sharded, *bspec, top - 8192);
  TensorPlacement dram = make_interleaved("dram", shape, DType::f32, BufferType::dram, 0);
  REQUIRE(dev.allocate(block));
  REQUIRE(dev.allocate(dram));
  OpConfig c;
  c.grid_x = 4;
  c.grid_y = 4;
  const TensorPlacement* in1[] = {&set};
  const TensorPlacement* out1[] = {&block};
  REQUIRE(dev.launch(OpLaunch{OpKind::to_memory_config, "to_block", in1, out1, c}));
  const TensorPlacement* in2[] = {&block};
  const TensorPlacement* out2[] = {&dram};
  REQUIRE(dev.launch(OpLaunch{OpKind::to_memory_config, "to_dram", in2, out2, c}));
  REQUIRE(dev.read(dram, back));
  CHECK(back == host);
  // A buffer on the set's second range clashes with circular buffers of an op running there.
  TensorPlacement low = make_sharded("low", shape, DType::bf16, MemLayout::height_sharded,
                                     two_ranges(32, 64), chip.l1_unreserved_base + 1024);
  REQUIRE(dev.allocate(low));
  c.grid_x = 5;
  c.grid_y = 5;
  const TensorPlacement* in3[] = {&dram};
  const TensorPlacement* out3[] = {&block};
  auto r = dev.launch(OpLaunch{OpKind::relu, "act", in3, out3, c});
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("clash on core (0,0) with L1 buffer 'low'") != std::string::npos);
}
