// Sharded L1 layouts: the address map (which core, which offset) for height, width and block
// sharding in both orientations, uneven last shards, row-major pages, shard-spec errors, bytes
// landing on the right core, and per-core L1 statistics.
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

std::unique_ptr<EmulatedDevice> make_device() {
  auto d = EmulatedDevice::create(wormhole_b0());
  REQUIRE(d);
  return std::move(*d);
}

ShardSpec spec(CoreRange grid, int64_t h, int64_t w,
               ShardOrientation o = ShardOrientation::row_major) {
  ShardSpec s;
  s.grid = grid;
  s.shape[0] = h;
  s.shape[1] = w;
  s.orientation = o;
  return s;
}

uint32_t core(uint32_t x, uint32_t y) {
  return y * 8 + x;
}

/// An L1 address for `bytes` per core just under the usable top.
uint64_t top_address(uint64_t bytes) {
  ChipDesc chip = wormhole_b0();
  return (chip.l1_usable_top() - bytes) / chip.l1_alignment * chip.l1_alignment;
}

std::vector<float> values(size_t n, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-200, 200);
  std::vector<float> v(n);
  for (float& x : v) {
    int i = d(rng);
    x = dtype == DType::u32    ? static_cast<float>(i + 200)
        : dtype == DType::i32  ? static_cast<float>(i)
        : dtype == DType::bf8b ? (i % 64) / 32.0f  // |x| < 2, multiples of 2^-6: exact in bf8b
                               : i / 64.0f;
  }
  return v;
}

}  // namespace

TEST_CASE("height sharding: shard k on the k-th core in orientation order") {
  ChipDesc chip = wormhole_b0();
  std::vector<int64_t> shape{2, 40, 64};  // tiles: 2 batches x 2 rows = 4 tile rows, 2 tile columns
  for (auto o : {ShardOrientation::row_major, ShardOrientation::col_major}) {
    TensorPlacement t = make_sharded("h", shape, DType::bf16, MemLayout::height_sharded,
                                     spec({0, 0, 1, 1}, 32, 64, o), 4096);
    REQUIRE(check_placement(t, chip));
    AddressMap map(t, chip);
    CHECK(map.bytes_per_bank() == 2 * 2048);
    // Page (tile row 2, column 1) lies in shard 2, local page 1.
    PageLocation loc = map.page(2 * 2 + 1);
    CHECK(loc.bank == (o == ShardOrientation::row_major ? core(0, 1) : core(1, 0)));
    CHECK(loc.offset == 4096 + 2048);
    CHECK(map.holds(core(1, 1)));
    CHECK_FALSE(map.holds(core(2, 0)));
  }
}

TEST_CASE("width and block sharding place shards by column and by (row, column)") {
  ChipDesc chip = wormhole_b0();
  std::vector<int64_t> wide{64, 128};  // 2 x 4 tiles
  TensorPlacement w =
      make_sharded("w", wide, DType::bf16, MemLayout::width_sharded, spec({2, 3, 3, 3}, 64, 64), 0);
  REQUIRE(check_placement(w, chip));
  PageLocation loc = AddressMap(w, chip).page(1 * 4 + 3);  // shard 1, local (1, 1)
  CHECK(loc.bank == core(3, 3));
  CHECK(loc.offset == 3 * 2048);

  std::vector<int64_t> shape{96, 128};  // 3 x 4 tiles
  TensorPlacement b =
      make_sharded("b", shape, DType::f32, MemLayout::block_sharded, spec({0, 0, 1, 2}, 32, 64), 0);
  REQUIRE(check_placement(b, chip));
  loc = AddressMap(b, chip).page(2 * 4 + 3);  // block (2, 1) -> core (x=1, y=2), local page 1
  CHECK(loc.bank == core(1, 2));
  CHECK(loc.offset == 4096);
  // Col-major: block rows walk x, block columns walk y.
  TensorPlacement bc = make_sharded("bc", shape, DType::f32, MemLayout::block_sharded,
                                    spec({0, 0, 2, 1}, 32, 64, ShardOrientation::col_major), 0);
  REQUIRE(check_placement(bc, chip));
  CHECK(AddressMap(bc, chip).page(2 * 4 + 3).bank == core(2, 1));
  // The row-major orientation of the same 3x2 grid has only 2 rows for 3 block rows.
  TensorPlacement too_few = bc;
  too_few.shard.orientation = ShardOrientation::row_major;
  auto s = check_placement(too_few, chip);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("'bc'") != std::string::npos);
  CHECK(s.error().message.find("do not fit") != std::string::npos);
}

