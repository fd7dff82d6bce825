// A user's sdy.manual_computation on a mesh: the entry's shape (the manual computation alone
// between the arguments and the return), and the SPMD lowering of a partial one's body over its
// free axes, so that the module becomes a per-device program over every mesh axis.
//
// A partial manual computation's body is a global program along its free axes. It is lowered
// as its own module: the body becomes the entry function (arguments sharded by the free part of
// the in_shardings), propagation, explicit reshards, wrapping, collectives and local shapes run
// on it over the whole mesh (replica groups are then device ids of the whole mesh, grouped along
// free axes), and the lowered body replaces the original one, whose in/out shardings become the
// manual axes followed by the free axes the lowering chose. Collectives the body states run over
// the manual axes' groups; along the free axes they act per piece (a stated sharding rule).
#include <algorithm>
#include <set>

#include "mesh/sharding_manual.hpp"
#include "mesh/spmd_util.hpp"
#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

namespace {

constexpr std::string_view kRule = "sdy.sharding_rule";

bool is_written_collective(const Op& op) {
  return op.name == "stablehlo.all_gather" || op.name == "stablehlo.all_reduce" ||
         op.name == "stablehlo.reduce_scatter" || op.name == "stablehlo.all_to_all" ||
         op.name == "stablehlo.collective_permute";
}

std::string names_text(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "\"" : ", \"") + n + "\"";
  return "{" + s + "}";
}

/// Device `id`'s coordinate along each mesh axis (ids are row-major over the axes).
std::vector<int64_t> coords(const MeshDecl& mesh, int64_t id) {
  std::vector<int64_t> c(mesh.axes.size());
  for (size_t k = mesh.axes.size(); k-- > 0;) {
    c[k] = id % mesh.axes[k].second;
    id /= mesh.axes[k].second;
  }
  return c;
}

/// The first free axis along which devices `a` and `b` differ, or "" when none does.
std::string crossed_free_axis(const MeshDecl& mesh, const std::vector<std::string>& manual,
                              int64_t a, int64_t b) {
  auto ca = coords(mesh, a), cb = coords(mesh, b);
  for (size_t k = 0; k < mesh.axes.size(); ++k)
    if (ca[k] != cb[k] && std::ranges::find(manual, mesh.axes[k].first) == manual.end())
      return mesh.axes[k].first;
  return "";
}

/// Factor `i`'s name as Shardy writes them: a .. z, then z_1, z_2, ...
std::string factor(size_t i) {
  return i < 26 ? std::string(1, static_cast<char>('a' + i)) : str("z_", i - 25);
}

/// The sharding rule of a collective the body states, along the free axes: each operand's dims
/// pass through to its result, except the dims the collective gathers, scatters, splits or
/// concatenates (whole on every device: they need replication).
Result<std::string> collective_rule(const Module& m, const Op& op, const CollectiveInfo& c) {
  if (op.operands.size() != op.results.size())
    return fail(ErrorCode::unimplemented, op.loc.str(), ": unimplemented: ", op.name, " with ",
                op.operands.size(), " operands and ", op.results.size(),
                " results inside a partial sdy.manual_computation");
  std::string ins, outs, sizes, need;
  size_t next = 0;
  for (size_t k = 0; k < op.operands.size(); ++k) {
    const auto& in = m.values[op.operands[k]].type.shape;
    const auto& out = m.values[op.results[k]].type.shape;
    if (in.size() != out.size())
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                  " changes the rank of operand ", k);
    std::string a, b;
    for (size_t d = 0; d < in.size(); ++d) {
      const auto dd = static_cast<int64_t>(d);
      const bool moves = (c.kind == "all_gather" || c.kind == "reduce_scatter") ? dd == c.dim
                         : c.kind == "all_to_all" ? dd == c.dim || dd == c.concat_dim
                                                  : false;
      std::string fi = factor(next++);
      auto add_size = [&](const std::string& f, int64_t n) {
        sizes += str(sizes.empty() ? "" : ", ", f, "=", n);
      };
      a += str(d ? ", " : "", fi);
      add_size(fi, in[d]);
      if (!moves) {
        b += str(d ? ", " : "", fi);
        continue;
      }
      std::string fo = factor(next++);
      b += str(d ? ", " : "", fo);
      add_size(fo, out[d]);
      need += str(need.empty() ? "" : ", ", fi, ", ", fo);
    }
    ins += str(k ? ", " : "", "[", a, "]");
    outs += str(k ? ", " : "", "[", b, "]");
  }
  return str("#sdy.op_sharding_rule<(", ins, ")->(", outs, ") {", sizes, "}",
             need.empty() ? std::string() : str(" need_replication={", need, "}"), ">");
}

