// Checks every sharding a module states against its mesh before the mesh pipeline uses it, as
// Shardy's verifier does: the mesh exists, every axis (or sub-axis) is one of the mesh's, no axis
// is used twice in one sharding, the rank matches; and, where Shardy would pad, each dim divides
// by its axes (meshplan's shards are never padded).
#include "meshplan/planner/sharding.hpp"

namespace meshplan::planner::shlo {

namespace {

std::string axis_text(const AxisRef& a) {
  if (a.size == 0) return "\"" + a.name + "\"";
  return str("\"", a.name, "\":(", a.pre_size, ")", a.size);
}

std::string mesh_text(const MeshDecl& mesh) {
  std::string s = "@" + mesh.name + " = <[";
  for (size_t i = 0; i < mesh.axes.size(); ++i)
    s += str(i ? ", " : "", "\"", mesh.axes[i].first, "\"=", mesh.axes[i].second);
  return s + "]>";
}

}  // namespace

Status check_sharding(const Module& m, const TensorSharding& s, const TensorType& type,
                      const std::string& what, const Location& loc, bool require_divisible) {
  auto where = [&] { return str(loc.str(), ": ", what, " ", sharding_string(s)); };
  const MeshDecl* mesh = m.mesh(s.mesh);
  if (!mesh)
    return fail(ErrorCode::invalid_argument, where(), " names mesh @", s.mesh,
                ", which the module does not declare");
  // A maximal mesh (one device, no axes) places the whole tensor on that device: `[]`.
  if (mesh->axes.empty() && mesh->device_ids.size() == 1 && s.dims.empty() &&
      s.replicated.empty() && s.unreduced.empty())
    return {};
  if (s.dims.size() != type.shape.size())
    return fail(ErrorCode::invalid_argument, where(), " has ", s.dims.size(), " dims for a rank-",
                type.shape.size(), " tensor");
  AxisMath math{*mesh};
  std::vector<AxisRef> seen;
  auto use = [&](const AxisRef& a) -> Status {
    int64_t full = mesh->axis_size(a.name);
    if (full == 0)
      return fail(ErrorCode::invalid_argument, where(), ": axis \"", a.name,
                  "\" is not an axis of mesh ", mesh_text(*mesh));
    if (a.size != 0 && (a.pre_size < 1 || a.size < 1 || full % (a.pre_size * a.size) != 0))
      return fail(ErrorCode::invalid_argument, where(), ": sub-axis ", axis_text(a),
                  " does not divide axis \"", a.name, "\"=", full, " of mesh ", mesh_text(*mesh));
    for (const AxisRef& u : seen)
      if (math.overlaps(u, a))
        return fail(ErrorCode::invalid_argument, where(), ": axis ", axis_text(a),
                    " is used twice (mesh ", mesh_text(*mesh), ")");
    seen.push_back(a);
    return {};
  };
  for (size_t d = 0; d < s.dims.size(); ++d) {
    for (const AxisRef& a : s.dims[d].axes) MESHPLAN_TRY(use(a));
    int64_t split = math.product(s.dims[d].axes);
    if (require_divisible && split > 1 && type.shape[d] % split != 0)
      return fail(ErrorCode::invalid_argument, where(), ": dim ", d, " of size ", type.shape[d],
                  " is not divisible by the ", split, " devices of its axes on mesh ",
                  mesh_text(*mesh), " (meshplan does not pad shards)");
  }
  for (const AxisRef& a : s.replicated) MESHPLAN_TRY(use(a));
  for (const AxisRef& a : s.unreduced) MESHPLAN_TRY(use(a));
  // Partial values are summed by the pipeline's collectives: max/min partials would come out
  // as sums, a wrong program.
  if (require_divisible && !s.unreduced.empty() && !s.unreduced_kind.empty())
    return fail(ErrorCode::unimplemented, where(), ": unreduced=", s.unreduced_kind,
                "{...}: the mesh pipeline combines partial values by sums only");
  return {};
}

namespace {

Status check_block(const Module& m, const Block& block) {
  for (OpId o : block.ops) {
    const Op& op = m.ops[o];
    if (op.name == "sdy.all_reduce" && op.prop("reduction"))
      return fail(ErrorCode::unimplemented, op.loc.str(), ": sdy.all_reduce ",
                  op.prop("reduction")->text, ": the mesh pipeline reduces by sums only");
    for (size_t k = 0; k < op.shardings.size() && k < op.results.size(); ++k)
      MESHPLAN_TRY(check_sharding(m, op.shardings[k], m.values[op.results[k]].type,
                                  str(op.name, " result ", k), op.loc, true));
    if (op.sharding && !op.results.empty())
      MESHPLAN_TRY(
          check_sharding(m, *op.sharding, m.values[op.results[0]].type, op.name, op.loc, true));
    for (size_t k = 0; k < op.in_shardings.size() && k < op.operands.size(); ++k)
      MESHPLAN_TRY(check_sharding(m, op.in_shardings[k], m.values[op.operands[k]].type,
                                  str(op.name, " in_sharding ", k), op.loc, true));
    for (size_t k = 0; k < op.out_shardings.size() && k < op.results.size(); ++k)
      MESHPLAN_TRY(check_sharding(m, op.out_shardings[k], m.values[op.results[k]].type,
                                  str(op.name, " out_sharding ", k), op.loc, true));
    for (const Block& r : op.regions) MESHPLAN_TRY(check_block(m, r));
  }
  return {};
}

}  // namespace

Status verify_shardings(const Module& m) {
  for (const Func& f : m.funcs) {
    for (size_t i = 0; i < f.args.size(); ++i)
      if (const auto& s = m.values[f.args[i].value].sharding)
        MESHPLAN_TRY(check_sharding(m, *s, m.values[f.args[i].value].type,
                                    str("argument %arg", i, " of @", f.name), f.loc, true));
    for (size_t i = 0; i < f.results.size(); ++i)
      if (const auto& s = f.results[i].sharding)
        MESHPLAN_TRY(check_sharding(m, *s, f.results[i].type, str("result ", i, " of @", f.name),
                                    f.loc, true));
    MESHPLAN_TRY(check_block(m, f.body));
  }
  return {};
}

}  // namespace meshplan::planner::shlo
