// Number formats and tile order: bf16 with round-to-nearest-even, 32x32 tiles of four 16x16 faces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "meshplan/device/types.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// f32 -> bf16 bits, round to nearest, ties to even; NaN stays NaN.
uint16_t f32_to_bf16(float value);
float bf16_to_f32(uint16_t bits);
/// The f32 value nearest to `value` that bf16 can hold.
inline float round_bf16(float value) {
  return bf16_to_f32(f32_to_bf16(value));
}

/// Position of element (r, c) of a 32x32 tile in tile order: faces 0..3 (top-left, top-right,
/// bottom-left, bottom-right), each 16x16 row-major.
inline constexpr int tile_offset(int r, int c) {
  return ((r / 16) * 2 + (c / 16)) * 256 + (r % 16) * 16 + (c % 16);
}

/// bfloat8_b ("bf8b"), a block floating-point tile of 1088 bytes:
///   bytes [0, 64)     one shared exponent per group of 16 consecutive values in tile order
///                     (group g = values 16g..16g+15, i.e. one row of one 16x16 face), stored
///                     as the f32 biased exponent (0 = the whole group is zero);
///   bytes [64, 1088)  one byte per value in tile order: bit 7 the sign, bits 6..0 an unsigned
///                     magnitude m with the leading one explicit.
/// Value = (-1)^sign * m * 2^(e - 127 - 6). Encoding takes e = the largest exponent in the
/// group and rounds m to nearest, ties to even; a carry to 128 bumps e by one. Values much
/// smaller than the group's largest lose precision or flush to zero (as on the hardware);
/// inf and NaN are not representable and make pack fail.
inline constexpr int kBf8bGroup = 16;
inline constexpr int kBf8bExponentBytes = kTileElems / kBf8bGroup;  // 64
inline constexpr int kBf8bBias = 127 + 6;
Status pack_bf8b_tile(const float* tile_order_values, std::byte* out);
void unpack_bf8b_tile(const std::byte* tile, float* tile_order_values);

/// Encodes 1024 f32 values in tile order into one tile of `dtype` (tile_bytes(dtype) bytes).
Status pack_tile(DType dtype, const float* tile_order_values, std::byte* out);
/// Decodes one tile of `dtype` into 1024 f32 values in tile order.
Status unpack_tile(DType dtype, const std::byte* tile, float* tile_order_values);

/// Encodes / decodes `count` contiguous elements (row-major layouts; not block formats).
Status pack_elements(DType dtype, const float* values, size_t count, std::byte* out);
Status unpack_elements(DType dtype, const std::byte* in, size_t count, float* values);

/// Tiled geometry of a tensor: the 2-D view [prod(leading dims) * H, W] with H and W padded to
/// 32 per matrix, so tiles never cross a batch boundary. Tile (tr, tc) is page tr * tiles_w + tc.
struct TileGrid {
  int64_t batch = 1;    ///< Product of the leading dims.
  int64_t rows = 1;     ///< H (1 for rank-1 tensors).
  int64_t cols = 1;     ///< W.
  int64_t tiles_h = 1;  ///< batch * ceil(rows / 32).
  int64_t tiles_w = 1;  ///< ceil(cols / 32).
  int64_t pages() const { return tiles_h * tiles_w; }
};
TileGrid tile_grid(std::span<const int64_t> shape);

/// Row-major host data (logical shape) -> tiles in page order, f32 values in tile order,
/// zero padded. `tiles` holds grid.pages() * 1024 values.
void tilize(std::span<const int64_t> shape, std::span<const float> host, std::span<float> tiles);
/// Tiles in page order -> row-major host data; padding is dropped.
void untilize(std::span<const int64_t> shape, std::span<const float> tiles, std::span<float> host);

}  // namespace meshplan::device
