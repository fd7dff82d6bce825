// bfloat4_b ("bf4b") tiles, packed bit for bit as tt-metal packs them (its blockfloat packing:
// shared exponent per 16 values, 3-bit magnitudes rounded to nearest even, saturating).
#pragma once

#include <cstddef>
#include <cstdint>

#include "meshplan/device/types.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// bfloat4_b, a block floating-point tile of 576 bytes:
///   bytes [0, 64)    one shared exponent per group of 16 consecutive values in tile order (one
///                    row of one 16x16 face): the largest f32 biased exponent in the group;
///   bytes [64, 576)  one nibble per value in tile order, two per byte (the even value in the low
///                    nibble): bit 3 the sign, bits 2..0 a magnitude m whose bit 2 is the leading
///                    one of a value at the shared exponent.
/// Value = (-1)^sign * m * 2^(e - 127 - 2). Encoding, per value with f32 exponent x and 24-bit
/// significand s (hidden one included): s >> (e - x), then keep its top 3 of 24 bits rounding
/// the 21 dropped bits to nearest, ties to even, saturating at 7 (no exponent bump); a
/// magnitude of 0 drops the sign. Only +-0 is zero on input (an f32 subnormal keeps a hidden
/// one, as tt-metal treats it); inf and NaN make pack fail.
inline constexpr int kBf4bGroup = 16;
inline constexpr int kBf4bExponentBytes = kTileElems / kBf4bGroup;          // 64
inline constexpr int kBf4bTileBytes = kBf4bExponentBytes + kTileElems / 2;  // 576
Status pack_bf4b_tile(const float* tile_order_values, std::byte* out);
void unpack_bf4b_tile(const std::byte* tile, float* tile_order_values);

}  // namespace meshplan::device
