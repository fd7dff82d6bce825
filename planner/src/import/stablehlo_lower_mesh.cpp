// Lowering of the per-device program's collectives to the graph IR's collective ops
// (MESH-SPEC section 1): replica groups become a cluster_axis (0: the chips of one column,
// 1: the chips of one row, -1: the whole mesh in chip-index order); collective_broadcast becomes
// an all_gather and the slice of the source's block.
#include <algorithm>
#include <tuple>

#include "import/stablehlo_lower_internal.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/collective_rules.hpp"
#include "meshplan/device/mesh_shard.hpp"
#include "meshplan/planner/mesh_mapping.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

/// The physical cluster_axis whose groups are `groups` (logical device ids) under the mesh's
/// mapping (mesh_mapping), trying 0, 1, then -1; nullopt when none is.
Result<std::optional<int64_t>> cluster_axis(const Module& m, const MeshDecl& mesh,
                                            const std::vector<std::vector<int64_t>>& groups) {
  MeshMapping map = MESHPLAN_TRY(mesh_mapping(m));
  auto axis = physical_cluster_axis(mesh, map, groups);
  if (!axis) return std::optional<int64_t>{};
  return std::optional<int64_t>{*axis};
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

/// The collective `kind` of `x` bound to `op`'s result, in x's graph dtype: i1 masks travel as
/// the values they are held in.
Status emit_collective(Lowering& l, const Op& op, OpKind kind, GValue x,
                       std::vector<Attribute> attrs) {
  GValue r = MESHPLAN_TRY(
      l.emit(kind, {x}, std::move(attrs), l.type(op.results[0]).shape, l.graph().values[x].dtype));
  l.bind(op.results[0], r);
  return {};
}

}  // namespace

namespace {

/// collective_broadcast: every process of a group receives the operand of the group's first
/// process. On a mesh whose groups are those of one cluster_axis it is an all_gather over that
/// axis (along dim 0) and the slice of the source's block, which must sit at the same position
/// of every physical group; groups of one process keep their own operand.
Status lower_collective_broadcast(Lowering& l, const Op& op) {
  const Module& m = l.module();
  const Attr* g = op.prop("replica_groups");
  if (!g || g->kind != Attr::Kind::dense || g->type.shape.size() != 2 || op.operands.size() != 1 ||
      op.results.size() != 1)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.collective_broadcast needs one operand and 2-D replica_groups");
  if (l.type(op.operands[0]) != l.type(op.results[0]))
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.collective_broadcast's result type ",
                type_string(l.type(op.results[0])), " differs from its operand's ",
                type_string(l.type(op.operands[0])));
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  if (g->type.shape[1] <= 1) {  // Each process is its own group's first: the identity.
    l.bind(op.results[0], x);
    return {};
  }
  const MeshDecl* mesh = m.main_mesh();
  if (!mesh)
    return l.unimplemented(op,
                           "stablehlo.collective_broadcast over groups of more than one "
                           "process in a module without an sdy.mesh");
  CollectiveInfo c = MESHPLAN_TRY(collective_info(m, op));
  // Only the first process of a group is special: the groups as sets of chips must be those
  // of one cluster_axis.
  MeshMapping map = MESHPLAN_TRY(mesh_mapping(m));
  std::vector<std::vector<int64_t>> by_chip = c.groups;
  for (auto& group : by_chip) {
    for (int64_t d : group)
      if (d < 0 || d >= mesh->devices())
        return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                    ": replica groups name device ", d, ", outside the ", mesh->devices(),
                    "-device mesh");
    std::ranges::sort(group, {}, [&](int64_t d) { return map.chip(*mesh, d); });
  }
  auto ca = MESHPLAN_TRY(cluster_axis(m, *mesh, by_chip));
  if (!ca)
    return l.unimplemented(op, str(op.name, " with replica groups ", groups_text(c.groups),
                                   " that are neither one mesh axis nor the whole mesh"));
  // The source's position in its physical group (chip-index order along the axis).
  const auto physical = device::collective_groups(
      static_cast<int>(map.rows), static_cast<int>(map.cols), static_cast<int>(*ca));
  std::optional<int64_t> position;
  for (const auto& group : c.groups) {
    const int64_t chip = map.chip(*mesh, group.front());
    for (const auto& p : physical) {
      auto it = std::find(p.begin(), p.end(), static_cast<int>(chip));
      if (it == p.end()) continue;
      const int64_t at = it - p.begin();
      if (position && *position != at)
        return l.unimplemented(op, str(op.name, " with replica groups ", groups_text(c.groups),
                                       " whose first processes sit at different positions of "
                                       "their mesh groups"));
      position = at;
    }
  }
  if (!position)
    return fail(ErrorCode::internal, op.loc.str(), ": ", op.name, ": no source chip found");
  const DType dt = l.graph().values[x].dtype;
  const std::vector<int64_t> shape = l.graph().values[x].shape;
  // tt-metal gathers tensors of rank 2 or more (device::collective_launch_rule): a scalar or
  // rank-1 operand travels as one row.
  std::vector<int64_t> rows = shape;
  if (shape.size() < 2) {
    rows = {1, shape.empty() ? 1 : shape[0]};
    x = MESHPLAN_TRY(l.reshape(x, rows));
  }
  const int64_t n = static_cast<int64_t>(physical.front().size());
  std::vector<int64_t> gathered = rows;
  gathered[0] *= n;
  OpKind gather = MESHPLAN_TRY(graph_op(l, op, "all_gather"));
  GValue all =
      MESHPLAN_TRY(l.emit(gather, {x}, {{"dim", int64_t{0}}, {"cluster_axis", *ca}}, gathered, dt));
  std::vector<int64_t> begins(rows.size(), 0), ends = rows, steps(rows.size(), 1);
  begins[0] = *position * rows[0];
  ends[0] = begins[0] + rows[0];
  GValue r = MESHPLAN_TRY(l.emit(OpKind::slice, {all},
                                 {{"begins", begins}, {"ends", ends}, {"steps", steps}}, rows, dt));
  if (shape.size() < 2) r = MESHPLAN_TRY(l.reshape(r, shape));
  l.bind(op.results[0], r);
  return {};
}

