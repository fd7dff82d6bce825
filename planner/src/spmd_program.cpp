// The per-device program's boundary (mesh_shard specs), its verifier and its text summary.
#include <algorithm>
#include <set>
#include <sstream>

#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

namespace {

const Op* manual_op(const Module& m) {
  const Func* f = m.entry();
  if (!f) return nullptr;
  for (OpId o : f->body.ops)
    if (m.ops[o].name == "sdy.manual_computation" && m.ops[o].regions.size() == 1) return &m.ops[o];
  return nullptr;
}

MeshShard shard_of(const MeshDecl& mesh, const TensorSharding& s, size_t rank) {
  AxisMath math{mesh};
  MeshShard out;
  out.shard_shape.assign(rank, 1);
  out.shard_dims.assign(mesh.axes.size(), -1);
  for (size_t d = 0; d < s.dims.size() && d < rank; ++d)
    for (const AxisRef& a : math.without_trivial(s.dims[d].axes)) {
      out.shard_shape[d] *= math.size(a);
      for (size_t k = 0; k < mesh.axes.size(); ++k)
        if (mesh.axes[k].first == a.name) out.shard_dims[k] = static_cast<int64_t>(d);
    }
  bool sharded =
      std::any_of(out.shard_shape.begin(), out.shard_shape.end(), [](int64_t n) { return n > 1; });
  out.type = sharded ? "devices" : "replicate";
  return out;
}

std::string ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

std::string MeshShard::str() const {
  return meshplan::str(to_device ? "full_to_shard input " : "shard_to_full result ", index,
                       " type=", type, " shard_shape=", ints(shard_shape),
                       " shard_dims=", ints(shard_dims));
}

Result<std::vector<MeshShard>> mesh_shards(const Module& m) {
  const Op* mc = manual_op(m);
  const MeshDecl* mesh = m.main_mesh();
  if (!mc || !mesh)
    return fail(ErrorCode::invalid_argument, m.file,
                ": not a per-device program (no manual computation)");
  const Func* f = m.entry();
  std::vector<MeshShard> out;
  for (size_t i = 0; i < mc->operands.size(); ++i) {
    MeshShard s = shard_of(*mesh, mc->in_shardings[i], m.values[mc->operands[i]].type.shape.size());
    s.index = i;
    ValueId v = mc->operands[i];
    for (const ArgInfo& a : f->args)
      if (a.value == v)
        for (const auto& [k, attr] : a.attrs)
          if (k == "ttcore.shard_status" && attr.text.find("<sharded>") != std::string::npos)
            s.type = "identity";
    out.push_back(s);
  }
  for (size_t i = 0; i < mc->results.size(); ++i) {
    MeshShard s = shard_of(*mesh, mc->out_shardings[i], m.values[mc->results[i]].type.shape.size());
    s.to_device = false;
    s.index = i;
    out.push_back(s);
  }
  return out;
}

Status verify_local_program(const Module& m) {
  const Op* mc = manual_op(m);
  const MeshDecl* mesh = m.main_mesh();
  if (!mc || !mesh)
    return fail(ErrorCode::invalid_argument, m.file,
                ": not a per-device program (no manual computation)");
  if (mc->manual_axes.size() != mesh->axes.size())
    return fail(ErrorCode::invalid_argument, mc->loc.str(),
                ": manual_axes does not list every mesh axis");
  AxisMath math{*mesh};
  auto local_ok = [&](const TensorType& global, const TensorType& local, const TensorSharding& s) {
    if (global.shape.size() != local.shape.size()) return false;
    for (size_t d = 0; d < global.shape.size(); ++d) {
      int64_t p = d < s.dims.size() ? math.product(s.dims[d].axes) : 1;
      if (local.shape[d] * p != global.shape[d]) return false;
    }
    return true;
  };
  const Block& body = mc->regions[0];
  for (size_t i = 0; i < body.args.size(); ++i)
    if (!local_ok(m.values[mc->operands[i]].type, m.values[body.args[i]].type, mc->in_shardings[i]))
      return fail(ErrorCode::internal, mc->loc.str(), ": block argument ", i, " has type ",
                  type_string(m.values[body.args[i]].type), ", not the local shape of ",
                  type_string(m.values[mc->operands[i]].type), " under ",
                  sharding_string(mc->in_shardings[i]));
  const Op& ret = m.ops[body.ops.back()];
  for (size_t i = 0; i < ret.operands.size() && i < mc->results.size(); ++i)
    if (!local_ok(m.values[mc->results[i]].type, m.values[ret.operands[i]].type,
                  mc->out_shardings[i]))
      return fail(ErrorCode::internal, ret.loc.str(), ": returned value ", i, " has type ",
                  type_string(m.values[ret.operands[i]].type), ", not the local shape of ",
                  type_string(m.values[mc->results[i]].type), " under ",
                  sharding_string(mc->out_shardings[i]));
  for (OpId o : body.ops) {
    const Op& op = m.ops[o];
    if (op.name == "sdy.reshard" || op.name == "sdy.sharding_constraint" || !op.shardings.empty())
      return fail(ErrorCode::internal, op.loc.str(), ": ", op.name,
                  " still carries a global sharding");
    if (op.name.starts_with("stablehlo.all_") || op.name == "stablehlo.reduce_scatter") {
      CollectiveInfo c = MESHPLAN_TRY(collective_info(m, op));
      std::set<int64_t> seen;
      size_t size = c.groups.empty() ? 0 : c.groups[0].size();
      for (const auto& g : c.groups) {
        if (g.size() != size)
          return fail(ErrorCode::internal, op.loc.str(), ": replica groups of unequal size");
        for (int64_t d : g)
          if (d < 0 || d >= mesh->devices() || !seen.insert(d).second)
            return fail(ErrorCode::internal, op.loc.str(), ": device ", d,
                        " is not in exactly one replica group");
      }
      if (static_cast<int64_t>(seen.size()) != mesh->devices())
        return fail(ErrorCode::internal, op.loc.str(), ": replica groups do not cover the mesh");
    }
  }
  return {};
}

Result<std::string> print_spmd_summary(const Module& m) {
  MESHPLAN_TRY(verify_local_program(m));
  std::ostringstream out;
  const MeshDecl& mesh = *m.main_mesh();
  out << "mesh @" << mesh.name << " [";
  for (size_t k = 0; k < mesh.axes.size(); ++k)
    out << (k ? ", " : "") << mesh.axes[k].first << "=" << mesh.axes[k].second;
  out << "]\n";
  // A named local: a range-for over the MESHPLAN_TRY expression would iterate a temporary the
  // statement expression already destroyed.
  const std::vector<MeshShard> shards = MESHPLAN_TRY(mesh_shards(m));
  for (const MeshShard& s : shards) out << "mesh_shard " << s.str() << "\n";
  const Op* mc = manual_op(m);
  for (OpId o : mc->regions[0].ops) {
    const Op& op = m.ops[o];
    if (!op.name.starts_with("stablehlo.all_") && op.name != "stablehlo.reduce_scatter" &&
        op.name != "sdy.all_slice")
      continue;
    CollectiveInfo c = MESHPLAN_TRY(collective_info(m, op));
    out << c.kind << " dim=" << c.dim << " cluster_axis=" << c.cluster_axis
        << " group_size=" << (c.groups.empty() ? 0 : c.groups[0].size()) << " "
        << type_string(m.values[op.operands[0]].type) << " -> "
        << type_string(m.values[op.results[0]].type) << "\n";
  }
  CommStats comm = MESHPLAN_TRY(communication(m));
  out << "bytes_per_device_link " << static_cast<int64_t>(comm.bytes) << "\n";
  return out.str();
}

}  // namespace meshplan::planner::shlo