TEST_CASE("even_shard_spec splits evenly and leaves a partial last shard") {
  std::vector<int64_t> shape{100, 64};  // 4 tile rows
  auto h = even_shard_spec(shape, MemLayout::height_sharded, {0, 0, 2, 0});
  REQUIRE(h);
  CHECK(h->shape[0] == 64);  // ceil(4 / 3) = 2 tile rows
  CHECK(h->shape[1] == 64);
  auto b = even_shard_spec(std::vector<int64_t>{256, 320}, MemLayout::block_sharded, {0, 0, 3, 1});
  REQUIRE(b);
  CHECK(b->shape[0] == 128);  // 8 tile rows over 2 grid rows
  CHECK(b->shape[1] == 96);   // 10 tile columns over 4 grid columns -> 3
  auto r = even_shard_spec(std::vector<int64_t>{7, 50}, MemLayout::width_sharded, {0, 0, 3, 0},
                           ShardOrientation::row_major, TileLayout::row_major);
  REQUIRE(r);
  CHECK(r->shape[0] == 7);
  CHECK(r->shape[1] == 13);
  CHECK_FALSE(even_shard_spec(shape, MemLayout::interleaved, {0, 0, 0, 0}));
}

TEST_CASE("bytes land on the core and offset the map names") {
  auto dev = make_device();
  ChipDesc chip = wormhole_b0();
  std::vector<int64_t> shape{100, 64};  // 4 x 2 tiles; 2 shards of 3 tile rows, the last partial
  TensorPlacement t = make_sharded("x", shape, DType::bf16, MemLayout::height_sharded,
                                   spec({3, 5, 4, 5}, 96, 64), top_address(6 * 2048));
  REQUIRE(dev->allocate(t));
  std::vector<float> host = values(static_cast<size_t>(volume(shape)), DType::bf16, 1);
  REQUIRE(dev->write(t, host));
  std::vector<float> tiles(8 * kTileElems);
  tilize(shape, host, tiles);
  // Tile row 3 (shard 1, local row 0), column 1 -> core (4, 5), local page 1.
  std::vector<std::byte> raw(2048);
  REQUIRE(dev->peek(BufferType::l1, core(4, 5), t.address + 2048, raw));
  float got[kTileElems];
  REQUIRE(unpack_tile(DType::bf16, raw.data(), got));
  for (int i = 0; i < kTileElems; ++i) CHECK(got[i] == tiles[(3 * 2 + 1) * kTileElems + i]);
  // The same address on a core outside the grid holds nothing.
  REQUIRE(dev->peek(BufferType::l1, core(5, 5), t.address, raw));
  for (std::byte b : raw) CHECK(b == std::byte{0});
  std::vector<float> back(host.size());
  REQUIRE(dev->read(t, back));
  CHECK(back == host);
}

TEST_CASE("write/read round-trips over every sharded layout, orientation, dtype and page kind") {
  auto dev = make_device();
  ChipDesc chip = wormhole_b0();
  const std::vector<std::vector<int64_t>> shapes{{64, 128}, {3, 45, 70}, {1, 200}, {130, 33}};
  int checked = 0;
  for (const auto& shape : shapes)
    for (MemLayout mem :
         {MemLayout::height_sharded, MemLayout::width_sharded, MemLayout::block_sharded})
      for (auto o : {ShardOrientation::row_major, ShardOrientation::col_major})
        for (TileLayout layout : {TileLayout::tile, TileLayout::row_major})
          for (DType dtype : {DType::f32, DType::bf16, DType::bf8b, DType::i32, DType::u32}) {
            if (layout == TileLayout::row_major && dtype == DType::bf8b)
              continue;  // refused: see errors test
            CAPTURE(checked);
            auto s = even_shard_spec(shape, mem, CoreRange{1, 2, 3, 4}, o, layout);
            REQUIRE(s);
            TensorPlacement t = make_sharded("t", shape, dtype, mem, *s, 0, layout);
            t.address = top_address(AddressMap(t, chip).bytes_per_bank());
            auto ok = check_placement(t, chip);
            if (!ok) FAIL(ok.error().message);
            REQUIRE(dev->allocate(t));
            std::vector<float> host = values(static_cast<size_t>(volume(shape)), dtype, 7);
            REQUIRE(dev->write(t, host));
            std::vector<float> back(host.size());
            REQUIRE(dev->read(t, back));
            CHECK(back ==
                  host);  // values chosen exact in every dtype (bf8b: 6 bits, shared exponents)
            REQUIRE(dev->deallocate(t));
            ++checked;
          }
  CHECK(checked == 4 * 3 * 2 * 9);
}