/// An all_reduce of `x` over cluster_axis `ca` (`config` its launch config) as the sequence
/// tt-metal takes (device::collective_launch_rule: rank 2 or more, by sum only), x's shape kept.
/// A sum of a lower rank reduces the [1, N] reshape ([1, 1] for a scalar) and reshapes back. A
/// max or min gathers every chip's operand along a new leading unit dim (an all_gather, rank 2 or
/// more) and reduces that dim locally (reduce_max / reduce_min), exact: the max or min of the
/// same values. When even that sequence is refused the direct op is kept, which the planner then
/// refuses with the rule's text.
Result<GValue> emit_all_reduce(Lowering& l, GValue x, int64_t ca, const std::string& reduction,
                               device::OpConfig config) {
  const DType dt = l.graph().values[x].dtype;
  const std::vector<int64_t> shape = l.graph().values[x].shape;
  auto reduce = device::reduce_from_name(reduction);
  if (reduce) config.reduce = *reduce;
  auto direct = [&]() {
    return l.emit(OpKind::all_reduce, {x}, {{"cluster_axis", ca}, {"reduce", reduction}}, shape,
                  dt);
  };
  if (device::collective_launch_rule(OpKind::all_reduce, "", shape, config).empty())
    return direct();
  int64_t volume = 1;
  for (int64_t d : shape) volume *= d;
  if (config.reduce == device::ReduceOp::sum) {
    const std::vector<int64_t> row = {1, volume};
    if (!device::collective_launch_rule(OpKind::all_reduce, "", row, config).empty())
      return direct();
    GValue r = MESHPLAN_TRY(l.reshape(x, row));
    r = MESHPLAN_TRY(
        l.emit(OpKind::all_reduce, {r}, {{"cluster_axis", ca}, {"reduce", reduction}}, row, dt));
    return l.reshape(r, shape);
  }
  // The operand under a new leading unit dim: [1, s...], or [1, 1] for a scalar.
  std::vector<int64_t> unit = {1};
  if (shape.empty())
    unit.push_back(1);
  else
    unit.insert(unit.end(), shape.begin(), shape.end());
  config.collective_dim = 0;
  if (!device::collective_launch_rule(OpKind::all_gather, "", unit, config).empty())
    return direct();
  std::vector<int64_t> gathered = unit;
  gathered[0] = device::collective_group_size(config);
  std::vector<int64_t> kept(unit.begin() + 1, unit.end());
  GValue r = MESHPLAN_TRY(l.reshape(x, unit));
  r = MESHPLAN_TRY(
      l.emit(OpKind::all_gather, {r}, {{"dim", int64_t{0}}, {"cluster_axis", ca}}, gathered, dt));
  r = MESHPLAN_TRY(
      l.emit(config.reduce == device::ReduceOp::max ? OpKind::reduce_max : OpKind::reduce_min, {r},
             {{"dims", std::vector<int64_t>{0}}}, kept, dt));
  return l.reshape(r, shape);
}

