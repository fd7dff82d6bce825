// The op schedule and tensor liveness the layout and memory planners work from.
#pragma once

#include <string>
#include <vector>

#include "meshplan/planner/graph.hpp"

namespace meshplan::planner {

/// Ops in execution order and, per value, the positions that define and last use it.
/// Computed once by build(); const queries afterwards.
class Schedule {
 public:
  /// Schedule in the graph's (validated, topological) op order.
  static Schedule build(const Graph& graph);

  const std::vector<OpId>& order() const { return order_; }
  /// Position of the defining op; -1 for arguments.
  int defined_at(ValueId v) const { return def_[v]; }
  /// Position of the last op that reads v; `order().size()` for graph outputs (live to the end);
  /// -1 if nothing reads it.
  int last_use(ValueId v) const { return last_[v]; }
  /// Values freed after the op at `pos`, sorted by id: those whose last use is there, and those
  /// nothing reads (results: at their definition; arguments: after the first op).
  const std::vector<ValueId>& dying_at(int pos) const { return dying_[pos]; }

  std::string print(const Graph& graph) const;

 private:
  std::vector<OpId> order_;
  std::vector<int> def_, last_;
  std::vector<std::vector<ValueId>> dying_;
};

}  // namespace meshplan::planner
