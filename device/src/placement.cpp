// Page geometry and the interleaved address map.
#include "meshplan/device/placement.hpp"

#include <algorithm>
#include <utility>

#include "meshplan/device/formats.hpp"

namespace meshplan::device {

TensorPlacement make_interleaved(std::string_view name, std::span<const int64_t> shape, DType dtype,
                                 BufferType buffer, uint64_t address, TileLayout layout) {
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

TensorPlacement make_sharded(std::string_view name, std::span<const int64_t> shape, DType dtype,
                             MemLayout memory, const ShardSpec& shard, uint64_t address,
                             TileLayout layout) {
  TensorPlacement t = make_interleaved(name, shape, dtype, BufferType::l1, address, layout);
  t.memory = memory;
  t.shard = shard;
  t.page_size = expected_page_size(t);
  return t;
}

View2D view_2d(std::span<const int64_t> shape, TileLayout layout) {
  if (layout == TileLayout::tile) {
    TileGrid g = tile_grid(shape);
    return View2D{g.tiles_h * kTileH, g.tiles_w * kTileW};
  }
  int64_t w = shape.empty() ? 1 : shape.back();
  return View2D{w == 0 ? 0 : volume(shape) / w, w};
}

namespace {
int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
/// Grid sides as the orientation walks them: (cores along rows of the view, along columns).
std::pair<int64_t, int64_t> block_sides(const CoreRange& g, ShardOrientation o) {
  int64_t gw = g.x1 - g.x0 + 1, gh = g.y1 - g.y0 + 1;
  return o == ShardOrientation::row_major ? std::pair{gh, gw} : std::pair{gw, gh};
}
/// Elements per row-major page: the shard's width when width/block sharded, else the row.
int64_t row_major_page_width(const TensorPlacement& t) {
  bool split_cols = t.memory == MemLayout::width_sharded || t.memory == MemLayout::block_sharded;
  int64_t w = t.shape.empty() ? 1 : t.shape.back();
  return split_cols ? std::min<int64_t>(t.shard.shape[1], w) : w;
}
}  // namespace

Result<ShardSpec> even_shard_spec(std::span<const int64_t> shape, MemLayout memory, CoreRange grid,
                                  ShardOrientation orientation, TileLayout layout) {
  if (memory == MemLayout::interleaved)
    return fail(ErrorCode::invalid_argument,
                "even_shard_spec: interleaved is not a sharded layout");
  if (grid.x1 < grid.x0 || grid.y1 < grid.y0)
    return fail(ErrorCode::invalid_argument, "even_shard_spec: empty core grid");
  View2D v = view_2d(shape, layout);
  int64_t unit = layout == TileLayout::tile ? kTileH : 1;
  auto split = [&](int64_t extent, int64_t parts) {
    return std::max<int64_t>(1, ceil_div(extent / unit, parts)) * unit;
  };
  ShardSpec s;
  s.grid = grid;
  s.orientation = orientation;
  switch (memory) {
    case MemLayout::height_sharded:
      s.shape[0] = split(v.rows, grid.cores());
      s.shape[1] = v.cols;
      break;
    case MemLayout::width_sharded:
      s.shape[0] = v.rows;
      s.shape[1] = split(v.cols, grid.cores());
      break;
    case MemLayout::block_sharded: {
      auto [along_rows, along_cols] = block_sides(grid, orientation);
      s.shape[0] = split(v.rows, along_rows);
      s.shape[1] = split(v.cols, along_cols);
      break;
    }
    case MemLayout::interleaved:
      break;
  }
  return s;
}

int64_t page_count(const TensorPlacement& t) {
  if (t.layout == TileLayout::tile) return tile_grid(t.shape).pages();
  View2D v = view_2d(t.shape, t.layout);
  int64_t pw = row_major_page_width(t);
  return pw <= 0 ? 0 : v.rows * ceil_div(v.cols, pw);
}

uint32_t natural_page_size(std::span<const int64_t> shape, DType dtype, TileLayout layout) {
  if (layout == TileLayout::tile) return tile_bytes(dtype);
  int64_t w = shape.empty() ? 1 : shape.back();
  return static_cast<uint32_t>(w * element_bytes(dtype));
}

uint32_t expected_page_size(const TensorPlacement& t) {
  if (t.layout == TileLayout::tile) return tile_bytes(t.dtype);
  return static_cast<uint32_t>(row_major_page_width(t) * element_bytes(t.dtype));
}

uint64_t interleaved_bytes_per_bank(int64_t pages, uint32_t page_size, uint32_t banks,
                                    uint32_t alignment) {
  uint64_t aligned = (page_size + alignment - 1) / alignment * alignment;
  uint64_t per_bank = (static_cast<uint64_t>(pages) + banks - 1) / banks;
  return per_bank * aligned;
}

Status check_shard_spec(const TensorPlacement& t, const ChipDesc& chip) {
  if (t.memory == MemLayout::interleaved) return {};
  auto bad = [&](auto&&... msg) {
    return fail(ErrorCode::invalid_argument, "tensor '", t.name, "' (", memory_name(t.memory),
                "): ", msg...);
  };
  if (t.buffer != BufferType::l1)
    return bad("sharded buffers must be in L1 (DRAM sharding is not supported)");
  const CoreRange& g = t.shard.grid;
  if (t.shard.extra_ranges > kMaxCoreRanges - 1)
    return bad("a core range set holds at most ", kMaxCoreRanges, " ranges, got ",
               t.shard.range_count());
  if (t.shard.extra_ranges > 0 && t.memory == MemLayout::block_sharded)
    return bad("block sharding needs one core rectangle, got a set of ", t.shard.range_count());
  for (int i = 0; i < t.shard.range_count(); ++i) {
    const CoreRange& r = t.shard.range(i);
    if (r.x1 < r.x0 || r.y1 < r.y0)
      return bad("shard grid (", r.x0, ",", r.y0, ")-(", r.x1, ",", r.y1, ") is empty");
    if (r.x1 >= chip.grid_x || r.y1 >= chip.grid_y)
      return bad("shard grid (", r.x0, ",", r.y0, ")-(", r.x1, ",", r.y1,
                 ") does not fit the chip's ", chip.grid_x, "x", chip.grid_y, " cores: core (",
                 r.x1, ",", r.y1, ") does not exist");
    for (int j = 0; j < i; ++j) {
      const CoreRange& q = t.shard.range(j);
      uint16_t x = std::max(q.x0, r.x0), y = std::max(q.y0, r.y0);
      if (x <= std::min(q.x1, r.x1) && y <= std::min(q.y1, r.y1))
        return bad("core ranges ", j, " and ", i, " of the shard grid overlap at core (", x, ",", y,
                   ")");
    }
  }
  int64_t sh = t.shard.shape[0], sw = t.shard.shape[1];
  if (sh <= 0 || sw <= 0) return bad("shard shape [", sh, ", ", sw, "] must be positive");
  if (t.layout == TileLayout::tile && (sh % kTileH != 0 || sw % kTileW != 0))
    return bad("shard shape [", sh, ", ", sw, "] does not tile: tiled shards are multiples of 32");
  View2D v = view_2d(t.shape, t.layout);
  int64_t cores = t.shard.cores();
  int64_t nh = ceil_div(v.rows, sh), nw = ceil_div(v.cols, sw);
  switch (t.memory) {
    case MemLayout::height_sharded:
      if (sw != v.cols)
        return bad("height shards must span the full width ", v.cols, ", shard width is ", sw);
      if (nh > cores)
        return bad(nh, " shards of ", sh, " rows for ", v.rows, " rows, but the grid has ", cores,
                   " cores");
      break;
    case MemLayout::width_sharded:
      if (sh != v.rows)
        return bad("width shards must span the full height ", v.rows, ", shard height is ", sh);
      if (nw > cores)
        return bad(nw, " shards of ", sw, " columns for ", v.cols, " columns, but the grid has ",
                   cores, " cores");
      break;
    case MemLayout::block_sharded: {
      auto [along_rows, along_cols] = block_sides(g, t.shard.orientation);
      if (nh > along_rows || nw > along_cols)
        return bad(nh, "x", nw, " blocks of [", sh, ", ", sw, "] for a [", v.rows, ", ", v.cols,
                   "] view do not fit a ", along_rows, "x", along_cols, " grid in ",
                   t.shard.orientation == ShardOrientation::row_major ? "row-major" : "col-major",
                   " orientation");
      break;
    }
    case MemLayout::interleaved:
      break;
  }
  return {};
}

AddressMap::AddressMap(const TensorPlacement& t, const ChipDesc& chip)
    : sharded_(t.memory != MemLayout::interleaved),
      banks_(t.buffer == BufferType::dram ? chip.dram_banks : static_cast<uint32_t>(chip.cores())),
      address_(t.address),
      pages_(page_count(t)),
      memory_(t.memory),
      shard_(t.shard),
      chip_grid_x_(chip.grid_x) {
  uint32_t align = t.buffer == BufferType::dram ? chip.dram_alignment : chip.l1_alignment;
  aligned_page_ = (t.page_size + align - 1) / align * align;
  View2D v = view_2d(t.shape, t.layout);
  if (t.layout == TileLayout::tile) {
    TileGrid g = tile_grid(t.shape);
    page_rows_ = g.tiles_h;
    page_cols_ = g.tiles_w;
    page_width_ = kTileW;
    shard_rows_ = std::max<int64_t>(1, t.shard.shape[0] / kTileH);
    shard_cols_ = std::max<int64_t>(1, t.shard.shape[1] / kTileW);
  } else {
    page_width_ = row_major_page_width(t);
    page_rows_ = v.rows;
    page_cols_ = page_width_ <= 0 ? 1 : ceil_div(v.cols, page_width_);
    shard_rows_ = std::max<int64_t>(1, t.shard.shape[0]);
    shard_cols_ = 1;
  }
}

uint32_t AddressMap::core_of_shard(int64_t i, int64_t j) const {
  bool row_major = shard_.orientation == ShardOrientation::row_major;
  if (memory_ == MemLayout::block_sharded) {
    const CoreRange& g = shard_.grid;
    int64_t x = row_major ? j : i, y = row_major ? i : j;
    return static_cast<uint32_t>((g.y0 + y) * chip_grid_x_ + g.x0 + x);
  }
  // Height/width: the k-th core of the range set, each range walked in orientation order.
  int64_t k = memory_ == MemLayout::height_sharded ? i : j;
  int r = 0;
  while (r + 1 < shard_.range_count() && k >= static_cast<int64_t>(shard_.range(r).cores()))
    k -= shard_.range(r++).cores();
  const CoreRange& g = shard_.range(r);
  int64_t gw = g.x1 - g.x0 + 1, gh = g.y1 - g.y0 + 1;
  int64_t x = row_major ? k % gw : k / gh, y = row_major ? k / gw : k % gh;
  return static_cast<uint32_t>((g.y0 + y) * chip_grid_x_ + g.x0 + x);
}

PageLocation AddressMap::sharded_page(int64_t p) const {
  int64_t r = p / page_cols_, c = p % page_cols_;
  int64_t local = (r % shard_rows_) * shard_cols_ + c % shard_cols_;
  return PageLocation{core_of_shard(r / shard_rows_, c / shard_cols_),
                      address_ + static_cast<uint64_t>(local) * aligned_page_};
}

bool AddressMap::holds(uint32_t core) const {
  return !sharded_ || shard_.contains(core % chip_grid_x_, core / chip_grid_x_);
}

uint64_t AddressMap::bytes_per_bank() const {
  if (sharded_) return static_cast<uint64_t>(shard_rows_ * shard_cols_) * aligned_page_;
  return (static_cast<uint64_t>(pages_) + banks_ - 1) / banks_ * aligned_page_;
}

}  // namespace meshplan::device
