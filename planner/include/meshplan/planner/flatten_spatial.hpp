// Graph pass: conv2d and pools on flattened activations, as TTNN runs them. Tile layout pads the
// last two dims to 32, so an NHWC activation's 2-D view [N*H, W, C] pads W per image row (a 7x7
// map takes 7 tile rows for 49 real rows). TTNN runs conv2d on [1, 1, N*H*W, C] with the spatial
// geometry given as arguments; this pass rewrites connected regions of conv2d, pools and
// view-agnostic elementwise ops to that form (device::OpConfig::input_n/h/w, graph attribute
// input_nhw = [N, H, W]) and puts reshapes at the region's edges.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "meshplan/planner/graph.hpp"

namespace meshplan::planner {

/// A graph input the pass planned in its flattened shape: the user still passes `host_shape`
/// (NHWC, the same row-major bytes); the plan records a `reshape` input transform.
struct FlattenedInput {
  ValueId value = 0;
  size_t argument = 0;              ///< Index in Graph::arguments.
  std::vector<int64_t> host_shape;  ///< [N, H, W, C].
};

/// The regions of a graph: region id per op (-1: the op stays as it is). A region is a
/// connected set of ops that can run flattened, linked by the 4-D values one produces and
/// another consumes, holding at least one conv2d or pool: conv2d / pools (operand 0 and result;
/// no input_nhw attribute yet), unary elementwise ops and typecast (operand shape = result
/// shape), binary elementwise ops whose operands all have the result's shape. Everything else
/// (reductions, permute, slice, concat, reshape, matmul, broadcasting binaries...) is an edge.
struct SpatialRegions {
  std::vector<int> region_of_op;
  int count = 0;
  /// Deterministic dump: one line per region, `region 0: conv1 relu1 pool1` (ops in graph order).
  std::string print(const Graph& graph) const;
};

/// Finds the regions of `graph` (on a mesh graph: of its per-chip program). Pure.
SpatialRegions find_spatial_regions(const Graph& graph);

/// What flatten_spatial() did.
struct FlattenResult {
  std::vector<FlattenedInput> inputs;  ///< Sorted by argument index.
  int regions = 0;
  int flat_ops = 0;  ///< Ops of the regions.
  int reshapes = 0;  ///< Edge reshapes inserted.
  int rewired = 0;   ///< Edge reshapes already in the graph that now take or give the flat form.
  bool changed() const { return regions > 0; }
};

/// Rewrites every region in place: values inside become [1, 1, N*H*W, C], conv2d and pools get
/// input_nhw = [N, H, W]; at the edges a `reshape` op converts NHWC <-> flat (a reshape already
/// in the graph is used instead where it is the edge: its operand may be flat, its target may
/// become the flat shape). On a single-chip graph, a graph input or parameter whose every use is
/// inside a region is planned flat and listed in the result (constants are flattened in place:
/// same bytes); on a mesh graph arguments keep their shapes (boundary shards are cut from the
/// NHWC host tensor) and enter through a reshape. Graph
/// outputs keep their value name and NHWC shape (the region's value is renamed `<name>.flat`).
/// Ops keep their order; new reshapes sit next to their producer (NHWC <- flat) or their first
/// consumer (NHWC -> flat). Re-validates the graph. Unchanged when there is no region.
Result<FlattenResult> flatten_spatial(Graph& graph);

/// Deterministic dump of a pass result: counts, then one line per flattened input
/// `image [1x224x224x3] -> [1x1x50176x3]`.
std::string print_flattened(const Graph& graph, const FlattenResult& result);

}  // namespace meshplan::planner
