// Page geometry and the interleaved address map.
#include "meshplan/device/placement.hpp"

#include "meshplan/device/formats.hpp"

namespace meshplan::device {

TensorPlacement make_interleaved(std::string_view name, std::span<const int64_t> shape, DType dtype, BufferType buffer,
                                 uint64_t address, TileLayout layout) {
  TensorPlacement t;
  t.name = name;
  t.shape = shape;
  t.dtype = dtype;
  t.layout = layout;
  t.buffer = buffer;
  t.memory = MemLayout::interleaved;
  t.address = address;
  t.page_size = natural_page_size(shape, dtype, layout);
  return t;
}

int64_t page_count(const TensorPlacement& t) {
  if (t.layout == TileLayout::tile) return tile_grid(t.shape).pages();
  int64_t w = t.shape.empty() ? 1 : t.shape.back();
  return w == 0 ? 0 : volume(t.shape) / w;
}

uint32_t natural_page_size(std::span<const int64_t> shape, DType dtype, TileLayout layout) {
  if (layout == TileLayout::tile) return tile_bytes(dtype);
  int64_t w = shape.empty() ? 1 : shape.back();
  return static_cast<uint32_t>(w * element_bytes(dtype));
}

uint64_t interleaved_bytes_per_bank(int64_t pages, uint32_t page_size, uint32_t banks, uint32_t alignment) {
  uint64_t aligned = (page_size + alignment - 1) / alignment * alignment;
  uint64_t per_bank = (static_cast<uint64_t>(pages) + banks - 1) / banks;
  return per_bank * aligned;
}

AddressMap::AddressMap(const TensorPlacement& t, const ChipDesc& chip)
    : banks_(t.buffer == BufferType::dram ? chip.dram_banks : static_cast<uint32_t>(chip.cores())),
      address_(t.address),
      pages_(page_count(t)) {
  uint32_t align = t.buffer == BufferType::dram ? chip.dram_alignment : chip.l1_alignment;
  aligned_page_ = (t.page_size + align - 1) / align * align;
}

uint64_t AddressMap::bytes_per_bank() const {
  return (static_cast<uint64_t>(pages_) + banks_ - 1) / banks_ * aligned_page_;
}

}  // namespace meshplan::device
