// Shardy's partial sdy-insert-explicit-reshards (enable-full-version=false): only what must move
// before a later partitioner sees the module (partial sums a use drops, a dot result that can
// be computed where its operands already are, concatenates fed other shardings) gets an
// explicit reshard or all_reduce; other conflicts stay for the partitioner.
#include "mesh/spmd_reshards_partial.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include "mesh/sharding_rules_shardy.hpp"
#include "mesh/spmd_util.hpp"
#include "meshplan/planner/sharding.hpp"

namespace meshplan::planner::shlo {

namespace {

using Axes = std::vector<AxisRef>;

/// Shardy's axis set difference, adjacent sub-axes merged.
Axes axes_without(const AxisMath& math, const Axes& from, const Axes& minus) {
  return math.normalize(axes_minus(math, from, minus));
}


/// Two axis lists naming the same devices in the same order (`"x"` and `"x":(1)2` of "x"=2
/// alike).
bool same_axes(const AxisMath& math, const Axes& a, const Axes& b) {
  return math.normalize(math.without_trivial(a)) == math.normalize(math.without_trivial(b));
}

bool is_terminator(const Op& op) {
  return op.name == "func.return" || op.name == "stablehlo.return" || op.name == "sdy.return";
}

class PartialReshards {
 public:
  explicit PartialReshards(Module& m) : m_(m) {}

  Status run(Func& f) {
    f.body.ops = MESHPLAN_TRY(block(f.body.ops));
    // Function results: only the partial sums a result does not keep are summed (no reshard).
    if (f.body.ops.empty() || m_.ops[f.body.ops.back()].name != "func.return") return {};
    const OpId ret = f.body.ops.back();
    f.body.ops.pop_back();
    for (size_t k = 0; k < m_.ops[ret].operands.size(); ++k) {
      const auto& want = k < f.results.size() ? f.results[k].sharding : std::nullopt;
      sum_unreduced(ret, k, want ? want->unreduced : Axes{}, f.body.ops, false);
    }
    f.body.ops.push_back(ret);
    return {};
  }

  /// Concatenates whose operands are sharded otherwise than their result (the full version
  /// resolves them afterwards).
  const std::vector<OpId>& concatenates() const { return concats_; }

 private:
  ValueId mapped(ValueId v) const { return v < remap_.size() ? remap_[v] : v; }
  void map(ValueId from, ValueId to) {
    if (remap_.size() < m_.values.size()) {
      const size_t was = remap_.size();
      remap_.resize(m_.values.size());
      for (size_t i = was; i < remap_.size(); ++i) remap_[i] = static_cast<ValueId>(i);
    }
    remap_[from] = to;
  }

  /// A value's sharding, seen through propagation barriers (which pass it on unchanged).
  std::optional<TensorSharding> through_barriers(ValueId v) const {
    while (m_.values[v].def != kNone &&
           m_.ops[m_.values[v].def].name == "sdy.propagation_barrier" &&
           !m_.ops[m_.values[v].def].operands.empty())
      v = m_.ops[m_.values[v].def].operands[0];
    return sharding_of(m_, v);
  }

  /// Places `op` right after the producer of `v` in `ops` (at the start when `v` is produced
  /// elsewhere), as Shardy inserts after an operand.
  static void insert_after(const Module& m, std::vector<OpId>& ops, ValueId v, OpId op) {
    auto at = ops.begin();
    if (m.values[v].def != kNone) {
      auto def = std::find(ops.begin(), ops.end(), m.values[v].def);
      if (def != ops.end()) at = def + 1;
    }
    ops.insert(at, op);
  }

  /// Operand `k` of `user` has partial sums over axes `keep` does not hold: an sdy.all_reduce
  /// over those axes feeds the use instead. It goes at the end of `ops`, or (after_operand) right
  /// after the operand's producer in `ops`.
  void sum_unreduced(OpId user, size_t k, const Axes& keep, std::vector<OpId>& ops,
                     bool after_operand) {
    const ValueId v = m_.ops[user].operands[k];
    auto s = sharding_of(m_, v);
    if (!s || s->unreduced.empty()) return;
    const MeshDecl* mesh = m_.mesh(s->mesh);
    if (!mesh) return;
    AxisMath math{*mesh};
    const Axes reduce =
        mesh_order(math, axes_without(math, math.without_trivial(s->unreduced), keep));
    if (reduce.empty()) return;
    const OpId ar = m_.add_op("sdy.all_reduce", {v}, {m_.values[v].type}, m_.ops[user].loc);
    m_.ops[ar].reduce_axes = reduce;
    if (!s->unreduced_kind.empty())
      m_.ops[ar].set_prop("reduction", Attr::keyword(s->unreduced_kind));
    TensorSharding out = *s;
    out.unreduced = axes_without(math, math.without_trivial(s->unreduced), reduce);
    m_.ops[ar].sharding = out;
    m_.ops[user].operands[k] = m_.ops[ar].results[0];
    if (after_operand)
      insert_after(m_, ops, v, ar);
    else
      ops.push_back(ar);
  }

