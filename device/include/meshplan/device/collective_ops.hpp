// The collective ops of ops.def (all_gather, reduce_scatter, all_reduce, all_to_all,
// collective_permute, all_slice): which kinds they are, their groups and shape rules. One chip
// cannot run them (EmulatedDevice refuses them); device::Mesh runs them over all chips.
//
// Semantics (MESH-SPEC §1): the op runs on the config's mesh_rows x mesh_cols mesh.
// cluster_axis 0 groups the chips of one column (N = rows), 1 those of one row (N = cols), -1 all
// chips as one group in chip-index (row-major) order (N = rows * cols). Shapes are per chip:
//   all_gather(dim)               dim * N
//   reduce_scatter(dim, reduce)   dim / N (chip at group position i keeps the reduced slice i)
//   all_reduce(reduce)            same shape
//   all_to_all(split, concat)     split / N, concat * N
//   collective_permute(pairs)     same shape (chips that are nobody's target get zeros)
//   all_slice(dim)                dim / N (chip at position i keeps slice i; no communication)
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "meshplan/device/device.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::device {

/// True for the six mesh ops above.
bool is_collective(OpKind kind);
/// True for collectives with a cluster_axis (all but collective_permute).
bool has_cluster_axis(OpKind kind);

/// Chips in one group of `config`'s cluster_axis on its mesh (0 if the axis is invalid).
int collective_group_size(const OpConfig& config);
/// Chip indices of every group of `cluster_axis` on a rows x cols mesh, each in group order.
/// Precondition: cluster_axis in {-1, 0, 1}.
std::vector<std::vector<int>> collective_groups(int rows, int cols, int cluster_axis);

/// Per-chip result shape of a collective (see the table above). Errors name the attribute and
/// value: a 1x1 mesh, a bad cluster_axis, a dim out of range or not divisible by N, pairs outside
/// the mesh or repeating a source or target.
Result<Shape> infer_collective_shape(OpKind kind, std::span<const std::span<const int64_t>> in,
                                     const OpConfig& config);

/// The (source, target) chip-index pairs of a collective_permute config.
std::vector<std::pair<int, int>> permute_pairs(const OpConfig& config);

/// Simulated time of one collective op on `mesh` (whose rows x cols must equal the config's):
/// collective_timing.hpp's model for the slowest group; all_slice is a local copy of its result
/// (the single-chip timing model's data-movement time on `chip`).
uint64_t collective_op_ns(const MeshDesc& mesh, const OpLaunch& op);

/// The mesh the planner plans a rows x cols graph for, and that meshplan-run builds for it:
/// the built-in mesh of that shape (n300 1x2, t3k 2x4, galaxy 8x4: its name, topology, links,
/// hop latency) with `chip` as its chips (links capped by the chip's ethernet links); any other
/// shape is a linear mesh named "RxC" with one link between neighbours.
MeshDesc default_mesh(const ChipDesc& chip, int rows, int cols);
/// default_mesh() of the config's mesh_rows x mesh_cols: what OpModel costs collectives on when
/// it was made for a chip, not a mesh.
MeshDesc default_collective_mesh(const ChipDesc& chip, const OpConfig& config);

}  // namespace meshplan::device
