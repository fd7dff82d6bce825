// Logical mesh axes onto the physical 2-D system (rows x cols of chips): the mapping a
// per-device program of a mesh of any rank is lowered and planned with.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "meshplan/device/types.hpp"
#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// The last pass of run_pipeline: when the module's mesh has more than two axes of
/// size > 1, chooses how its axes map onto the physical 2-D system (choose_mesh_mapping) and
/// records it as the module attribute `meshplan.mesh_mapping`, which lower_to_graph follows.
Status map_mesh_axes(Module& m, const PipelineOptions& options);

/// How the logical axes of a module's mesh lie on a physical rows x cols system: each physical
/// dim (0: rows, 1: cols) carries whole logical axes, major first, whose sizes multiply to its
/// length (axes of size 1 lie nowhere). A logical device (row-major over the module's axes)
/// sits on the chip whose row / column are its coordinates along those axes, major first.
struct MeshMapping {
  int64_t rows = 1, cols = 1;
  /// Indices of the logical axes of size > 1 on rows and on cols, major first.
  std::array<std::vector<size_t>, 2> dims;
  /// Chip index (row-major over rows x cols) of logical device `device` of `mesh`.
  int64_t chip(const MeshDecl& mesh, int64_t device) const;
  /// `rows=tensor cols=data,fsdp` (the attribute's form; `rows=` when a dim carries no axis).
  std::string str(const MeshDecl& mesh) const;
};
/// The mapping lower_to_graph follows: the `meshplan.mesh_mapping` attribute when present;
/// else, for a mesh of at most two axes, rows = the first axis and cols = the second; else the
/// one choose_mesh_mapping picks for the default system of the mesh's device count.
Result<MeshMapping> mesh_mapping(const Module& local_program);
/// The mapping of the per-device program's mesh onto a rows x cols system (0x0: the default
/// system of that many devices: 1x2 n300, 2x4 t3k, 8x4 galaxy, else the squarest grouping)
/// under which every collective runs along one physical dim or the whole system in chip order
/// and every boundary tensor is a mesh_shard, with the least cost (bytes each chip sends plus
/// the hops its groups span, so the most-communicating axes get the shortest links); ties keep
/// the module's axis order. Errors name the mesh, the system and what no mapping can express.
Result<MeshMapping> choose_mesh_mapping(const Module& local_program, int64_t rows, int64_t cols);
/// The physical cluster_axis (0, 1, -1) whose groups are `groups` (logical device ids, in group
/// order) under `map`, or nullopt.
std::optional<int> physical_cluster_axis(const MeshDecl& mesh, const MeshMapping& map,
                                         const std::vector<std::vector<int64_t>>& groups);
/// The mesh_shard dims of a boundary tensor sharded `s` under `map`: per physical dim the tensor
/// dim its axes split, or -1. Each tensor dim's axes must be whole physical dims, each dim's
/// axes in their order; *minor_first is set when a tensor dim lists cols' axes before rows'.
/// Errors (unimplemented) name `what`, the sharding and the axis no mesh_shard expresses.
Result<std::array<int32_t, 2>> physical_shard_dims(const MeshDecl& mesh, const MeshMapping& map,
                                                   const TensorSharding& s, bool* minor_first,
                                                   std::string_view what);

/// The device::OpConfig of collective `c` of the local program `m` on the chips the mesh mapping
/// puts it on: mesh rows x cols, physical cluster_axis, collective_dim = c.dim; nullopt when its
/// groups are neither one physical dim nor the whole mesh. With device::collective_launch_rule
/// it says whether tt-metal takes the direct launch of an all_gather or reduce_scatter, which the
/// lowering otherwise replaces by an equivalent sequence (a reduce_scatter by an all_reduce and
/// the all_slice of each chip's block; communication() counts that sequence's bytes).
Result<std::optional<device::OpConfig>> collective_launch_config(const Module& m,
                                                                 const CollectiveInfo& c);

}  // namespace meshplan::planner::shlo
