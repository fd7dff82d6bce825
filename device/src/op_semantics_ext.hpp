// The shape rules and host references of each op family (op_semantics_<family>.cpp, mirroring
// kernels_<family>.cpp; op_semantics.cpp dispatches on ops.def's family column), and the
// attribute resolution (op_attributes.cpp: axes, permutations, slices, conv windows) that the
// shape rules, the references and the kernels all read, so the three agree on what an attribute
// means. Internal to device/.
#pragma once

#include <array>
#include <string>

#include "meshplan/device/conv_weights.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::device {

std::string shape_text(std::span<const int64_t> s);

using Operands = std::span<const std::span<const int64_t>>;

/// The error a family's rule returns for an op of another family (a dispatch bug).
std::unexpected<Error> not_in_family(OpKind kind, std::string_view family);

/// Families matmul, linear: the result shape (operand counts and ranks already checked) and the f32
/// reference (result buffer already sized).
Result<Shape> shape_matmul(OpKind kind, Operands operands, const OpConfig& config);
Status reference_matmul(OpKind kind, std::span<const HostView> operands, const OpConfig& config,
                        std::span<const int64_t> result_shape, std::span<float> result);
/// Families eltwise_unary, eltwise_binary, compare, select: the result shape (operand counts and
/// ranks already checked) and the f32 reference (result buffer already sized).
Result<Shape> shape_eltwise(OpKind kind, Operands operands, const OpConfig& config);
Status reference_eltwise(OpKind kind, std::span<const HostView> operands, const OpConfig& config,
                         std::span<const int64_t> result_shape, std::span<float> result);
/// Families reduction, softmax, norm: the result shape (operand counts and ranks already checked)
/// and the f32 reference (result buffer already sized).
Result<Shape> shape_reduce(OpKind kind, Operands operands, const OpConfig& config);
Status reference_reduce(OpKind kind, std::span<const HostView> operands, const OpConfig& config,
                        std::span<const int64_t> result_shape, std::span<float> result);
/// Families memory, shape, gather, convert: the result shape (operand counts and ranks already
/// checked) and the f32 reference (result buffer already sized).
Result<Shape> shape_movement(OpKind kind, Operands operands, const OpConfig& config);
Status reference_movement(OpKind kind, std::span<const HostView> operands, const OpConfig& config,
                          std::span<const int64_t> result_shape, std::span<float> result);
/// Families conv, pool: the result shape (operand counts and ranks already checked) and the f32
/// reference (result buffer already sized).
Result<Shape> shape_conv(OpKind kind, Operands operands, const OpConfig& config);
Status reference_conv(OpKind kind, std::span<const HostView> operands, const OpConfig& config,
                      std::span<const int64_t> result_shape, std::span<float> result);

/// Row-major index of flat element `flat` of `shape`, into idx[0 .. rank).
inline void unravel(int64_t flat, std::span<const int64_t> shape, int64_t* idx) {
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
}
/// Value of `v` at the output index `idx` (rank `out_rank`), numpy-broadcasting.
inline float broadcast_at(const HostView& v, const int64_t* idx, size_t out_rank) {
  int64_t flat = 0;
  size_t r = v.shape.size();
  for (size_t d = 0; d < r; ++d) {
    int64_t coord = v.shape[d] == 1 ? 0 : idx[out_rank - r + d];
    flat = flat * v.shape[d] + coord;
  }
  return v.data[flat];
}
/// A vector operand (norm weight/bias, conv bias): `n` values along its last dim.
Status check_vector_operand(std::span<const int64_t> v, int64_t n, std::string_view what);

/// Which dims a reduce_* op reduces (config.dims, none = all), checked against `rank`.
Result<std::array<bool, kMaxRank>> reduce_mask(const OpConfig& config, size_t rank);
/// permute's permutation, checked to be one of 0..rank-1.
Result<std::array<int, kMaxRank>> resolve_perm(const OpConfig& config, size_t rank);
/// concat's axis in [0, rank).
Result<int> resolve_axis(int64_t axis, size_t rank, std::string_view what);

/// slice's begins (normalised, clamped) and steps per dim, and the result shape.
struct SliceSpec {
  std::array<int64_t, kMaxRank> begin{}, step{};
  Shape shape;
};
Result<SliceSpec> resolve_slice(const OpConfig& config, std::span<const int64_t> in);

/// Window geometry of conv2d and the pools, in NHWC terms whichever form the tensors have:
/// NHWC [N, H, W, C] -> [N, OH, OW, O], or flattened (config.input_n/h/w set, as TTNN runs
/// convs) [1, 1, N*H*W, C] -> [1, 1, N*OH*OW, O] (global_avg_pool2d: [1, 1, N, C]). Both forms
/// hold the same row-major bytes; the index helpers below are how shape rules, references and
/// kernels reach an element, so none of them depends on the form.
struct WindowGeom {
  int64_t n, h, w, c;      ///< Input.
  int64_t oh, ow, oc;      ///< Output (oc = output channels).
  int64_t kh, kw;          ///< Window.
  int64_t sh, sw, dh, dw;  ///< Stride, dilation.
  int64_t pt, pl;          ///< Top and left padding.
  int64_t groups = 1, cin_per_group = 1, cout_per_group = 1;
  ConvWeightDims weight;  ///< conv2d: the weight's form and where element (o, ky, kx, ci) is.
  bool flat = false;      ///< The flattened form.

  /// The result's shape in the input's form.
  Shape result_shape() const { return flat ? Shape{1, 1, n * oh * ow, oc} : Shape{n, oh, ow, oc}; }
  /// 4-D index, in the input's form, of input element (n, y, x, c).
  std::array<int64_t, 4> input_index(int64_t in_n, int64_t y, int64_t x, int64_t ch) const {
    if (flat) return {0, 0, (in_n * h + y) * w + x, ch};
    return {in_n, y, x, ch};
  }
  /// Output element (n, oy, ox, o) at 4-D index `o` of the result in its form.
  std::array<int64_t, 4> output_nhwc(const int64_t* o) const {
    if (flat) return {o[2] / (oh * ow), o[2] / ow % oh, o[2] % ow, o[3]};
    return {o[0], o[1], o[2], o[3]};
  }
  /// The output pixel at row `row` of matrix `matrix` of the result's 2-D view (matrices over
  /// the leading dims, rows = dim 2): false for the rows tile padding adds.
  bool output_pixel(int64_t matrix, int64_t row, int64_t* on, int64_t* oy, int64_t* ox) const {
    if (flat) {
      if (matrix != 0 || row >= n * oh * ow) return false;
      *on = row / (oh * ow), *oy = row / ow % oh, *ox = row % ow;
    } else {
      if (row >= ow) return false;
      *on = matrix / oh, *oy = matrix % oh, *ox = row;
    }
    return true;
  }
};
/// conv2d (weight given) or pool geometry of input `in`, in either form (config.input_n/h/w).
/// Errors name the bad value: a flattened input whose rows are not N*H*W, geometry given in
/// part, an input of rank other than 4.
Result<WindowGeom> window_geom(OpKind kind, std::span<const int64_t> in,
                               std::span<const int64_t> weight, const OpConfig& config);

/// Row-major strides of `shape`.
inline std::array<int64_t, kMaxRank> strides_of(std::span<const int64_t> shape) {
  std::array<int64_t, kMaxRank> s{};
  int64_t acc = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = acc;
    acc *= shape[d];
  }
  return s;
}

}  // namespace meshplan::device
