// Schedule and liveness.
#include "meshplan/planner/schedule.hpp"

#include <algorithm>
#include <sstream>

namespace meshplan::planner {

Schedule Schedule::build(const Graph& g) {
  Schedule s;
  int n = static_cast<int>(g.ops.size());
  s.order_.resize(g.ops.size());
  for (int i = 0; i < n; ++i) s.order_[i] = static_cast<OpId>(i);
  s.def_.assign(g.values.size(), -1);
  s.last_.assign(g.values.size(), -1);
  for (int pos = 0; pos < n; ++pos) {
    const Op& op = g.ops[s.order_[pos]];
    for (ValueId r : op.results) s.def_[r] = pos;
    for (ValueId v : op.operands) s.last_[v] = std::max(s.last_[v], pos);
  }
  for (ValueId v : g.outputs) s.last_[v] = n;
  // A value nothing reads dies right after it is defined (arguments: after the first op).
  auto dies = [&](ValueId v) { return s.last_[v] >= 0 ? s.last_[v] : std::max(s.def_[v], 0); };
  // Counted first, so each position's list is allocated once at its size (growing them was
  // most of this function's allocations), then filled in value order (sorted by id).
  std::vector<uint32_t> count(g.ops.size(), 0);
  for (ValueId v = 0; v < g.values.size(); ++v)
    if (int d = dies(v); d < n) ++count[d];
  s.dying_.resize(g.ops.size());
  for (int pos = 0; pos < n; ++pos) s.dying_[pos].reserve(count[pos]);
  for (ValueId v = 0; v < g.values.size(); ++v)
    if (int d = dies(v); d < n) s.dying_[d].push_back(v);
  return s;
}

std::string Schedule::print(const Graph& g) const {
  std::ostringstream out;
  for (size_t pos = 0; pos < order_.size(); ++pos) {
    const Op& op = g.ops[order_[pos]];
    out << pos << ": " << op.name << " frees";
    for (ValueId v : dying_[pos]) out << " %" << g.values[v].name;
    out << "\n";
  }
  return out.str();
}

}  // namespace meshplan::planner
