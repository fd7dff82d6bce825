// Explicit reshards: each op's operands are resharded to one common factor sharding (Shardy's
// sdy-insert-explicit-reshards), partial sums along sharded reduction factors become
// sdy.all_reduce, and results placed otherwise than propagation decided are resharded after.
#include <algorithm>

#include "mesh/spmd_util.hpp"
#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

Status insert_explicit_reshards(Module& m) {
  Func* f = m.entry();
  const MeshDecl* mesh = m.main_mesh();
  if (!f || !mesh || has_manual_computation(m, *f)) return {};
  AxisMath math{*mesh};
  std::vector<OpId> out;
  std::vector<ValueId> remap(m.values.size());
  for (ValueId v = 0; v < remap.size(); ++v) remap[v] = v;
  auto current = [&](ValueId v) {
    auto s = sharding_of(m, v);
    return s ? *s : replicated_sharding(mesh->name, m.values[v].type.shape.size());
  };
  auto reshard = [&](ValueId v, const TensorSharding& to, const Location& loc) {
    OpId r = m.add_op("sdy.reshard", {v}, {m.values[v].type}, loc);
    m.ops[r].sharding = to;
    out.push_back(r);
    remap.resize(m.values.size());
    remap.back() = static_cast<ValueId>(m.values.size() - 1);
    return m.ops[r].results[0];
  };
  // Partial sums (unreduced axes) are summed before any use that does not keep them
  // unreduced: an sdy.all_reduce over those axes, the value's dims staying as they are.
  // `keep(k)`: the unreduced axes operand k may keep.
  auto reduce_unreduced = [&](OpId o, auto keep) {
    for (size_t k = 0; k < m.ops[o].operands.size(); ++k) {
      ValueId v = m.ops[o].operands[k];
      TensorSharding s = current(v);
      if (math.without_trivial(s.unreduced).empty() || s.unreduced == keep(k)) continue;
      OpId ar = m.add_op("sdy.all_reduce", {v}, {m.values[v].type}, m.ops[o].loc);
      m.ops[ar].reduce_axes = math.without_trivial(s.unreduced);
      s.unreduced.clear();
      for (auto& d : s.dims) d.open = false, d.priority = -1;
      m.ops[ar].sharding = s;
      out.push_back(ar);
      remap.resize(m.values.size());
      m.ops[o].operands[k] = remap.back() = m.ops[ar].results[0];
    }
  };
  const std::vector<OpId> body = f->body.ops;
  for (OpId o : body) {
    for (ValueId& v : m.ops[o].operands) v = remap[v];
    if (m.ops[o].name == "func.return") {
      // Results keep the partial sums their declared sharding keeps.
      reduce_unreduced(o, [&](size_t k) {
        const auto& want = k < f->results.size() ? f->results[k].sharding : std::nullopt;
        return want ? want->unreduced : std::vector<AxisRef>{};
      });
    } else if (m.ops[o].name != "stablehlo.constant") {
      // A reshard or constraint keeps what its target keeps; every other op sums first.
      const std::vector<AxisRef> keep =
          m.ops[o].sharding ? m.ops[o].sharding->unreduced : std::vector<AxisRef>{};
      reduce_unreduced(o, [&](size_t) { return keep; });
    }
    const Op op = m.ops[o];  // a copy: reshard() below grows m.ops
    if (op.name == "func.return") {
      for (size_t k = 0; k < op.operands.size(); ++k) {
        const auto& want = f->results[k].sharding;
        ValueId v = op.operands[k];
        if (want && !same_placement(math, current(v), *want)) {
          ValueId nv = reshard(v, *want, op.loc);
          m.ops[o].operands[k] = nv;
        }
      }
      out.push_back(o);
      continue;
    }
    // Sharding ops, constants and collectives written in the program keep what they have.
    const bool written_collective =
        op.name == "stablehlo.all_gather" || op.name == "stablehlo.all_reduce" ||
        op.name == "stablehlo.reduce_scatter" || op.name == "stablehlo.all_to_all" ||
        op.name == "stablehlo.collective_permute";
    // (Inside a partial manual computation's body they carry a rule along the free axes.)
    if (op.sharding || op.name == "stablehlo.constant" ||
        (written_collective && !op.attr("sdy.sharding_rule"))) {
      out.push_back(o);
      continue;
    }
    FactorRule rule = MESHPLAN_TRY(sharding_rule(m, op));
    const size_t nf = rule.factor_sizes.size();
    // Factor shardings: what the operands hold first (common prefix among them), so that a
    // sharded contracting dim stays sharded and yields partial sums; factors no operand shards
    // take the result's sharding. An axis serves one factor only.
    std::vector<std::vector<AxisRef>> fs(nf);
    std::vector<bool> from_operands(nf, false);
    std::vector<std::optional<std::vector<AxisRef>>> opc(nf);
    for (size_t k = 0; k < op.operands.size(); ++k) {
      auto proj = project(math, rule, rule.operands[k], current(op.operands[k]));
      for (const auto& dim : rule.operands[k])
        for (int f32 : dim) {
          size_t fi = static_cast<size_t>(f32);
          const auto& axes = proj[fi];
          if (!opc[fi]) {
            opc[fi] = axes;
          } else {
            size_t n = 0;
            while (n < opc[fi]->size() && n < axes.size() && (*opc[fi])[n] == axes[n]) ++n;
            if (!(axes.size() > opc[fi]->size() && n == opc[fi]->size())) opc[fi]->resize(n);
          }
        }
    }
    std::vector<AxisRef> used;
    auto take = [&](size_t fi, const std::vector<AxisRef>& axes) {
      std::vector<AxisRef> ok;
      for (const AxisRef& a : axes) {
        if (std::any_of(used.begin(), used.end(),
                        [&](const AxisRef& u) { return math.overlaps(u, a); }))
          break;
        ok.push_back(a);
      }
      used.insert(used.end(), ok.begin(), ok.end());
      fs[fi] = ok;
    };
    for (size_t fi = 0; fi < nf; ++fi)
      if (!rule.need_replication[fi] && opc[fi] && !opc[fi]->empty()) {
        take(fi, *opc[fi]);
        from_operands[fi] = true;
      }
    for (size_t k = 0; k < op.results.size(); ++k) {
      auto proj = project(math, rule, rule.results[k], current(op.results[k]));
      for (const auto& dim : rule.results[k])
        for (int f32 : dim) {
          size_t fi = static_cast<size_t>(f32);
          if (!rule.need_replication[fi] && !from_operands[fi] && fs[fi].empty())
            take(fi, proj[fi]);
        }
    }
    // A factor can only be sharded where every factor before it in the same dim is fully
    // sharded (a dim's shards are contiguous ranges): e.g. reshape [8, 8{"x"}] -> [64] cannot
    // keep "x" on the minor factor, so the operand is resharded first (as Shardy does).
    for (bool changed = true; changed;) {
      changed = false;
      auto legalize = [&](const std::vector<std::vector<int>>& dims) {
        for (const auto& dim : dims) {
          bool full = true;
          for (int f32 : dim) {
            auto& axes = fs[static_cast<size_t>(f32)];
            if (!full && !math.without_trivial(axes).empty()) {
              axes.clear();
              changed = true;
            }
            full &= math.product(axes) == rule.factor_sizes[static_cast<size_t>(f32)];
          }
        }
      };
      for (const auto& dims : rule.operands) legalize(dims);
      for (const auto& dims : rule.results) legalize(dims);
    }
    auto derived = [&](const std::vector<std::vector<int>>& dims, size_t rank) {
      TensorSharding want = replicated_sharding(mesh->name, rank);
      for (size_t d = 0; d < dims.size(); ++d) {
        for (int f32 : dims[d]) {
          const auto& axes = fs[static_cast<size_t>(f32)];
          want.dims[d].axes.insert(want.dims[d].axes.end(), axes.begin(), axes.end());
          if (math.product(axes) != rule.factor_sizes[static_cast<size_t>(f32)]) break;
        }
        want.dims[d].axes = math.normalize(want.dims[d].axes);
      }
      return want;
    };
    // Operands: reshard to what the factor shardings need.
    for (size_t k = 0; k < op.operands.size(); ++k) {
      ValueId v = op.operands[k];
      TensorSharding want = derived(rule.operands[k], m.values[v].type.shape.size());
      if (!same_placement(math, current(v), want)) m.ops[o].operands[k] = reshard(v, want, op.loc);
    }
    out.push_back(o);
    // Results: partial sums along sharded reduction factors become an all_reduce; a result
    // placed otherwise than propagation decided is resharded after the op.
    std::vector<AxisRef> reduce;
    for (size_t fi = 0; fi < nf; ++fi)
      if (rule.reduction[fi]) {
        auto nontrivial = math.without_trivial(fs[fi]);
        reduce.insert(reduce.end(), nontrivial.begin(), nontrivial.end());
      }
    for (size_t k = 0; k < m.ops[o].results.size(); ++k) {
      ValueId r = m.ops[o].results[k];
      TensorSharding wanted = current(r);
      TensorSharding actual = derived(rule.results[k], m.values[r].type.shape.size());
      bool moved = !same_placement(math, wanted, actual);
      if (moved && k < m.ops[o].shardings.size()) {
        for (size_t d = 0; d < actual.dims.size(); ++d) actual.dims[d].open = wanted.dims[d].open;
        m.ops[o].shardings[k] = actual;
      }
      ValueId last = r;
      if (!reduce.empty()) {
        OpId ar = m.add_op("sdy.all_reduce", {r}, {m.values[r].type}, m.ops[o].loc);
        m.ops[ar].reduce_axes = reduce;
        m.ops[ar].sharding = actual;
        for (auto& d : m.ops[ar].sharding->dims) d.open = false, d.priority = -1;
        if (rule.reduction_kind != "sum") {
          Attr kind;
          kind.kind = Attr::Kind::string;
          kind.text = rule.reduction_kind;
          m.ops[ar].attrs.emplace_back("meshplan.reduction", kind);
        }
        out.push_back(ar);
        remap.resize(m.values.size());
        last = remap.back() = m.ops[ar].results[0];
      }
      if (moved) {
        TensorSharding to = wanted;
        for (auto& d : to.dims) d.open = false, d.priority = -1;
        last = reshard(last, to, m.ops[o].loc);
      }
      remap[r] = last;
    }
  }
  f->body.ops = out;
  return {};
}

}  // namespace meshplan::planner::shlo
