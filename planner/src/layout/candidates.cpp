// Candidate layouts and OpModel queries for the layout policies.
#include "meshplan/planner/candidates.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <sstream>

#include "common/key_memo.hpp"
#include "layout/launch_key.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/formats.hpp"

namespace meshplan::planner {

TensorLayout interleaved_layout(const Value& v, device::BufferType buffer) {
  TensorLayout t;
  t.dtype = v.dtype;
  t.buffer = buffer;
  return t;
}

device::TensorPlacement placement_of(const Value& v, const TensorLayout& layout) {
  device::TensorPlacement p =
      device::make_interleaved(v.name, v.shape, layout.dtype, layout.buffer, 0, layout.layout);
  p.memory = layout.memory;
  p.shard = layout.shard;
  return p;
}

uint64_t l1_bytes_per_core(const Value& v, const TensorLayout& layout,
                           const device::ChipDesc& chip) {
  if (!layout.in_l1()) return 0;
  uint32_t page = device::natural_page_size(v.shape, layout.dtype, layout.layout);
  uint64_t aligned = (page + chip.l1_alignment - 1) / chip.l1_alignment * chip.l1_alignment;
  if (layout.memory == device::MemLayout::interleaved) {
    device::TensorPlacement p = placement_of(v, layout);
    return device::interleaved_bytes_per_bank(
        device::page_count(p), page, static_cast<uint32_t>(chip.cores()), chip.l1_alignment);
  }
  int64_t tiles =
      (layout.shard.shape[0] / device::kTileH) * (layout.shard.shape[1] / device::kTileW);
  return static_cast<uint64_t>(tiles) * aligned;
}

namespace {

// Core grids (x, y) with x * y == cores that fit the chip, widest first.
std::vector<std::pair<uint16_t, uint16_t>> grids_of(int64_t cores, const device::ChipDesc& chip) {
  std::vector<std::pair<uint16_t, uint16_t>> out;
  for (int64_t x = std::min<int64_t>(cores, chip.grid_x); x >= 1; --x)
    if (cores % x == 0 && cores / x <= chip.grid_y)
      out.emplace_back(static_cast<uint16_t>(x), static_cast<uint16_t>(cores / x));
  return out;
}

TensorLayout sharded(const Value& v, device::MemLayout memory, uint16_t gx, uint16_t gy,
                     int64_t rows, int64_t cols) {
  TensorLayout t = interleaved_layout(v, device::BufferType::l1);
  t.memory = memory;
  t.shard.grid =
      device::CoreRange{0, 0, static_cast<uint16_t>(gx - 1), static_cast<uint16_t>(gy - 1)};
  t.shard.shape[0] = rows;
  t.shard.shape[1] = cols;
  return t;
}

}  // namespace

std::vector<TensorLayout> layout_candidates(const Value& v, const device::ChipDesc& chip,
                                            uint32_t max_layouts) {
  struct Ranked {
    uint32_t cores;
    int kind;
    TensorLayout layout;
  };
  std::vector<Ranked> ranked;
  device::TileGrid g = device::tile_grid(v.shape);
  int64_t th = g.tiles_h, tw = g.tiles_w;
  int64_t max_cores = chip.cores();
  // Height sharding: tile rows split over c cores (a grid of any shape with c cores).
  for (int64_t c = std::min(th, max_cores); c >= 2; --c)
    if (th % c == 0)
      for (auto [x, y] : grids_of(c, chip)) {
        ranked.push_back({static_cast<uint32_t>(c), 0,
                          sharded(v, device::MemLayout::height_sharded, x, y,
                                  th / c * device::kTileH, tw * device::kTileW)});
        break;  // one grid shape per core count
      }
  for (int64_t c = std::min(tw, max_cores); c >= 2; --c)
    if (tw % c == 0)
      for (auto [x, y] : grids_of(c, chip)) {
        ranked.push_back({static_cast<uint32_t>(c), 1,
                          sharded(v, device::MemLayout::width_sharded, x, y, th * device::kTileH,
                                  tw / c * device::kTileW)});
        break;
      }
  for (int64_t gy = std::min<int64_t>(th, chip.grid_y); gy >= 2; --gy)
    for (int64_t gx = std::min<int64_t>(tw, chip.grid_x); gx >= 2; --gx)
      if (th % gy == 0 && tw % gx == 0)
        ranked.push_back({static_cast<uint32_t>(gx * gy), 2,
                          sharded(v, device::MemLayout::block_sharded, static_cast<uint16_t>(gx),
                                  static_cast<uint16_t>(gy), th / gy * device::kTileH,
                                  tw / gx * device::kTileW)});
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return a.cores != b.cores ? a.cores > b.cores : a.kind < b.kind;
  });
  std::vector<TensorLayout> out;
  uint32_t room = max_layouts > 2 ? max_layouts - 2 : 0;
  for (const Ranked& r : ranked) {
    if (out.size() >= room) break;
    out.push_back(r.layout);
  }
  if (max_layouts >= 2) out.push_back(interleaved_layout(v, device::BufferType::l1));
  out.push_back(interleaved_layout(v, device::BufferType::dram));
  return out;
}

