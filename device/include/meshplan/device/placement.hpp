// Where a tensor lives on a chip, and the address map every kernel reads and writes through.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/types.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// Inclusive rectangle of Tensix cores (x = column, y = row).
struct CoreRange {
  uint16_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  uint32_t cores() const {
    return static_cast<uint32_t>(x1 - x0 + 1) * static_cast<uint32_t>(y1 - y0 + 1);
  }
  friend bool operator==(const CoreRange&, const CoreRange&) = default;
};

enum class ShardOrientation : uint8_t { row_major = 0, col_major = 1 };

/// Rectangles a core range set may hold: `grid` plus up to kMaxCoreRanges - 1 more.
inline constexpr int kMaxCoreRanges = 4;

/// How a sharded tensor is split: the 2-D view [prod(leading) * H, W] cut into shards of
/// `shape` (rows, cols), one per core of `grid` in `orientation` order.
/// Height and width sharding may spread over a core range set (as tt-metal's CoreRangeSet):
/// `grid` then `extra[0 .. extra_ranges)`, shards continuing on each range in turn; block
/// sharding needs one rectangle.
struct ShardSpec {
  CoreRange grid;
  int64_t shape[2] = {0, 0};
  ShardOrientation orientation = ShardOrientation::row_major;
  uint8_t extra_ranges = 0;
  CoreRange extra[kMaxCoreRanges - 1] = {};

  int range_count() const { return 1 + extra_ranges; }
  const CoreRange& range(int i) const { return i == 0 ? grid : extra[i - 1]; }
  /// Cores over every range.
  uint32_t cores() const {
    uint32_t n = 0;
    for (int i = 0; i < range_count(); ++i) n += range(i).cores();
    return n;
  }
  bool contains(uint32_t x, uint32_t y) const {
    for (int i = 0; i < range_count(); ++i) {
      const CoreRange& r = range(i);
      if (x >= r.x0 && x <= r.x1 && y >= r.y0 && y <= r.y1) return true;
    }
    return false;
  }
  friend bool operator==(const ShardSpec& a, const ShardSpec& b) {
    if (!(a.grid == b.grid && a.shape[0] == b.shape[0] && a.shape[1] == b.shape[1] &&
          a.orientation == b.orientation && a.extra_ranges == b.extra_ranges))
      return false;
    for (int i = 0; i < a.extra_ranges; ++i)
      if (!(a.extra[i] == b.extra[i])) return false;
    return true;
  }
};

/// A tensor's placement. Views only: `shape` and `name` point into the plan (or the caller).
struct TensorPlacement {
  std::string_view name;
  std::span<const int64_t> shape;
  DType dtype = DType::bf16;
  TileLayout layout = TileLayout::tile;
  BufferType buffer = BufferType::dram;
  MemLayout memory = MemLayout::interleaved;
  uint64_t address = 0;
  uint32_t page_size = 0;  ///< Bytes per page: one tile, or one row for row-major.
  ShardSpec shard;         ///< Sharded layouts only.
};

/// A tiled or row-major interleaved placement with its natural page size.
TensorPlacement make_interleaved(std::string_view name, std::span<const int64_t> shape, DType dtype,
                                 BufferType buffer, uint64_t address,
                                 TileLayout layout = TileLayout::tile);

/// An L1 sharded placement with the page size its layout needs (a tile; for row-major a row of
/// the shard's width). The shard spec is not checked here: check_placement() does that.
TensorPlacement make_sharded(std::string_view name, std::span<const int64_t> shape, DType dtype,
                             MemLayout memory, const ShardSpec& shard, uint64_t address,
                             TileLayout layout = TileLayout::tile);

/// The even split of a tensor over `grid` for `memory` (height, width or block): shard sides
/// rounded up to whole tiles (tiled) or rows (row-major), so the last shard may be partial.
/// Fails for interleaved, an empty grid, or more shards wanted than the tensor has tiles/rows.
Result<ShardSpec> even_shard_spec(std::span<const int64_t> shape, MemLayout memory, CoreRange grid,
                                  ShardOrientation orientation = ShardOrientation::row_major,
                                  TileLayout layout = TileLayout::tile);

