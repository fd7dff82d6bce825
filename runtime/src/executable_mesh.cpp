// Running a mesh plan on a device::Mesh (Executable::run_mesh, executable.hpp), and checking a
// mesh plan's host inputs.
#include <algorithm>

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

Result<RunResult> Executable::run_mesh(std::span<const TensorView> inputs) {
  device::Mesh& mesh = *mesh_;
  const fb::Plan& p = plan_.plan();
  const int chips = mesh.size();
  const device::MeshDesc& desc = mesh.descriptor();
  mesh.reset();
  auto all_chips = [&](const device::TensorPlacement& t) {
    return std::vector<device::TensorPlacement>(static_cast<size_t>(chips), t);
  };
  auto on_every_chip = [&](auto&& f) -> Status {
    for (int c = 0; c < chips; ++c) MESHPLAN_TRY(f(mesh.chip(c)));
    return {};
  };
  for (uint32_t id = 0; id < p.tensors()->size(); ++id) {
    const fb::TensorPlan* t = p.tensors()->Get(id);
    if (t->role() == fb::TensorRole::intermediate) continue;
    device::TensorPlacement placement = plan_.placement(id);
    MESHPLAN_TRY(on_every_chip([&](device::Device& d) { return d.allocate(placement); }));
    if (t->role() == fb::TensorRole::constant)
      MESHPLAN_TRY(on_every_chip([&](device::Device& d) {
        return d.write(placement, segment_floats(plan_, t->segment()));
      }));
  }
  for (uint32_t i = 0; i < p.inputs()->size(); ++i) {
    auto per_chip = all_chips(plan_.placement(p.inputs()->Get(i)));
    std::span<const float> host = inputs[i].data;
    if (input_transform(plan_, i)) {
      // Prepared on the host (into a buffer kept across runs), then replicated.
      size_t n = static_cast<size_t>(device::volume(host_shape(plan_, i, false)));
      if (prepared_.size() < n) prepared_.resize(n);
      std::span<float> staged(prepared_.data(), n);
      MESHPLAN_TRY(apply_input_transform(plan_, i, inputs[i], staged));
      host = staged;
    }
    MESHPLAN_TRY(mesh.full_to_shard(host, host_shape(plan_, i, false),
                                    boundary_shard(plan_, i, false), per_chip));
  }

  RunResult result;
  result.ops.reserve(p.ops()->size() * static_cast<size_t>(chips));
  for (const fb::OpPlan* op : *p.ops()) {
    constexpr size_t kMax = device::kMaxOperands;
    device::TensorPlacement in[kMax], out[kMax];
    const device::TensorPlacement* inp[kMax];
    const device::TensorPlacement* outp[kMax];
    for (uint32_t i = 0; i < op->operands()->size(); ++i) {
      in[i] = plan_.placement(op->operands()->Get(i));
      inp[i] = &in[i];
    }
    for (uint32_t i = 0; i < op->results()->size(); ++i) {
      out[i] = plan_.placement(op->results()->Get(i));
      outp[i] = &out[i];
      MESHPLAN_TRY(on_every_chip([&](device::Device& d) { return d.allocate(out[i]); }));
    }
    std::string_view name = op->name() ? op->name()->string_view() : std::string_view();
    device::OpConfig config = op_config_of(*op);
    config.mesh_rows = desc.rows;
    config.mesh_cols = desc.cols;
    auto kind = static_cast<device::OpKind>(op->kind());
    if (device::is_collective(kind)) {
      std::vector<uint64_t> start(static_cast<size_t>(chips));
      for (int c = 0; c < chips; ++c) start[static_cast<size_t>(c)] = mesh.now_ns(desc.coord(c));
      auto ins = all_chips(in[0]), outs = all_chips(out[0]);
      auto run = device::run_collective_op(mesh, kind, config, ins, outs);
      if (!run) return std::unexpected(with_context(run.error(), str("op '", name, "'")));
      result.collective_ns += run->timing.duration_ns;
      result.bytes_moved += run->bytes_moved;
      for (int c = 0; c < chips; ++c) {
        uint64_t end = mesh.now_ns(desc.coord(c));
        result.ops.push_back(OpProfile{name, kind, end - start[static_cast<size_t>(c)], 0, 0, 0,
                                       static_cast<uint32_t>(c), start[static_cast<size_t>(c)],
                                       true});
      }
    } else {
      device::OpLaunch launch{kind, name, std::span(inp, op->operands()->size()),
                              std::span(outp, op->results()->size()), config};
      for (int c = 0; c < chips; ++c) {
        uint64_t start = mesh.now_ns(desc.coord(c));
        auto timing = mesh.chip(c).launch(launch);
        if (!timing)
          return std::unexpected(
              with_context(timing.error(), str("chip ", device::coord_name(desc.coord(c)))));
        result.ops.push_back(OpProfile{name, kind, timing->duration_ns, timing->cores_used,
                                       timing->compute_ns, timing->dram_ns,
                                       static_cast<uint32_t>(c), start, false});
      }
    }
    if (op->frees())
      for (uint32_t id : *op->frees()) {
        device::TensorPlacement t = plan_.placement(id);
        MESHPLAN_TRY(on_every_chip([&](device::Device& d) { return d.deallocate(t); }));
      }
  }
  for (uint32_t i = 0; i < p.outputs()->size(); ++i) {
    auto full = host_shape(plan_, i, true);
    device::MeshShardSpec spec = boundary_shard(plan_, i, true);
    Tensor t(std::vector<int64_t>(full.begin(), full.end()));
    if (spec.type == device::MeshShardType::identity)
      t.data.resize(t.data.size() * static_cast<size_t>(chips));
    auto per_chip = all_chips(plan_.placement(p.outputs()->Get(i)));
    MESHPLAN_TRY(mesh.shard_to_full(per_chip, spec, full, t.data));
    result.outputs.push_back(std::move(t));
  }
  for (int c = 0; c < chips; ++c) {
    uint64_t total = mesh.now_ns(desc.coord(c)), ops = mesh.chip(c).now_ns();
    result.chip_ns.push_back(total);
    result.chip_device_ns.push_back(ops);
    result.chip_collective_ns.push_back(total - std::min(total, ops));
    result.device_ns = std::max(result.device_ns, total);
  }
  return result;
}

}  // namespace meshplan::runtime
