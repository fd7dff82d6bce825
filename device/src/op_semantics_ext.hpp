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

/// NHWC window geometry of conv2d and the pools.
struct WindowGeom {
  int64_t n, h, w, c;      ///< Input.
  int64_t oh, ow, oc;      ///< Output (oc = output channels).
  int64_t kh, kw;          ///< Window.
  int64_t sh, sw, dh, dw;  ///< Stride, dilation.
  int64_t pt, pl;          ///< Top and left padding.
  int64_t groups = 1, cin_per_group = 1, cout_per_group = 1;
  ConvWeightDims weight;  ///< conv2d: the weight's form and where element (o, ky, kx, ci) is.
};
/// conv2d (weight given) or pool geometry of input `in`.
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