/// An all_gather or reduce_scatter whose direct launch tt-metal refuses
/// (device::collective_launch_rule) as the equivalent sequence it takes: a rank-1 all_gather
/// gathers the [1, N] reshape along dim 1; a reduce_scatter is an all_reduce and the all_slice
/// of each chip's block (no scatter dim rule applies to either; communication() counts the
/// all_reduce's bytes). Anything else keeps the direct
/// op, which the planner then refuses with the rule's text.
Status lower_refused_collective(Lowering& l, const Op& op, const CollectiveInfo& c, int64_t ca,
                                GValue x, device::OpConfig config) {
  const DType dt = l.graph().values[x].dtype;
  const std::vector<int64_t>& in = l.type(op.operands[0]).shape;
  const std::vector<int64_t>& out = l.type(op.results[0]).shape;
  if (c.kind == "all_gather" && in.size() == 1) {
    config.collective_dim = 1;
    const std::vector<int64_t> row = {1, in[0]};
    if (device::collective_launch_rule(OpKind::all_gather, "", row, config).empty()) {
      GValue r = MESHPLAN_TRY(l.reshape(x, row));
      r = MESHPLAN_TRY(l.emit(OpKind::all_gather, {r}, {{"dim", int64_t{1}}, {"cluster_axis", ca}},
                              {1, out[0]}, dt));
      l.bind(op.results[0], MESHPLAN_TRY(l.reshape(r, out)));
      return {};
    }
  }
  if (c.kind == "reduce_scatter") {
    GValue r = MESHPLAN_TRY(emit_all_reduce(l, x, ca, c.reduction, config));
    r = MESHPLAN_TRY(
        l.emit(OpKind::all_slice, {r}, {{"dim", c.dim}, {"cluster_axis", ca}}, out, dt));
    l.bind(op.results[0], r);
    return {};
  }
  std::vector<Attribute> attrs = {{"cluster_axis", ca}, {"dim", c.dim}};
  OpKind kind = MESHPLAN_TRY(graph_op(l, op, c.kind));
  return emit_collective(l, op, kind, x, std::move(attrs));
}

