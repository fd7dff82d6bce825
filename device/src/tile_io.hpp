// Tile access through a placement's address map, and helpers every kernel shares (internal to
// device/). Kernels only touch device memory through TileIO, so new layouts change this file only.
#pragma once

#include <algorithm>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/placement.hpp"

namespace meshplan::device {

/// Reads and writes tiles of one placement.
class TileIO {
 public:
  TileIO(ChipMemory& memory, const ChipDesc& chip, const TensorPlacement& t)
      : memory_(memory), t_(t), map_(t, chip), grid_(tile_grid(t.shape)), page_(t.page_size) {}

  const TileGrid& grid() const { return grid_; }

  /// Page p as 1024 f32 values in tile order.
  Status read(int64_t p, float* tile) {
    PageLocation loc = map_.page(p);
    memory_.bank(t_.buffer, loc.bank).read(loc.offset, page_.data(), page_.size());
    return unpack_tile(t_.dtype, page_.data(), tile);
  }

  Status write(int64_t p, const float* tile) {
    MESHPLAN_TRY(pack_tile(t_.dtype, tile, page_.data()));
    PageLocation loc = map_.page(p);
    memory_.bank(t_.buffer, loc.bank).write(loc.offset, page_.data(), page_.size());
    return {};
  }

  /// Reads every tile, converted to row-major 32x32 blocks, into `blocks` (pages * 1024).
  Status read_all_blocks(std::vector<float>& blocks) {
    blocks.assign(static_cast<size_t>(grid_.pages() * kTileElems), 0.0f);
    float tile[kTileElems];
    for (int64_t p = 0; p < grid_.pages(); ++p) {
      MESHPLAN_TRY(read(p, tile));
      float* block = blocks.data() + p * kTileElems;
      for (int r = 0; r < kTileH; ++r)
        for (int c = 0; c < kTileW; ++c) block[r * kTileW + c] = tile[tile_offset(r, c)];
    }
    return {};
  }

 private:
  ChipMemory& memory_;
  const TensorPlacement& t_;
  AddressMap map_;
  TileGrid grid_;
  std::vector<std::byte> page_;
};

inline float activate(Activation a, float v) {
  return a == Activation::relu ? std::max(v, 0.0f) : v;
}

/// Logical coordinates of tile page `p` element (r, c): batch index, row, column.
struct TileCoords {
  int64_t batch, row0, col0;
};
inline TileCoords tile_coords(const TileGrid& g, int64_t p) {
  int64_t per_matrix = (g.rows + kTileH - 1) / kTileH;
  int64_t tr = p / g.tiles_w, tc = p % g.tiles_w;
  return TileCoords{tr / per_matrix, (tr % per_matrix) * kTileH, tc * kTileW};
}

/// Splits `tiles` output tiles over `cores` cores in contiguous ranges; calls fn(core, begin, end).
template <class Fn>
inline Status for_each_core(int64_t tiles, uint32_t cores, Fn&& fn) {
  int64_t per_core = (tiles + cores - 1) / cores;
  for (uint32_t core = 0; core < cores; ++core) {
    int64_t begin = core * per_core, end = std::min(tiles, begin + per_core);
    if (begin >= end) break;
    MESHPLAN_TRY(fn(core, begin, end));
  }
  return {};
}

}  // namespace meshplan::device
