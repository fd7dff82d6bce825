// Factor-based sharding: per-op sharding rules (einsum-like factor mappings), axis arithmetic
// with sub-axes, and the propagation pass that fills in a sharding for every value.
#pragma once

#include <string>
#include <vector>

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// How an op's tensor dimensions map to factors. Each operand/result dim lists its factors,
/// major first (a reshape dim can hold several). A factor in operands only is a reduction
/// factor (contracting dim, reduced dim): sharding it yields partial sums. need_replication
/// factors (concat/slice dims, spatial conv dims, ...) are never sharded.
struct FactorRule {
  std::vector<int64_t> factor_sizes;
  std::vector<std::vector<std::vector<int>>> operands;
  std::vector<std::vector<std::vector<int>>> results;
  std::vector<bool> reduction;
  std::vector<bool> need_replication;
  /// True for ops propagated in the first round (elementwise-like: no factor changes size or
  /// disappears); dot/reduce/conv come after, as Shardy's op priorities do.
  bool pass_through = false;
  /// How partial sums along reduction factors combine: "sum" or "max".
  std::string reduction_kind = "sum";
  /// `"i j, j k -> i k"`, factors named a, b, c... (with sizes).
  std::string print() const;
};

/// The rule for one op, or `unimplemented` naming the op and where it is.
Result<FactorRule> sharding_rule(const Module& module, const Op& op);

/// Axis arithmetic over one mesh.
struct AxisMath {
  const MeshDecl& mesh;
  /// Size of a (sub-)axis reference.
  int64_t size(const AxisRef& a) const;
  int64_t product(const std::vector<AxisRef>& axes) const;
  /// True when two references share devices (same axis, overlapping sub-ranges).
  bool overlaps(const AxisRef& a, const AxisRef& b) const;
  /// Merges adjacent sub-axes of one axis back together ("x":(1)2,"x":(2)2 -> "x").
  std::vector<AxisRef> normalize(std::vector<AxisRef> axes) const;
  /// Drops axes of size 1 (they do not split anything).
  std::vector<AxisRef> without_trivial(const std::vector<AxisRef>& axes) const;
};

/// The sharding `s` projected onto factors of one tensor of `rule`: per factor the axes.
/// Axes that cannot be expressed on the factors (indivisible) are dropped.
std::vector<std::vector<AxisRef>> project(const AxisMath& math, const FactorRule& rule,
                                          const std::vector<std::vector<int>>& dims,
                                          const TensorSharding& s);

/// A fully open, unsharded sharding of the given rank.
TensorSharding open_sharding(const std::string& mesh, size_t rank);
/// A fully closed, replicated sharding of the given rank.
TensorSharding replicated_sharding(const std::string& mesh, size_t rank);
/// Same placement (dims' axes, ignoring size-1 axes, open flags and priorities).
bool same_placement(const AxisMath& math, const TensorSharding& a, const TensorSharding& b);

/// Checks every sharding the module states (arguments, results, ops, manual computations)
/// against its mesh: the mesh is declared, each axis or sub-axis is one of its axes, no axis is
/// used twice in one sharding, ranks match and each dim is divisible by its axes' devices.
/// Errors name the value, the axis and the mesh, at the op's or function's location.
Status verify_shardings(const Module& module);

/// One sharding of the value named `what` (type `type`, stated at `loc`) against its mesh: the
/// mesh exists, the rank matches, every axis or sub-axis is the mesh's, no axis is used twice;
/// with `require_divisible`, every split dim divides by its devices. The one sharding check,
/// used when a module is read (without divisibility) and before the mesh pipeline (with it).
Status check_sharding(const Module& module, const TensorSharding& sharding, const TensorType& type,
                      const std::string& what, const Location& loc, bool require_divisible);

/// The batch factor of a program: the factor of its first result's dim 0, followed back through
/// every op's factor rule to the argument dims that carry it (a class of dims no op reduces over
/// or needs whole). `dims` lists (argument index, dim) in argument order; empty when there is no
/// such factor, with `why` saying which op stops it.
struct BatchAnalysis {
  std::vector<std::pair<size_t, size_t>> dims;
  int64_t size = 0;  ///< The factor's size (gcd over the dims that carry it).
  std::string why;
};
Result<BatchAnalysis> analyze_batch(const Module& module);

/// Counters the propagation reports (for tests and the benchmark).
struct PropagationStats {
  int64_t op_visits = 0;
  int64_t updates = 0;
};

/// Shardy-style propagation on the entry function: fills a sharding for every op result and
/// function result from the arguments', results' and constraints' shardings. Conflicts are
/// resolved by user priority (p0 first), then op priority (pass-through ops before dot/reduce),
/// then the longest common prefix of axes; closed dimensions and replicated axes are never
/// extended; an axis never shards two dims of one tensor. Functions already holding an
/// sdy.manual_computation are left alone.
Result<PropagationStats> propagate(Module& module);

}  // namespace meshplan::planner::shlo
