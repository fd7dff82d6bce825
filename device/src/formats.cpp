// bf16 conversion, tile packing and tilize/untilize.
#include "meshplan/device/formats.hpp"

#include "meshplan/device/formats_bf4b.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace meshplan::device {

uint16_t f32_to_bf16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // Quiet NaN, sign kept.
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float bf16_to_f32(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

Status pack_elements(DType dtype, const float* values, size_t count, std::byte* out) {
  switch (dtype) {
    case DType::f32:
      std::memcpy(out, values, count * 4);
      return {};
    case DType::bf16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t b = f32_to_bf16(values[i]);
        std::memcpy(out + 2 * i, &b, 2);
      }
      return {};
    case DType::i32:
      for (size_t i = 0; i < count; ++i) {
        // Saturating, NaN to 0: a float at or beyond 2^31 (INT32_MAX rounds up to it in f32)
        // stores the largest word instead of an undefined conversion.
        const double x = std::isnan(values[i]) ? 0.0 : static_cast<double>(values[i]);
        int32_t v = static_cast<int32_t>(std::clamp(x, -2147483648.0, 2147483647.0));
        std::memcpy(out + 4 * i, &v, 4);
      }
      return {};
    case DType::u32:
      for (size_t i = 0; i < count; ++i) {
        const double x = std::isnan(values[i]) ? 0.0 : static_cast<double>(values[i]);
        uint32_t v = static_cast<uint32_t>(std::clamp(x, 0.0, 4294967295.0));
        std::memcpy(out + 4 * i, &v, 4);
      }
      return {};
    case DType::bf8b:
    case DType::bf4b:
      break;
  }
  return fail(ErrorCode::unimplemented, "dtype ", dtype_name(dtype), " has no element encoding");
}

Status unpack_elements(DType dtype, const std::byte* in, size_t count, float* values) {
  switch (dtype) {
    case DType::f32:
      std::memcpy(values, in, count * 4);
      return {};
    case DType::bf16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t b;
        std::memcpy(&b, in + 2 * i, 2);
        values[i] = bf16_to_f32(b);
      }
      return {};
    case DType::i32:
      for (size_t i = 0; i < count; ++i) {
        int32_t v;
        std::memcpy(&v, in + 4 * i, 4);
        values[i] = static_cast<float>(v);
      }
      return {};
    case DType::u32:
      for (size_t i = 0; i < count; ++i) {
        uint32_t v;
        std::memcpy(&v, in + 4 * i, 4);
        values[i] = static_cast<float>(v);
      }
      return {};
    case DType::bf8b:
    case DType::bf4b:
      break;
  }
  return fail(ErrorCode::unimplemented, "dtype ", dtype_name(dtype), " has no element encoding");
}

namespace {

int biased_exponent(float v) {
  return static_cast<int>((std::bit_cast<uint32_t>(v) >> 23) & 0xffu);
}

/// Magnitudes of 16 values against shared exponent `e`; false if one rounds up to 128.
bool bf8b_mantissas(const float* v, int e, uint8_t* out) {
  for (int i = 0; i < kBf8bGroup; ++i) {
    float m = std::nearbyint(std::ldexp(std::fabs(v[i]), kBf8bBias - e));
    if (m > 127.0f) return false;
    out[i] = static_cast<uint8_t>(static_cast<uint8_t>(m) |
                                  (std::signbit(v[i]) && m != 0.0f ? 0x80u : 0u));
  }
  return true;
}

}  // namespace

Status pack_bf8b_tile(const float* values, std::byte* out) {
  for (int g = 0; g < kTileElems / kBf8bGroup; ++g) {
    const float* v = values + g * kBf8bGroup;
    int e = 0;
    for (int i = 0; i < kBf8bGroup; ++i) {
      if (!std::isfinite(v[i]))
        return fail(ErrorCode::invalid_argument, "bf8b cannot hold ", v[i], " (value ",
                    g * kBf8bGroup + i, " of the tile): block floats have no inf or NaN");
      e = std::max(e, biased_exponent(v[i]));
    }
    uint8_t mant[kBf8bGroup];
    if (e == 0) {
      std::fill(mant, mant + kBf8bGroup, uint8_t{0});  // Zeros and f32 subnormals flush to 0.
    } else if (!bf8b_mantissas(v, e, mant)) {
      // Rounding carried into bit 7: one more exponent step always fits (m <= 64), except at
      // the top of the f32 range where the largest magnitude saturates.
      if (e < 254) ++e;
      if (!bf8b_mantissas(v, e, mant))
        for (int i = 0; i < kBf8bGroup; ++i) {
          float m = std::min(127.0f, std::nearbyint(std::ldexp(std::fabs(v[i]), kBf8bBias - e)));
          mant[i] = static_cast<uint8_t>(static_cast<uint8_t>(m) |
                                         (std::signbit(v[i]) && m != 0.0f ? 0x80u : 0u));
        }
    }
    out[g] = static_cast<std::byte>(e);
    std::memcpy(out + kBf8bExponentBytes + g * kBf8bGroup, mant, kBf8bGroup);
  }
  return {};
}

void unpack_bf8b_tile(const std::byte* tile, float* values) {
  for (int g = 0; g < kTileElems / kBf8bGroup; ++g) {
    int e = static_cast<int>(tile[g]);
    for (int i = 0; i < kBf8bGroup; ++i) {
      auto byte = static_cast<uint8_t>(tile[kBf8bExponentBytes + g * kBf8bGroup + i]);
      float m = std::ldexp(static_cast<float>(byte & 0x7fu), e - kBf8bBias);
      values[g * kBf8bGroup + i] = e == 0 ? 0.0f : ((byte & 0x80u) ? -m : m);
    }
  }
}