device::OpConfig config_for(const device::OpConfig& base, const TensorLayout& result,
                            const device::ChipDesc& chip) {
  device::OpConfig c = base;
  if (result.memory != device::MemLayout::interleaved) {
    c.grid_x = static_cast<uint16_t>(result.shard.grid.x1 - result.shard.grid.x0 + 1);
    c.grid_y = static_cast<uint16_t>(result.shard.grid.y1 - result.shard.grid.y0 + 1);
  } else {
    c.grid_x = chip.grid_x;
    c.grid_y = chip.grid_y;
  }
  return c;
}

std::string layout_string(const TensorLayout& t) {
  std::ostringstream out;
  out << device::buffer_name(t.buffer) << " " << device::memory_name(t.memory);
  if (t.memory != device::MemLayout::interleaved)
    out << " " << (t.shard.grid.x1 - t.shard.grid.x0 + 1) << "x"
        << (t.shard.grid.y1 - t.shard.grid.y0 + 1) << " [" << t.shard.shape[0] << "x"
        << t.shard.shape[1] << "]";
  return out.str();
}

bool is_auto_matmul(device::OpKind kind, const device::OpConfig& c) {
  return device::is_matmul_family(kind) && c.program == device::MatmulProgram::none &&
         c.per_core_m == 0 && c.per_core_n == 0 && c.in0_block_w == 0;
}

std::vector<device::OpConfig> matmul_program_configs(const device::OpConfig& base) {
  std::vector<device::OpConfig> out;
  auto add = [&](device::MatmulProgram program, bool mcast_in0, bool transpose) {
    // Default blocks (per-core M/N from the grid, the widest in0 block up to 8 K tiles), then
    // one-tile K steps, whose circular buffers are smallest when L1 is tight.
    for (uint32_t in0_block_w : {0u, 1u}) {
      device::OpConfig c = base;
      c.program = program;
      c.mcast_in0 = mcast_in0;
      c.transpose_mcast = transpose;
      c.in0_block_w = in0_block_w;
      c.out_subblock_h = c.out_subblock_w = 1;
      out.push_back(c);
    }
  };
  add(device::MatmulProgram::mcast_2d, true, false);
  add(device::MatmulProgram::mcast_2d, true, true);
  add(device::MatmulProgram::mcast_1d, true, false);
  add(device::MatmulProgram::mcast_1d, false, false);
  return out;
}

