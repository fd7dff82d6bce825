// Plan emission: the layout and memory decisions written as a plan.fbs FlatBuffer.
#include "emit/emit.hpp"

#include <algorithm>
#include <cmath>

#include "common/key_memo.hpp"
#include "layout/launch_key.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/timing.hpp"
#include "meshplan/planner/layout.hpp"
#include "meshplan/schemas/schemas.hpp"

namespace meshplan::planner {

static_assert(static_cast<int>(fb::SpillSelection::dp_fallback) ==
                  static_cast<int>(SpillSelection::dp_fallback) &&
              static_cast<int>(fb::SpillSelection::MAX) ==
                  static_cast<int>(SpillSelection::dp_fallback));

namespace {

fb::Hash128 to_fb(const Hash128& h) {
  return fb::Hash128(h.lo, h.hi);
}

uint64_t align64(uint64_t v) {
  return (v + 63) & ~uint64_t{63};
}

fb::TensorRole role_of(const Value& v) {
  if (v.argument < 0) return fb::TensorRole::intermediate;
  switch (v.kind) {
    case ArgKind::input:
      return fb::TensorRole::input;
    case ArgKind::parameter:
      return fb::TensorRole::parameter;
    case ArgKind::constant:
      return fb::TensorRole::constant;
  }
  return fb::TensorRole::intermediate;
}

device::TensorPlacement placement(const Graph& g, const LayoutPlan& l, const MemoryPlan& m,
                                  ValueId v) {
  const TensorLayout& t = l.tensors[v];
  device::TensorPlacement p = device::make_interleaved(g.values[v].name, g.values[v].shape, t.dtype,
                                                       t.buffer, m.address[v], t.layout);
  p.memory = t.memory;
  p.shard = t.shard;
  p.page_size = m.page_size[v];
  return p;
}

/// The flatbuffers::Vector<T> element type of an fb::OpConfig vector accessor's result.
template <class V>
struct FbElement;
template <class T>
struct FbElement<const flatbuffers::Vector<T>*> {
  using type = T;
};
template <auto Accessor>
using FbVectorElement =
    typename FbElement<std::invoke_result_t<decltype(Accessor), const fb::OpConfig*>>::type;
template <auto Accessor>
using FbScalar = std::invoke_result_t<decltype(Accessor), const fb::OpConfig*>;

template <class T, class From>
flatbuffers::Offset<flatbuffers::Vector<T>> fb_vector(flatbuffers::FlatBufferBuilder& b,
                                                      const From* v, size_t n) {
  if (n == 0) return 0;
  if constexpr (std::is_same_v<T, From>) {
    return b.CreateVector(v, n);
  } else {
    std::vector<T> x(v, v + n);
    return b.CreateVector(x);
  }
}

/// The op config as a plan.fbs OpConfig, field by field as op_config_fields.def lists them;
/// attribute vectors are written only when set and scalars at their defaults are not stored,
/// so plans of ops without attributes stay small.
flatbuffers::Offset<fb::OpConfig> write_config(flatbuffers::FlatBufferBuilder& b,
                                               const device::OpConfig& c) {
  const device::OpConfig d{};
  // Vectors first: a table is built with no other object under way.
#define MESHPLAN_CONFIG_LIST(name, type, count, sets_count, fbs) \
  auto name##_v = fb_vector<FbVectorElement<&fb::OpConfig::name>>(b, c.name, c.count);
#define MESHPLAN_CONFIG_FIXED(name, type, n, fbs, ...)             \
  auto name##_v = fb_vector<FbVectorElement<&fb::OpConfig::name>>( \
      b, c.name, std::equal(c.name, c.name + (n), d.name) ? 0 : (n));
#define MESHPLAN_CONFIG_VECTOR(name, type, max, multiple, fbs) \
  auto name##_v = fb_vector<FbVectorElement<&fb::OpConfig::name>>(b, c.name.data(), c.name.size());
#include "meshplan/device/op_config_fields.def"
  fb::OpConfigBuilder ob(b);
#define MESHPLAN_CONFIG_SCALAR(name, type, init, fbs) \
  ob.add_##name(static_cast<FbScalar<&fb::OpConfig::name>>(c.name));
#define MESHPLAN_CONFIG_LIST(name, type, count, sets_count, fbs) \
  if (!name##_v.IsNull()) ob.add_##name(name##_v);
#define MESHPLAN_CONFIG_FIXED(name, type, n, fbs, ...) \
  if (!name##_v.IsNull()) ob.add_##name(name##_v);
#define MESHPLAN_CONFIG_VECTOR(name, type, max, multiple, fbs) \
  if (!name##_v.IsNull()) ob.add_##name(name##_v);
  // Bounds are stored only when given (not their infinite default); the flags say which.
#define MESHPLAN_CONFIG_BOUND(name, type, init, fbs) \
  if (c.name != d.name) ob.add_##name(c.name);
#define MESHPLAN_CONFIG_FLAGS(name, lower, upper, fbs) \
  if (c.lower != d.lower || c.upper != d.upper)        \
    ob.add_##name(                                     \
        static_cast<uint8_t>(4 | (c.lower == d.lower ? 1 : 0) | (c.upper == d.upper ? 2 : 0)));
#include "meshplan/device/op_config_fields.def"
  return ob.Finish();
}

}  // namespace

Result<std::vector<uint8_t>> emit_plan(const EmitInput& in, const device::ChipDesc& chip,
                                       const PlannerOptions& options) {
  const Graph& original = in.original;
  const Graph* source = &in.source;
  const std::vector<PreparedWeight>& prepared = in.prepared;
  const FlattenResult& flattened = in.flattened;
  const device::MeshDesc& mesh = in.mesh;
  const LayoutResult& planned = in.planned;
  const Graph& g = planned.graph;
  const LayoutPlan& layout = planned.layout;
  const Schedule& schedule = in.schedule;
  const MemoryPlan& memory = in.memory;

  // Sized for the plan up front (about 100 bytes per tensor and per op; a plan's constants go
  // to segments, not here): growing from a small buffer copied it a dozen times on 10,000 ops.
  // The bytes written do not depend on the buffer's size.
  flatbuffers::FlatBufferBuilder b(4096 + 128 * (g.values.size() + g.ops.size()));
  b.ForceDefaults(false);
  // Constant segments, laid out after the FlatBuffer.
  std::vector<fb::Segment> segments;
  std::vector<int> segment_of(g.values.size(), -1);
  uint64_t seg_cursor = 0;
  for (ValueId a : g.arguments)
    if (g.values[a].kind == ArgKind::constant) {
      segment_of[a] = static_cast<int>(segments.size());
      uint64_t size = g.values[a].data.size() * sizeof(float);
      segments.emplace_back(seg_cursor, size);
      seg_cursor = align64(seg_cursor + size);
    }

  std::vector<flatbuffers::Offset<fb::TensorPlan>> tensors;
  tensors.reserve(g.values.size());
  for (ValueId v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    const TensorLayout& t = layout.tensors[v];
    auto name = b.CreateString(val.name);
    auto shape = b.CreateVector(val.shape);
    flatbuffers::Offset<fb::ShardSpec> shard;
    if (t.memory != device::MemLayout::interleaved) {
      fb::CoreRange grid(t.shard.grid.x0, t.shard.grid.y0, t.shard.grid.x1, t.shard.grid.y1);
      std::vector<int64_t> shard_shape{t.shard.shape[0], t.shard.shape[1]};
      // Sub-objects are written in a fixed order (never inside one call's argument list, whose
      // evaluation order differs between compilers), so plan bytes do not depend on the compiler.
      auto shard_shape_vec = b.CreateVector(shard_shape);
      auto grid_vec = b.CreateVectorOfStructs(&grid, 1);
      shard = fb::CreateShardSpec(b, grid_vec, shard_shape_vec,
                                  static_cast<fb::ShardOrientation>(t.shard.orientation));
    }
    fb::TensorPlanBuilder tb(b);
    tb.add_name(name);
    tb.add_shape(shape);
    tb.add_dtype(static_cast<fb::DType>(t.dtype));
    tb.add_role(role_of(val));
    tb.add_layout(static_cast<fb::TileLayout>(t.layout));
    tb.add_buffer(static_cast<fb::BufferType>(t.buffer));
    tb.add_memory(static_cast<fb::MemLayout>(t.memory));
    if (!shard.IsNull()) tb.add_shard(shard);
    tb.add_address(memory.address[v]);
    tb.add_bytes_per_bank(memory.bytes_per_bank[v]);
    tb.add_page_size(memory.page_size[v]);
    tb.add_segment(segment_of[v]);
    tb.add_first_use(schedule.defined_at(v));
    tb.add_last_use(schedule.last_use(v));
    tensors.push_back(tb.Finish());
  }

  uint64_t total_ns = 0, dram_bytes = 0;
  std::vector<flatbuffers::Offset<fb::OpPlan>> ops;
  ops.reserve(schedule.order().size());
  // Each op's estimate depends only on its launch (kind, config, shapes and layouts: what
  // launch_key() writes; names and addresses aside), and planned graphs repeat a few launches
  // (transformer layers), so an estimate is made once per launch and later ops with the same
  // key reuse its duration. Placements and pointer lists are reused across ops.
  KeyMemo<uint64_t> durations;
  std::string launch;
  std::vector<device::TensorPlacement> operand_at, result_at;
  std::vector<const device::TensorPlacement*> inp, resp;
  std::vector<const TensorLayout*> in_layouts;
  for (size_t pos = 0; pos < schedule.order().size(); ++pos) {
    OpId o = schedule.order()[pos];
    const Op& op = g.ops[o];
    const device::OpConfig& c = layout.configs[o];
    operand_at.clear();
    result_at.clear();
    inp.clear();
    resp.clear();
    for (ValueId v : op.operands) operand_at.push_back(placement(g, layout, memory, v));
    for (ValueId v : op.results) result_at.push_back(placement(g, layout, memory, v));
    for (auto& p : operand_at) inp.push_back(&p);
    for (auto& p : result_at) resp.push_back(&p);
    auto estimate = [&] {
      device::OpLaunch l{op.kind, op.name, inp, resp, c};
      if (device::is_collective(op.kind)) return device::collective_op_ns(mesh, l);
      return device::estimate(chip, l).duration_ns;
    };
    uint64_t duration_ns;
    if (op.results.size() == 1) {  // launch_key() describes one result
      in_layouts.clear();
      for (ValueId v : op.operands) in_layouts.push_back(&layout.tensors[v]);
      launch_key(launch, g, op.kind, op.operands, in_layouts, op.results[0],
                 layout.tensors[op.results[0]], c);
      uint64_t h = key_hash(launch);
      if (const uint64_t* known = durations.find(h, launch))
        duration_ns = *known;
      else
        duration_ns = durations.insert(h, launch, estimate());
    } else {
      duration_ns = estimate();
    }
    total_ns += duration_ns;
    for (auto* p : inp)
      dram_bytes +=
          p->buffer == device::BufferType::dram ? device::page_count(*p) * p->page_size : 0;
    for (auto* p : resp)
      dram_bytes +=
          p->buffer == device::BufferType::dram ? device::page_count(*p) * p->page_size : 0;

    auto name = b.CreateString(op.name);
    static_assert(std::is_same_v<ValueId, uint32_t>, "plan.fbs stores value ids as uint32");
    const std::vector<ValueId>& dying = schedule.dying_at(static_cast<int>(pos));
    auto fo = b.CreateVector(op.operands);
    auto fr = b.CreateVector(op.results);
    auto ff = b.CreateVector(dying.data(), dying.size());
    auto config = write_config(b, c);
    ops.push_back(fb::CreateOpPlan(b, static_cast<fb::OpKind>(op.kind), name, fo, fr, config, ff,
                                   duration_ns, static_cast<fb::OpOrigin>(planned.origin[o])));
  }

  std::vector<uint32_t> inputs, outputs(g.outputs.begin(), g.outputs.end());
  for (ValueId a : g.arguments)
    if (g.values[a].kind != ArgKind::constant) inputs.push_back(a);

  uint32_t l1_outputs = planned.l1_outputs();

  fb::Hash128 desc_hash = to_fb(chip.hash());
  auto device_info = fb::CreateDeviceInfo(b, b.CreateString(chip.name), chip.grid_x, chip.grid_y,
                                          chip.l1_size, chip.l1_unreserved_base, chip.dram_banks,
                                          chip.dram_bank_size, &desc_hash);
  auto opts = fb::CreatePlannerOptions(b, b.CreateString(options.policy), options.beam_width,
                                       options.prepare_weights,
                                       options.flatten_spatial && flattened.changed());
  // One host transform per plan input when any input has one (inputs are the non-constant
  // arguments, in order).
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::InputTransform>>> transforms;
  if (!prepared.empty() || !flattened.inputs.empty()) {
    std::vector<flatbuffers::Offset<fb::InputTransform>> list;
    size_t next = 0, next_flat = 0;
    for (size_t i = 0; i < original.arguments.size(); ++i) {
      if (original.values[original.arguments[i]].kind == ArgKind::constant) continue;
      if (next < prepared.size() && prepared[next].argument == i) {
        const PreparedWeight& p = prepared[next++];
        list.push_back(fb::CreateInputTransform(b, fb::InputTransformKind::conv_weight,
                                                b.CreateVector(p.host_shape),
                                                static_cast<int32_t>(p.groups)));
      } else if (next_flat < flattened.inputs.size() && flattened.inputs[next_flat].argument == i) {
        const FlattenedInput& f = flattened.inputs[next_flat++];
        list.push_back(fb::CreateInputTransform(b, fb::InputTransformKind::reshape,
                                                b.CreateVector(f.host_shape)));
      } else {
        list.push_back(fb::CreateInputTransform(b));
      }
    }
    transforms = b.CreateVector(list);
  }
  auto metrics = fb::CreatePlanMetrics(
      b, static_cast<uint32_t>(g.ops.size()), l1_outputs, planned.spills, planned.reshards,
      dram_bytes, memory.l1_high_water, total_ns, 0,
      static_cast<fb::SpillSelection>(planned.spill_selection), planned.spill_dp_states);
  fb::Hash128 key = to_fb(in.key), gkey = to_fb(in.graph_key);
  // The mesh and the boundary shards (with host shapes), for mesh programs only: single-chip
  // plans carry none of it.
  flatbuffers::Offset<fb::MeshInfo> mesh_info;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::MeshShard>>> in_shards,
      out_shards;
  if (!original.mesh.single_chip()) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> axes;
    for (const std::string& a : original.mesh.axis_names) axes.push_back(b.CreateString(a));
    fb::Hash128 mesh_hash = to_fb(mesh.hash());
    auto axes_vec = axes.empty() ? 0 : b.CreateVector(axes);
    auto mesh_name = b.CreateString(mesh.name);
    mesh_info =
        fb::CreateMeshInfo(b, mesh_name, mesh.rows, mesh.cols, static_cast<uint8_t>(mesh.topology),
                           mesh.links, mesh.hop_latency_ns, axes_vec, &mesh_hash);
    auto shard = [&](const device::MeshShardSpec& s, std::vector<int64_t> full) {
      std::vector<int32_t> dims(s.shard_dims.begin(), s.shard_dims.end());
      return fb::CreateMeshShardDirect(b, static_cast<fb::MeshShardType>(s.type), &dims,
                                       s.shard_shape.empty() ? nullptr : &s.shard_shape, &full);
    };
    std::vector<flatbuffers::Offset<fb::MeshShard>> ins, outs;
    // Full shapes of the planned (prepared) inputs: the runtime prepares a weight on the host,
    // then replicates it over the chips (only replicated weights are prepared).
    for (size_t i = 0; i < source->arguments.size(); ++i)
      if (source->values[source->arguments[i]].kind != ArgKind::constant)
        ins.push_back(shard(source->argument_shards[i],
                            MESHPLAN_TRY(boundary_full_shape(*source, i, false))));
    for (size_t i = 0; i < original.outputs.size(); ++i)
      outs.push_back(
          shard(original.output_shards[i], MESHPLAN_TRY(boundary_full_shape(original, i, true))));
    in_shards = b.CreateVector(ins);
    out_shards = b.CreateVector(outs);
  }
  auto graph_name = b.CreateString(g.name);
  auto version = b.CreateString(std::string(kPlannerVersion));
  auto header = fb::CreatePlanHeader(b, kPlanFormatMajor, kPlanFormatMinor, version, &key, &gkey,
                                     graph_name, device_info, opts, metrics, mesh_info);
  auto segments_vec = b.CreateVectorOfStructs(segments);
  auto outputs_vec = b.CreateVector(outputs);
  auto inputs_vec = b.CreateVector(inputs);
  auto ops_vec = b.CreateVector(ops);
  auto tensors_vec = b.CreateVector(tensors);
  auto plan = fb::CreatePlan(b, header, tensors_vec, ops_vec, inputs_vec, outputs_vec, segments_vec,
                             in_shards, out_shards, transforms);
  b.FinishSizePrefixed(plan, fb::PlanIdentifier());

  std::vector<uint8_t> bytes;
  uint64_t data_start = align64(b.GetSize());
  bytes.assign(data_start + seg_cursor, 0);
  std::copy_n(b.GetBufferPointer(), b.GetSize(), bytes.begin());
  for (ValueId a : g.arguments)
    if (segment_of[a] >= 0) {
      const fb::Segment& s = segments[segment_of[a]];
      std::copy_n(reinterpret_cast<const uint8_t*>(g.values[a].data.data()), s.size(),
                  bytes.begin() + data_start + s.offset());
    }
  return bytes;
}

}  // namespace meshplan::planner