/// Checks a collective the body states against the manual axes (its groups or pairs stay within
/// devices that share every free coordinate) and gives it its rule along the free axes.
Status mark_collective(Module& m, Op& op, const MeshDecl& mesh,
                       const std::vector<std::string>& manual) {
  CollectiveInfo c = MESHPLAN_TRY(collective_info(m, op));
  std::vector<std::pair<int64_t, int64_t>> links = c.pairs;
  for (const auto& g : c.groups)
    for (size_t i = 1; i < g.size(); ++i) links.emplace_back(g[0], g[i]);
  for (const auto& [a, b] : links) {
    if (a < 0 || b < 0 || a >= mesh.devices() || b >= mesh.devices())
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name, " names device ",
                  std::max(a, b), ", outside the ", mesh.devices(), "-device mesh @", mesh.name);
    std::string axis = crossed_free_axis(mesh, manual, a, b);
    if (!axis.empty())
      return fail(ErrorCode::unimplemented, op.loc.str(), ": unimplemented: ", op.name,
                  " inside sdy.manual_computation with manual_axes=", names_text(manual),
                  " joins devices ", a, " and ", b, ", which differ along free axis \"", axis,
                  "\" of mesh @", mesh.name,
                  "; a collective written in the body runs over manual axes only");
  }
  Attr rule;
  rule.kind = Attr::Kind::opaque;
  rule.text = MESHPLAN_TRY(collective_rule(m, op, c));
  op.attrs.emplace_back(std::string(kRule), rule);
  return {};
}

/// The manual axes that lead dim `d` of `s`.
std::vector<AxisRef> manual_prefix(const TensorSharding& s, size_t d,
                                   const std::vector<std::string>& manual) {
  std::vector<AxisRef> out;
  if (d >= s.dims.size()) return out;
  for (const AxisRef& a : s.dims[d].axes) {
    if (std::ranges::find(manual, a.name) == manual.end()) break;
    out.push_back(a);
  }
  return out;
}

/// `stated`'s manual axes, then `free`'s axes, per dim.
TensorSharding merged(const TensorSharding& stated, const TensorSharding& free,
                      const std::vector<std::string>& manual) {
  TensorSharding out = stated;
  for (size_t d = 0; d < out.dims.size(); ++d) {
    std::vector<AxisRef> axes = manual_prefix(stated, d, manual);
    if (d < free.dims.size())
      axes.insert(axes.end(), free.dims[d].axes.begin(), free.dims[d].axes.end());
    out.dims[d].axes = std::move(axes);
    out.dims[d].open = false;
    out.dims[d].priority = -1;
  }
  out.replicated.clear();
  return out;
}

}  // namespace

Status check_manual_entry(const Module& m) {
  const Func* f = m.entry();
  if (!f) return {};
  OpId mc = kNone;
  for (OpId o : f->body.ops)
    if (m.ops[o].name == "sdy.manual_computation") mc = o;
  if (mc == kNone) return {};
  const Op& op = m.ops[mc];
  const Op& ret = m.ops[f->body.ops.back()];
  auto refuse = [&](const Location& loc, const std::string& what) -> Status {
    return fail(ErrorCode::unimplemented, loc.str(), ": unimplemented: ", what,
                " (on a mesh, the entry function @", f->name,
                " must be one sdy.manual_computation taking the arguments in order and returning "
                "its results in order)");
  };
  for (OpId o : f->body.ops)
    if (o != mc && o != f->body.ops.back())
      return refuse(m.ops[o].loc, str(m.ops[o].name, " outside the sdy.manual_computation"));
  std::vector<ValueId> args;
  for (const ArgInfo& a : f->args) args.push_back(a.value);
  if (op.operands != args)
    return refuse(op.loc, "a manual computation whose operands are not the function's arguments");
  if (ret.operands != op.results)
    return refuse(ret.loc, "a return of other values than the manual computation's results");
  return {};
}

