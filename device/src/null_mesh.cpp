// The backend-neutral half of device::Mesh: NullMesh (the surface a hardware backend fills in)
// and run_collective_op, which runs a collective op of a plan through any Mesh.
#include <memory>
#include <utility>
#include <vector>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/mesh.hpp"
#include "meshplan/device/op_cases.hpp"

namespace meshplan::device {

NullMesh::NullMesh(MeshDesc desc) : desc_(std::move(desc)) {
  for (int i = 0; i < desc_.chips(); ++i)
    chips_.push_back(std::make_unique<NullDevice>(desc_.chip));
}

namespace {
std::unexpected<Error> null_mesh(const char* what) {
  return fail(ErrorCode::unimplemented, "null mesh: ", what, " is not implemented by this backend");
}
}  // namespace

Result<CollectiveRun> NullMesh::all_gather(PerChip, PerChip, int, int) {
  return null_mesh("all_gather");
}
Result<CollectiveRun> NullMesh::reduce_scatter(PerChip, PerChip, int, int, ReduceOp) {
  return null_mesh("reduce_scatter");
}
Result<CollectiveRun> NullMesh::all_reduce(PerChip, PerChip, int, ReduceOp) {
  return null_mesh("all_reduce");
}
Result<CollectiveRun> NullMesh::all_to_all(PerChip, PerChip, int, int, int) {
  return null_mesh("all_to_all");
}
Result<CollectiveRun> NullMesh::collective_permute(
    PerChip, PerChip, std::span<const std::pair<MeshCoord, MeshCoord>>) {
  return null_mesh("collective_permute");
}
Result<CollectiveRun> NullMesh::all_slice(PerChip, PerChip, int, int) {
  return null_mesh("all_slice");
}
Status NullMesh::full_to_shard(std::span<const float>, std::span<const int64_t>,
                               const MeshShardSpec&, PerChip) {
  return null_mesh("full_to_shard");
}
Status NullMesh::shard_to_full(PerChip, const MeshShardSpec&, std::span<const int64_t>,
                               std::span<float>) {
  return null_mesh("shard_to_full");
}

Result<CollectiveRun> run_collective_op(Mesh& mesh, OpKind kind, const OpConfig& c, PerChip in,
                                        PerChip out) {
  if (c.mesh_rows != mesh.rows() || c.mesh_cols != mesh.cols())
    return fail(ErrorCode::invalid_argument, op_name(kind), " was configured for a ", c.mesh_rows,
                "x", c.mesh_cols, " mesh, this mesh is ", mesh.rows(), "x", mesh.cols());
  switch (kind) {
    case OpKind::all_gather:
      return mesh.all_gather(in, out, c.collective_dim, c.cluster_axis);
    case OpKind::reduce_scatter:
      return mesh.reduce_scatter(in, out, c.collective_dim, c.cluster_axis, c.reduce);
    case OpKind::all_reduce:
      return mesh.all_reduce(in, out, c.cluster_axis, c.reduce);
    case OpKind::all_to_all:
      return mesh.all_to_all(in, out, c.split_dim, c.concat_dim, c.cluster_axis);
    case OpKind::all_slice:
      return mesh.all_slice(in, out, c.collective_dim, c.cluster_axis);
    case OpKind::collective_permute: {
      std::vector<std::pair<MeshCoord, MeshCoord>> pairs;
      for (auto [from, to] : permute_pairs(c)) {
        if (from >= mesh.size() || to >= mesh.size())
          return fail(ErrorCode::invalid_argument, "collective_permute: pair (", from, ", ", to,
                      ") is outside the ", mesh.rows(), "x", mesh.cols(), " mesh");
        pairs.emplace_back(mesh.descriptor().coord(from), mesh.descriptor().coord(to));
      }
      return mesh.collective_permute(in, out, pairs);
    }
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE_(family, collective, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      return fail(ErrorCode::invalid_argument, op_name(kind), " is not a collective");
  }
  return fail(ErrorCode::internal, "op kind ", static_cast<int>(kind), " is out of range");
}

}  // namespace meshplan::device