Status choose_matmul_programs(const Graph& g, LayoutPlan& plan, const device::ChipDesc& chip,
                              const std::vector<bool>& kept) {
  OpQuery q(g, chip);
  for (OpId o = 0; o < g.ops.size(); ++o) {
    const Op& op = g.ops[o];
    if (op.kind != device::OpKind::matmul && op.kind != device::OpKind::linear) continue;
    if (o < kept.size() && kept[o]) continue;  // The policy chose it in its search.
    device::OpConfig given = MESHPLAN_TRY(op_config(op, g.mesh));
    if (!is_auto_matmul(op.kind, given)) continue;  // The graph fixed the program: keep it.
    device::OpConfig c = plan.configs[o];
    c.program = given.program;
    c.mcast_in0 = given.mcast_in0;
    c.transpose_mcast = given.transpose_mcast;
    c.per_core_m = given.per_core_m;
    c.per_core_n = given.per_core_n;
    c.in0_block_w = given.in0_block_w;
    c.out_subblock_h = given.out_subblock_h;
    c.out_subblock_w = given.out_subblock_w;
    std::vector<const TensorLayout*> in;
    for (ValueId v : op.operands) in.push_back(&plan.tensors[v]);
    plan.configs[o] = q.resolve_config(op.kind, op.name, op.operands, in, op.results[0],
                                       plan.tensors[op.results[0]], c);
  }
  return {};
}

namespace {

device::OpModel model_for(const device::ChipDesc& chip,
                          const std::optional<device::MeshDesc>& mesh) {
  if (!mesh) return device::OpModel(chip);
  device::MeshDesc m = *mesh;
  m.chip = chip;  // The planning chip; planning_mesh() checked the mesh is made of it.
  return device::OpModel(std::move(m));
}

// Key bytes: each writer takes the write position and returns the next one.
template <typename T>
char* put_key(char* p, const T& x) {
  std::memcpy(p, &x, sizeof(x));
  return p + sizeof(x);
}

char* put_tensor_key(char* p, const Value& val, const TensorLayout& t) {
  p = put_key(p, static_cast<uint8_t>(val.shape.size()));
  // A rank-0 shape has no data pointer, which memcpy may not be given even for 0 bytes.
  if (!val.shape.empty()) std::memcpy(p, val.shape.data(), val.shape.size() * sizeof(int64_t));
  p += val.shape.size() * sizeof(int64_t);
  p = put_key(p, t.dtype);
  p = put_key(p, t.layout);
  p = put_key(p, t.buffer);
  p = put_key(p, t.memory);
  if (t.memory != device::MemLayout::interleaved) {
    p = put_key(p, t.shard.grid);
    p = put_key(p, t.shard.shape[0]);
    p = put_key(p, t.shard.shape[1]);
    p = put_key(p, t.shard.orientation);
  }
  return p;
}

}  // namespace

OpQuery::OpQuery(const Graph& graph, const device::ChipDesc& chip,
                 const std::optional<device::MeshDesc>& mesh)
    : graph_(graph),
      model_(model_for(chip, mesh)),
      valid_memo_(std::make_unique<KeyMemo<device::OpValidation>>()),
      cost_memo_(std::make_unique<KeyMemo<Best>>()) {}

OpQuery::~OpQuery() = default;