Status lower_partial_manual(Module& m) {
  Func* f = m.entry();
  const MeshDecl* mesh = m.main_mesh();
  if (!f || !mesh) return {};
  OpId mc = kNone;
  for (OpId o : f->body.ops)
    if (m.ops[o].name == "sdy.manual_computation" && m.ops[o].regions.size() == 1) mc = o;
  if (mc == kNone) return {};
  MESHPLAN_TRY(check_manual_entry(m));
  const std::vector<std::string> manual = m.ops[mc].manual_axes;
  // manual_axes={}: the mesh pipeline's own wrapped form (pass 9), which the collectives and
  // local-shapes passes lower.
  if (manual.empty()) return {};
  std::vector<std::string> all, free;
  for (const auto& [name, size] : mesh->axes) {
    all.push_back(name);
    if (std::ranges::find(manual, name) == manual.end() && size > 1) free.push_back(name);
  }
  if (free.empty()) {  // Every axis that splits anything is manual: the body is per device.
    for (const std::string& a : all)  // size-1 axes: manual too, the stated order kept
      if (std::ranges::find(manual, a) == manual.end()) m.ops[mc].manual_axes.push_back(a);
    return {};
  }
  std::vector<TensorSharding> stated = m.ops[mc].in_shardings;
  stated.insert(stated.end(), m.ops[mc].out_shardings.begin(), m.ops[mc].out_shardings.end());
  for (const TensorSharding& s : stated)
    if (s.mesh != mesh->name)
      return fail(ErrorCode::unimplemented, m.ops[mc].loc.str(),
                  ": unimplemented: a partial sdy.manual_computation with shardings on mesh @",
                  s.mesh, " (only the module's first mesh @", mesh->name, " is lowered)");

  // The body as the entry function of a module of its own.
  Module sub = m;
  const Op original = m.ops[mc];
  const Block& body = original.regions[0];
  if (body.ops.empty() || sub.ops[body.ops.back()].name != "sdy.return")
    return fail(ErrorCode::invalid_argument, original.loc.str(),
                ": sdy.manual_computation: the body does not end with sdy.return");
  Func& sf = *sub.entry();
  sf.args.clear();
  for (size_t k = 0; k < body.args.size(); ++k) {
    sf.args.push_back(ArgInfo{body.args[k], {}});
    sub.values[body.args[k]].sharding = manual_local(original.in_shardings[k], manual);
  }
  const Op& sret = sub.ops[body.ops.back()];
  sf.results.clear();
  for (size_t k = 0; k < sret.operands.size(); ++k) {
    ResultInfo r;
    r.type = sub.values[sret.operands[k]].type;
    TensorSharding local = manual_local(original.out_shardings[k], manual);
    // A result whose free part is all open and empty is placed where propagation puts it.
    bool open = local.replicated.empty();
    for (const DimSharding& d : local.dims) open &= d.open && d.axes.empty();
    if (!open) r.sharding = local;
    sf.results.push_back(std::move(r));
  }
  OpId ret = sub.add_op("func.return", sub.ops[body.ops.back()].operands, {},
                        sub.ops[body.ops.back()].loc);
  sf.body.ops.assign(body.ops.begin(), body.ops.end() - 1);
  sf.body.ops.push_back(ret);
  for (OpId o : sf.body.ops)
    if (is_written_collective(sub.ops[o]))
      MESHPLAN_TRY(mark_collective(sub, sub.ops[o], *mesh, manual));

  MESHPLAN_TRY(propagate(sub));
  MESHPLAN_TRY(constraints_to_reshards(sub));
  MESHPLAN_TRY(insert_explicit_reshards(sub));
  MESHPLAN_TRY(wrap_under_manual_computation(sub));
  MESHPLAN_TRY(reshards_to_collectives(sub));
  MESHPLAN_TRY(global_to_local_shapes(sub));

  const Func& lowered = *sub.entry();
  OpId inner = lowered.body.ops.front();
  if (lowered.body.ops.size() != 2 || sub.ops[inner].name != "sdy.manual_computation")
    return fail(ErrorCode::internal, original.loc.str(),
                ": the partial manual computation's body did not lower to one manual computation");
  const Op lowered_mc = sub.ops[inner];
  for (OpId o : lowered_mc.regions[0].ops)
    std::erase_if(sub.ops[o].attrs, [](const NamedAttr& a) { return a.first == kRule; });
  const Func outer = *f;
  m = std::move(sub);
  *m.entry() = outer;
  Op& op = m.ops[mc];
  op.regions[0] = lowered_mc.regions[0];
  for (size_t k = 0; k < op.in_shardings.size() && k < lowered_mc.in_shardings.size(); ++k)
    op.in_shardings[k] = merged(original.in_shardings[k], lowered_mc.in_shardings[k], manual);
  for (size_t k = 0; k < op.out_shardings.size() && k < lowered_mc.out_shardings.size(); ++k)
    op.out_shardings[k] = merged(original.out_shardings[k], lowered_mc.out_shardings[k], manual);
  op.manual_axes = all;
  return {};
}

}  // namespace meshplan::planner::shlo
