// Unreduced values in the pipeline strategy: an sdy.all_reduce before each use that drops
// unreduced axes (sharding_unreduced.hpp).
#include "mesh/sharding_unreduced.hpp"

#include <algorithm>
#include <optional>

namespace meshplan::planner::shlo {

namespace {

/// The sharding `v` carries: a function argument's, or the one its defining op gives it.
std::optional<TensorSharding> sharding_of(const Module& m, ValueId v) {
  const Value& val = m.values[v];
  if (val.def == kNone) return val.sharding;
  const Op& def = m.ops[val.def];
  if (def.sharding && def.results.size() == 1) return def.sharding;
  auto it = std::find(def.results.begin(), def.results.end(), v);
  size_t k = static_cast<size_t>(it - def.results.begin());
  if (def.shardings.size() != def.results.size() || k >= def.shardings.size()) return {};
  return def.shardings[k];
}

/// The unreduced axes the use of operand `k` by `op` keeps.
std::vector<AxisRef> kept_unreduced(const Func& f, const Op& op, size_t k) {
  if (op.name == "sdy.reshard" || op.name == "sdy.sharding_constraint")
    return op.sharding ? op.sharding->unreduced : std::vector<AxisRef>{};
  if (op.name == "func.return")
    return k < f.results.size() && f.results[k].sharding ? f.results[k].sharding->unreduced
                                                         : std::vector<AxisRef>{};
  if (op.sharding) return op.sharding->unreduced;
  if (!op.shardings.empty()) return op.shardings[0].unreduced;
  return {};
}

void insert_in(Module& m, const Func& f, Block& b) {
  std::vector<OpId> out;
  out.reserve(b.ops.size());
  for (OpId o : b.ops) {
    for (size_t k = 0; k < m.ops[o].operands.size(); ++k) {
      ValueId v = m.ops[o].operands[k];
      std::optional<TensorSharding> s = sharding_of(m, v);
      if (!s || s->unreduced.empty()) continue;
      std::vector<AxisRef> keep = kept_unreduced(f, m.ops[o], k);
      std::vector<AxisRef> reduce, kept;
      for (const AxisRef& a : s->unreduced)
        (std::find(keep.begin(), keep.end(), a) == keep.end() ? reduce : kept).push_back(a);
      if (reduce.empty()) continue;
      TensorType t = m.values[v].type;
      OpId ar = m.add_op("sdy.all_reduce", {v}, {t}, m.ops[o].loc);
      m.ops[ar].reduce_axes = reduce;
      if (!s->unreduced_kind.empty())
        m.ops[ar].set_prop("reduction", Attr::keyword(s->unreduced_kind));
      s->unreduced = kept;
      m.ops[ar].sharding = *s;
      m.ops[o].operands[k] = m.ops[ar].results[0];
      out.push_back(ar);
    }
    out.push_back(o);
    for (size_t r = 0; r < m.ops[o].regions.size(); ++r) {
      Block region = std::move(m.ops[o].regions[r]);  // add_op may move m.ops
      insert_in(m, f, region);
      m.ops[o].regions[r] = std::move(region);
    }
  }
  b.ops = std::move(out);
}

}  // namespace

void insert_unreduced_all_reduces(Module& m) {
  for (Func& f : m.funcs) insert_in(m, f, f.body);
}

}  // namespace meshplan::planner::shlo
