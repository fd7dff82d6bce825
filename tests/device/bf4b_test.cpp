// bfloat4_b tiles against bytes worked out by hand from tt-metal's packing rule (shared exponent
// per 16 values, 3-bit magnitudes rounded to nearest even with saturation, sign dropped on 0).
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "meshplan/device/formats_bf4b.hpp"

using namespace meshplan;
using namespace meshplan::device;

TEST_CASE("bf4b packs a face row as tt-metal does, byte for byte") {
  std::vector<float> v(kTileElems, 0.0f);
  // Group 0: largest exponent that of 2 <= |x| < 4 (biased 128): representable values m / 2.
  const float row[16] = {2.0f,   1.0f,  0.75f, -0.5f, 0.3125f, 0.25f,   0.1875f, 3.5f,
                         -3.75f, 1.25f, 0.0f,  -0.0f, 0.125f,  0.0625f, 2.5f,    -1.5f};
  for (int i = 0; i < 16; ++i) v[i] = row[i];
  v[32] = -1.0f;  // group 2: one value, exponent 127, magnitude 4 (the leading one)
  v[48] = 1.0f;   // group 3: 1e-30 shifts out entirely
  v[49] = 1e-30f;
  std::vector<std::byte> tile(kBf4bTileBytes);
  REQUIRE(pack_bf4b_tile(v.data(), tile.data()));
  auto at = [&](int i) { return static_cast<int>(tile[i]); };
  CHECK(at(0) == 0x80);
  CHECK(at(1) == 0x00);  // all-zero group
  CHECK(at(2) == 127);
  CHECK(at(3) == 127);
  // Nibbles 4 2 2 9 | 1 0 0 7 | F 2 0 0 | 0 0 5 B: 0.75 ties up to odd->even 2, 0.25 ties down
  // to 0, -3.75 rounds to 8 and saturates at 7, -0 loses its sign.
  const int want[8] = {0x24, 0x92, 0x01, 0x70, 0x2F, 0x00, 0x00, 0xB5};
  for (int i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(at(kBf4bExponentBytes + i) == want[i]);
  }
  CHECK(at(kBf4bExponentBytes + 16) == 0x0C);  // -1.0: sign | 4
  CHECK(at(kBf4bExponentBytes + 24) == 0x04);  // 1.0 and 1e-30 -> 0
  for (int i = kBf4bExponentBytes + 8; i < kBf4bExponentBytes + 16; ++i) CHECK(at(i) == 0);

  std::vector<float> back(kTileElems);
  unpack_bf4b_tile(tile.data(), back.data());
  const float decoded[16] = {2.0f,  1.0f, 1.0f, -0.5f, 0.5f, 0.0f, 0.0f, 3.5f,
                             -3.5f, 1.0f, 0.0f, 0.0f,  0.0f, 0.0f, 2.5f, -1.5f};
  for (int i = 0; i < 16; ++i) {
    CAPTURE(i);
    CHECK(back[i] == decoded[i]);
  }
  CHECK(back[32] == -1.0f);
  CHECK(back[48] == 1.0f);
  CHECK(back[49] == 0.0f);
  // Packing what was decoded gives the same bytes.
  std::vector<std::byte> again(kBf4bTileBytes);
  REQUIRE(pack_bf4b_tile(back.data(), again.data()));
  CHECK(again == tile);
}

TEST_CASE("bf4b refuses inf and NaN, naming the value") {
  std::vector<float> v(kTileElems, 1.0f);
  v[700] = std::numeric_limits<float>::infinity();
  std::vector<std::byte> tile(kBf4bTileBytes);
  auto r = pack_bf4b_tile(v.data(), tile.data());
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("value 700 of the tile") != std::string::npos);
}
