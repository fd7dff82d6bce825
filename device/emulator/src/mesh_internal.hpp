// Helpers shared by the Mesh sources: host-side block copies along one dim, shape printing,
// per-chip reads and writes with chip coordinates in errors.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "meshplan/device/mesh.hpp"

namespace meshplan::device::mesh_detail {

/// A shape seen as [outer, dim, inner] around one dim.
struct DimSplit {
  int64_t outer = 1, dim = 1, inner = 1;
};
DimSplit split_at(std::span<const int64_t> shape, int dim);

/// Copies `len` positions along the split dim, from `src` (split `s`, starting at position
/// `src_begin`) into `dst` (whose split dim has size `dst_dim`, starting at `dst_begin`).
void copy_block(const float* src, DimSplit s, int64_t src_begin, float* dst, int64_t dst_dim,
                int64_t dst_begin, int64_t len);

std::string shape_name(std::span<const int64_t> shape);

/// `dim` in [-rank, rank) made non-negative, or an error naming `label`.
Result<int> normalize_dim(int dim, size_t rank, const std::string& label, std::string_view what);

/// Bytes the placement occupies on the device (pages x page size): T of the timing model.
uint64_t tensor_bytes(const TensorPlacement& t);

/// Reads chip `index`'s tensor into host values; errors name the chip.
Result<std::vector<float>> read_chip(Mesh& mesh, int index, const TensorPlacement& t,
                                     const std::string& label);
/// Writes host values into chip `index`'s tensor; errors name the chip.
Status write_chip(Mesh& mesh, int index, const TensorPlacement& t, std::span<const float> values,
                  const std::string& label);

/// Checks that `p` has one placement per chip.
Status check_count(const Mesh& mesh, PerChip p, std::string_view role, const std::string& label);

/// Moves the given chips' clocks to (latest of their clocks) + duration; returns that end.
using AdvanceFn = std::function<uint64_t(std::span<const int> chips, uint64_t duration_ns)>;

// The collectives and host transfers of every Mesh backend, written against the Mesh interface:
// chips are read and written through Mesh::chip (in the same order on every call, so a
// distributed backend can exchange bytes as the reads happen) and clocks move through `advance`.
Result<CollectiveRun> all_gather_on(Mesh& m, const AdvanceFn& advance, PerChip in, PerChip out,
                                    int dim, int cluster_axis);
Result<CollectiveRun> reduce_scatter_on(Mesh& m, const AdvanceFn& advance, PerChip in, PerChip out,
                                        int dim, int cluster_axis, ReduceOp op);
Result<CollectiveRun> all_reduce_on(Mesh& m, const AdvanceFn& advance, PerChip in, PerChip out,
                                    int cluster_axis, ReduceOp op);
Result<CollectiveRun> all_to_all_on(Mesh& m, const AdvanceFn& advance, PerChip in, PerChip out,
                                    int split_dim, int concat_dim, int cluster_axis);
Result<CollectiveRun> collective_permute_on(Mesh& m, const AdvanceFn& advance, PerChip in,
                                            PerChip out,
                                            std::span<const std::pair<MeshCoord, MeshCoord>> pairs);
Result<CollectiveRun> all_slice_on(Mesh& m, const AdvanceFn& advance, PerChip in, PerChip out,
                                   int dim, int cluster_axis);
Status full_to_shard_on(Mesh& m, std::span<const float> host, std::span<const int64_t> full_shape,
                        const MeshShardSpec& spec, PerChip out);
Status shard_to_full_on(Mesh& m, PerChip in, const MeshShardSpec& spec,
                        std::span<const int64_t> full_shape, std::span<float> host);

}  // namespace meshplan::device::mesh_detail
