// conv2d weights in their two forms: [O, KH, KW, I/groups] as graphs give them, and prepared
// [KH*KW*I/groups, O] (im2col order: row (kh*KW + kw)*(I/groups) + i, column o), the 2-D matrix
// TTNN's prepare_conv_weights makes once at load time. A tiled [O, KH, KW, I] tensor pads KW to
// 32 rows per (o, kh); the prepared matrix pads only its two matrix dims.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "meshplan/device/op_semantics.hpp"
#include "meshplan/device/types.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// What a conv2d weight holds, whichever form it has.
struct ConvWeightDims {
  int64_t out_channels = 0;  ///< O.
  int64_t kh = 0, kw = 0;    ///< The window.
  int64_t in_per_group = 0;  ///< I / groups.
  bool prepared = false;     ///< The 2-D form.
  /// Rows of the prepared matrix: the contraction length per group.
  int64_t rows() const { return kh * kw * in_per_group; }
  /// Index of weight element (o, ky, kx, ci) in the row-major form it has.
  int64_t index(int64_t o, int64_t ky, int64_t kx, int64_t ci) const {
    return prepared ? ((ky * kw + kx) * in_per_group + ci) * out_channels + o
                    : ((o * kh + ky) * kw + kx) * in_per_group + ci;
  }
};

/// The weight of a conv2d with NHWC input `input`: a 4-D weight gives the window itself
/// (config.kernel must then be the default 1x1 or equal it); a 2-D weight takes the window from
/// config.kernel and I/groups from the input's channels. Checks groups against both channel
/// counts. Errors say the expected and the given shape; the caller adds the op's name.
Result<ConvWeightDims> conv_weight_dims(std::span<const int64_t> input,
                                        std::span<const int64_t> weight, const OpConfig& config);

/// Shape [KH*KW*I/groups, O] of the prepared form of a [O, KH, KW, I/groups] weight; an error
/// if `host_shape` is not rank 4 with positive dims or `groups` does not divide O.
Result<std::vector<int64_t>> prepared_conv_weight_shape(std::span<const int64_t> host_shape,
                                                        int64_t groups);

/// Prepares a host weight (row-major [O, KH, KW, I/groups]) into `out` (row-major
/// [KH*KW*I/groups, O], which must hold exactly that many values). Allocation-free; a pure
/// permutation, so values are copied bit for bit.
Status prepare_conv_weight(HostView weight, int64_t groups, std::span<float> out);

/// The same, returning a new vector.
Result<std::vector<float>> prepare_conv_weight(HostView weight, int64_t groups);

}  // namespace meshplan::device
