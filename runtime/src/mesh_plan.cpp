// The mesh part of a plan (see mesh_plan.hpp).
#include "meshplan/runtime/mesh_plan.hpp"

namespace meshplan::runtime {

namespace {

const fb::MeshShard* shard_at(const PlanRef& plan, size_t index, bool output) {
  const auto* v = output ? plan.plan().output_shards() : plan.plan().input_shards();
  if (!v || index >= v->size()) return nullptr;
  return v->Get(static_cast<uint32_t>(index));
}

}  // namespace

bool is_mesh_plan(const PlanRef& plan) {
  return mesh_rows(plan) * mesh_cols(plan) > 1;
}

int mesh_rows(const PlanRef& plan) {
  const fb::MeshInfo* m = plan.plan().header()->mesh();
  return m ? m->rows() : 1;
}

int mesh_cols(const PlanRef& plan) {
  const fb::MeshInfo* m = plan.plan().header()->mesh();
  return m ? m->cols() : 1;
}

device::MeshShardSpec boundary_shard(const PlanRef& plan, size_t index, bool output) {
  device::MeshShardSpec spec;
  const fb::MeshShard* s = shard_at(plan, index, output);
  if (!s) return spec;
  spec.type = static_cast<device::MeshShardType>(s->type());
  if (s->shard_dims() && s->shard_dims()->size() == 2)
    spec.shard_dims = {s->shard_dims()->Get(0), s->shard_dims()->Get(1)};
  if (s->shard_shape()) spec.shard_shape.assign(s->shard_shape()->begin(), s->shard_shape()->end());
  return spec;
}

std::span<const int64_t> host_shape(const PlanRef& plan, size_t index, bool output) {
  if (const fb::MeshShard* s = shard_at(plan, index, output); s && s->full_shape())
    return std::span<const int64_t>(s->full_shape()->data(), s->full_shape()->size());
  const auto* ids = output ? plan.plan().outputs() : plan.plan().inputs();
  return plan.placement(ids->Get(static_cast<uint32_t>(index))).shape;
}

Result<device::MeshDesc> plan_mesh_desc(const PlanRef& plan, const device::ChipDesc& chip) {
  const fb::MeshInfo* m = plan.plan().header()->mesh();
  if (!m) return fail(ErrorCode::invalid_argument, "plan '", plan.name(), "' has no mesh");
  device::MeshDesc d;
  d.name = m->name() ? m->name()->str() : "";
  d.rows = m->rows();
  d.cols = m->cols();
  d.chip = chip;
  d.topology = static_cast<device::Topology>(m->topology());
  d.links = m->links();
  d.hop_latency_ns = m->hop_latency_ns();
  Hash128 want = m->descriptor_hash()
                     ? Hash128{m->descriptor_hash()->lo(), m->descriptor_hash()->hi()}
                     : Hash128{};
  if (d.hash() != want)
    return fail(ErrorCode::incompatible, "plan '", plan.name(), "': the mesh ", d.name, " ", d.rows,
                "x", d.cols, " rebuilt from its header with chip ", chip.name,
                " does not match the recorded mesh descriptor ", want.hex().substr(0, 8));
  return d;
}

Result<device::MeshDesc> run_mesh_desc(const PlanRef& plan, const device::ChipDesc& chip) {
  if (is_mesh_plan(plan)) return plan_mesh_desc(plan, chip);
  return device::single_chip_mesh(chip);
}

Result<std::unique_ptr<device::Mesh>> open_plan_mesh(const PlanRef& plan,
                                                     const device::ChipDesc& chip,
                                                     std::string_view backend,
                                                     const device::BackendOptions& options) {
  return device::open_backend(backend, MESHPLAN_TRY(run_mesh_desc(plan, chip)), options);
}

}  // namespace meshplan::runtime