TEST_CASE("bad shard specs fail naming the tensor and core; the device stays usable") {
  auto dev = make_device();
  ChipDesc chip = wormhole_b0();
  std::vector<int64_t> shape{64, 64};
  auto expect = [&](TensorPlacement t, const char* what) {
    CAPTURE(what);
    auto s = dev->allocate(t);
    REQUIRE_FALSE(s);
    CHECK(s.error().message.find("'" + std::string(t.name) + "'") != std::string::npos);
    CHECK(s.error().message.find(what) != std::string::npos);
  };
  expect(make_sharded("ragged", shape, DType::bf16, MemLayout::height_sharded,
                      spec({0, 0, 1, 0}, 48, 64), 1 << 20),
         "does not tile");
  expect(make_sharded("outside", shape, DType::bf16, MemLayout::height_sharded,
                      spec({7, 0, 8, 0}, 32, 64), 1 << 20),
         "core (8,0) does not exist");
  expect(make_sharded("narrow", shape, DType::bf16, MemLayout::height_sharded,
                      spec({0, 0, 1, 0}, 32, 32), 1 << 20),
         "full width");
  expect(make_sharded("crowded", shape, DType::bf16, MemLayout::width_sharded,
                      spec({0, 0, 0, 0}, 64, 32), 1 << 20),
         "the grid has 1 cores");
  TensorPlacement dram = make_sharded("dram", shape, DType::bf16, MemLayout::height_sharded,
                                      spec({0, 0, 1, 0}, 32, 64), 0);
  dram.buffer = BufferType::dram;
  expect(dram, "must be in L1");
  expect(make_sharded("rm8", shape, DType::bf8b, MemLayout::height_sharded,
                      spec({0, 0, 1, 0}, 32, 64), 1 << 20, TileLayout::row_major),
         "must be tiled");
  TensorPlacement misaligned = make_sharded("odd", shape, DType::bf16, MemLayout::height_sharded,
                                            spec({0, 0, 1, 0}, 32, 64), top_address(8192) + 8);
  expect(misaligned, "not aligned to 16 bytes");
  expect(misaligned, "on cores (0,0)-(1,0)");
  // Overlapping fixed addresses: the L1 address space is shared by every core, so a shard on
  // other cores at an overlapping address is refused too, naming the live buffer.
  TensorPlacement a = make_sharded("first", shape, DType::bf16, MemLayout::height_sharded,
                                   spec({0, 0, 1, 0}, 32, 64), top_address(4096));
  REQUIRE(dev->allocate(a));
  TensorPlacement b = make_sharded("second", shape, DType::bf16, MemLayout::height_sharded,
                                   spec({4, 4, 5, 4}, 32, 64), a.address - 2048);
  auto s = dev->allocate(b);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("first") != std::string::npos);
  // Reading a live buffer through a grid it does not cover is refused.
  TensorPlacement wider = a;
  wider.shard.grid = CoreRange{0, 0, 3, 0};
  auto r = dev->write(wider, std::vector<float>(64 * 64, 1.0f));
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("outside") != std::string::npos);
  // Still usable.
  std::vector<float> host = values(64 * 64, DType::bf16, 3), back(64 * 64);
  REQUIRE(dev->write(a, host));
  REQUIRE(dev->read(a, back));
  CHECK(back == host);
}

TEST_CASE("per-core L1 statistics: usage, high-water mark and fragmentation") {
  auto dev = make_device();
  ChipDesc chip = wormhole_b0();
  std::vector<int64_t> shape{64, 64};
  uint64_t top = chip.l1_usable_top(), base = chip.l1_unreserved_base;
  // Three 4 KiB shards on cores (0,0)-(1,0), stacked from the top.
  std::vector<TensorPlacement> ts;
  std::vector<std::string> names{"s0", "s1", "s2"};
  for (int i = 0; i < 3; ++i)
    ts.push_back(make_sharded(names[i], shape, DType::bf16, MemLayout::height_sharded,
                              spec({0, 0, 1, 0}, 32, 64), top - 4096 * (i + 1)));
  for (auto& t : ts) REQUIRE(dev->allocate(t));
  auto s = dev->l1_core_stats(core(1, 0));
  CHECK(s.used_bytes == 3 * 4096);
  CHECK(s.high_water_bytes == 3 * 4096);
  CHECK(s.buffers == 3);
  CHECK(s.fragmentation == 0.0);
  CHECK(s.free_bytes == top - base - 3 * 4096);
  CHECK(dev->l1_core_stats(core(2, 0)).used_bytes == 0);
  // Freeing the middle one leaves a 4 KiB hole: fragmented, high-water kept.
  REQUIRE(dev->deallocate(ts[1]));
  s = dev->l1_core_stats(core(0, 0));
  CHECK(s.used_bytes == 2 * 4096);
  CHECK(s.high_water_bytes == 3 * 4096);
  CHECK(s.largest_free == top - base - 3 * 4096);
  CHECK(s.fragmentation ==
        doctest::Approx(1.0 - double(top - base - 3 * 4096) / double(top - base - 2 * 4096)));
  // An interleaved L1 buffer counts on every core.
  TensorPlacement il = make_interleaved("il", shape, DType::bf16, BufferType::l1, top - 4096 * 5);
  REQUIRE(dev->allocate(il));
  CHECK(dev->l1_core_stats(core(7, 7)).used_bytes == AddressMap(il, chip).bytes_per_bank());
  dev->reset();
  CHECK(dev->l1_core_stats(core(0, 0)).high_water_bytes == 0);
}
