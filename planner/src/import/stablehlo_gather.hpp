// stablehlo.gather's dimension numbers, read from `#stablehlo.gather<...>` and slice_sizes
// (internal: the lowering and the sharding rule share them).
#pragma once

#include <cstdint>
#include <vector>

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

struct GatherDims {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, operand_batching_dims,
      start_indices_batching_dims, start_index_map, slice_sizes;
  int64_t index_vector_dim = -1;
};

/// The op's dimension numbers; errors at the op's location name the field that is wrong.
Result<GatherDims> read_gather_dims(const Op& op);

/// stablehlo.scatter's dimension numbers (the sharding rule reads them).
struct ScatterDims {
  std::vector<int64_t> update_window_dims, inserted_window_dims, input_batching_dims,
      scatter_indices_batching_dims, scatter_dims_to_operand_dims;
  int64_t index_vector_dim = -1;
};
Result<ScatterDims> read_scatter_dims(const Op& op);

}  // namespace meshplan::planner::shlo
