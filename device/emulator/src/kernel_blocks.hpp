// Helpers for kernels that compute each output tile element from logical operand indices
// (internal to device/). Operands are read through TileIO only (read_all_blocks), results are
// written tile by tile through TileIO on the emulated cores (for_each_core).
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "core_pool.hpp"
#include "kernels.hpp"
#include "tile_io.hpp"

namespace meshplan::device {

/// An operand's tiles as row-major 32x32 blocks, addressed by logical index.
struct Blocks {
  std::span<const int64_t> shape;
  TileGrid grid;
  int64_t per_matrix = 1;  ///< Tile rows per matrix.
  std::vector<float> data;

  /// Value at a full-rank logical index.
  float at(const int64_t* idx) const {
    size_t rank = shape.size();
    int64_t batch = 0;
    for (size_t d = 0; d + 2 < rank; ++d) batch = batch * shape[d] + idx[d];
    int64_t row = rank >= 2 ? idx[rank - 2] : 0, col = rank >= 1 ? idx[rank - 1] : 0;
    int64_t page = (batch * per_matrix + row / kTileH) * grid.tiles_w + col / kTileW;
    return data[page * kTileElems + (row % kTileH) * kTileW + (col % kTileW)];
  }
  /// Value at an index of a result of rank `out_rank` this operand broadcasts to (numpy rules).
  float at_broadcast(const int64_t* out_idx, size_t out_rank) const {
    int64_t local[kMaxRank];
    size_t rank = shape.size();
    for (size_t d = 0; d < rank; ++d) local[d] = shape[d] == 1 ? 0 : out_idx[out_rank - rank + d];
    return at(local);
  }
};

inline Result<Blocks> load_blocks(ChipMemory& memory, const ChipDesc& chip,
                                  const TensorPlacement& t) {
  Blocks b;
  TileIO io(memory, chip, t);
  b.shape = t.shape;
  b.grid = io.grid();
  b.per_matrix = (b.grid.rows + kTileH - 1) / kTileH;
  MESHPLAN_TRY(io.read_all_blocks(b.data));
  return b;
}

/// Logical index of element (r, c) of output tile `tc` (only the leading dims for r, c outside).
inline void output_index(std::span<const int64_t> shape, const TileCoords& tc, int64_t r, int64_t c,
                         int64_t* idx) {
  size_t rank = shape.size();
  int64_t b = tc.batch;
  for (size_t d = rank >= 2 ? rank - 2 : 0; d-- > 0;) {
    idx[d] = b % shape[d];
    b /= shape[d];
  }
  if (rank >= 2) idx[rank - 2] = tc.row0 + r;
  if (rank >= 1) idx[rank - 1] = tc.col0 + c;
}

/// Computes result 0 tile by tile on `cores` cores (for_each_core: on the pool when
/// tiles * ns_per_tile is large enough): each element inside the logical shape is fn(logical
/// index), padding is 0. T is float (values, written in the result's dtype) or uint32_t (the
/// stored words of an i32/u32 result). fn is called concurrently from several threads and must
/// only read.
template <class T, class Fn>
Status write_tiles(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores,
                   Fn&& fn, int64_t ns_per_tile) {
  TileIO out(memory, chip, *op.results[0]);
  const TileGrid& og = out.grid();
  auto shape = op.results[0]->shape;
  if (shape.size() > static_cast<size_t>(kMaxRank))
    return fail(ErrorCode::unimplemented, "result rank ", shape.size(), " exceeds ", kMaxRank);
  auto per_core = [&](uint32_t, int64_t begin, int64_t end) -> Status {
    T tile[kTileElems];
    int64_t idx[kMaxRank] = {};
    for (int64_t p = begin; p < end; ++p) {
      TileCoords tc = tile_coords(og, p);
      for (int r = 0; r < kTileH; ++r)
        for (int c = 0; c < kTileW; ++c) {
          T v = 0;
          if (tc.row0 + r < og.rows && tc.col0 + c < og.cols) {
            output_index(shape, tc, r, c, idx);
            v = fn(static_cast<const int64_t*>(idx));
          }
          tile[tile_offset(r, c)] = v;
        }
      if constexpr (std::is_same_v<T, float>)
        MESHPLAN_TRY(out.write(p, tile));
      else
        out.write_words(p, tile);
    }
    return {};
  };
  return for_each_core(memory, chip, *op.results[0], og.pages(), cores, ns_per_tile, per_core);
}

/// write_tiles for float values.
template <class Fn>
Status write_elements(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores,
                      Fn&& fn, int64_t ns_per_tile = kTileGatherNs) {
  return write_tiles<float>(memory, chip, op, cores, std::forward<Fn>(fn), ns_per_tile);
}

/// An i32/u32 (or f32) operand's tiles as raw 4-byte words in tile order, addressed by logical
/// index: the integer kernels compute on these, exactly.
struct WordBlocks {
  std::span<const int64_t> shape;
  TileGrid grid;
  int64_t per_matrix = 1;
  std::vector<uint32_t> words;

  uint32_t at_broadcast(const int64_t* out_idx, size_t out_rank) const {
    size_t rank = shape.size();
    int64_t batch = 0;
    for (size_t d = 0; d + 2 < rank; ++d)
      batch = batch * shape[d] + (shape[d] == 1 ? 0 : out_idx[out_rank - rank + d]);
    int64_t row = rank >= 2 && shape[rank - 2] != 1 ? out_idx[out_rank - 2] : 0;
    int64_t col = rank >= 1 && shape[rank - 1] != 1 ? out_idx[out_rank - 1] : 0;
    int64_t page = (batch * per_matrix + row / kTileH) * grid.tiles_w + col / kTileW;
    return words[page * kTileElems +
                 tile_offset(static_cast<int>(row % kTileH), static_cast<int>(col % kTileW))];
  }
};

inline WordBlocks load_words(ChipMemory& memory, const ChipDesc& chip, const TensorPlacement& t) {
  WordBlocks b;
  TileIO io(memory, chip, t);
  b.shape = t.shape;
  b.grid = io.grid();
  b.per_matrix = (b.grid.rows + kTileH - 1) / kTileH;
  b.words.resize(static_cast<size_t>(b.grid.pages()) * kTileElems);
  for (int64_t p = 0; p < b.grid.pages(); ++p) io.read_words(p, &b.words[p * kTileElems]);
  return b;
}

/// write_elements for integer results: each element inside the logical shape is the word
/// fn(logical index), padding is 0.
template <class Fn>
Status write_word_elements(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op,
                           uint32_t cores, Fn&& fn, int64_t ns_per_tile = kTileGatherNs) {
  return write_tiles<uint32_t>(memory, chip, op, cores, std::forward<Fn>(fn), ns_per_tile);
}

}  // namespace meshplan::device