  /// The mesh every sharded operand and result of `op` names (meshes that differ only in their
  /// device order count as one); null when none is sharded, they disagree or it is maximal.
  const MeshDecl* common_mesh(const Op& op) const {
    const MeshDecl* found = nullptr;
    auto see = [&](const std::optional<TensorSharding>& s) {
      if (!s) return true;
      const MeshDecl* d = m_.mesh(s->mesh);
      if (!d) return false;
      if (found && found != d && found->axes != d->axes) return false;
      if (!found) found = d;
      return true;
    };
    for (ValueId v : op.operands)
      if (!see(through_barriers(v))) return nullptr;
    for (ValueId v : op.results)
      if (!see(sharding_of(m_, v))) return nullptr;
    if (found && found->axes.empty()) return nullptr;
    return found;
  }

  Result<std::vector<OpId>> block(std::vector<OpId> ops);
  Status region_op(OpId o, std::vector<OpId>& out);
  Status manual_computation(OpId o, std::vector<OpId>& out);
  Status dot(OpId o, const MeshDecl& mesh, std::vector<OpId>& out);
  Status reduction_all_reduce(OpId o, const MeshDecl& mesh, std::vector<OpId>& out);

  Module& m_;
  std::vector<ValueId> remap_;
  std::vector<OpId> concats_;
};

Result<std::vector<OpId>> PartialReshards::block(std::vector<OpId> ops) {
  std::vector<OpId> out;
  for (OpId o : ops) {
    for (ValueId& v : m_.ops[o].operands) v = mapped(v);
    const std::string name = m_.ops[o].name;
    if (is_terminator(m_.ops[o]) || name == "func.call") {
      // A call's operands were resharded to the callee's arguments already (the full version).
      out.push_back(o);
      continue;
    }
    if (name == "sdy.manual_computation") {
      MESHPLAN_TRY(manual_computation(o, out));
      continue;
    }
    // Partial sums an operand carries are summed over the axes the op's first result does not
    // keep unreduced (a reshard's target, a collective's out sharding).
    if (!m_.ops[o].results.empty()) {
      auto r0 = sharding_of(m_, m_.ops[o].results[0]);
      const Axes keep = r0 ? r0->unreduced : Axes{};
      for (size_t k = 0; k < m_.ops[o].operands.size(); ++k) sum_unreduced(o, k, keep, out, false);
    }
    MESHPLAN_TRY(region_op(o, out));
  }
  return out;
}

/// An op other than a manual computation, after its operands' partial sums: its regions, then
/// the conflicts the partial version resolves.
Status PartialReshards::region_op(OpId o, std::vector<OpId>& out) {
  for (size_t r = 0; r < m_.ops[o].regions.size(); ++r) {
    std::vector<OpId> inner = MESHPLAN_TRY(block(m_.ops[o].regions[r].ops));
    m_.ops[o].regions[r].ops = std::move(inner);
  }
  const Op& op = m_.ops[o];
  out.push_back(o);
  if (op.sharding || op.name == "stablehlo.constant" || op.name == "sdy.constant" ||
      shardy_skips_op(m_, op))
    return {};
  const MeshDecl* mesh = common_mesh(op);
  if (!mesh) return {};
  if (op.name == "stablehlo.concatenate") {
    // Resolved by the full version when an operand's sharding is not the result's (exactly:
    // open dims and priorities count).
    const auto result = sharding_of(m_, op.results[0]);
    for (ValueId v : op.operands)
      if (sharding_of(m_, v) != result) {
        concats_.push_back(o);
        break;
      }
    return {};
  }
  if (op.name == "stablehlo.dot" || op.name == "stablehlo.dot_general")
    MESHPLAN_TRY(dot(o, *mesh, out));
  return reduction_all_reduce(o, *mesh, out);
}

/// Shardy's data-flow edges of a manual computation: each operand keeps only the partial sums
/// its in_sharding keeps, each returned value those its out_sharding keeps (local view).
Status PartialReshards::manual_computation(OpId o, std::vector<OpId>& out) {
  for (size_t k = 0; k < m_.ops[o].operands.size(); ++k) {
    const Axes keep =
        k < m_.ops[o].in_shardings.size() ? m_.ops[o].in_shardings[k].unreduced : Axes{};
    sum_unreduced(o, k, keep, out, false);
  }
  out.push_back(o);
  if (m_.ops[o].regions.empty()) return {};
  std::vector<OpId> inner = MESHPLAN_TRY(block(m_.ops[o].regions[0].ops));
  if (!inner.empty() && m_.ops[inner.back()].name == "sdy.return") {
    const OpId ret = inner.back();
    for (size_t k = 0; k < m_.ops[ret].operands.size(); ++k) {
      Axes keep =
          k < m_.ops[o].out_shardings.size() ? m_.ops[o].out_shardings[k].unreduced : Axes{};
      // Manual axes are not unreduced inside the body.
      std::erase_if(keep, [&](const AxisRef& a) {
        return std::find(m_.ops[o].manual_axes.begin(), m_.ops[o].manual_axes.end(), a.name) !=
               m_.ops[o].manual_axes.end();
      });
      sum_unreduced(ret, k, keep, inner, true);
    }
  }
  m_.ops[o].regions[0].ops = std::move(inner);
  return {};
}

/// Shardy's dot rule of the partial version: when lhs and rhs agree on every factor they share,
/// no axis splits two non-contracting dims, and the result differs from them on exactly one
/// factor whose operand axes are non-empty, whose operand is at least as large as the result,
/// and whose result axes are exactly the contracting axes, the dot computes that factor as the
/// operand holds it and an sdy.reshard after it restores the result's sharding. (A more split
/// dot and a reshard of the smaller result, instead of a reduce-scatter of a larger operand.)
Status PartialReshards::dot(OpId o, const MeshDecl& mesh, std::vector<OpId>& out) {
  const Op op = m_.ops[o];
  if (op.operands.size() != 2 || op.results.size() != 1) return {};
  const auto result = sharding_of(m_, op.results[0]);
  if (!result) return {};
  auto rule_or = sharding_rule(m_, op);
  if (!rule_or) return {};
  const FactorRule& rule = *rule_or;
  AxisMath math{mesh};
  const size_t nf = rule.factor_sizes.size();
  // Per tensor: the axes of each factor it holds (each dim of a dot is one factor).
  auto factors = [&](const std::vector<std::vector<int>>& dims,
                     const std::optional<TensorSharding>& s, std::vector<std::optional<Axes>>& axes,
                     std::vector<size_t>& dim_of) {
    axes.assign(nf, std::nullopt);
    dim_of.assign(nf, 0);
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d].size() != 1) return false;
      const auto f = static_cast<size_t>(dims[d][0]);
      axes[f] = s && d < s->dims.size() ? s->dims[d].axes : Axes{};
      dim_of[f] = d;
    }
    return true;
  };
  std::vector<std::optional<Axes>> lhs, rhs, res;
  std::vector<size_t> lhs_dim, rhs_dim, res_dim;
  if (!factors(rule.operands[0], through_barriers(op.operands[0]), lhs, lhs_dim) ||
      !factors(rule.operands[1], through_barriers(op.operands[1]), rhs, rhs_dim) ||
      !factors(rule.results[0], result, res, res_dim))
    return {};
  const int64_t lhs_size = m_.values[op.operands[0]].type.volume();
  const int64_t rhs_size = m_.values[op.operands[1]].type.volume();
  const int64_t res_size = m_.values[op.results[0]].type.volume();
  std::optional<size_t> conflict;
  Axes conflict_axes, reduction, seen;
  for (size_t f = 0; f < nf; ++f) {
    Axes operand;
    int64_t operand_size = 0;
    if (lhs[f] && rhs[f]) {  // batching or contracting
      if (!same_axes(math, *lhs[f], *rhs[f])) return {};
      operand = *lhs[f];
      operand_size = std::max(lhs_size, rhs_size);
      if (rule.reduction[f]) {
        reduction.insert(reduction.end(), operand.begin(), operand.end());
        continue;
      }
    } else if (lhs[f] || rhs[f]) {  // non-contracting
      operand = lhs[f] ? *lhs[f] : *rhs[f];
      operand_size = lhs[f] ? lhs_size : rhs_size;
      for (const AxisRef& a : operand) {
        for (const AxisRef& b : seen)
          if (math.overlaps(a, b)) return {};
        seen.push_back(a);
      }
    } else {
      continue;
    }
    if (!res[f]) return {};
    if (same_axes(math, *res[f], operand)) continue;
    if (math.without_trivial(operand).empty() || conflict || res_size > operand_size) return {};
    conflict = f;
    conflict_axes = operand;
  }
  if (!conflict) return {};
  const Axes& res_axes = *res[*conflict];
  if (math.without_trivial(res_axes).empty() || !same_axes(math, res_axes, reduction)) return {};
  TensorSharding computed = *result;
  computed.dims[res_dim[*conflict]].axes = conflict_axes;
  m_.ops[o].shardings.assign(1, computed);
  const OpId r = m_.add_op("sdy.reshard", {op.results[0]}, {m_.values[op.results[0]].type}, op.loc);
  m_.ops[r].sharding = *result;
  out.push_back(r);
  map(op.results[0], m_.ops[r].results[0]);
  return {};
}

