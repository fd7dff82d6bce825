// Seed 003's passes up to wrapping: argument annotations, constraints -> reshards, wrapping
// under a manual computation, closing; plus the pipeline driver. Explicit reshards: see
// spmd_reshards.cpp.
#include <algorithm>
#include <set>

#include "mesh/spmd_reshard.hpp"
#include "mesh/spmd_util.hpp"
#include "meshplan/planner/mesh_mapping.hpp"
#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

namespace {

constexpr std::pair<Stage, std::string_view> kStages[] = {
    {Stage::import, "import"},
    {Stage::tt_arguments, "tt-arguments"},
    {Stage::shard_status, "shard-status"},
    {Stage::argument_sharding, "argument-sharding"},
    {Stage::sharding_constraints, "sharding-constraints"},
    {Stage::propagation, "propagation"},
    {Stage::constraint_to_reshard, "constraint-to-reshard"},
    {Stage::explicit_reshards, "explicit-reshards"},
    {Stage::wrap, "wrap"},
    {Stage::collectives, "collectives"},
    {Stage::local_shapes, "local-shapes"},
    {Stage::close, "close"},
};

void set_attr(std::vector<NamedAttr>& attrs, const std::string& name, Attr value) {
  for (auto& [k, v] : attrs)
    if (k == name) {
      v = std::move(value);
      return;
    }
  attrs.emplace_back(name, std::move(value));
}

Attr opaque(std::string text) {
  Attr a;
  a.kind = Attr::Kind::opaque;
  a.text = std::move(text);
  return a;
}

}  // namespace

std::optional<Stage> stage_from_name(std::string_view name) {
  for (const auto& [s, n] : kStages)
    if (n == name) return s;
  return std::nullopt;
}

std::string_view stage_name(Stage stage) {
  for (const auto& [s, n] : kStages)
    if (s == stage) return n;
  return "?";
}

bool has_manual_computation(const Module& m, const Func& f) {
  return std::any_of(f.body.ops.begin(), f.body.ops.end(),
                     [&](OpId o) { return m.ops[o].name == "sdy.manual_computation"; });
}

std::optional<TensorSharding> sharding_of(const Module& m, ValueId v) {
  const Value& val = m.values[v];
  if (val.def == kNone) {
    if (val.sharding) return val.sharding;
    // A manual computation's block argument: its in_sharding.
    for (const Op& op : m.ops)
      if (op.name == "sdy.manual_computation" && !op.regions.empty()) {
        const auto& args = op.regions[0].args;
        for (size_t i = 0; i < args.size(); ++i)
          if (args[i] == v && i < op.in_shardings.size()) return op.in_shardings[i];
      }
    return std::nullopt;
  }
  const Op& op = m.ops[val.def];
  if (op.sharding) return op.sharding;
  if (val.index < op.shardings.size()) return op.shardings[val.index];
  return std::nullopt;
}

Status apply_argument_types(Module& m, const std::vector<std::string>& types) {
  Func* f = m.entry();
  if (!f || types.empty()) return {};
  if (types.size() != f->args.size())
    return fail(ErrorCode::invalid_argument, "argument types: ", types.size(), " given for ",
                f->args.size(), " arguments of @", f->name);
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string& t = types[i];
    if (t != "input" && t != "parameter" && t != "constant" && t != "default")
      return fail(ErrorCode::invalid_argument, "argument type '", t,
                  "' (expected input, parameter, constant)");
    set_attr(f->args[i].attrs, "ttcore.argument_type", opaque("#ttcore.argument_type<" + t + ">"));
  }
  return {};
}

Status apply_shard_status(Module& m, bool presharded) {
  Func* f = m.entry();
  if (!f) return {};
  for (ArgInfo& a : f->args) {
    // A status the module already states is kept: export_stablehlo says `unsharded` for the
    // annotated arguments of a graph, whose host tensors are whole (mesh_shard devices /
    // replicate at the boundary, not identity).
    bool stated = false;
    for (const auto& [k, v] : a.attrs) stated |= k == "ttcore.shard_status";
    auto& sharding = m.values[a.value].sharding;
    const bool sharded = presharded && sharding;
    if (!stated)
      set_attr(
          a.attrs, "ttcore.shard_status",
          opaque(std::string("#ttcore.shard_status<") + (sharded ? "sharded" : "unsharded") + ">"));
    // A global host array is the reduced value: only pre-split pieces can be partial sums.
    bool split = sharded;
    for (const auto& [k, v] : a.attrs)
      if (k == "ttcore.shard_status") split = v.text.find("<sharded>") != std::string::npos;
    if (!split && sharding) sharding->unreduced.clear();
  }
  return {};
}

