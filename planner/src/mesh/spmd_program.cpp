// The per-device program's boundary (mesh_shard specs), its verifier and its text summary.
#include <algorithm>
#include <optional>
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
  // The per-device shape of `global` under `s`, or nullopt when a dim does not divide.
  auto local_of = [&](const TensorType& global,
                      const TensorSharding& s) -> std::optional<TensorType> {
    TensorType out = global;
    for (size_t d = 0; d < out.shape.size() && d < s.dims.size(); ++d) {
      int64_t p = math.product(s.dims[d].axes);
      if (p <= 0 || out.shape[d] % p != 0) return std::nullopt;
      out.shape[d] /= p;
    }
    return out;
  };
  auto check = [&](const Location& loc, std::string_view what, const TensorType& global,
                   const TensorType& local, const TensorSharding& s) -> Status {
    auto want = local_of(global, s);
    if (want && want->shape == local.shape) return {};
    if (!want)
      return fail(ErrorCode::invalid_argument, loc.str(), ": sdy.manual_computation: ", what,
                  " is ", type_string(global), " sharded ", sharding_string(s),
                  ", which does not divide it evenly over mesh @", mesh->name);
    return fail(ErrorCode::invalid_argument, loc.str(), ": sdy.manual_computation: ", what,
                " has type ", type_string(local), ", not the local shape of ", type_string(global),
                " under ", sharding_string(s), ": each device holds ", type_string(*want),
                " (declare that type, or change the sharding)");
  };
  const Block& body = mc->regions[0];
  if (body.args.size() != mc->operands.size())
    return fail(ErrorCode::invalid_argument, mc->loc.str(), ": sdy.manual_computation has ",
                mc->operands.size(), " operands but its body takes ", body.args.size(),
                " arguments");
  for (size_t i = 0; i < body.args.size() && i < mc->in_shardings.size(); ++i)
    MESHPLAN_TRY(check(mc->loc, str("block argument ", i), m.values[mc->operands[i]].type,
                       m.values[body.args[i]].type, mc->in_shardings[i]));
  const Op& ret = m.ops[body.ops.back()];
  for (size_t i = 0; i < ret.operands.size() && i < mc->results.size(); ++i)
    MESHPLAN_TRY(check(ret.loc, str("returned value ", i), m.values[mc->results[i]].type,
                       m.values[ret.operands[i]].type, mc->out_shardings[i]));
  for (OpId o : body.ops) {
    const Op& op = m.ops[o];
    if (op.name == "sdy.reshard" || op.name == "sdy.sharding_constraint" || !op.shardings.empty())
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                  " inside sdy.manual_computation over every axis of mesh @", mesh->name,
                  " carries a global sharding; the body sees per-device values only (move it "
                  "before or after the manual computation)");
    if (op.name.starts_with("stablehlo.all_") || op.name == "stablehlo.reduce_scatter") {
      CollectiveInfo c = MESHPLAN_TRY(collective_info(m, op));
      std::set<int64_t> seen;
      size_t size = c.groups.empty() ? 0 : c.groups[0].size();
      for (const auto& g : c.groups) {
        if (g.size() != size)
          return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                      ": replica groups of unequal size (", size, " and ", g.size(),
                      " devices); every group of one collective has as many devices");
        for (int64_t d : g) {
          if (d < 0 || d >= mesh->devices())
            return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                        ": replica groups name device ", d, ", outside the ", mesh->devices(),
                        "-device mesh @", mesh->name);
          if (!seen.insert(d).second)
            return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name, ": device ", d,
                        " is not in exactly one replica group (it appears twice)");
        }
      }
      if (static_cast<int64_t>(seen.size()) != mesh->devices()) {
        int64_t missing = 0;
        while (seen.count(missing)) ++missing;
        return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                    ": replica groups cover ", seen.size(), " of the ", mesh->devices(),
                    " devices of mesh @", mesh->name, " (device ", missing,
                    " is in none); list every device once");
      }
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
