// User overrides in tt-mlir's syntax (override-output-layout, insert-memreconfig), resolved to the
// result layouts each overridden op may take. The policies read the resolved sets as constraints.
#include <algorithm>
#include <charconv>

#include "meshplan/device/formats.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/policy.hpp"

namespace meshplan::planner {

namespace {

Result<device::BufferType> memory_of(std::string_view text, std::string_view entry) {
  if (text == "l1") return device::BufferType::l1;
  if (text == "dram") return device::BufferType::dram;
  return fail(ErrorCode::invalid_argument, "memreconfig '", entry, "': memory '", text,
              "' is not l1 or dram");
}

Result<OpId> op_named(const Graph& g, std::string_view name, std::string_view what,
                      std::string_view entry) {
  for (OpId o = 0; o < g.ops.size(); ++o)
    if (g.ops[o].name == name) return o;
  return fail(ErrorCode::invalid_argument, what, " '", entry, "': graph '", g.name,
              "' has no op named '", name, "'");
}

// One override-output-layout parameter list ("l1:block_sharded:8x8:tile:bf16"), any order, each
// kind at most once (tt-mlir's OutputLayoutOverrideParser).
struct LayoutSpec {
  std::optional<std::pair<int64_t, int64_t>> grid;  // rows x columns of cores
  std::optional<device::BufferType> buffer;
  std::optional<device::MemLayout> memory;
  std::optional<device::TileLayout> layout;
  std::optional<device::DType> dtype;
};

std::optional<std::pair<int64_t, int64_t>> grid_of(std::string_view p) {
  size_t x = p.find('x');
  if (x == std::string_view::npos || x == 0 || x + 1 == p.size()) return std::nullopt;
  auto number = [](std::string_view s) -> std::optional<int64_t> {
    int64_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return n;
  };
  auto r = number(p.substr(0, x)), c = number(p.substr(x + 1));
  if (!r || !c) return std::nullopt;
  return std::pair{*r, *c};
}

// tt-mlir's data type names; those meshplan has no dtype for are named as such.
Result<std::optional<device::DType>> dtype_of(std::string_view p, std::string_view entry) {
  static constexpr std::pair<std::string_view, device::DType> kKnown[] = {
      {"f32", device::DType::f32},      {"bf16", device::DType::bf16},
      {"bfp_bf8", device::DType::bf8b}, {"bfp_bf4", device::DType::bf4b},
      {"u32", device::DType::u32},      {"si32", device::DType::i32}};
  for (auto [name, d] : kKnown)
    if (p == name) return std::optional<device::DType>(d);
  for (std::string_view other : {"f16", "bfp_f8", "bfp_f4", "bfp_f2", "bfp_bf2", "u16", "u8", "i1"})
    if (p == other)
      return fail(ErrorCode::invalid_argument, "override '", entry, "': data type '", p,
                  "' has no meshplan dtype (f32, bf16, bfp_bf8, bfp_bf4, u32, si32)");
  return std::optional<device::DType>();
}

Result<LayoutSpec> parse_spec(std::string_view params, std::string_view entry) {
  LayoutSpec s;
  auto once = [&](auto& slot, auto value, std::string_view p, std::string_view kind) -> Status {
    if (slot)
      return fail(ErrorCode::invalid_argument, "override '", entry, "': more than one ", kind,
                  " ('", p, "')");
    slot = value;
    return {};
  };
  size_t start = 0;
  while (true) {
    size_t colon = params.find(':', start);
    std::string_view p =
        params.substr(start, colon == std::string_view::npos ? params.npos : colon - start);
    if (auto g = grid_of(p)) {
      MESHPLAN_TRY(once(s.grid, *g, p, "grid"));
    } else if (p == "l1" || p == "dram") {
      MESHPLAN_TRY(once(s.buffer, p == "l1" ? device::BufferType::l1 : device::BufferType::dram, p,
                        "buffer type"));
    } else if (p == "system_memory") {
      return fail(ErrorCode::invalid_argument, "override '", entry,
                  "': meshplan places no op result in system_memory (l1 or dram)");
    } else if (p == "interleaved" || p == "height_sharded" || p == "width_sharded" ||
               p == "block_sharded") {
      device::MemLayout m = p == "interleaved"      ? device::MemLayout::interleaved
                            : p == "height_sharded" ? device::MemLayout::height_sharded
                            : p == "width_sharded"  ? device::MemLayout::width_sharded
                                                    : device::MemLayout::block_sharded;
      MESHPLAN_TRY(once(s.memory, m, p, "tensor memory layout"));
    } else if (p == "tile" || p == "row_major") {
      MESHPLAN_TRY(once(s.layout,
                        p == "tile" ? device::TileLayout::tile : device::TileLayout::row_major, p,
                        "page layout"));
    } else if (auto d = MESHPLAN_TRY(dtype_of(p, entry))) {
      MESHPLAN_TRY(once(s.dtype, *d, p, "data type"));
    } else {
      return fail(ErrorCode::invalid_argument, "override '", entry, "': invalid layout parameter '",
                  p,
                  "' (a grid RxC, l1|dram, interleaved|height_sharded|width_sharded|block_sharded, "
                  "tile|row_major, or a data type)");
    }
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return s;
}

// Rows x columns of the cores a layout uses, as tt-mlir writes an override's grid: block sharding
// its core rectangle, height sharding N x 1, width sharding 1 x N, L1 interleaved the chip's grid,
// DRAM 1 x 1.
std::pair<int64_t, int64_t> tt_grid(const TensorLayout& t, const device::ChipDesc& chip) {
  if (!t.in_l1()) return {1, 1};
  int64_t x = t.shard.grid.x1 - t.shard.grid.x0 + 1, y = t.shard.grid.y1 - t.shard.grid.y0 + 1;
  switch (t.memory) {
    case device::MemLayout::interleaved:
      return {chip.grid_y, chip.grid_x};
    case device::MemLayout::height_sharded:
      return {x * y, 1};
    case device::MemLayout::width_sharded:
      return {1, x * y};
    case device::MemLayout::block_sharded:
      return {y, x};
  }
  return {0, 0};
}

Result<OutputOverride> resolve(const Graph& g, const device::ChipDesc& chip, OpId o,
                               const LayoutSpec& s, std::string_view entry) {
  const Value& v = g.values[g.ops[o].results[0]];
  if (s.dtype && *s.dtype != v.dtype)
    return fail(ErrorCode::invalid_argument, "override '", entry, "': data type ",
                device::dtype_name(*s.dtype), " differs from op '", g.ops[o].name, "' result %",
                v.name, "'s ", device::dtype_name(v.dtype),
                " (an override keeps the op's result dtype; a typecast op changes it)");
  OutputOverride out;
  out.entry = std::string(entry);
  out.memory = s.memory;
  for (TensorLayout t : layout_candidates(v, chip, UINT32_MAX)) {
    if (s.buffer && t.buffer != *s.buffer) continue;
    if (s.memory && t.memory != *s.memory) continue;
    if (s.grid && tt_grid(t, chip) != *s.grid) continue;
    if (s.layout) t.layout = *s.layout;
    out.layouts.push_back(t);
  }
  if (out.layouts.empty()) {
    device::TileGrid tiles = device::tile_grid(v.shape);
    return fail(ErrorCode::invalid_argument, "override '", entry, "': op '", g.ops[o].name,
                "' result %", v.name, " ", shape_string(v.shape), " (", tiles.tiles_h, "x",
                tiles.tiles_w, " tiles) has no such layout on this chip (", chip.grid_y, "x",
                chip.grid_x,
                " cores): a sharded grid must fit the chip and divide the tile rows (height, "
                "block) and columns (width, block); DRAM is interleaved only");
  }
  return out;
}

}  // namespace

const OutputOverride* Overrides::output_for(OpId o) const {
  if (output.empty()) return nullptr;
  auto it = output.find(o);
  return it == output.end() ? nullptr : &it->second;
}

std::vector<TensorLayout> OutputOverride::allowed(bool sharded_policy) const {
  if (sharded_policy || memory) return layouts;
  std::vector<TensorLayout> out;
  for (const TensorLayout& t : layouts)
    if (t.memory == device::MemLayout::interleaved) out.push_back(t);
  return out.empty() ? layouts : out;  // a grid alone names sharded layouts
}

Result<Overrides> parse_overrides(const Graph& g, const device::ChipDesc& chip,
                                  const PlannerOptions& options) {
  Overrides out;
  for (const std::string& list : options.output_overrides) {
    size_t start = 0;
    while (true) {
      size_t comma = list.find(',', start);
      std::string_view e = std::string_view(list).substr(
          start, comma == std::string::npos ? std::string::npos : comma - start);
      size_t eq = e.rfind('=');
      if (eq == std::string_view::npos || eq == 0)
        return fail(ErrorCode::invalid_argument, "override '", e,
                    "' is not of the form op=param:param:... (e.g. "
                    "op=l1:block_sharded:8x8:tile:bf16)");
      OpId o = MESHPLAN_TRY(op_named(g, e.substr(0, eq), "override", e));
      if (out.output.contains(o))
        return fail(ErrorCode::invalid_argument, "override '", e, "': op '", g.ops[o].name,
                    "' is overridden twice");
      LayoutSpec s = MESHPLAN_TRY(parse_spec(e.substr(eq + 1), e));
      out.output.emplace(o, MESHPLAN_TRY(resolve(g, chip, o, s, e)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  for (const std::string& e : options.memreconfig) {
    size_t colon = e.rfind(':'), eq = e.rfind('=');
    if (colon == std::string::npos || eq == std::string::npos || eq < colon)
      return fail(ErrorCode::invalid_argument, "memreconfig '", e,
                  "' is not of the form op:operand=l1|dram");
    OpId o = MESHPLAN_TRY(op_named(g, std::string_view(e).substr(0, colon), "memreconfig", e));
    std::string index(e.substr(colon + 1, eq - colon - 1));
    uint32_t i = 0;
    auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), i);
    bool digits = !index.empty() && ec == std::errc() && end == index.data() + index.size();
    if (!digits || i >= g.ops[o].operands.size())
      return fail(ErrorCode::invalid_argument, "memreconfig '", e, "': op '", g.ops[o].name,
                  "' has no operand '", index, "'");
    out.moves.push_back(
        Overrides::Move{o, i, MESHPLAN_TRY(memory_of(std::string_view(e).substr(eq + 1), e))});
  }
  return out;
}

Status check_overrides_held(const Graph& original, const Overrides& ov, const LayoutResult& r) {
  if (ov.output.empty()) return {};
  for (OpId o = 0; o < r.graph.ops.size(); ++o) {
    if (r.origin[o] != OpOrigin::graph) continue;
    const Op& op = r.graph.ops[o];
    for (const auto& [id, want] : ov.output) {
      if (original.ops[id].name != op.name) continue;
      const TensorLayout& got = r.layout.tensors[op.results[0]];
      if (std::find(want.layouts.begin(), want.layouts.end(), got) != want.layouts.end()) break;
      return fail(ErrorCode::invalid_argument, "override '", want.entry, "' cannot hold: op '",
                  op.name, "' result ends up ", layout_string(got),
                  " (L1 spill management found no room for it beside the tensors live there)");
    }
  }
  return {};
}

}  // namespace meshplan::planner
