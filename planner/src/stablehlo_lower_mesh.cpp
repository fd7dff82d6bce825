// Lowering of the per-device program's collectives to the graph IR's collective ops
// (MESH-SPEC section 1): replica groups become a cluster_axis (0: the chips of one column,
// 1: the chips of one row, -1: the whole mesh in chip-index order).
#include <algorithm>

#include "meshplan/device/mesh.hpp"
#include "stablehlo_lower_internal.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

/// cluster_axis for `groups` on `mesh` (at most two axes), or nullopt when the groups are
/// neither one whole axis nor the whole mesh.
std::optional<int64_t> cluster_axis(const MeshDecl& mesh,
                                    const std::vector<std::vector<int64_t>>& groups) {
  std::vector<std::vector<int64_t>> sorted = groups;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < mesh.axes.size(); ++k)
    if (sorted == replica_groups(mesh, {AxisRef{mesh.axes[k].first, 1, 0}}))
      return static_cast<int64_t>(k);
  std::vector<int64_t> all(static_cast<size_t>(mesh.devices()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  if (groups.size() == 1 && groups[0] == all) return -1;
  return std::nullopt;
}

Result<OpKind> graph_op(const Lowering& l, const Op& op, std::string_view name) {
  auto kind = device::op_from_name(name);
  if (!kind) return l.unimplemented(op, str(op.name, ": the graph IR has no ", name, " op"));
  return *kind;
}

std::string groups_text(const std::vector<std::vector<int64_t>>& groups) {
  std::string s = "[";
  for (size_t g = 0; g < groups.size(); ++g) {
    s += g ? ", [" : "[";
    for (size_t i = 0; i < groups[g].size(); ++i)
      s += (i ? ", " : "") + std::to_string(groups[g][i]);
    s += "]";
  }
  return s + "]";
}

}  // namespace

Status lower_collective(Lowering& l, const Op& op) {
  const Module& m = l.module();
  const MeshDecl* mesh = m.main_mesh();
  if (!mesh) return l.unimplemented(op, str(op.name, " in a module without an sdy.mesh"));
  if (mesh->axes.size() > 2)
    return l.unimplemented(op, str(op.name, " on mesh @", mesh->name, " with ", mesh->axes.size(),
                                   " axes (at most two lower)"));
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  if (op.name == "sdy.all_slice") {
    // One all_slice per sliced dim; each dim's axes must be one whole mesh axis.
    AxisMath math{*mesh};
    OpKind kind = MESHPLAN_TRY(graph_op(l, op, "all_slice"));
    std::vector<int64_t> shape = l.graph().values[x].shape;
    DType dt = l.graph().values[x].dtype;
    for (size_t d = 0; d < op.dim_axes.size(); ++d) {
      auto axes = math.without_trivial(op.dim_axes[d]);
      if (axes.empty()) continue;
      auto ca = axes.size() == 1 && math.size(axes[0]) == mesh->axis_size(axes[0].name)
                    ? cluster_axis(*mesh, replica_groups(*mesh, axes))
                    : std::nullopt;
      if (!ca)
        return l.unimplemented(
            op, str("sdy.all_slice of dim ", d, " over a sub-axis or several axes (groups ",
                    groups_text(replica_groups(*mesh, axes)), ")"));
      shape[d] /= math.size(axes[0]);
      x = MESHPLAN_TRY(
          l.emit(kind, {x}, {{"dim", static_cast<int64_t>(d)}, {"cluster_axis", *ca}}, shape, dt));
    }
    l.bind(op.results[0], x);
    return {};
  }
  CollectiveInfo c = MESHPLAN_TRY(collective_info(m, op));
  if (c.kind == "collective_permute") {
    const Attr* pairs = op.prop("source_target_pairs");
    if (!pairs || pairs->kind != Attr::Kind::dense)
      return l.unimplemented(op, "stablehlo.collective_permute without source_target_pairs");
    std::vector<int64_t> flat;
    for (double v : pairs->values) flat.push_back(static_cast<int64_t>(v));
    OpKind kind = MESHPLAN_TRY(graph_op(l, op, "collective_permute"));
    MESHPLAN_TRY(l.emit_for(op, kind, {x}, {{"pairs", flat}}));
    return {};
  }
  auto ca = cluster_axis(*mesh, c.groups);
  if (!ca)
    return l.unimplemented(op, str(op.name, " with replica groups ", groups_text(c.groups),
                                   " that are neither one mesh axis nor the whole mesh"));
  if (!c.groups.empty() && c.groups[0].size() == 1) {  // A group of one chip moves nothing.
    l.bind(op.results[0], x);
    return {};
  }
  std::vector<Attribute> attrs = {{"cluster_axis", *ca}};
  if (c.kind == "all_gather" || c.kind == "reduce_scatter") attrs.push_back({"dim", c.dim});
  if (c.kind == "all_reduce" || c.kind == "reduce_scatter")
    attrs.push_back({"reduce", c.reduction});
  if (c.kind == "all_to_all") {
    attrs.push_back({"split_dim", c.dim});
    attrs.push_back({"concat_dim", c.concat_dim});
  }
  OpKind kind = MESHPLAN_TRY(graph_op(l, op, c.kind));
  MESHPLAN_TRY(l.emit_for(op, kind, {x}, std::move(attrs)));
  return {};
}

