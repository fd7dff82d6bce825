// bf16 rounding, tile order, tilize/untilize.
#include "meshplan/device/formats.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace meshplan::device;

TEST_CASE("bf16 rounds to nearest, ties to even") {
  CHECK(round_bf16(1.0f) == 1.0f);
  // 1 + 2^-8 is half way between 1 and 1 + 2^-7: the tie goes to the even mantissa (1.0).
  CHECK(round_bf16(1.0f + std::ldexp(1.0f, -8)) == 1.0f);
  // 1 + 3 * 2^-8 is half way between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  CHECK(round_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 1.0f + std::ldexp(1.0f, -6));
  // Just above a tie rounds up.
  CHECK(round_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)) ==
        1.0f + std::ldexp(1.0f, -7));
  CHECK(round_bf16(-2.5f) == -2.5f);
  CHECK(std::isnan(round_bf16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isinf(round_bf16(std::numeric_limits<float>::infinity())));
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(bf16_to_f32(0x4049) == doctest::Approx(3.140625));
}

TEST_CASE("tile order is four 16x16 faces") {
  CHECK(tile_offset(0, 0) == 0);
  CHECK(tile_offset(0, 15) == 15);
  CHECK(tile_offset(1, 0) == 16);
  CHECK(tile_offset(0, 16) == 256);
  CHECK(tile_offset(16, 0) == 512);
  CHECK(tile_offset(16, 16) == 768);
  CHECK(tile_offset(31, 31) == 1023);
}

TEST_CASE("tile grid pads H and W per matrix") {
  std::vector<int64_t> shape{2, 3, 40, 50};
  TileGrid g = tile_grid(shape);
  CHECK(g.batch == 6);
  CHECK(g.rows == 40);
  CHECK(g.cols == 50);
  CHECK(g.tiles_w == 2);
  CHECK(g.tiles_h == 12);
  CHECK(g.pages() == 24);
  std::vector<int64_t> vec{70};
  CHECK(tile_grid(vec).pages() == 3);
}

TEST_CASE("tilize and untilize round-trip, padding is zero") {
  std::vector<int64_t> shape{2, 40, 50};
  std::vector<float> host(2 * 40 * 50);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f - 7.0f;
  TileGrid g = tile_grid(shape);
  std::vector<float> tiles(g.pages() * kTileElems, -1.0f);
  tilize(shape, host, tiles);
  // Element (batch 1, row 33, col 49) -> tile row 1*2 + 1, tile col 1, in-tile (1, 17).
  int64_t page = (1 * 2 + 1) * g.tiles_w + 1;
  CHECK(tiles[page * kTileElems + tile_offset(1, 17)] == host[(1 * 40 + 33) * 50 + 49]);
  // Padding (row 45 of batch 0) is zero.
  CHECK(tiles[(1 * g.tiles_w + 0) * kTileElems + tile_offset(13, 0)] == 0.0f);
  std::vector<float> back(host.size());
  untilize(shape, tiles, back);
  CHECK(back == host);
}

TEST_CASE("element and tile packing") {
  float vals[kTileElems];
  for (int i = 0; i < kTileElems; ++i) vals[i] = static_cast<float>(i) - 512.25f;
  std::vector<std::byte> buf(tile_bytes(DType::bf16));
  REQUIRE(pack_tile(DType::bf16, vals, buf.data()));
  float back[kTileElems];
  REQUIRE(unpack_tile(DType::bf16, buf.data(), back));
  for (int i = 0; i < kTileElems; ++i) CHECK(back[i] == round_bf16(vals[i]));
  std::vector<std::byte> f32buf(tile_bytes(DType::f32));
  REQUIRE(pack_tile(DType::f32, vals, f32buf.data()));
  REQUIRE(unpack_tile(DType::f32, f32buf.data(), back));
  CHECK(back[100] == vals[100]);
  CHECK(tile_bytes(DType::bf8b) == 1088);
  // bf8b has no inf/NaN: packing one fails clearly instead of storing garbage.
  vals[7] = std::numeric_limits<float>::quiet_NaN();
  auto bad = pack_tile(DType::bf8b, vals, buf.data());
  CHECK_FALSE(bad);
  CHECK(bad.error().message.find("bf8b") != std::string::npos);
}
