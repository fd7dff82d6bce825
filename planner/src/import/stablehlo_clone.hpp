// Copying an op with its regions inside a module (internal to planner/): the call inliner and
// the sdy-propagation stage's call-graph flattening both copy function bodies op by op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

struct CloneOptions {
  bool region_arg_shardings = false;  ///< Copies of region arguments keep their shardings.
  size_t max_ops = SIZE_MAX;          ///< More ops in the module is an error located at `at`.
  const Location* at = nullptr;
};

/// A copy of op `o` (and of its regions) appended to `m`, reading the operands `vmap` maps (the
/// others as they are); the copy's results and region arguments join `vmap`.
inline Result<OpId> clone_op(Module& m, OpId o, std::map<ValueId, ValueId>& vmap,
                             const CloneOptions& c) {
  if (m.ops.size() >= c.max_ops)
    return fail(ErrorCode::invalid_argument, c.at ? c.at->str() : std::string("<module>"),
                ": inlining calls makes more than ", c.max_ops, " ops");
  Op op = m.ops[o];
  for (ValueId& v : op.operands)
    if (auto it = vmap.find(v); it != vmap.end()) v = it->second;
  for (Block& r : op.regions) {
    for (ValueId& a : r.args) {
      ValueId n = m.add_value(m.values[a].type, kNone, m.values[a].index);
      if (c.region_arg_shardings) m.values[n].sharding = m.values[a].sharding;
      vmap[a] = n;
      a = n;
    }
    for (OpId& ro : r.ops) ro = MESHPLAN_TRY(clone_op(m, ro, vmap, c));
  }
  OpId id = static_cast<OpId>(m.ops.size());
  for (ValueId& v : op.results) {
    ValueId n = m.add_value(m.values[v].type, id, m.values[v].index);
    vmap[v] = n;
    v = n;
  }
  m.ops.push_back(std::move(op));
  return id;
}

}  // namespace meshplan::planner::shlo
