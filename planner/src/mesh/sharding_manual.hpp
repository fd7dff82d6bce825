// sdy.manual_computation in Shardy's propagation (sdy dialect docs, ManualComputationOp): its
// operands flow into the body's block arguments and the body's returned values into its
// results, as data-flow edges. Outside the boundary shardings are global (the manual axes
// included, as the major-most axes of each dim of in_shardings / out_shardings); inside they
// are local and name free axes only. Manual axes never cross the boundary.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// One edge across a manual computation's boundary: operand k and block argument k, or
/// result k and the k-th value the body returns.
struct ManualEdge {
  OpId mc = kNone;
  size_t index = 0;
  bool result = false;  ///< A result edge (else an operand edge).
  ValueId global = 0;   ///< The operand or result (outside).
  ValueId local = 0;    ///< The block argument or returned value (inside).
};

/// The edges of every sdy.manual_computation among `ops`.
std::vector<ManualEdge> manual_edges(const Module& m, const std::vector<OpId>& ops);

/// `s` as the body sees it: the manual axes leave each dim (the leading ones, and a dim stops
/// at a manual axis that follows a free one), and the replicated / unreduced lists.
TensorSharding manual_local(const TensorSharding& s, const std::vector<std::string>& manual);

/// The local view of what `edge.global` holds; a value without a sharding is seen as open
/// (on the mesh of the edge's in/out sharding), so that it can take the manual axes.
std::optional<TensorSharding> manual_view(const Module& m, const ManualEdge& edge,
                                          const std::optional<TensorSharding>& global);

/// Starting shardings: each block argument holds its in_sharding's local view, each result
/// its out_sharding. A result may not take a manual axis its out_sharding does not name: such
/// axes are listed as replicated on it while propagating (manual_write_back removes them).
void manual_seed(const Module& m, const std::vector<ManualEdge>& edges,
                 std::vector<std::optional<TensorSharding>>& shard);

/// After the local view of `edge.global` (`local`) changed or not, gives the global value the
/// global form of `local` (the manual axes of the in/out sharding first, then `local`'s axes)
/// where that extends what it holds. True when the global value's sharding grew.
bool manual_lift(const Module& m, const ManualEdge& edge, const TensorSharding& local,
                 std::optional<TensorSharding>& global);

/// Writes the propagated shardings to the manual computations: in_shardings from the block
/// arguments and out_shardings from the results, unless an explicit sdy.data_flow_edge owns
/// that edge's sharding (then the stated sharding stays). Results carry no per-op sharding.
void manual_write_back(Module& m, const std::vector<ManualEdge>& edges,
                       const std::vector<std::optional<TensorSharding>>& shard);

/// For a block argument of a manual computation: its in_sharding's local view; else none.
std::optional<TensorSharding> manual_arg_sharding(const Module& m, ValueId v);

/// Checks every manual computation against its meshes: each manual axis is an axis of the
/// mesh of every in/out sharding, in/out shardings have the rank of their values, and the
/// block arguments / returned values have the local shapes (global dims divided by the
/// dims' manual axes). Errors name the manual computation, the value, the axis and the mesh.
Status verify_manual_computations(const Module& m);

}  // namespace meshplan::planner::shlo
