// Graph pass: conv2d weights prepared ahead of time. A conv2d weight [O, KH, KW, I/groups] in
// tiles pads KW to 32 rows (32x the bytes of a 1x1 conv); TTNN prepares conv weights once, at
// load time, into the 2-D im2col matrix [KH*KW*I/groups, O] (device/conv_weights.hpp). This pass
// makes the planned graph take the prepared form and records, per rewritten argument, the host
// transform the runtime applies to what the user passes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "meshplan/planner/graph.hpp"

namespace meshplan::planner {

/// One argument the pass rewrote: its value now has the prepared shape; the user still passes
/// `host_shape`.
struct PreparedWeight {
  ValueId value = 0;
  size_t argument = 0;              ///< Index in Graph::arguments.
  std::vector<int64_t> host_shape;  ///< [O, KH, KW, I/groups].
  int64_t groups = 1;
};

/// The arguments prepare_conv_weights() would rewrite with a host transform, sorted by argument
/// index: inputs and parameters (never constants or graph outputs) of rank 4 whose every use is
/// operand 1 (the weight) of a conv2d, with the same groups in every use; on a mesh graph only
/// replicated ones (the host tensor is every chip's tensor: the runtime prepares it once, then
/// replicates it). Pure query.
std::vector<PreparedWeight> conv_weight_candidates(const Graph& graph);

/// The constant arguments used the same way (rank 4, only as conv2d weights, one groups value).
/// Pure query.
std::vector<PreparedWeight> conv_constant_candidates(const Graph& graph);

/// Rewrites every candidate in place: the argument's shape becomes [KH*KW*I/groups, O] and each
/// conv2d using it gets the attribute kernel = [KH, KW]; a constant's values are permuted into
/// that form here (the plan carries them prepared: no host transform). Then re-validates the
/// graph. Returns the inputs and parameters it rewrote (the host transforms the plan records;
/// empty with only constants rewritten, or nothing).
Result<std::vector<PreparedWeight>> prepare_conv_weights(Graph& graph);

// ---- Weight storage precision (PlannerOptions::weight_dtype) ----
//
// Tenstorrent runs LLM weights in block floats: bfloat8_b, and bfloat4_b for the MLP's gate and
// up projections. The graph stays logical (bf16 values); only the stored form of the chosen
// weights changes: their planned tensors are block-float tiles, the runtime quantizes what the
// user passes when it uploads them, and the kernels read the dequantized values.

/// "bf16", "bfp8_b" / "bf8b", "bfp4_b" / "bf4b" (tt-metal's and meshplan's spellings).
Result<device::DType> parse_weight_dtype(std::string_view text);
/// tt-metal's spelling: bf16, bfp8_b, bfp4_b.
std::string_view weight_dtype_name(device::DType dtype);

/// One weight parameter stored in a dtype other than its own.
struct WeightStorage {
  ValueId value = 0;
  device::DType dtype = device::DType::bf16;
};

/// The weights `default_dtype` and `overrides` (PlannerOptions::weight_dtype_overrides) store
/// differently from their value's dtype, in value order. A weight is a parameter (never an input,
/// constant or graph output) of dtype bf16 or f32 every use of which is operand 1 of a matmul or
/// linear. Each override "PATTERN=dtype" applies to the weights whose name, or the name of an op
/// using them, PATTERN matches (`*` matches any run of characters); a later override wins. An
/// override without `=`, with an unknown dtype or matching no weight is an error naming it.
Result<std::vector<WeightStorage>> weight_storage(const Graph& graph, device::DType default_dtype,
                                                  const std::vector<std::string>& overrides);

/// Deterministic dump of a pass result, one line per prepared argument:
/// `w1 [64x3x3x32] -> [288x64] groups 1`.
std::string print_prepared(const Graph& graph, const std::vector<PreparedWeight>& prepared);

}  // namespace meshplan::planner