/// A result that keeps partial sums (unreduced axes): the reduction factors' axes, which every
/// operand must state alike, that the result does not keep are all-reduced after the op. A
/// result without partial sums is left to the partitioner.
Status PartialReshards::reduction_all_reduce(OpId o, const MeshDecl& mesh, std::vector<OpId>& out) {
  const Op op = m_.ops[o];
  if (op.results.empty()) return {};
  const auto r0 = sharding_of(m_, op.results[0]);
  if (!r0 || r0->unreduced.empty()) return {};
  AxisMath math{mesh};
  auto rule_or = sharding_rule(m_, op);
  if (op.name == "stablehlo.reduce") {
    // Shardy's rule of a reduce (any body, any number of inputs): the inputs share their dims,
    // each reduced dim a reduction factor, the init values scalars.
    const auto dims = op.prop("dimensions");
    const size_t inputs = op.operands.size() / 2;
    if (!dims || inputs == 0) return {};
    FactorRule r;
    const size_t rank = m_.values[op.operands[0]].type.shape.size();
    std::vector<std::vector<int>> in(rank);
    for (size_t d = 0; d < rank; ++d) {
      in[d] = {static_cast<int>(d)};
      r.factor_sizes.push_back(m_.values[op.operands[0]].type.shape[d]);
      r.reduction.push_back(std::find(dims->ints.begin(), dims->ints.end(),
                                      static_cast<int64_t>(d)) != dims->ints.end());
      r.need_replication.push_back(false);
    }
    r.operands.assign(inputs, in);
    r.operands.resize(op.operands.size());  // the init values: no dims
    rule_or = r;
  }
  if (!rule_or) return {};
  const FactorRule& rule = *rule_or;
  Axes reduction;
  for (size_t f = 0; f < rule.factor_sizes.size(); ++f) {
    if (!rule.reduction[f]) continue;
    std::optional<Axes> common;
    for (size_t k = 0; k < op.operands.size(); ++k) {
      const auto& dims = rule.operands[k];
      for (size_t d = 0; d < dims.size(); ++d) {
        if (std::find(dims[d].begin(), dims[d].end(), static_cast<int>(f)) == dims[d].end())
          continue;
        const auto s = through_barriers(op.operands[k]);
        const Axes axes =
            project(math, rule, dims, s ? *s : replicated_sharding(mesh.name, dims.size()))[f];
        if (common && !same_axes(math, *common, axes))
          return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                      ": the result keeps partial sums (unreduced ", axes_text(r0->unreduced),
                      ") but its operands are split differently "
                      "along a reduced dim (",
                      axes_text(*common), " and ", axes_text(axes), ")");
        common = axes;
      }
    }
    if (common) reduction.insert(reduction.end(), common->begin(), common->end());
  }
  const Axes reduce =
      mesh_order(math, axes_without(math, math.without_trivial(reduction), r0->unreduced));
  if (reduce.empty()) return {};
  for (ValueId r : op.results) {
    const auto s = sharding_of(m_, r);
    const OpId ar = m_.add_op("sdy.all_reduce", {r}, {m_.values[r].type}, op.loc);
    m_.ops[ar].reduce_axes = reduce;
    if (!r0->unreduced_kind.empty())
      m_.ops[ar].set_prop("reduction", Attr::keyword(r0->unreduced_kind));
    m_.ops[ar].sharding = s ? *s : replicated_sharding(mesh.name, m_.values[r].type.shape.size());
    out.push_back(ar);
    map(r, m_.ops[ar].results[0]);
  }
  return {};
}

}  // namespace

Status insert_explicit_reshards_partial(Module& m) {
  Func* f = m.entry();
  if (!f) return {};
  PartialReshards pass(m);
  MESHPLAN_TRY(pass.run(*f));
  const std::vector<OpId>& concats = pass.concatenates();
  if (concats.empty()) return {};
  return insert_explicit_reshards_on(
      m, [&](OpId o) { return std::find(concats.begin(), concats.end(), o) != concats.end(); });
}

}  // namespace meshplan::planner::shlo
