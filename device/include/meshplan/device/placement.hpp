// Where a tensor lives on a chip, and the address map every kernel reads and writes through.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/types.hpp"

namespace meshplan::device {

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
};

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