/// An all_to_all whose direct launch tt-metal refuses (device::collective_launch_rule: the split
/// dim divisible by the group, the last dim in whole tiles, the second-last in half tiles) as the
/// exact equivalent it takes: every chip gathers the whole operand along the concat dim (an
/// all_gather) and keeps its block of the split dim (an all_slice, a local slice). Chip j then
/// holds block j of every chip's operand in chip order, which is what the all_to_all sends it.
/// When split and concat are one dim d, d is first viewed as [n, size / n] and the gather runs
/// along the second, the slice along the first. Each chip receives n - 1 whole operands instead
/// of n - 1 blocks: n times an all_to_all's bytes (communication() counts that). When even the
/// all_gather is refused the direct op is kept, which the planner then refuses with the rule's
/// text.
Status lower_refused_all_to_all(Lowering& l, const Op& op, const CollectiveInfo& c, int64_t ca,
                                GValue x, device::OpConfig config) {
  const DType dt = l.graph().values[x].dtype;
  const std::vector<int64_t> in = l.type(op.operands[0]).shape;
  const std::vector<int64_t> out = l.type(op.results[0]).shape;
  const int64_t n = device::collective_group_size(config);
  const int64_t split = c.dim, concat = c.concat_dim;
  std::vector<int64_t> work = in;
  int64_t gather_dim = concat, slice_dim = split;
  if (split == concat && n > 0) {
    work[static_cast<size_t>(split)] = n;
    work.insert(work.begin() + split + 1, in[static_cast<size_t>(split)] / n);
    gather_dim = split + 1;
  }
  config.collective_dim = static_cast<decltype(config.collective_dim)>(gather_dim);
  if (n > 1 && device::collective_launch_rule(OpKind::all_gather, "", work, config).empty()) {
    std::vector<int64_t> gathered = work;
    gathered[static_cast<size_t>(gather_dim)] *= n;
    std::vector<int64_t> kept = gathered;
    kept[static_cast<size_t>(slice_dim)] /= n;
    GValue r = work == in ? x : MESHPLAN_TRY(l.reshape(x, work));
    r = MESHPLAN_TRY(
        l.emit(OpKind::all_gather, {r}, {{"dim", gather_dim}, {"cluster_axis", ca}}, gathered, dt));
    r = MESHPLAN_TRY(
        l.emit(OpKind::all_slice, {r}, {{"dim", slice_dim}, {"cluster_axis", ca}}, kept, dt));
    if (kept != out) r = MESHPLAN_TRY(l.reshape(r, out));
    l.bind(op.results[0], r);
    return {};
  }
  std::vector<Attribute> attrs = {
      {"cluster_axis", ca}, {"split_dim", c.dim}, {"concat_dim", c.concat_dim}};
  OpKind kind = MESHPLAN_TRY(graph_op(l, op, c.kind));
  return emit_collective(l, op, kind, x, std::move(attrs));
}

/// A collective_permute some of whose pairs send a chip to itself, which tt-metal refuses: the
/// other pairs move (`moving`, flat chip pairs; a chip no pair targets gets zeros), and each chip
/// of `self` keeps its operand, picked by a mask that holds 1 at those chips: a constant with one
/// row per chip of the mesh (chip-index order), of which every chip keeps its own row (an
/// all_slice over the whole mesh, a local slice).
Status lower_permute_with_copies(Lowering& l, const Op& op, GValue x,
                                 const std::vector<int64_t>& moving,
                                 const std::vector<int64_t>& self, int64_t chips) {
  const DType dt = l.graph().values[x].dtype;
  const std::vector<int64_t> shape = l.graph().values[x].shape;
  // A scalar travels as one element.
  const std::vector<int64_t> work = shape.empty() ? std::vector<int64_t>{1} : shape;
  x = MESHPLAN_TRY(l.reshape(x, work));
  std::vector<int64_t> ones(work.size(), 1), rows = ones;
  rows[0] = chips;
  Folded mask{rows, std::vector<float>(static_cast<size_t>(chips), 0.0f)};
  for (int64_t chip : self) mask.data[static_cast<size_t>(chip)] = 1.0f;
  GValue keep = MESHPLAN_TRY(l.constant(mask, dt));
  OpKind slice = MESHPLAN_TRY(graph_op(l, op, "all_slice"));
  keep = MESHPLAN_TRY(
      l.emit(slice, {keep}, {{"dim", int64_t{0}}, {"cluster_axis", int64_t{-1}}}, ones, dt));
  GValue other;
  if (moving.empty()) {
    other = MESHPLAN_TRY(l.constant(Folded{ones, {0.0f}}, dt));
  } else {
    OpKind permute = MESHPLAN_TRY(graph_op(l, op, "collective_permute"));
    other = MESHPLAN_TRY(l.emit(permute, {x}, {{"pairs", moving}}, work, dt));
  }
  GValue r = MESHPLAN_TRY(l.emit(OpKind::where, {keep, x, other}, {}, work, dt));
  l.bind(op.results[0], MESHPLAN_TRY(l.reshape(r, shape)));
  return {};
}

}  // namespace