std::string_view launch_key(std::string& k, const Graph& graph, device::OpKind kind,
                            std::span<const ValueId> operands,
                            std::span<const TensorLayout* const> operand_layouts, ValueId result,
                            const TensorLayout& result_layout, const device::OpConfig& config) {
  // Exact bytes of everything OpModel looks at (names aside): the memos compare them in full.
  // Written through a pointer into a buffer sized for the worst case (no per-field append: the
  // appends' capacity checks were half of the key's time, a sixth of greedy's).
  size_t bound = 288 + config.pairs.size();
  for (ValueId v : operands) bound += 64 + 8 * graph.values[v].shape.size();
  bound += 64 + 8 * graph.values[result].shape.size();
  k.resize_and_overwrite(bound, [&](char* base, size_t) {
    // `p` stays a local of this function (put() takes and returns it): written through a
    // captured reference, every byte stored could alias it and forced a reload after each store.
    char* p = base;
    p = put_key(p, static_cast<uint16_t>(kind));
    p = put_key(p, config.transpose_a);
    p = put_key(p, config.transpose_b);
    p = put_key(p, config.activation);
    p = put_key(p, config.fidelity);
    p = put_key(p, config.grid_x);
    p = put_key(p, config.grid_y);
    p = put_key(p, config.program);
    p = put_key(p, config.mcast_in0);
    p = put_key(p, config.transpose_mcast);
    p = put_key(p, config.per_core_m);
    p = put_key(p, config.per_core_n);
    p = put_key(p, config.in0_block_w);
    p = put_key(p, config.out_subblock_h);
    p = put_key(p, config.out_subblock_w);
    p = put_key(p, config.act_block_h);
    p = put_key(p, config.act_block_w_div);
    p = put_key(p, config.stream_weights);
    p = put_key(p, config.input_n);  // The flattened form's geometry: same shapes, other windows.
    p = put_key(p, config.input_h);
    p = put_key(p, config.input_w);
    if (kind == device::OpKind::conv2d) {  // The window and groups size its im2col blocks.
      p = put_key(p, config.kernel[0]);
      p = put_key(p, config.kernel[1]);
      p = put_key(p, config.groups);
      // Freeing the input adds the halo buffer, sized by the padding and dilation.
      if (config.deallocate_activation) {
        p = put_key(p, config.deallocate_activation);
        for (int32_t v : config.padding) p = put_key(p, v);
        for (int32_t v : config.dilation) p = put_key(p, v);
      }
    }
    // A pool's time counts its window's elements: two pools of the same shapes may have other
    // windows (3x3 padded by 1 and 5x5 padded by 2, stride 1).
    if (device::timing_class(kind) == device::TimingClass::pool) {
      p = put_key(p, config.kernel[0]);
      p = put_key(p, config.kernel[1]);
    }
    if (device::is_collective(kind)) {  // Their cost depends on the group, not only on shapes.
      p = put_key(p, config.mesh_rows);
      p = put_key(p, config.mesh_cols);
      p = put_key(p, config.cluster_axis);
      p = put_key(p, config.reduce);
      p = put_key(p, config.collective_dim);
      p = put_key(p, config.split_dim);
      p = put_key(p, config.concat_dim);
      p = put_key(p, static_cast<uint16_t>(config.pairs.size()));
      if (!config.pairs.empty()) std::memcpy(p, config.pairs.data(), config.pairs.size());
      p += config.pairs.size();
    }
    p = put_key(p, static_cast<uint8_t>(operands.size()));
    for (size_t i = 0; i < operands.size(); ++i)
      p = put_tensor_key(p, graph.values[operands[i]], *operand_layouts[i]);
    p = put_tensor_key(p, graph.values[result], result_layout);
    return static_cast<size_t>(p - base);
  });
  return k;
}

std::string_view OpQuery::key(device::OpKind kind, std::span<const ValueId> operands,
                              std::span<const TensorLayout* const> operand_layouts, ValueId result,
                              const TensorLayout& result_layout,
                              const device::OpConfig& config) const {
  return launch_key(key_, graph_, kind, operands, operand_layouts, result, result_layout, config);
}

template <typename F>
auto OpQuery::with_launch(device::OpKind kind, std::string_view name,
                          std::span<const ValueId> operands,
                          std::span<const TensorLayout* const> operand_layouts, ValueId result,
                          const TensorLayout& result_layout, const device::OpConfig& config,
                          F&& f) const {
  device::TensorPlacement in[8], out = placement_of(graph_.values[result], result_layout);
  const device::TensorPlacement* inp[8];
  size_t n = std::min<size_t>(operands.size(), 8);
  for (size_t i = 0; i < n; ++i) {
    in[i] = placement_of(graph_.values[operands[i]], *operand_layouts[i]);
    inp[i] = &in[i];
  }
  const device::TensorPlacement* outp[1] = {&out};
  return f(device::OpLaunch{kind, name, std::span(inp, n), std::span(outp, 1), config});
}