Status apply_argument_sharding(Module& m, const PipelineOptions& options) {
  Func* f = m.entry();
  if (!f) return {};
  const bool given = options.mesh_rows > 0 && options.mesh_cols > 0;
  if (m.meshes.empty()) {
    MeshDecl mesh;
    mesh.name = "mesh";
    mesh.axes = {{"model", given ? options.mesh_rows : 1},
                 {"batch", given ? options.mesh_cols : 1}};
    m.meshes.push_back(mesh);
  } else if (given && m.main_mesh()->devices() != options.mesh_rows * options.mesh_cols) {
    return fail(ErrorCode::incompatible, m.file, ": the module's mesh @", m.main_mesh()->name,
                " has ", m.main_mesh()->devices(), " devices but --mesh ", options.mesh_rows, "x",
                options.mesh_cols, " has ", options.mesh_rows * options.mesh_cols);
  }
  if (has_manual_computation(m, *f)) return {};  // solved graph
  bool annotated = false;
  for (const ArgInfo& a : f->args) annotated |= m.values[a.value].sharding.has_value();
  for (const ResultInfo& r : f->results) annotated |= r.sharding.has_value();
  for (OpId o : f->body.ops)
    annotated |= m.ops[o].sharding.has_value() || !m.ops[o].shardings.empty();
  if (annotated) return {};  // partially solved: leave it to propagation
  const MeshDecl& mesh = *m.main_mesh();
  AxisMath math{mesh};
  // Batch parallel: "batch" first, then the other axes of size > 1.
  std::vector<AxisRef> axes;
  for (const auto& [name, size] : mesh.axes)
    if (size > 1 && name == "batch") axes.push_back(AxisRef{name, 1, 0});
  for (const auto& [name, size] : mesh.axes)
    if (size > 1 && name != "batch") axes.push_back(AxisRef{name, 1, 0});
  if (axes.empty()) return {};
  auto note = [&](std::string text) {
    if (options.notes) options.notes->push_back(std::move(text));
  };
  BatchAnalysis batch = MESHPLAN_TRY(analyze_batch(m));
  std::vector<AxisRef> use;
  int64_t cap = batch.size;
  for (const AxisRef& a : axes) {
    if (cap <= 0 || cap % math.size(a) != 0) break;
    cap /= math.size(a);
    use.push_back(a);
  }
  if (batch.dims.empty() || use.empty()) {
    note(batch.dims.empty()
             ? batch.why
             : str("no batch parallelism: the batch factor of size ", batch.size,
                   " is not divisible by mesh axis \"", axes[0].name, "\"=", math.size(axes[0])));
    return {};
  }
  bool typed = false;
  for (const ArgInfo& a : f->args)
    for (const auto& [k, v] : a.attrs) typed |= k == "ttcore.argument_type";
  std::string split, kept;
  for (const auto& [i, d] : batch.dims) {
    const Attr* type = nullptr;
    for (const auto& [k, v] : f->args[i].attrs)
      if (k == "ttcore.argument_type") type = &v;
    // Typed arguments: only inputs take the batch split (parameters stay whole, resharded where
    // an op needs them split). Untyped: every argument that carries the batch factor.
    if (typed && !(type && type->text == "#ttcore.argument_type<input>")) {
      kept += str(kept.empty() ? "" : ", ", "%arg", i);
      continue;
    }
    Value& v = m.values[f->args[i].value];
    TensorSharding s = replicated_sharding(mesh.name, v.type.shape.size());
    s.dims[d].axes = use;
    v.sharding = s;
    split += str(split.empty() ? "" : ", ", "%arg", i, " dim ", d);
  }
  std::string over;
  for (const AxisRef& a : use) over += str(over.empty() ? "" : ",", "\"", a.name, "\"");
  note(str("batch parallel: ", split.empty() ? std::string("no input") : split, " split over ",
           over, " (", math.product(use), " ways); ", batch.why,
           kept.empty() ? std::string() : str("; not inputs, kept whole: ", kept)));
  return {};
}

namespace {

/// sdy.all_slice, all_gather, all_to_all and collective_permute written in the program outside
/// a manual computation keep the global value and give it their out_sharding: a reshard to it,
/// which explicit resharding turns into the collectives it picks (the same ones, or cheaper).
void written_collectives_to_reshards(Module& m, std::vector<OpId> ops) {
  while (!ops.empty()) {  // a worklist over nested regions, manual computations left out
    const OpId o = ops.back();
    ops.pop_back();
    Op& op = m.ops[o];
    if (op.name == "sdy.manual_computation") continue;
    if ((op.name == "sdy.all_slice" || op.name == "sdy.all_gather" || op.name == "sdy.all_to_all" ||
         op.name == "sdy.collective_permute") &&
        op.sharding && op.operands.size() == 1 && op.results.size() == 1) {
      op.name = "sdy.reshard";
      op.dim_axes.clear();
      op.all_to_all.clear();
    }
    for (const Block& b : op.regions) ops.insert(ops.end(), b.ops.begin(), b.ops.end());
  }
}

}  // namespace

Status constraints_to_reshards(Module& m) {
  for (Op& op : m.ops)
    if (op.name == "sdy.sharding_constraint") op.name = "sdy.reshard";
  return {};
}