Status lower_collective(Lowering& l, const Op& op) {
  if (op.name == "stablehlo.collective_broadcast") return lower_collective_broadcast(l, op);
  const Module& m = l.module();
  const MeshDecl* mesh = m.main_mesh();
  if (!mesh) return l.unimplemented(op, str(op.name, " in a module without an sdy.mesh"));
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  if (op.name == "sdy.all_slice") {
    // One all_slice per sliced dim; its axes must make one whole mesh axis or the whole mesh.
    AxisMath math{*mesh};
    OpKind kind = MESHPLAN_TRY(graph_op(l, op, "all_slice"));
    std::vector<int64_t> shape = l.graph().values[x].shape;
    DType dt = l.graph().values[x].dtype;
    if (op.dim_axes.size() > shape.size())
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": sdy.all_slice names ",
                  op.dim_axes.size(), " dims of a rank-", shape.size(), " tensor");
    for (size_t d = 0; d < op.dim_axes.size(); ++d) {
      auto axes = math.without_trivial(op.dim_axes[d]);
      if (axes.empty()) continue;
      auto groups = replica_groups(*mesh, axes);
      auto ca = MESHPLAN_TRY(cluster_axis(m, *mesh, groups));
      if (!ca)
        return l.unimplemented(op,
                               str("sdy.all_slice of dim ", d, " with groups ", groups_text(groups),
                                   " that are neither one mesh axis nor the whole mesh"));
      shape[d] /= math.product(axes);
      x = MESHPLAN_TRY(
          l.emit(kind, {x}, {{"dim", static_cast<int64_t>(d)}, {"cluster_axis", *ca}}, shape, dt));
    }
    l.bind(op.results[0], x);
    return {};
  }
  if (op.name == "stablehlo.collective_permute") {
    const Attr* pairs = op.prop("source_target_pairs");
    if (!pairs || pairs->kind != Attr::Kind::dense || !pairs->text.empty())
      return l.unimplemented(op, "stablehlo.collective_permute without source_target_pairs");
    // Logical device ids -> the chips the mapping puts them on.
    MeshMapping map = MESHPLAN_TRY(mesh_mapping(m));
    CollectiveInfo c = MESHPLAN_TRY(collective_info(m, op));
    // tt-metal's point_to_point refuses a chip sending to itself (device::collective_launch_rule):
    // such a pair is a local copy, kept apart from the pairs that move.
    std::vector<int64_t> flat, self;
    for (const auto& [from, to] : c.pairs) {
      const int64_t a = map.chip(*mesh, from), b = map.chip(*mesh, to);
      if (a == b) {
        self.push_back(a);
        continue;
      }
      flat.push_back(a);
      flat.push_back(b);
    }
    OpKind kind = MESHPLAN_TRY(graph_op(l, op, "collective_permute"));
    if (self.empty()) return emit_collective(l, op, kind, x, {{"pairs", flat}});
    const int64_t chips = static_cast<int64_t>(map.rows * map.cols);
    if (static_cast<int64_t>(self.size()) == chips) {  // Every chip keeps its own operand.
      l.bind(op.results[0], x);
      return {};
    }
    return lower_permute_with_copies(l, op, x, flat, self, chips);
  }
  CollectiveInfo c = MESHPLAN_TRY(collective_info(m, op));
  if (!c.groups.empty() && c.groups[0].size() == 1 &&
      l.type(op.operands[0]) == l.type(op.results[0])) {  // A group of one chip moves nothing.
    l.bind(op.results[0], x);
    return {};
  }
  auto ca = MESHPLAN_TRY(cluster_axis(m, *mesh, c.groups));
  if (!ca)
    return l.unimplemented(op, str(op.name, " with replica groups ", groups_text(c.groups),
                                   " that are neither one mesh axis nor the whole mesh"));
  // The declared types must be what the collective does on groups of this size.
  const auto& in = l.type(op.operands[0]).shape;
  const auto& out = l.type(op.results[0]).shape;
  const int64_t n = static_cast<int64_t>(c.groups.empty() ? 1 : c.groups[0].size());
  std::vector<int64_t> want = in;
  auto at = [&](int64_t d) -> int64_t* {
    return d >= 0 && d < static_cast<int64_t>(want.size()) ? &want[static_cast<size_t>(d)]
                                                           : nullptr;
  };
  if (c.kind == "all_gather" && at(c.dim)) *at(c.dim) *= n;
  if (c.kind == "reduce_scatter" && at(c.dim)) *at(c.dim) /= n;
  if (c.kind == "all_to_all" && at(c.dim) && at(c.concat_dim)) {
    *at(c.dim) /= n;
    *at(c.concat_dim) *= n;
  }
  if (want != out)
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name, " on groups of ", n,
                " chips turns ", type_string(l.type(op.operands[0])), " into ", shape_string(want),
                ", but its result is declared ", type_string(l.type(op.results[0])));
  std::vector<Attribute> attrs = {{"cluster_axis", *ca}};
  if (c.kind == "all_gather" || c.kind == "reduce_scatter") attrs.push_back({"dim", c.dim});
  if (c.kind == "all_reduce" || c.kind == "reduce_scatter")
    attrs.push_back({"reduce", c.reduction});
  if (c.kind == "all_to_all") {
    attrs.push_back({"split_dim", c.dim});
    attrs.push_back({"concat_dim", c.concat_dim});
  }
  OpKind kind = MESHPLAN_TRY(graph_op(l, op, c.kind));
  if (c.kind == "all_gather" || c.kind == "reduce_scatter" || c.kind == "all_reduce") {
    auto config = MESHPLAN_TRY(collective_launch_config(m, c));
    if (config && c.kind == "all_reduce") {
      l.bind(op.results[0], MESHPLAN_TRY(emit_all_reduce(l, x, *ca, c.reduction, *config)));
      return {};
    }
    if (config && !device::collective_launch_rule(kind, "", in, *config).empty())
      return lower_refused_collective(l, op, c, *ca, x, *config);
  }
  if (c.kind == "all_to_all") {
    auto config = MESHPLAN_TRY(collective_launch_config(m, c));
    if (config && !device::collective_launch_rule(kind, "", in, *config).empty())
      return lower_refused_all_to_all(l, op, c, *ca, x, *config);
  }
  MESHPLAN_TRY(emit_collective(l, op, kind, x, std::move(attrs)));
  return {};
}

