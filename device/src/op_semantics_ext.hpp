// Shape rules and host references of the op set beyond matmul/add/relu (internal to device/),
// and the attribute resolution (axes, permutations, slices, conv windows) that the shape rules,
// the references and the kernels all read, so the three agree on what an attribute means.
#pragma once

#include <array>
#include <string>

#include "meshplan/device/conv_weights.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::device {

std::string shape_text(std::span<const int64_t> s);

Result<Shape> infer_shape_ext(OpKind kind, std::span<const std::span<const int64_t>> operands,
                              const OpConfig& config);
Status reference_ext(OpKind kind, std::span<const HostView> operands, const OpConfig& config,
                     std::span<const int64_t> result_shape, std::span<float> result);

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
