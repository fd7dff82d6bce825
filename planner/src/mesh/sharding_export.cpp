// Shardy's export passes, each alone: the rewrites Shardy's export pipeline applies after
// propagation (sdy_export_passes.md), run on a module as written.
#include "meshplan/planner/sharding_export.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "mesh/spmd_reshards_partial.hpp"
#include "mesh/spmd_util.hpp"
#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

namespace {

constexpr std::array<std::pair<ExportPass, std::string_view>, 6> kPasses = {{
    {ExportPass::sharding_constraint_to_reshard, "sdy-sharding-constraint-to-reshard"},
    {ExportPass::remove_sharding_groups, "sdy-remove-sharding-groups"},
    {ExportPass::drop_sharding_rules, "sdy-drop-sharding-rules"},
    {ExportPass::close_shardings, "sdy-close-shardings"},
    {ExportPass::insert_explicit_reshards, "sdy-insert-explicit-reshards"},
    {ExportPass::reshard_to_collectives, "sdy-reshard-to-collectives"},
}};

/// Calls `fn` on every op of `b` and of the regions nested in it, after dropping the ops
/// `drop` selects from each block.
template <class Drop, class Fn>
void walk(Module& m, Block& b, const Drop& drop, const Fn& fn) {
  std::erase_if(b.ops, [&](OpId o) { return drop(m.ops[o]); });
  for (OpId o : b.ops) {
    fn(m.ops[o]);
    for (Block& r : m.ops[o].regions) walk(m, r, drop, fn);
  }
}

template <class Drop, class Fn>
void each_op(Module& m, const Drop& drop, const Fn& fn) {
  for (Func& f : m.funcs) walk(m, f.body, drop, fn);
}

constexpr auto kKeep = [](const Op&) { return false; };

/// Closed dims, no priorities, no explicitly replicated axes (a closed dim already says the
/// axes it lacks are replicated).
void close(TensorSharding& s) {
  s.replicated.clear();
  for (DimSharding& d : s.dims) {
    d.open = false;
    d.priority = -1;
  }
}

void close_all(Module& m) {
  each_op(m, kKeep, [](Op& op) {
    for (TensorSharding& s : op.shardings) close(s);
    if (op.sharding) close(*op.sharding);
    for (TensorSharding& s : op.in_shardings) close(s);
    for (TensorSharding& s : op.out_shardings) close(s);
  });
  for (Func& f : m.funcs) {
    for (const ArgInfo& a : f.args)
      if (m.values[a.value].sharding) close(*m.values[a.value].sharding);
    for (ResultInfo& r : f.results)
      if (r.sharding) close(*r.sharding);
  }
}

/// The mesh a function's shardings name first (arguments, then ops in order, then results).
std::string function_mesh(const Module& m, const Func& f) {
  for (const ArgInfo& a : f.args)
    if (m.values[a.value].sharding) return m.values[a.value].sharding->mesh;
  std::string found;
  auto look = [&](auto& self, const Block& b) -> void {
    for (OpId o : b.ops) {
      const Op& op = m.ops[o];
      if (!found.empty()) return;
      if (op.sharding) found = op.sharding->mesh;
      if (found.empty() && !op.shardings.empty()) found = op.shardings.front().mesh;
      if (found.empty() && !op.in_shardings.empty()) found = op.in_shardings.front().mesh;
      for (const Block& r : op.regions) self(self, r);
    }
  };
  look(look, f.body);
  for (const ResultInfo& r : f.results)
    if (found.empty() && r.sharding) found = r.sharding->mesh;
  return found;
}

/// Runs `pass` (one of the mesh pipeline's rewrites, which act on the entry function and the
/// first mesh) on every function in turn, each seen as the entry function of a module whose
/// first mesh is the one the function's shardings name.
template <class Pass>
Status each_function(Module& m, const Pass& pass) {
  for (size_t i = 0; i < m.funcs.size(); ++i) {
    Module one = m;
    one.funcs = {m.funcs[i]};
    const std::string mesh = function_mesh(m, m.funcs[i]);
    auto at = std::find_if(one.meshes.begin(), one.meshes.end(),
                           [&](const MeshDecl& d) { return d.name == mesh; });
    if (at != one.meshes.end()) std::rotate(one.meshes.begin(), at, at + 1);
    MESHPLAN_TRY(pass(one, one.funcs[0]));
    m.ops = std::move(one.ops);
    m.values = std::move(one.values);
    m.funcs[i] = std::move(one.funcs[0]);
  }
  return {};
}

/// Shardy's explicit reshards at a `func.call`: each operand is resharded to the callee's
/// argument sharding (fully replicated on the operands' mesh when the callee states none and
/// some operand has a sharding; nothing when neither has one). As in Shardy, each reshard goes
/// right after its operand (at the block's start for an argument), so that reshards of one value
/// made later come first; insert_explicit_reshards then leaves the call as it is.
Status reshard_call_operands(Module& one, Func& f, const Module& whole) {
  std::vector<OpId> ops;
  for (OpId o : f.body.ops) {
    if (one.ops[o].name == "func.call") {
      const Attr* callee = one.ops[o].prop("callee");
      const Func* g = nullptr;
      for (const Func& c : whole.funcs)
        if (callee && c.name == callee->text) g = &c;
      if (!g || g->args.size() != one.ops[o].operands.size())
        return fail(ErrorCode::invalid_argument, one.ops[o].loc.str(),
                    ": call of a function the module does not define with these arguments");
      std::string mesh;
      for (ValueId v : one.ops[o].operands)
        if (auto s = sharding_of(one, v); s && mesh.empty()) mesh = s->mesh;
      for (size_t k = 0; k < g->args.size(); ++k) {
        const ValueId v = one.ops[o].operands[k];
        std::optional<TensorSharding> want = one.values[g->args[k].value].sharding;
        if (!want && mesh.empty()) continue;
        if (!want) want = replicated_sharding(mesh, one.values[v].type.shape.size());
        for (auto& d : want->dims) d.open = false, d.priority = -1;
        want->replicated.clear();
        auto have = sharding_of(one, v);
        const MeshDecl* md = one.mesh(want->mesh);
        if (!md) continue;
        const TensorSharding cur =
            have ? *have : replicated_sharding(want->mesh, one.values[v].type.shape.size());
        if (cur.mesh == want->mesh && same_placement(AxisMath{*md}, cur, *want)) continue;
        const OpId r = one.add_op("sdy.reshard", {v}, {one.values[v].type}, one.ops[o].loc);
        one.ops[r].sharding = *want;
        one.ops[o].operands[k] = one.ops[r].results[0];
        auto at = ops.begin();
        if (one.values[v].def != kNone)
          if (auto def = std::find(ops.begin(), ops.end(), one.values[v].def); def != ops.end())
            at = def + 1;
        ops.insert(at, r);
      }
    }
    ops.push_back(o);
  }
  f.body.ops = std::move(ops);
  return {};
}

/// meshplan's reshard -> collective rewrite acts inside the manual computation its mesh
/// pipeline wraps the entry function in: the function's ops are put in such a wrapper
/// (manual_axes={}, same values), rewritten, and taken out again.
Status lower_reshards(Module& m, Func& f) {
  if (f.body.ops.empty() || !m.main_mesh()) return {};
  const OpId mc = m.add_op("sdy.manual_computation", {}, {}, f.loc);
  Block body;
  body.ops = f.body.ops;  // with the return, whose operands the rewrite renames
  m.ops[mc].regions.push_back(std::move(body));
  f.body.ops = {mc};
  MESHPLAN_TRY(reshards_to_collectives(m));
  f.body.ops = m.ops[mc].regions[0].ops;
  return {};
}

}  // namespace