namespace {

/// The device::MeshShardSpec of one boundary tensor: `identity` for pre-sharded inputs,
/// `replicate` when no dim is split, else `devices` with the dim each mesh axis splits. A dim
/// split over a sub-axis, or over both axes minor-first, has no MeshShardSpec.
Result<device::MeshShardSpec> shard_spec(const MeshDecl& mesh, const TensorSharding& s,
                                         bool identity, const Op& mc, std::string_view what) {
  device::MeshShardSpec spec;
  if (identity) {
    spec.type = device::MeshShardType::identity;
    return spec;
  }
  AxisMath math{mesh};
  bool split = false;
  for (size_t d = 0; d < s.dims.size(); ++d) {
    auto axes = math.without_trivial(s.dims[d].axes);
    size_t last = 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t k = 0;
      while (k < mesh.axes.size() && mesh.axes[k].first != axes[i].name) ++k;
      if (k == mesh.axes.size() || math.size(axes[i]) != mesh.axes[k].second ||
          (i > 0 && k <= last))
        return fail(ErrorCode::unimplemented, mc.loc.str(), ": unimplemented: ", what,
                    " is sharded <", sharding_string(s),
                    "> (a sub-axis, or axes minor-first), which no mesh_shard expresses");
      last = k;
      spec.shard_dims[k] = static_cast<int32_t>(d);
      split = true;
    }
  }
  spec.type = split ? device::MeshShardType::devices : device::MeshShardType::replicate;
  if (!split) spec.shard_dims = {-1, -1};
  return spec;
}

/// Fills Graph::mesh / argument_shards / output_shards (MESH-SPEC section 3) once the graph IR
/// has them; a graph type without them (before the mesh IR lands) is left as it is.
template <class G>
Status set_boundary(G& g, const Module& m, const Op* mc, size_t program_args) {
  if constexpr (requires {
                  g.mesh.rows;
                  g.mesh.axis_names;
                  g.argument_shards;
                  g.output_shards;
                }) {
    const MeshDecl* mesh = m.main_mesh();
    if (!mesh || !mc) return {};
    if (mesh->axes.size() > 2)
      return fail(ErrorCode::unimplemented, mc->loc.str(), ": unimplemented: mesh @", mesh->name,
                  " has ", mesh->axes.size(), " axes (a graph mesh has at most two)");
    g.mesh.rows = mesh->axes.empty() ? 1 : static_cast<int>(mesh->axes[0].second);
    g.mesh.cols = mesh->axes.size() < 2 ? 1 : static_cast<int>(mesh->axes[1].second);
    g.mesh.axis_names.clear();
    for (const auto& a : mesh->axes) g.mesh.axis_names.push_back(a.first);
    g.argument_shards.clear();
    g.output_shards.clear();
    if (g.mesh.single_chip()) return {};
    auto shards = MESHPLAN_TRY(mesh_shards(m));
    for (const MeshShard& b : shards) {
      const TensorSharding& s =
          b.to_device ? mc->in_shardings[b.index] : mc->out_shardings[b.index];
      std::string what = str(b.to_device ? "input " : "result ", b.index);
      auto spec = MESHPLAN_TRY(shard_spec(*mesh, s, b.type == "identity", *mc, what));
      (b.to_device ? g.argument_shards : g.output_shards).push_back(spec);
    }
    // Constants the lowering added live on every chip as they are.
    device::MeshShardSpec replicated;
    while (g.argument_shards.size() < g.arguments.size()) g.argument_shards.push_back(replicated);
    if (g.argument_shards.size() != g.arguments.size() || program_args > g.arguments.size() ||
        g.output_shards.size() != g.outputs.size())
      return fail(ErrorCode::internal, mc->loc.str(),
                  ": the manual computation's boundary does not match the lowered graph");
  } else {
    (void)g, (void)m, (void)mc, (void)program_args;
  }
  return {};
}

}  // namespace

Status lower_boundary(Graph& g, const Module& m, const Op* manual, size_t program_args) {
  return set_boundary(g, m, manual, program_args);
}

}  // namespace meshplan::planner::shlo::lowering
