// bfloat8_b: the documented byte layout (64 shared exponents, then sign + 7-bit magnitudes),
// rounding and carry, the error bound against f32, and zero/NaN handling.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "meshplan/device/formats.hpp"

using namespace meshplan::device;

TEST_CASE("bf8b byte layout: exponents first, then sign and magnitude per value") {
  float v[kTileElems] = {};
  v[0] = 1.0f;
  v[1] = -0.5f;
  v[32] = 3.0f;        // group 2
  v[33] = 0.015625f;   // 2^-6: half a step of group 2's exponent, ties to even -> 0
  v[48] = 1.9921875f;  // group 3: 127.5 steps rounds to 128 and carries into the exponent
  std::vector<std::byte> t(tile_bytes(DType::bf8b));
  REQUIRE(t.size() == 1088);
  REQUIRE(pack_tile(DType::bf8b, v, t.data()));
  auto byte = [&](size_t i) { return static_cast<unsigned>(t[i]); };
  CHECK(byte(0) == 127);  // f32 biased exponent of 1.0
  CHECK(byte(1) == 0);    // an all-zero group
  CHECK(byte(2) == 128);
  CHECK(byte(3) == 128);               // bumped by the carry
  CHECK(byte(64 + 0) == 0x40);         // 1.0 = 64 * 2^(127 - 133)
  CHECK(byte(64 + 1) == (0x80 | 32));  // -0.5
  CHECK(byte(64 + 32) == 96);          // 3.0 = 96 * 2^(128 - 133)
  CHECK(byte(64 + 33) == 0);
  CHECK(byte(64 + 48) == 64);  // 2.0 after the carry
  float back[kTileElems];
  REQUIRE(unpack_tile(DType::bf8b, t.data(), back));
  CHECK(back[0] == 1.0f);
  CHECK(back[1] == -0.5f);
  CHECK(back[32] == 3.0f);
  CHECK(back[33] == 0.0f);
  CHECK(back[48] == 2.0f);
  CHECK(back[2] == 0.0f);
}

TEST_CASE("bf8b error is at most half a step of the group's shared exponent") {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mag(-8.0f, 8.0f);
  float v[kTileElems], back[kTileElems];
  for (float& x : v) x = std::ldexp(mag(rng), static_cast<int>(rng() % 9) - 4);
  std::vector<std::byte> t(1088);
  REQUIRE(pack_bf8b_tile(v, t.data()));
  unpack_bf8b_tile(t.data(), back);
  for (int g = 0; g < kTileElems / kBf8bGroup; ++g) {
    float mx = 0;
    for (int i = 0; i < kBf8bGroup; ++i) mx = std::max(mx, std::fabs(v[g * kBf8bGroup + i]));
    for (int i = 0; i < kBf8bGroup; ++i) {
      int k = g * kBf8bGroup + i;
      CAPTURE(k);
      CHECK(std::fabs(back[k] - v[k]) <= mx * std::ldexp(1.0f, -7));
    }
  }
}

TEST_CASE("bf8b refuses values it cannot hold") {
  float v[kTileElems] = {};
  std::vector<std::byte> t(1088);
  v[100] = std::numeric_limits<float>::infinity();
  auto s = pack_tile(DType::bf8b, v, t.data());
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("inf") != std::string::npos);
  // Row-major bf8b has no element encoding.
  CHECK_FALSE(pack_elements(DType::bf8b, v, 16, t.data()));
  CHECK(element_bytes(DType::bf8b) == 0);
}