device::OpValidation OpQuery::validate(device::OpKind kind, std::string_view name,
                                       std::span<const ValueId> operands,
                                       std::span<const TensorLayout* const> operand_layouts,
                                       ValueId result, const TensorLayout& result_layout,
                                       const device::OpConfig& config) const {
  uint64_t h = key_hash(key(kind, operands, operand_layouts, result, result_layout, config));
  return valid_keyed(h, kind, name, operands, operand_layouts, result, result_layout, config);
}

const device::OpValidation& OpQuery::valid_keyed(
    uint64_t h, device::OpKind kind, std::string_view name, std::span<const ValueId> operands,
    std::span<const TensorLayout* const> operand_layouts, ValueId result,
    const TensorLayout& result_layout, const device::OpConfig& config) const {
  if (const device::OpValidation* v = valid_memo_->find(h, key_)) return *v;
  // OpModel does not build keys: key_ still holds this launch's.
  device::OpValidation v =
      explain(kind, name, operands, operand_layouts, result, result_layout, config);
  // An automatic matmul runs when one of its program configs does (best_keyed picks the
  // cheapest): the plain program refuses a sharded result and width-sharded operands, which the
  // multicast programs take.
  if (!v.ok && is_auto_matmul(kind, config))
    for (const device::OpConfig& c : matmul_program_configs(config))
      if (device::OpValidation w =
              explain(kind, name, operands, operand_layouts, result, result_layout, c);
          w.ok) {
        v = std::move(w);
        break;
      }
  return valid_memo_->insert(h, key_, std::move(v));
}

device::OpValidation OpQuery::explain(device::OpKind kind, std::string_view name,
                                      std::span<const ValueId> operands,
                                      std::span<const TensorLayout* const> operand_layouts,
                                      ValueId result, const TensorLayout& result_layout,
                                      const device::OpConfig& config) const {
  return with_launch(kind, name, operands, operand_layouts, result, result_layout, config,
                     [&](const device::OpLaunch& l) { return model_.validate(l); });
}

device::OpTiming OpQuery::timing(device::OpKind kind, std::string_view name,
                                 std::span<const ValueId> operands,
                                 std::span<const TensorLayout* const> operand_layouts,
                                 ValueId result, const TensorLayout& result_layout,
                                 const device::OpConfig& config) const {
  return best(kind, name, operands, operand_layouts, result, result_layout, config).timing;
}

device::OpConfig OpQuery::resolve_config(device::OpKind kind, std::string_view name,
                                         std::span<const ValueId> operands,
                                         std::span<const TensorLayout* const> operand_layouts,
                                         ValueId result, const TensorLayout& result_layout,
                                         const device::OpConfig& config) const {
  return best(kind, name, operands, operand_layouts, result, result_layout, config).config;
}

std::optional<uint64_t> OpQuery::cost_if_valid(device::OpKind kind, std::string_view name,
                                               std::span<const ValueId> operands,
                                               std::span<const TensorLayout* const> operand_layouts,
                                               ValueId result, const TensorLayout& result_layout,
                                               const device::OpConfig& config) const {
  auto t = timing_if_valid(kind, name, operands, operand_layouts, result, result_layout, config);
  if (!t) return std::nullopt;
  return t->duration_ns;
}

std::optional<device::OpTiming> OpQuery::timing_if_valid(
    device::OpKind kind, std::string_view name, std::span<const ValueId> operands,
    std::span<const TensorLayout* const> operand_layouts, ValueId result,
    const TensorLayout& result_layout, const device::OpConfig& config) const {
  uint64_t h = key_hash(key(kind, operands, operand_layouts, result, result_layout, config));
  if (!valid_keyed(h, kind, name, operands, operand_layouts, result, result_layout, config).ok)
    return std::nullopt;
  return best_keyed(h, kind, name, operands, operand_layouts, result, result_layout, config).timing;
}

