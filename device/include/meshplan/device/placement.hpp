// Where a tensor lives on a chip, and the address map every kernel reads and writes through.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/types.hpp"

namespace meshplan::device {

/// Inclusive rectangle of Tensix cores (x = column, y = row).
struct CoreRange {
  uint16_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  uint32_t cores() const { return static_cast<uint32_t>(x1 - x0 + 1) * static_cast<uint32_t>(y1 - y0 + 1); }
  friend bool operator==(const CoreRange&, const CoreRange&) = default;
};

enum class ShardOrientation : uint8_t { row_major = 0, col_major = 1 };

/// How a sharded tensor is split: the 2-D view [prod(leading) * H, W] cut into shards of
/// `shape` (rows, cols), one per core of `grid` in `orientation` order.
struct ShardSpec {
  CoreRange grid;
  int64_t shape[2] = {0, 0};
  ShardOrientation orientation = ShardOrientation::row_major;
  friend bool operator==(const ShardSpec& a, const ShardSpec& b) {
    return a.grid == b.grid && a.shape[0] == b.shape[0] && a.shape[1] == b.shape[1] && a.orientation == b.orientation;
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
TensorPlacement make_interleaved(std::string_view name, std::span<const int64_t> shape, DType dtype, BufferType buffer,
                                 uint64_t address, TileLayout layout = TileLayout::tile);

/// Pages of a placement (tiles, or rows for row-major).
int64_t page_count(const TensorPlacement& t);
/// Page size for a tensor in a layout: tile_bytes(dtype), or a row of elements.
uint32_t natural_page_size(std::span<const int64_t> shape, DType dtype, TileLayout layout);
/// Bytes each bank reserves for an interleaved buffer: ceil(pages / banks) * aligned page.
uint64_t interleaved_bytes_per_bank(int64_t pages, uint32_t page_size, uint32_t banks, uint32_t alignment);

/// Location of one page: which bank (DRAM bank or L1 core index) and the byte offset in it.
struct PageLocation {
  uint32_t bank;
  uint64_t offset;
};

/// Interleaved address map: page p lives in bank p % banks at address + (p / banks) * aligned page.
class AddressMap {
 public:
  AddressMap(const TensorPlacement& t, const ChipDesc& chip);
  PageLocation page(int64_t p) const {
    return PageLocation{static_cast<uint32_t>(p % banks_), address_ + static_cast<uint64_t>(p / banks_) * aligned_page_};
  }
  uint32_t banks() const { return banks_; }
  uint64_t aligned_page() const { return aligned_page_; }
  uint64_t bytes_per_bank() const;

 private:
  uint32_t banks_;
  uint64_t address_;
  uint64_t aligned_page_;
  int64_t pages_;
};

}  // namespace meshplan::device