std::optional<ExportPass> export_pass_from_name(std::string_view name) {
  for (const auto& [p, n] : kPasses)
    if (n == name) return p;
  return std::nullopt;
}

std::string_view export_pass_names() {
  return "sdy-sharding-constraint-to-reshard, sdy-remove-sharding-groups, "
         "sdy-drop-sharding-rules, sdy-close-shardings, sdy-insert-explicit-reshards, "
         "sdy-reshard-to-collectives";
}

std::optional<ExplicitReshards> explicit_reshards_from_name(std::string_view name) {
  if (name == "full") return ExplicitReshards::full;
  if (name == "partial") return ExplicitReshards::partial;
  return std::nullopt;
}

Status run_sdy_export_pass(Module& m, ExportPass pass, const ExportOptions& options) {
  switch (pass) {
    case ExportPass::sharding_constraint_to_reshard:
      return constraints_to_reshards(m);
    case ExportPass::remove_sharding_groups:
      each_op(
          m, [](const Op& op) { return op.name == "sdy.sharding_group"; }, [](Op&) {});
      return {};
    case ExportPass::drop_sharding_rules:
      each_op(m, kKeep, [](Op& op) {
        std::erase_if(op.attrs, [](const NamedAttr& a) { return a.first == "sdy.sharding_rule"; });
      });
      return {};
    case ExportPass::close_shardings:
      close_all(m);
      return {};
    case ExportPass::insert_explicit_reshards:
      return each_function(m, [&m, &options, global = global_mesh_name(m)](Module& one,
                                                                          Func& f) -> Status {
        // Both versions reshard call operands (one callee body serves every call).
        MESHPLAN_TRY(reshard_call_operands(one, f, m));
        if (options.explicit_reshards == ExplicitReshards::partial)
          MESHPLAN_TRY(insert_explicit_reshards_partial(one));
        else
          MESHPLAN_TRY(insert_explicit_reshards(one, global, true));
        return expand_unreduced_reshards(one);
      });
    case ExportPass::reshard_to_collectives:
      return each_function(m, lower_reshards);
  }
  return {};
}

}  // namespace meshplan::planner::shlo