namespace {

/// One value's bf4b nibble against shared exponent `e` (formats_bf4b.hpp).
uint8_t bf4b_nibble(float v, uint32_t e) {
  uint32_t bits = std::bit_cast<uint32_t>(v);
  if ((bits & 0x7fffffffu) == 0) return 0;
  uint32_t x = (bits >> 23) & 0xffu, s = (bits & 0x7fffffu) | 0x800000u;
  uint32_t shift = e - x;
  s = shift >= 32 ? 0 : s >> shift;
  constexpr uint32_t kDropped = 21, kHalf = 1u << (kDropped - 1);
  uint32_t rest = s & ((1u << kDropped) - 1), m = s >> kDropped;
  if (rest > kHalf || (rest == kHalf && (m & 1u))) ++m;
  m = std::min(m, 7u);
  uint32_t sign = m != 0 ? bits >> 31 : 0;
  return static_cast<uint8_t>(sign << 3 | m);
}

}  // namespace

Status pack_bf4b_tile(const float* values, std::byte* out) {
  for (int g = 0; g < kTileElems / kBf4bGroup; ++g) {
    const float* v = values + g * kBf4bGroup;
    uint32_t e = 0;
    for (int i = 0; i < kBf4bGroup; ++i) {
      if (!std::isfinite(v[i]))
        return fail(ErrorCode::invalid_argument, "bf4b cannot hold ", v[i], " (value ",
                    g * kBf4bGroup + i, " of the tile): block floats have no inf or NaN");
      e = std::max(e, static_cast<uint32_t>(biased_exponent(v[i])));
    }
    out[g] = static_cast<std::byte>(e);
    for (int i = 0; i < kBf4bGroup; i += 2)
      out[kBf4bExponentBytes + (g * kBf4bGroup + i) / 2] =
          static_cast<std::byte>(bf4b_nibble(v[i], e) | bf4b_nibble(v[i + 1], e) << 4);
  }
  return {};
}

void unpack_bf4b_tile(const std::byte* tile, float* values) {
  for (int g = 0; g < kTileElems / kBf4bGroup; ++g) {
    int e = static_cast<int>(tile[g]);
    for (int i = 0; i < kBf4bGroup; ++i) {
      auto byte = static_cast<uint8_t>(tile[kBf4bExponentBytes + (g * kBf4bGroup + i) / 2]);
      uint8_t nibble = (i % 2 == 0) ? (byte & 0x0fu) : (byte >> 4);
      float m = std::ldexp(static_cast<float>(nibble & 0x7u), e - 127 - 2);
      values[g * kBf4bGroup + i] = (nibble & 0x8u) ? -m : m;
    }
  }
}

Status pack_tile(DType dtype, const float* values, std::byte* out) {
  if (dtype == DType::bf8b) return pack_bf8b_tile(values, out);
  if (dtype == DType::bf4b) return pack_bf4b_tile(values, out);
  return pack_elements(dtype, values, kTileElems, out);
}

Status unpack_tile(DType dtype, const std::byte* tile, float* values) {
  if (dtype == DType::bf8b) {
    unpack_bf8b_tile(tile, values);
    return {};
  }
  if (dtype == DType::bf4b) {
    unpack_bf4b_tile(tile, values);
    return {};
  }
  return unpack_elements(dtype, tile, kTileElems, values);
}

TileGrid tile_grid(std::span<const int64_t> shape) {
  TileGrid g;
  size_t rank = shape.size();
  g.cols = rank >= 1 ? shape[rank - 1] : 1;
  g.rows = rank >= 2 ? shape[rank - 2] : 1;
  g.batch = rank >= 3 ? volume(shape.first(rank - 2)) : 1;
  g.tiles_w = (g.cols + kTileW - 1) / kTileW;
  g.tiles_h = g.batch * ((g.rows + kTileH - 1) / kTileH);
  return g;
}

void tilize(std::span<const int64_t> shape, std::span<const float> host, std::span<float> tiles) {
  TileGrid g = tile_grid(shape);
  std::fill(tiles.begin(), tiles.end(), 0.0f);
  int64_t tiles_per_matrix = (g.rows + kTileH - 1) / kTileH;
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t r = 0; r < g.rows; ++r) {
      int64_t tr = b * tiles_per_matrix + r / kTileH;
      const float* row = host.data() + (b * g.rows + r) * g.cols;
      for (int64_t c = 0; c < g.cols; ++c) {
        int64_t page = tr * g.tiles_w + c / kTileW;
        tiles[page * kTileElems +
              tile_offset(static_cast<int>(r % kTileH), static_cast<int>(c % kTileW))] = row[c];
      }
    }
}

void untilize(std::span<const int64_t> shape, std::span<const float> tiles, std::span<float> host) {
  TileGrid g = tile_grid(shape);
  int64_t tiles_per_matrix = (g.rows + kTileH - 1) / kTileH;
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t r = 0; r < g.rows; ++r) {
      int64_t tr = b * tiles_per_matrix + r / kTileH;
      float* row = host.data() + (b * g.rows + r) * g.cols;
      for (int64_t c = 0; c < g.cols; ++c) {
        int64_t page = tr * g.tiles_w + c / kTileW;
        row[c] = tiles[page * kTileElems +
                       tile_offset(static_cast<int>(r % kTileH), static_cast<int>(c % kTileW))];
      }
    }
}

}  // namespace meshplan::device