/// The 2-D view [prod(leading) * H, W] a layout is cut from: tiled tensors are padded to whole
/// tiles per matrix (so rows = tiles_h * 32, cols = tiles_w * 32); row-major ones are not.
struct View2D {
  int64_t rows = 1, cols = 1;
};
View2D view_2d(std::span<const int64_t> shape, TileLayout layout);

/// Pages of a placement (tiles; for row-major one page per row and per shard column).
int64_t page_count(const TensorPlacement& t);
/// Page size for a tensor in a layout: tile_bytes(dtype), or a row of elements.
uint32_t natural_page_size(std::span<const int64_t> shape, DType dtype, TileLayout layout);
/// Page size a placement must have: natural_page_size(), except row-major width/block sharded
/// tensors, whose pages are one row of a shard.
uint32_t expected_page_size(const TensorPlacement& t);
/// Bytes each bank reserves for an interleaved buffer: ceil(pages / banks) * aligned page.
uint64_t interleaved_bytes_per_bank(int64_t pages, uint32_t page_size, uint32_t banks,
                                    uint32_t alignment);

/// Checks a sharded placement's spec against the chip: L1 only, grid inside the chip, shard
/// shape positive, whole tiles when tiled, the split its memory layout requires, and no more
/// shards than the grid has cores. Messages name the tensor (and the core when one is at fault).
Status check_shard_spec(const TensorPlacement& t, const ChipDesc& chip);

/// Location of one page: which bank (DRAM bank or L1 core index) and the byte offset in it.
struct PageLocation {
  uint32_t bank;
  uint64_t offset;
};

/// Address map of a placement. Pages form a 2-D grid (page_rows x page_cols) over the 2-D view:
/// tile (tr, tc) is page tr * tiles_w + tc; a row-major page is (row, shard column).
///  - interleaved: page p lives in bank p % banks at address + (p / banks) * aligned page;
///  - sharded: page (r, c) lies in shard (r / shard_rows, c / shard_cols), held by one core of
///    the grid (see core_of_shard), at address + (local row * shard_cols + local col) * aligned
///    page. Every core of the grid reserves one whole shard at the same address.
/// L1 banks are cores, numbered y * chip.grid_x + x. Preconditions: check_placement() passed.
class AddressMap {
 public:
  AddressMap(const TensorPlacement& t, const ChipDesc& chip);
  PageLocation page(int64_t p) const {
    if (!sharded_)
      return PageLocation{static_cast<uint32_t>(p % banks_),
                          address_ + static_cast<uint64_t>(p / banks_) * aligned_page_};
    return sharded_page(p);
  }
  uint32_t banks() const { return banks_; }
  uint64_t aligned_page() const { return aligned_page_; }
  /// Bytes reserved per bank (interleaved) or per core of the shard grid (sharded).
  uint64_t bytes_per_bank() const;
  bool sharded() const { return sharded_; }
  int64_t pages() const { return pages_; }
  int64_t page_rows() const { return page_rows_; }
  int64_t page_cols() const { return page_cols_; }
  /// Elements per page of a row-major placement (the row, or the shard's width).
  int64_t page_width() const { return page_width_; }
  /// Core index (y * chip.grid_x + x) holding shard (i, j). Sharded only.
  uint32_t core_of_shard(int64_t i, int64_t j) const;
  /// Whether L1 core `core` reserves bytes for this placement (interleaved L1: every core).
  bool holds(uint32_t core) const;

 private:
  PageLocation sharded_page(int64_t p) const;

  bool sharded_ = false;
  uint32_t banks_;
  uint64_t address_;
  uint64_t aligned_page_;
  int64_t pages_;
  int64_t page_rows_ = 0, page_cols_ = 1, page_width_ = 0;
  int64_t shard_rows_ = 1, shard_cols_ = 1;  ///< Shard size in pages.
  MemLayout memory_ = MemLayout::interleaved;
  ShardSpec shard_;
  uint16_t chip_grid_x_ = 1;
};

}  // namespace meshplan::device
