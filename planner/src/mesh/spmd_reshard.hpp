// The collective sequence of one reshard (Shardy's sdy-reshard-to-collectives semantics): which
// all_slice, collective_permute, all_to_all and all_gather turn a source sharding into a target
// sharding, each with the sharding it leaves.
#pragma once

#include <string>
#include <vector>

#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// One collective of a reshard. `kind` is "all_slice", "all_gather" (per-dim `dim_axes`),
/// "all_to_all" (`a2a`) or "collective_permute"; `out` is the closed sharding after it.
struct ReshardStep {
  std::string kind;
  std::vector<std::vector<AxisRef>> dim_axes;
  Op::AllToAllParam a2a;
  TensorSharding out;
};

/// The collectives that reshard a value of `shape` from `in` to `out` on `mesh` (both shardings
/// of the same rank on meshes with the same axes; `out_mesh` names the target's mesh, which may
/// order device ids differently). The order follows Shardy: per round, an all_slice of the axes
/// the target adds (on the dim that wants them when it has room, else where an all_to_all will
/// move them), a collective_permute when axes must be replaced or reordered in place (or the
/// device order changes), all_to_alls moving axes between dims, then an all_gather of what the
/// target drops. Size-1 axes split nothing and are left out. An error when two rounds do not
/// reach the target (non-divisible axis sizes).
Result<std::vector<ReshardStep>> plan_reshard(const MeshDecl& mesh, const TensorSharding& in,
                                              const TensorSharding& out,
                                              const std::vector<int64_t>& shape);

/// A sharding on `main` that splits each dim into as many pieces as `s` on `other` (a mesh of
/// the same devices laid out otherwise) does: whole axes of `main` where they fit, else
/// sub-axes, major first. A collective_permute turns one into the other. An error at `where`
/// when `main`'s axis sizes cannot make those piece counts.
Result<TensorSharding> mesh_counterpart(const MeshDecl& main, const MeshDecl& other,
                                        const TensorSharding& s, const std::string& where);

/// How reshards become collectives. `shardy`: plan_reshard's sequence. `physical`: that
/// sequence when each of its collectives runs over one whole mesh axis or the whole mesh (the
/// groups an emulated mesh runs), else all_gather then all_slice. `gather_slice`: always
/// all_gather of what the target drops, then all_slice of what it adds (per dim beyond the
/// common prefix).
enum class ReshardMode { shardy, physical, gather_slice };

/// reshards_to_collectives in the given mode (the public one uses `shardy`).
Status reshards_to_collectives(Module& m, ReshardMode mode);

/// The pipeline from the wrapped global program to the mapped per-device program
/// (collectives, local shapes, closed shardings, verification, mesh mapping). The collectives
/// follow Shardy; when some collective of that sequence runs over groups the physical mesh
/// has no collective for, the reshards are redone in `physical`, then `gather_slice` mode.
/// Stopping at the collectives or local-shapes stage shows Shardy's sequence.
Status lower_to_local(Module& m, const PipelineOptions& options);

}  // namespace meshplan::planner::shlo
