// What each op computes: result shapes and a plain f32 host reference. One truth for the
// planner's validation, the runtime's --check and the kernel tests.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "meshplan/device/types.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

using Shape = std::vector<int64_t>;

/// Result shape of `kind` applied to operands of these shapes. The message of an error says
/// what is wrong with the shapes; callers add which op and values.
Result<Shape> infer_shape(OpKind kind, std::span<const std::span<const int64_t>> operands,
                          const OpConfig& config);

/// Result dtype of `kind` on operands of these dtypes: the operands' common dtype, except
/// embedding (integer indices, any table: the table's dtype), typecast (config.dtype) and where
/// (a condition of any dtype; the values' common dtype).
Result<DType> infer_dtype(OpKind kind, std::span<const DType> operands, const OpConfig& config);

/// Numpy broadcast of two shapes, or an error naming both.
Result<Shape> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b);

/// A row-major f32 host tensor, viewed.
struct HostView {
  std::span<const int64_t> shape;
  std::span<const float> data;
};

/// Computes `kind` on host in f32 (straightforward loops): the reference results are checked
/// against.
Status reference(OpKind kind, std::span<const HostView> operands, const OpConfig& config,
                 std::span<const int64_t> result_shape, std::span<float> result);

}  // namespace meshplan::device
