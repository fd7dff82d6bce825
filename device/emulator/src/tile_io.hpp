// Tile access through a placement's address map, and helpers every kernel shares (internal to
// device/). Kernels only touch device memory through TileIO, so new layouts change this file only.
#pragma once

#include <algorithm>
#include <cassert>
#include <string>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/placement.hpp"

namespace meshplan::device {

/// Largest tiled page: a 32x32 tile of a 4-byte dtype.
inline constexpr uint32_t kMaxTileBytes = kTileElems * 4;

/// Reads and writes tiles of one tiled placement. Keeps no per-call state, so the emulated cores
/// of one op may share a TileIO across pool threads: reads from any page, writes to distinct pages
/// whose memory is already backed (back_for_writes).
class TileIO {
 public:
  TileIO(ChipMemory& memory, const ChipDesc& chip, const TensorPlacement& t)
      : memory_(memory), t_(t), map_(t, chip), grid_(tile_grid(t.shape)), grid_x_(chip.grid_x) {
    assert(t.page_size <= kMaxTileBytes && "TileIO: tiled pages hold at most 4096 bytes");
  }

  const TileGrid& grid() const { return grid_; }

  /// Page p as 1024 f32 values in tile order.
  Status read(int64_t p, float* tile) const {
    alignas(64) std::byte page[kMaxTileBytes];
    PageLocation loc = map_.page(p);
    memory_.bank(t_.buffer, loc.bank).read(loc.offset, page, t_.page_size);
    if (auto s = unpack_tile(t_.dtype, page, tile); !s)
      return std::unexpected(with_context(s.error(), where(p, loc)));
    return {};
  }

  /// Fails (naming the tensor, tile, core or bank, and address) if the values do not fit the
  /// dtype, e.g. inf in a bf8b tile; nothing is written then.
  Status write(int64_t p, const float* tile) const {
    alignas(64) std::byte page[kMaxTileBytes];
    PageLocation loc = map_.page(p);
    if (auto s = pack_tile(t_.dtype, tile, page); !s)
      return std::unexpected(with_context(s.error(), where(p, loc)));
    memory_.bank(t_.buffer, loc.bank).write(loc.offset, page, t_.page_size);
    return {};
  }

  /// Page p of a 4-byte dtype (i32, u32, f32) as its 1024 raw words in tile order: integers
  /// exactly, floats as their bits.
  void read_words(int64_t p, uint32_t* tile) const {
    assert(element_bytes(t_.dtype) == 4 && "TileIO: words of a 4-byte dtype");
    PageLocation loc = map_.page(p);
    memory_.bank(t_.buffer, loc.bank)
        .read(loc.offset, reinterpret_cast<std::byte*>(tile), kTileElems * 4);
  }
  void write_words(int64_t p, const uint32_t* tile) const {
    assert(element_bytes(t_.dtype) == 4 && "TileIO: words of a 4-byte dtype");
    PageLocation loc = map_.page(p);
    memory_.bank(t_.buffer, loc.bank)
        .write(loc.offset, reinterpret_cast<const std::byte*>(tile), kTileElems * 4);
  }

  /// "tensor 'x' tile p on core (x,y) at L1 address a" or "... in DRAM bank b at address a".
  std::string where(int64_t p, PageLocation loc) const {
    if (t_.buffer == BufferType::l1)
      return str("tensor '", t_.name, "' tile ", p, " on core (", loc.bank % grid_x_, ",",
                 loc.bank / grid_x_, ") at L1 address ", loc.offset);
    return str("tensor '", t_.name, "' tile ", p, " in DRAM bank ", loc.bank, " at address ",
               loc.offset);
  }

  /// Reads every tile, converted to row-major 32x32 blocks, into `blocks` (pages * 1024); on the
  /// core pool when there are enough tiles (reads never allocate memory, so threads only share
  /// read-only state).
  Status read_all_blocks(std::vector<float>& blocks) const;

 private:
  ChipMemory& memory_;
  const TensorPlacement& t_;
  AddressMap map_;
  TileGrid grid_;
  uint32_t grid_x_;
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

}  // namespace meshplan::device