namespace {

/// The device::MeshShardSpec of one boundary tensor: `identity` for pre-sharded inputs,
/// `replicate` when no dim is split, else `devices` with the dim each mesh axis splits. A dim
/// split over both axes minor-first (axis 1 major, as the automatic batch sharding does) is
/// returned as `devices` on that dim with *minor_first set: the caller decides whether the
/// program may be relabelled. A dim split over a sub-axis has no MeshShardSpec.
Result<device::MeshShardSpec> shard_spec(const MeshDecl& mesh, const MeshMapping& map,
                                         const TensorSharding& s, bool identity, bool* minor_first,
                                         const Op& mc, std::string_view what) {
  device::MeshShardSpec spec;
  if (identity) {
    spec.type = device::MeshShardType::identity;
    return spec;
  }
  auto dims = physical_shard_dims(mesh, map, s, minor_first, what);
  if (!dims) return fail(dims.error().code, mc.loc.str(), ": ", dims.error().message);
  spec.shard_dims = *dims;
  bool split = spec.shard_dims[0] >= 0 || spec.shard_dims[1] >= 0;
  spec.type = split ? device::MeshShardType::devices : device::MeshShardType::replicate;
  return spec;
}

}  // namespace

Status lower_boundary(Graph& g, const Module& m, const Op* mc, size_t program_args) {
  const MeshDecl* mesh = m.main_mesh();
  if (!mesh || !mc) return {};
  const MeshMapping map = MESHPLAN_TRY(mesh_mapping(m));
  g.mesh.rows = static_cast<int>(map.rows);
  g.mesh.cols = static_cast<int>(map.cols);
  g.mesh.axis_names.clear();
  const bool plain = mesh->axes.size() <= 2 && (map.dims[0].empty() || map.dims[0][0] == 0) &&
                     (map.dims[1].empty() || map.dims[1][0] == 1);
  if (plain) {
    for (const auto& a : mesh->axes) g.mesh.axis_names.push_back(a.first);
  } else {
    // One name per physical dim: its logical axes, major first ("data=2*fsdp=2").
    for (const auto& dim : map.dims) {
      std::string name;
      for (size_t i = 0; i < dim.size(); ++i)
        name += dim.size() == 1
                    ? mesh->axes[dim[i]].first
                    : str(i ? "*" : "", mesh->axes[dim[i]].first, "=", mesh->axes[dim[i]].second);
      g.mesh.axis_names.push_back(name);
    }
  }
  g.argument_shards.clear();
  g.output_shards.clear();
  if (g.mesh.single_chip()) return {};
  auto shards = MESHPLAN_TRY(mesh_shards(m));
  bool any_minor_first = false;
  std::string first_minor;
  for (const MeshShard& b : shards) {
    // A zero-size input is no plan input (the lowering folds it): it has no shard.
    const auto& in_shape =
        b.to_device ? m.values[mc->operands[b.index]].type.shape : std::vector<int64_t>{1};
    if (std::ranges::find(in_shape, 0) != in_shape.end()) continue;
    const TensorSharding& s = b.to_device ? mc->in_shardings[b.index] : mc->out_shardings[b.index];
    std::string what = str(b.to_device ? "input " : "result ", b.index);
    bool minor_first = false;
    auto spec =
        MESHPLAN_TRY(shard_spec(*mesh, map, s, b.type == "identity", &minor_first, *mc, what));
    if (minor_first && !any_minor_first) first_minor = str(what, " <", sharding_string(s), ">");
    any_minor_first |= minor_first;
    (b.to_device ? g.argument_shards : g.output_shards).push_back(spec);
  }
  if (any_minor_first) {
    // mesh_shard cuts a dim split over both axes axis-0-major. A program whose chips never talk
    // and whose every boundary tensor is replicated or split over both axes on one dim computes
    // the same result under any consistent renumbering of the pieces, so the axis-0-major
    // numbering is exact for it; anything else is not.
    bool relabel = std::none_of(g.ops.begin(), g.ops.end(), [](const planner::Op& op) {
      return device::is_collective(op.kind);
    });
    for (const auto* list : {&g.argument_shards, &g.output_shards})
      for (const device::MeshShardSpec& s : *list)
        relabel &= s.type == device::MeshShardType::replicate ||
                   (s.type == device::MeshShardType::devices && s.shard_dims[0] == s.shard_dims[1]);
    if (!relabel)
      return fail(ErrorCode::unimplemented, mc->loc.str(), ": unimplemented: ", first_minor,
                  " splits a dim over both mesh axes minor-first, which no mesh_shard expresses "
                  "in a program with collectives or other shardings");
  }
  // Constants the lowering added live on every chip as they are.
  while (g.argument_shards.size() < g.arguments.size())
    g.argument_shards.push_back(device::MeshShardSpec{});
  if (g.argument_shards.size() != g.arguments.size() || program_args > g.arguments.size() ||
      g.output_shards.size() != g.outputs.size())
    return fail(ErrorCode::internal, mc->loc.str(),
                ": the manual computation's boundary does not match the lowered graph");
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
