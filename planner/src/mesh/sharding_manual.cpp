// sdy.manual_computation in Shardy's propagation: edges across the boundary, the local view of
// a global sharding, and the write-back to in_shardings / out_shardings.
#include "mesh/sharding_manual.hpp"

#include <algorithm>
#include <string>

#include "meshplan/planner/sharding.hpp"

namespace meshplan::planner::shlo {

namespace {

bool is_manual(const AxisRef& a, const std::vector<std::string>& manual) {
  return std::find(manual.begin(), manual.end(), a.name) != manual.end();
}

/// The manual axes dim `d` of `s` starts with (the manual part of a global dim).
std::vector<AxisRef> manual_prefix(const TensorSharding& s, size_t d,
                                   const std::vector<std::string>& manual) {
  std::vector<AxisRef> out;
  if (d >= s.dims.size()) return out;
  for (const AxisRef& a : s.dims[d].axes) {
    if (!is_manual(a, manual)) break;
    out.push_back(a);
  }
  return out;
}

/// The block's value the edge's inside end is owned by an explicit sdy.data_flow_edge:
/// a block argument used by one, or a result whose only users are such edges.
bool owned_by_edge_op(const Module& m, const Block& outer, const Block& body, ValueId v) {
  auto used_by_edge = [&](const Block& b) {
    bool any = false;
    for (OpId o : b.ops)
      if (m.ops[o].name == "sdy.data_flow_edge" && !m.ops[o].operands.empty() &&
          m.ops[o].operands[0] == v)
        any = true;
    return any;
  };
  return used_by_edge(body) || used_by_edge(outer);
}

/// The block directly holding op `mc` (searched from every function).
const Block* holder(const Module& m, OpId mc) {
  const Block* found = nullptr;
  auto walk = [&](auto& self, const Block& b) -> void {
    for (OpId o : b.ops) {
      if (o == mc) found = &b;
      for (const Block& r : m.ops[o].regions) self(self, r);
    }
  };
  for (const Func& f : m.funcs) walk(walk, f.body);
  return found;
}

}  // namespace

std::vector<ManualEdge> manual_edges(const Module& m, const std::vector<OpId>& ops) {
  std::vector<ManualEdge> out;
  for (OpId o : ops) {
    const Op& op = m.ops[o];
    if (op.name != "sdy.manual_computation" || op.regions.size() != 1) continue;
    const Block& b = op.regions[0];
    for (size_t k = 0; k < op.operands.size() && k < b.args.size() && k < op.in_shardings.size();
         ++k)
      out.push_back({o, k, false, op.operands[k], b.args[k]});
    const Op* ret = b.ops.empty() ? nullptr : &m.ops[b.ops.back()];
    if (!ret || ret->name != "sdy.return") continue;
    for (size_t k = 0;
         k < op.results.size() && k < ret->operands.size() && k < op.out_shardings.size(); ++k)
      out.push_back({o, k, true, op.results[k], ret->operands[k]});
  }
  return out;
}

TensorSharding manual_local(const TensorSharding& s, const std::vector<std::string>& manual) {
  TensorSharding out = s;
  for (DimSharding& d : out.dims) {
    std::vector<AxisRef> keep;
    size_t i = 0;
    while (i < d.axes.size() && is_manual(d.axes[i], manual)) ++i;
    for (; i < d.axes.size() && !is_manual(d.axes[i], manual); ++i) keep.push_back(d.axes[i]);
    d.axes = std::move(keep);
  }
  std::erase_if(out.replicated, [&](const AxisRef& a) { return is_manual(a, manual); });
  std::erase_if(out.unreduced, [&](const AxisRef& a) { return is_manual(a, manual); });
  return out;
}

std::optional<TensorSharding> manual_view(const Module& m, const ManualEdge& edge,
                                          const std::optional<TensorSharding>& global) {
  const Op& mc = m.ops[edge.mc];
  if (global) return manual_local(*global, mc.manual_axes);
  const TensorSharding& stated =
      edge.result ? mc.out_shardings[edge.index] : mc.in_shardings[edge.index];
  return open_sharding(stated.mesh, m.values[edge.global].type.shape.size());
}

void manual_seed(const Module& m, const std::vector<ManualEdge>& edges,
                 std::vector<std::optional<TensorSharding>>& shard) {
  for (const ManualEdge& e : edges) {
    const Op& mc = m.ops[e.mc];
    if (!e.result) {
      shard[e.local] = manual_local(mc.in_shardings[e.index], mc.manual_axes);
      continue;
    }
    TensorSharding s = mc.out_shardings[e.index];
    for (const std::string& axis : mc.manual_axes) {
      bool named = false;
      for (const DimSharding& d : s.dims)
        for (const AxisRef& a : d.axes) named |= a.name == axis;
      if (!named) s.replicated.push_back(AxisRef{axis, 1, 0});
    }
    shard[e.global] = std::move(s);
  }
}

bool manual_lift(const Module& m, const ManualEdge& edge, const TensorSharding& local,
                 std::optional<TensorSharding>& global) {
  const Op& mc = m.ops[edge.mc];
  const TensorSharding& stated =
      edge.result ? mc.out_shardings[edge.index] : mc.in_shardings[edge.index];
  const size_t rank = local.dims.size();
  TensorSharding next = global ? *global : open_sharding(local.mesh, rank);
  if (next.dims.size() != rank || stated.dims.size() != rank) return false;
  bool grew = false;
  for (size_t d = 0; d < rank; ++d) {
    std::vector<AxisRef> want = manual_prefix(stated, d, mc.manual_axes);
    want.insert(want.end(), local.dims[d].axes.begin(), local.dims[d].axes.end());
    DimSharding& dim = next.dims[d];
    if (!dim.open || want.size() <= dim.axes.size()) continue;
    if (!std::equal(dim.axes.begin(), dim.axes.end(), want.begin())) continue;
    // An axis another dim already holds stays there.
    bool clash = false;
    for (size_t e = 0; e < rank && !clash; ++e)
      if (e != d)
        for (const AxisRef& a : want)
          clash |= std::find(next.dims[e].axes.begin(), next.dims[e].axes.end(), a) !=
                   next.dims[e].axes.end();
    if (clash) continue;
    dim.axes = std::move(want);
    grew = true;
  }
  if (grew) global = std::move(next);
  return grew;
}

void manual_write_back(Module& m, const std::vector<ManualEdge>& edges,
                       const std::vector<std::optional<TensorSharding>>& shard) {
  for (const ManualEdge& e : edges) {
    Op& mc = m.ops[e.mc];
    mc.shardings.clear();
    const Block* outer = holder(m, e.mc);
    if (!outer) continue;
    const Block& body = mc.regions[0];
    if (owned_by_edge_op(m, *outer, body, e.result ? e.global : e.local)) continue;
    if (!e.result) {
      if (!shard[e.local]) continue;
      TensorSharding& in = mc.in_shardings[e.index];
      const TensorSharding& loc = *shard[e.local];
      if (loc.dims.size() != in.dims.size()) continue;
      for (size_t d = 0; d < in.dims.size(); ++d) {
        std::vector<AxisRef> axes = manual_prefix(in, d, mc.manual_axes);
        axes.insert(axes.end(), loc.dims[d].axes.begin(), loc.dims[d].axes.end());
        in.dims[d].axes = std::move(axes);
      }
      continue;
    }
    if (!shard[e.global]) continue;
    TensorSharding& out = mc.out_shardings[e.index];
    const TensorSharding& now = *shard[e.global];
    if (now.dims.size() != out.dims.size()) continue;
    for (size_t d = 0; d < out.dims.size(); ++d) out.dims[d].axes = now.dims[d].axes;
  }
}

std::optional<TensorSharding> manual_arg_sharding(const Module& m, ValueId v) {
  for (const Op& op : m.ops) {
    if (op.name != "sdy.manual_computation" || op.regions.size() != 1) continue;
    const auto& args = op.regions[0].args;
    for (size_t k = 0; k < args.size() && k < op.in_shardings.size(); ++k)
      if (args[k] == v) return manual_local(op.in_shardings[k], op.manual_axes);
  }
  return std::nullopt;
}

Status verify_manual_computations(const Module& m) {
  for (const Op& op : m.ops) {
    if (op.name != "sdy.manual_computation" || op.regions.size() != 1) continue;
    const Block& b = op.regions[0];
    auto check = [&](const TensorSharding& s, ValueId global, ValueId local, std::string_view what,
                     size_t k) -> Status {
      const MeshDecl* mesh = m.mesh(s.mesh);
      if (!mesh) return {};  // the sharding check names an undeclared mesh
      for (const std::string& axis : op.manual_axes)
        if (mesh->axis_size(axis) == 0)
          return fail(ErrorCode::invalid_argument, op.loc.str(),
                      ": sdy.manual_computation: manual axis \"", axis, "\" of ", what, " ", k,
                      " is not an axis of mesh @", mesh->name);
      const auto& gshape = m.values[global].type.shape;
      const auto& lshape = m.values[local].type.shape;
      if (s.dims.size() != gshape.size() || lshape.size() != gshape.size()) return {};
      for (size_t d = 0; d < gshape.size(); ++d) {
        int64_t split = 1;
        std::string axes;
        for (const AxisRef& a : manual_prefix(s, d, op.manual_axes)) {
          split *= mesh->size_of(a);
          axes += (axes.empty() ? "\"" : ", \"") + a.name + "\"";
        }
        if (split > 0 && gshape[d] % split == 0 && lshape[d] == gshape[d] / split) continue;
        return fail(ErrorCode::invalid_argument, op.loc.str(), ": sdy.manual_computation: ", what,
                    " ", k, " has dim ", d, " of size ", gshape[d], " split ", split,
                    " ways by manual axes {", axes, "} of mesh @", mesh->name,
                    ", but the body's value has size ", lshape[d], " there (expected ",
                    split > 0 ? gshape[d] / split : 0, ")");
      }
      return {};
    };
    for (size_t k = 0; k < op.in_shardings.size() && k < op.operands.size() && k < b.args.size();
         ++k)
      MESHPLAN_TRY(check(op.in_shardings[k], op.operands[k], b.args[k], "operand", k));
    const Op* ret = b.ops.empty() ? nullptr : &m.ops[b.ops.back()];
    if (!ret || ret->name != "sdy.return") continue;
    for (size_t k = 0;
         k < op.out_shardings.size() && k < op.results.size() && k < ret->operands.size(); ++k)
      MESHPLAN_TRY(check(op.out_shardings[k], op.results[k], ret->operands[k], "result", k));
  }
  return {};
}

}  // namespace meshplan::planner::shlo
