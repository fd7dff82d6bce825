// Whole-tensor transfers between row-major host values and a placement's pages, for any
// layout: the host path of EmulatedDevice and the row-major reshards of to_memory_config.
#include "tensor_io.hpp"

#include <algorithm>
#include <vector>

#include "meshplan/device/formats.hpp"
#include "meshplan/device/host_memory.hpp"

namespace meshplan::device {

namespace {
/// The error for a tile staging buffer the host could not allocate.
std::unexpected<Error> host_memory_exhausted(const TensorPlacement& t, int64_t pages) {
  return fail(ErrorCode::resource_exhausted, "tensor '", t.name, "': cannot allocate ",
              pages * kTileElems * 4, " bytes of host memory to stage its ", pages, " tiles");
}
}  // namespace

Status write_tensor(ChipMemory& memory, const ChipDesc& chip, const TensorPlacement& t,
                    std::span<const float> host) {
  AddressMap map(t, chip);
  std::vector<std::byte> page(t.page_size);
  if (t.layout == TileLayout::tile) {
    TileGrid g = tile_grid(t.shape);
    auto tiles = alloc_floats(static_cast<size_t>(g.pages() * kTileElems));
    if (!tiles) return host_memory_exhausted(t, g.pages());
    tilize(t.shape, host, std::span<float>(tiles.get(), g.pages() * kTileElems));
    for (int64_t p = 0; p < g.pages(); ++p) {
      MESHPLAN_TRY(pack_tile(t.dtype, tiles.get() + p * kTileElems, page.data()));
      PageLocation loc = map.page(p);
      memory.bank(t.buffer, loc.bank).write(loc.offset, page.data(), page.size());
    }
  } else {
    // Page p is row p / page_cols, columns [c * page_width, ...) of it; a partial last shard
    // column is zero padded.
    int64_t w = view_2d(t.shape, t.layout).cols, pw = map.page_width(), pc = map.page_cols();
    for (int64_t p = 0; p < map.pages(); ++p) {
      int64_t r = p / pc, c0 = (p % pc) * pw, n = std::min(pw, w - c0);
      std::fill(page.begin(), page.end(), std::byte{0});
      MESHPLAN_TRY(
          pack_elements(t.dtype, host.data() + r * w + c0, static_cast<size_t>(n), page.data()));
      PageLocation loc = map.page(p);
      memory.bank(t.buffer, loc.bank).write(loc.offset, page.data(), page.size());
    }
  }
  return {};
}

Status read_tensor(ChipMemory& memory, const ChipDesc& chip, const TensorPlacement& t,
                   std::span<float> host) {
  AddressMap map(t, chip);
  std::vector<std::byte> page(t.page_size);
  if (t.layout == TileLayout::tile) {
    TileGrid g = tile_grid(t.shape);
    auto tiles = alloc_floats(static_cast<size_t>(g.pages() * kTileElems));
    if (!tiles) return host_memory_exhausted(t, g.pages());
    for (int64_t p = 0; p < g.pages(); ++p) {
      PageLocation loc = map.page(p);
      memory.bank(t.buffer, loc.bank).read(loc.offset, page.data(), page.size());
      MESHPLAN_TRY(unpack_tile(t.dtype, page.data(), tiles.get() + p * kTileElems));
    }
    untilize(t.shape, std::span<const float>(tiles.get(), g.pages() * kTileElems), host);
  } else {
    int64_t w = view_2d(t.shape, t.layout).cols, pw = map.page_width(), pc = map.page_cols();
    for (int64_t p = 0; p < map.pages(); ++p) {
      int64_t r = p / pc, c0 = (p % pc) * pw, n = std::min(pw, w - c0);
      PageLocation loc = map.page(p);
      memory.bank(t.buffer, loc.bank).read(loc.offset, page.data(), page.size());
      MESHPLAN_TRY(
          unpack_elements(t.dtype, page.data(), static_cast<size_t>(n), host.data() + r * w + c0));
    }
  }
  return {};
}

}  // namespace meshplan::device