Status wrap_under_manual_computation(Module& m) {
  Func* f = m.entry();
  const MeshDecl* mesh = m.main_mesh();
  if (!f || !mesh || has_manual_computation(m, *f)) return {};
  std::vector<ValueId> args;
  std::vector<TensorType> result_types;
  for (const ArgInfo& a : f->args) args.push_back(a.value);
  for (const ResultInfo& r : f->results) result_types.push_back(r.type);
  Location loc = f->loc;
  OpId mc = m.add_op("sdy.manual_computation", args, result_types, loc);
  Block body;
  std::vector<ValueId> remap(m.values.size());
  for (ValueId v = 0; v < remap.size(); ++v) remap[v] = v;
  for (size_t i = 0; i < f->args.size(); ++i) {
    ValueId v = f->args[i].value;
    ValueId inner = m.add_value(m.values[v].type, kNone, static_cast<uint32_t>(i));
    body.args.push_back(inner);
    remap[v] = inner;
    auto s = m.values[v].sharding;
    m.ops[mc].in_shardings.push_back(
        s ? *s : replicated_sharding(mesh->name, m.values[v].type.shape.size()));
  }
  OpId ret = f->body.ops.back();
  for (size_t i = 0; i + 1 < f->body.ops.size(); ++i) {
    OpId o = f->body.ops[i];
    for (ValueId& v : m.ops[o].operands)
      if (v < remap.size()) v = remap[v];
    for (Block& r : m.ops[o].regions)
      for (OpId inner : r.ops)
        for (ValueId& v : m.ops[inner].operands)
          if (v < remap.size()) v = remap[v];
    body.ops.push_back(o);
  }
  std::vector<ValueId> returned;
  for (ValueId v : m.ops[ret].operands) returned.push_back(v < remap.size() ? remap[v] : v);
  for (size_t k = 0; k < returned.size(); ++k) {
    auto s = f->results[k].sharding ? f->results[k].sharding : sharding_of(m, returned[k]);
    m.ops[mc].out_shardings.push_back(
        s ? *s : replicated_sharding(mesh->name, f->results[k].type.shape.size()));
  }
  OpId sret = m.add_op("sdy.return", returned, {}, m.ops[ret].loc);
  body.ops.push_back(sret);
  m.ops[mc].regions.push_back(std::move(body));
  m.ops[ret].operands = m.ops[mc].results;
  f->body.ops = {mc, ret};
  return {};
}

Status close_shardings(Module& m) {
  for (Op& op : m.ops) {
    if (op.name != "sdy.manual_computation") continue;
    for (auto* list : {&op.in_shardings, &op.out_shardings})
      for (TensorSharding& s : *list)
        for (DimSharding& d : s.dims) d.open = false;
  }
  return {};
}

/// The mesh pipeline does not lower Shardy's explicit unreduced moves (a value kept on one
/// device of each group and zeros on the others, or a sharded value's shard placed in a zero
/// tensor): a program holding one is refused where the op is, not compiled wrongly.
namespace {
Status refuse_unreduced_moves(const Module& m, const std::vector<OpId>& ops) {
  for (OpId o : ops) {
    const Op& op = m.ops[o];
    if (op.name == "sdy.replicated_to_unreduced" || op.name == "sdy.sharded_to_unreduced")
      return fail(ErrorCode::unimplemented, op.loc.str(), ": ", op.name,
                  " is not lowered by the mesh pipeline (only the sdy-* export stages read and "
                  "write it)");
    for (const Block& b : op.regions) MESHPLAN_TRY(refuse_unreduced_moves(m, b.ops));
  }
  return {};
}
}  // namespace

Status run_pipeline(Module& m, const PipelineOptions& o) {
  if (!m.entry()) return fail(ErrorCode::invalid_argument, m.file, ": no function to compile");
  auto done = [&](Stage s) { return o.stop_after == s; };
  if (done(Stage::import)) return {};
  MESHPLAN_TRY(apply_argument_types(m, o.argument_types));
  if (done(Stage::tt_arguments)) return {};
  MESHPLAN_TRY(apply_shard_status(m, o.presharded_arguments));
  if (done(Stage::shard_status)) return {};
  MESHPLAN_TRY(apply_argument_sharding(m, o));
  MESHPLAN_TRY(verify_shardings(m));
  if (done(Stage::argument_sharding) || done(Stage::sharding_constraints)) return {};
  for (const Func& f : m.funcs) MESHPLAN_TRY(refuse_unreduced_moves(m, f.body.ops));
  for (const Func& f : m.funcs) written_collectives_to_reshards(m, f.body.ops);
  // On one device every tensor is whole: nothing to propagate and no reshard to add, so an op
  // without a sharding rule (a loop, a window) compiles as it does without a mesh.
  const bool one_device = m.main_mesh() && m.main_mesh()->devices() == 1;
  if (!one_device) MESHPLAN_TRY(propagate(m));
  if (done(Stage::propagation)) return {};
  MESHPLAN_TRY(constraints_to_reshards(m));
  if (done(Stage::constraint_to_reshard)) return {};
  if (!one_device) MESHPLAN_TRY(insert_explicit_reshards(m));
  if (done(Stage::explicit_reshards)) return {};
  MESHPLAN_TRY(lower_partial_manual(m));
  MESHPLAN_TRY(wrap_under_manual_computation(m));
  if (done(Stage::wrap)) return {};
  return lower_to_local(m, o);  // collectives, local shapes, mesh mapping
}

}  // namespace meshplan::planner::shlo
