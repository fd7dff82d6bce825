// The one run loop (Executable::run_bound, executable.hpp): a plan on the chips it is bound to,
// one chip (a 1x1 mesh or a lone Device) or a mesh; and checking a mesh plan's host inputs.
#include <algorithm>
#include <cmath>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/mesh.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/input_transform.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "shape_text.hpp"

namespace meshplan::runtime {

namespace {

std::span<const float> segment_floats(const PlanRef& p, int32_t segment) {
  auto bytes = p.segment(static_cast<uint32_t>(segment));
  return std::span<const float>(reinterpret_cast<const float*>(bytes.data()),
                                bytes.size() / sizeof(float));
}

/// The chips a run drives: those of a mesh, or one Device bound without a mesh (a 1x1 mesh
/// without the mesh object). `sharded` for a mesh plan: its host tensors cross the boundary by
/// their shards, its collectives run through the mesh, and a chip's clock is the mesh's (device
/// time plus collective time); a single-chip plan reads its chip's own clock.
struct Chips {
  device::Mesh* mesh;
  device::Device* lone;
  bool sharded;
  int count;

  device::Device& chip(int c) const { return mesh ? mesh->chip(c) : *lone; }
  uint64_t clock(int c) const {
    return sharded ? mesh->now_ns(mesh->descriptor().coord(c)) : chip(c).now_ns();
  }
  template <class F>
  Status on_every_chip(F&& f) const {
    for (int c = 0; c < count; ++c) MESHPLAN_TRY(f(chip(c)));
    return {};
  }
  std::vector<device::TensorPlacement> per_chip(const device::TensorPlacement& t) const {
    return std::vector<device::TensorPlacement>(static_cast<size_t>(count), t);
  }
};

}  // namespace

Status check_host_inputs(const PlanRef& p, std::span<const TensorView> inputs) {
  const auto* ids = p.plan().inputs();
  if (inputs.size() != ids->size())
    return fail(ErrorCode::invalid_argument, "plan '", p.name(), "' takes ", ids->size(),
                " inputs, got ", inputs.size());
  for (uint32_t i = 0; i < ids->size(); ++i) {
    auto want = user_input_shape(p, i);
    std::string_view name = p.placement(ids->Get(i)).name;
    if (input_transform(p, i) &&
        (!std::ranges::equal(inputs[i].shape, want) ||
         static_cast<int64_t>(inputs[i].data.size()) != device::volume(want)))
      return fail(ErrorCode::invalid_argument, "input ", i, " '", name, "': shape ",
                  shape_text(inputs[i].shape), " with ", inputs[i].data.size(),
                  " values does not match its host shape ", shape_text(want), " (",
                  input_transform_text(input_transform(p, i)), " ",
                  shape_text(host_shape(p, i, false)), ")");
    if (!std::ranges::equal(inputs[i].shape, want))
      return fail(ErrorCode::invalid_argument, "input ", i, " '", name, "': shape ",
                  shape_text(inputs[i].shape), " does not match the plan's host shape ",
                  shape_text(want));
    int64_t copies = boundary_shard(p, i, false).type == device::MeshShardType::identity
                         ? mesh_rows(p) * mesh_cols(p)
                         : 1;
    if (static_cast<int64_t>(inputs[i].data.size()) != device::volume(want) * copies)
      return fail(ErrorCode::invalid_argument, "input ", i, " '", name,
                  "': ", inputs[i].data.size(), " values for host shape ", shape_text(want),
                  copies > 1 ? str(" on ", copies, " chips (identity)") : std::string());
  }
  return {};
}

Status check_input_values(const PlanRef& p, std::span<const TensorView> inputs) {
  const auto* ids = p.plan().inputs();
  for (uint32_t i = 0; i < ids->size() && i < inputs.size(); ++i) {
    if (input_transform(p, i)) continue;
    device::TensorPlacement t = p.placement(ids->Get(i));
    if (t.dtype != device::DType::i32 && t.dtype != device::DType::u32) continue;
    const bool is_unsigned = t.dtype == device::DType::u32;
    // f32 rounds the word's largest value up to 2^31 (2^32): that one stores the largest word.
    const double lo = is_unsigned ? 0.0 : -2147483648.0;
    const double hi = is_unsigned ? 4294967296.0 : 2147483648.0;
    const std::span<const float> data = inputs[i].data;
    for (size_t k = 0; k < data.size(); ++k) {
      const double x = data[k];
      if (std::isnan(x) || x < lo || x > hi)
        return fail(ErrorCode::invalid_argument, "input ", i, " '", t.name, "': value ", data[k],
                    " (element ", k, ") is not a value of ",
                    device::dtype_name(t.dtype),
                    ", the device dtype its integers are computed in (64-bit integers included)");
    }
  }
  return {};
}

Result<RunResult> Executable::run_bound(std::span<const TensorView> inputs) {
  const fb::Plan& p = plan_.plan();
  const bool sharded = is_mesh_plan(plan_);
  const Chips chips{mesh_, chip_, sharded, mesh_ ? mesh_->size() : 1};
  // A mesh resets its chips and their clocks; a lone device resets itself.
  if (mesh_)
    mesh_->reset();
  else
    chip_->reset();

  // Arguments: allocate at their planned addresses on every chip, write constants to every chip.
  for (uint32_t id = 0; id < p.tensors()->size(); ++id) {
    const fb::TensorPlan* t = p.tensors()->Get(id);
    if (t->role() == fb::TensorRole::intermediate) continue;
    device::TensorPlacement placement = plan_.placement(id);
    MESHPLAN_TRY(chips.on_every_chip([&](device::Device& d) { return d.allocate(placement); }));
    if (t->role() == fb::TensorRole::constant)
      MESHPLAN_TRY(chips.on_every_chip([&](device::Device& d) {
        return d.write(placement, segment_floats(plan_, t->segment()));
      }));
  }
  // Host inputs: prepared on the host if they have a transform (into a buffer kept across runs,
  // grown to the largest such input), then written to the chip or split over the mesh.
  for (uint32_t i = 0; i < p.inputs()->size(); ++i) {
    device::TensorPlacement t = plan_.placement(p.inputs()->Get(i));
    std::span<const float> host = inputs[i].data;
    if (input_transform(plan_, i)) {
      size_t n =
          static_cast<size_t>(device::volume(sharded ? host_shape(plan_, i, false) : t.shape));
      if (prepared_.size() < n) prepared_.resize(n);
      std::span<float> staged(prepared_.data(), n);
      MESHPLAN_TRY(apply_input_transform(plan_, i, inputs[i], staged));
      host = staged;
    }
    if (sharded)
      MESHPLAN_TRY(mesh_->full_to_shard(host, host_shape(plan_, i, false),
                                        boundary_shard(plan_, i, false), chips.per_chip(t)));
    else
      MESHPLAN_TRY(chips.chip(0).write(t, host));
  }

  RunResult result;
  result.ops.reserve(p.ops()->size() * static_cast<size_t>(chips.count));
  for (const fb::OpPlan* op : *p.ops()) {
    constexpr size_t kMax = device::kMaxOperands;
    device::TensorPlacement in[kMax], out[kMax];
    const device::TensorPlacement* inp[kMax];
    const device::TensorPlacement* outp[kMax];
    for (uint32_t i = 0; i < op->operands()->size(); ++i) {
      in[i] = plan_.placement(op->operands()->Get(i));
      inp[i] = &in[i];
    }
    device::OpConfig config = op_config_of(*op);
    // A conv2d with deallocate_activation frees its input and allocates its result itself (the
    // result may take the input's L1): the launch does both, and the input is not freed again.
    bool frees_input = config.deallocate_activation;
    for (uint32_t i = 0; i < op->results()->size(); ++i) {
      out[i] = plan_.placement(op->results()->Get(i));
      outp[i] = &out[i];
      if (!frees_input)
        MESHPLAN_TRY(chips.on_every_chip([&](device::Device& d) { return d.allocate(out[i]); }));
    }
    std::string_view name = op->name() ? op->name()->string_view() : std::string_view();
    config.mesh_rows = static_cast<uint16_t>(mesh_rows(plan_));
    config.mesh_cols = static_cast<uint16_t>(mesh_cols(plan_));
    auto kind = static_cast<device::OpKind>(op->kind());
    if (sharded && device::is_collective(kind)) {
      std::vector<uint64_t> start(static_cast<size_t>(chips.count));
      for (int c = 0; c < chips.count; ++c) start[static_cast<size_t>(c)] = chips.clock(c);
      auto ins = chips.per_chip(in[0]), outs = chips.per_chip(out[0]);
      auto run = device::run_collective_op(*mesh_, kind, config, ins, outs);
      if (!run) return std::unexpected(with_context(run.error(), str("op '", name, "'")));
      result.collective_ns += run->timing.duration_ns;
      result.bytes_moved += run->bytes_moved;
      for (int c = 0; c < chips.count; ++c) {
        uint64_t begin = start[static_cast<size_t>(c)];
        result.ops.push_back(OpProfile{name, kind, chips.clock(c) - begin, 0, 0, 0,
                                       static_cast<uint32_t>(c), begin, true});
      }
    } else {
      device::OpLaunch launch{kind, name, std::span(inp, op->operands()->size()),
                              std::span(outp, op->results()->size()), config};
      for (int c = 0; c < chips.count; ++c) {
        uint64_t start = chips.clock(c);
        auto timing = chips.chip(c).launch(launch);
        // A mesh plan's errors name the chip; a single-chip plan's come as the chip gives them.
        if (!timing && sharded)
          return std::unexpected(with_context(
              timing.error(), str("chip ", device::coord_name(mesh_->descriptor().coord(c)))));
        if (!timing) return std::unexpected(timing.error());
        result.ops.push_back(OpProfile{name, kind, timing->duration_ns, timing->cores_used,
                                       timing->compute_ns, timing->dram_ns,
                                       static_cast<uint32_t>(c), start, false});
      }
    }
    if (op->frees())
      for (uint32_t id : *op->frees()) {
        if (frees_input && id == op->operands()->Get(0)) continue;
        device::TensorPlacement t = plan_.placement(id);
        MESHPLAN_TRY(chips.on_every_chip([&](device::Device& d) { return d.deallocate(t); }));
      }
  }
  // Outputs: read back from the chip, or reassembled on the host from the mesh.
  for (uint32_t i = 0; i < p.outputs()->size(); ++i) {
    device::TensorPlacement placement = plan_.placement(p.outputs()->Get(i));
    auto full = sharded ? host_shape(plan_, i, true) : placement.shape;
    Tensor t(std::vector<int64_t>(full.begin(), full.end()));
    if (sharded) {
      device::MeshShardSpec spec = boundary_shard(plan_, i, true);
      if (spec.type == device::MeshShardType::identity)
        t.data.resize(t.data.size() * static_cast<size_t>(chips.count));
      MESHPLAN_TRY(mesh_->shard_to_full(chips.per_chip(placement), spec, full, t.data));
    } else {
      MESHPLAN_TRY(chips.chip(0).read(placement, t.data));
    }
    result.outputs.push_back(std::move(t));
  }
  // Overflow outputs (a lowered i64/ui64 op's check that its exact result stayed in the
  // 32-bit word): a nonzero one fails the run, naming the op.
  for (uint32_t i = 0; i < p.outputs()->size(); ++i) {
    std::string_view name = plan_.placement(p.outputs()->Get(i)).name;
    if (!name.starts_with("overflow:")) continue;
    const auto& flag = result.outputs[i].data;
    if (std::ranges::any_of(flag, [](float x) { return x != 0; })) {
      size_t at = name.find('@');
      return fail(ErrorCode::unimplemented, name.substr(at == std::string_view::npos ? 0 : at + 1),
                  ": ", name.substr(9, at == std::string_view::npos ? name.npos : at - 9),
                  ": a 64-bit integer result left the 32-bit range it is computed in (meshplan "
                  "refuses the run rather than wrap it)");
    }
  }
  // Per chip: its clock, its time in device ops, and the rest (collectives, incl. waiting).
  for (int c = 0; c < chips.count; ++c) {
    uint64_t total = chips.clock(c), ops = chips.chip(c).now_ns();
    result.chip_ns.push_back(total);
    result.chip_device_ns.push_back(ops);
    result.chip_collective_ns.push_back(total - std::min(total, ops));
    result.device_ns = std::max(result.device_ns, total);
  }
  return result;
}

}  // namespace meshplan::runtime