const OpQuery::Best& OpQuery::best(device::OpKind kind, std::string_view name,
                                   std::span<const ValueId> operands,
                                   std::span<const TensorLayout* const> operand_layouts,
                                   ValueId result, const TensorLayout& result_layout,
                                   const device::OpConfig& config) const {
  uint64_t h = key_hash(key(kind, operands, operand_layouts, result, result_layout, config));
  return best_keyed(h, kind, name, operands, operand_layouts, result, result_layout, config);
}

const OpQuery::Best& OpQuery::best_keyed(uint64_t h, device::OpKind kind, std::string_view name,
                                         std::span<const ValueId> operands,
                                         std::span<const TensorLayout* const> operand_layouts,
                                         ValueId result, const TensorLayout& result_layout,
                                         const device::OpConfig& config) const {
  if (const Best* b = cost_memo_->find(h, key_)) return *b;
  // A miss: validating program configs below rebuilds key_, so keep this launch's key.
  std::string k = key_;
  auto cost_of = [&](const device::OpConfig& c) {
    return with_launch(kind, name, operands, operand_layouts, result, result_layout, c,
                       [&](const device::OpLaunch& l) { return model_.cost(l); });
  };
  Best b{cost_of(config), config};
  if (is_auto_matmul(kind, config)) {
    // Program configs ranked by cost; the first (cheapest) valid one wins, ties keep the
    // earlier (program none first, then the order of matmul_program_configs). When program
    // none is refused, the cheapest valid multicast program.
    bool found = explain(kind, name, operands, operand_layouts, result, result_layout, config).ok;
    for (const device::OpConfig& c : matmul_program_configs(config)) {
      device::OpTiming t = cost_of(c);
      if (found && t.duration_ns >= b.timing.duration_ns) continue;
      if (!validate(kind, name, operands, operand_layouts, result, result_layout, c).ok) continue;
      b = Best{t, c};
      found = true;
    }
  }
  if (is_auto_conv(kind, config)) {
    // Block heights ranked by cost; the first (cheapest) valid one wins, ties keep the larger.
    auto configs =
        with_launch(kind, name, operands, operand_layouts, result, result_layout, config,
                    [&](const device::OpLaunch& l) { return conv_block_configs(l, chip()); });
    bool found = false;
    for (const device::OpConfig& c : configs) {
      device::OpTiming t = cost_of(c);
      if (found && t.duration_ns >= b.timing.duration_ns) continue;
      if (!validate(kind, name, operands, operand_layouts, result, result_layout, c).ok) continue;
      b = Best{t, c};
      found = true;
    }
  }
  return cost_memo_->insert(h, k, b);
}

uint64_t OpQuery::cost(device::OpKind kind, std::string_view name,
                       std::span<const ValueId> operands,
                       std::span<const TensorLayout* const> operand_layouts, ValueId result,
                       const TensorLayout& result_layout, const device::OpConfig& config) const {
  return timing(kind, name, operands, operand_layouts, result, result_layout, config).duration_ns;
}

device::OpValidation OpQuery::validate_move(ValueId v, const TensorLayout& from,
                                            const TensorLayout& to) const {
  const TensorLayout* f[1] = {&from};
  ValueId ops[1] = {v};
  return validate(device::OpKind::to_memory_config, "to_memory_config", ops, f, v, to,
                  config_for(device::OpConfig{}, to.in_l1() ? to : from, chip()));
}

device::OpValidation OpQuery::explain_move(ValueId v, const TensorLayout& from,
                                           const TensorLayout& to) const {
  const TensorLayout* f[1] = {&from};
  ValueId ops[1] = {v};
  return explain(device::OpKind::to_memory_config, "to_memory_config", ops, f, v, to,
                 config_for(device::OpConfig{}, to.in_l1() ? to : from, chip()));
}

uint64_t OpQuery::move_cost(ValueId v, const TensorLayout& from, const TensorLayout& to) const {
  const TensorLayout* f[1] = {&from};
  ValueId ops[1] = {v};
  return cost(device::OpKind::to_memory_config, "to_memory_config", ops, f, v, to,
              config_for(device::OpConfig{}, to.in_l1() ? to : from, chip()));
}

}  // namespace meshplan::planner
