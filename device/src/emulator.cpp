// EmulatedDevice: allocation checks, host transfers and op dispatch.
#include "meshplan/device/emulator.hpp"

#include <vector>

#include "kernels.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/formats.hpp"

namespace meshplan::device {

namespace {
constexpr uint64_t kDramChunk = 1ull << 20;
constexpr uint64_t kL1Chunk = 64ull << 10;
}  // namespace

Result<std::unique_ptr<EmulatedDevice>> EmulatedDevice::create(ChipDesc chip) {
  MESHPLAN_TRY(chip.verify());
  return std::unique_ptr<EmulatedDevice>(new EmulatedDevice(std::move(chip)));
}

EmulatedDevice::EmulatedDevice(ChipDesc chip)
    : chip_(std::move(chip)),
      op_model_(chip_),
      dram_alloc_("DRAM", 0, chip_.dram_bank_size, chip_.dram_alignment, BankAllocator::Direction::bottom_up),
      l1_alloc_("L1", chip_.l1_unreserved_base, chip_.l1_usable_top(), chip_.l1_alignment,
                BankAllocator::Direction::top_down) {
  memory_.dram.reserve(chip_.dram_banks);
  for (uint32_t b = 0; b < chip_.dram_banks; ++b) memory_.dram.emplace_back(chip_.dram_bank_size, kDramChunk);
  memory_.l1.reserve(chip_.cores());
  for (int c = 0; c < chip_.cores(); ++c) memory_.l1.emplace_back(chip_.l1_size, kL1Chunk);
}

Status EmulatedDevice::check_supported(const TensorPlacement& t) const { return check_placement(t, chip_); }

Status EmulatedDevice::allocate(const TensorPlacement& t) {
  MESHPLAN_TRY(check_supported(t));
  AddressMap map(t, chip_);
  uint64_t bytes = map.bytes_per_bank();
  BankAllocator& alloc = t.buffer == BufferType::dram ? dram_alloc_ : l1_alloc_;
  auto status = alloc.allocate_at(t.address, bytes, t.name);
  if (!status) return std::unexpected(with_context(status.error(), str("allocating tensor '", t.name, "'")));
  live_[{t.buffer, t.address}] = bytes;
  return {};
}

Status EmulatedDevice::deallocate(const TensorPlacement& t) {
  auto it = live_.find({t.buffer, t.address});
  if (it == live_.end())
    return fail(ErrorCode::invalid_argument, "deallocating tensor '", t.name, "': no live ", buffer_name(t.buffer),
                " buffer at address ", t.address);
  live_.erase(it);
  return (t.buffer == BufferType::dram ? dram_alloc_ : l1_alloc_).free(t.address);
}

void EmulatedDevice::reset() {
  dram_alloc_.clear();
  l1_alloc_.clear();
  live_.clear();
  clock_ns_ = 0;
}

Status EmulatedDevice::check_live(const TensorPlacement& t, std::string_view role) const {
  auto it = live_.find({t.buffer, t.address});
  if (it == live_.end())
    return fail(ErrorCode::invalid_argument, role, " '", t.name, "': no live ", buffer_name(t.buffer),
                " buffer at address ", t.address);
  uint64_t need = AddressMap(t, chip_).bytes_per_bank();
  if (it->second < need)
    return fail(ErrorCode::invalid_argument, role, " '", t.name, "': buffer at ", t.address, " holds ", it->second,
                " bytes per bank, the tensor needs ", need);
  return {};
}

Status EmulatedDevice::write(const TensorPlacement& t, std::span<const float> host) {
  MESHPLAN_TRY(check_supported(t));
  MESHPLAN_TRY(check_live(t, "writing tensor"));
  if (static_cast<int64_t>(host.size()) != volume(t.shape))
    return fail(ErrorCode::invalid_argument, "writing tensor '", t.name, "': ", host.size(), " values for ",
                volume(t.shape), " elements");
  AddressMap map(t, chip_);
  std::vector<std::byte> page(t.page_size);
  if (t.layout == TileLayout::tile) {
    TileGrid g = tile_grid(t.shape);
    auto tiles = alloc_floats(static_cast<size_t>(g.pages() * kTileElems));
    tilize(t.shape, host, std::span<float>(tiles.get(), g.pages() * kTileElems));
    for (int64_t p = 0; p < g.pages(); ++p) {
      MESHPLAN_TRY(pack_tile(t.dtype, tiles.get() + p * kTileElems, page.data()));
      PageLocation loc = map.page(p);
      memory_.bank(t.buffer, loc.bank).write(loc.offset, page.data(), page.size());
    }
  } else {
    int64_t w = t.shape.empty() ? 1 : t.shape.back();
    for (int64_t p = 0; p < page_count(t); ++p) {
      MESHPLAN_TRY(pack_elements(t.dtype, host.data() + p * w, static_cast<size_t>(w), page.data()));
      PageLocation loc = map.page(p);
      memory_.bank(t.buffer, loc.bank).write(loc.offset, page.data(), page.size());
    }
  }
  return {};
}

Status EmulatedDevice::read(const TensorPlacement& t, std::span<float> host) {
  MESHPLAN_TRY(check_supported(t));
  MESHPLAN_TRY(check_live(t, "reading tensor"));
  if (static_cast<int64_t>(host.size()) != volume(t.shape))
    return fail(ErrorCode::invalid_argument, "reading tensor '", t.name, "': room for ", host.size(), " values, ",
                volume(t.shape), " elements");
  AddressMap map(t, chip_);
  std::vector<std::byte> page(t.page_size);
  if (t.layout == TileLayout::tile) {
    TileGrid g = tile_grid(t.shape);
    auto tiles = alloc_floats(static_cast<size_t>(g.pages() * kTileElems));
    for (int64_t p = 0; p < g.pages(); ++p) {
      PageLocation loc = map.page(p);
      memory_.bank(t.buffer, loc.bank).read(loc.offset, page.data(), page.size());
      MESHPLAN_TRY(unpack_tile(t.dtype, page.data(), tiles.get() + p * kTileElems));
    }
    untilize(t.shape, std::span<const float>(tiles.get(), g.pages() * kTileElems), host);
  } else {
    int64_t w = t.shape.empty() ? 1 : t.shape.back();
    for (int64_t p = 0; p < page_count(t); ++p) {
      PageLocation loc = map.page(p);
      memory_.bank(t.buffer, loc.bank).read(loc.offset, page.data(), page.size());
      MESHPLAN_TRY(unpack_elements(t.dtype, page.data(), static_cast<size_t>(w), host.data() + p * w));
    }
  }
  return {};
}

Result<OpTiming> EmulatedDevice::launch(const OpLaunch& op) {
  // The same rules the planner consulted: anything OpModel rejects is never executed.
  OpValidation v = op_model_.validate(op);
  if (!v.ok) return fail(ErrorCode::invalid_argument, v.reason);
  for (const TensorPlacement* t : op.operands) {
    auto live = check_live(*t, "operand");
    if (!live) return std::unexpected(with_context(live.error(), str("op '", op.name, "'")));
  }
  for (const TensorPlacement* t : op.results) {
    auto live = check_live(*t, "result");
    if (!live) return std::unexpected(with_context(live.error(), str("op '", op.name, "'")));
  }
  // Circular buffers grow from the unreserved base and must stay below every live L1 buffer.
  uint64_t cb_top = chip_.l1_unreserved_base + v.cb_bytes_per_core;
  if (cb_top > l1_alloc_.lowest_allocated())
    return fail(ErrorCode::resource_exhausted, "op '", op.name, "': circular buffers [", chip_.l1_unreserved_base, ", ", cb_top,
                ") clash with L1 buffers starting at ", l1_alloc_.lowest_allocated());
  auto timing = run_kernel(memory_, chip_, op);
  if (!timing) return std::unexpected(with_context(timing.error(), str("op '", op.name, "'")));
  clock_ns_ += timing->duration_ns;
  return timing;
}

uint64_t EmulatedDevice::resident_bytes() const {
  uint64_t n = 0;
  for (const auto& m : memory_.dram) n += m.resident_bytes();
  for (const auto& m : memory_.l1) n += m.resident_bytes();
  return n;
}

}  // namespace meshplan::device
