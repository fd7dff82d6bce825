// conv2d weight forms: dims of either form, and the host preparation [O,KH,KW,I] -> [KH*KW*I, O].
#include "meshplan/device/conv_weights.hpp"

#include "op_semantics_ext.hpp"

namespace meshplan::device {

Result<ConvWeightDims> conv_weight_dims(std::span<const int64_t> input,
                                        std::span<const int64_t> weight, const OpConfig& c) {
  if (input.size() != 4)
    return fail(ErrorCode::invalid_argument, "input ", shape_text(input), " is not NHWC (rank 4)");
  int64_t channels = input[3], groups = c.groups;
  if (groups <= 0 || channels % groups != 0)
    return fail(ErrorCode::invalid_argument, "groups ", groups, " must divide input channels ",
                channels);
  ConvWeightDims d;
  d.in_per_group = channels / groups;
  if (weight.size() == 4) {
    d.out_channels = weight[0], d.kh = weight[1], d.kw = weight[2];
    if (weight[3] != d.in_per_group)
      return fail(ErrorCode::invalid_argument, "conv2d weight ", shape_text(weight), " needs ",
                  d.in_per_group, " input channels per group (input ", shape_text(input),
                  ", groups ", groups, ")");
    bool default_kernel = c.kernel[0] == 1 && c.kernel[1] == 1;
    if (!default_kernel && (c.kernel[0] != d.kh || c.kernel[1] != d.kw))
      return fail(ErrorCode::invalid_argument, "kernel [", c.kernel[0], ",", c.kernel[1],
                  "] disagrees with conv2d weight ", shape_text(weight));
  } else if (weight.size() == 2) {
    d.prepared = true;
    d.kh = c.kernel[0], d.kw = c.kernel[1];
    if (d.kh <= 0 || d.kw <= 0)
      return fail(ErrorCode::invalid_argument, "kernel [", d.kh, ",", d.kw, "] must be positive");
    d.out_channels = weight[1];
    if (weight[0] != d.rows()) {
      int64_t want[2] = {d.rows(), weight[1]};
      return fail(ErrorCode::invalid_argument, "conv2d prepared weight ", shape_text(weight),
                  " should be ", shape_text(want), " (KH*KW*I/groups = ", d.kh, "*", d.kw, "*",
                  d.in_per_group, " rows for kernel [", d.kh, ",", d.kw, "], input ",
                  shape_text(input), ", groups ", groups, ")");
    }
  } else {
    return fail(ErrorCode::invalid_argument, "conv2d weight ", shape_text(weight),
                " is neither [O, KH, KW, I/groups] nor prepared [KH*KW*I/groups, O]");
  }
  if (d.out_channels <= 0 || d.out_channels % groups != 0)
    return fail(ErrorCode::invalid_argument, "groups ", groups, " must divide input channels ",
                channels, " and output channels ", d.out_channels);
  return d;
}

Result<std::vector<int64_t>> prepared_conv_weight_shape(std::span<const int64_t> s,
                                                        int64_t groups) {
  if (s.size() != 4 || s[0] <= 0 || s[1] <= 0 || s[2] <= 0 || s[3] <= 0)
    return fail(ErrorCode::invalid_argument, "conv2d weight ", shape_text(s),
                " is not [O, KH, KW, I/groups] with positive dims");
  if (groups <= 0 || s[0] % groups != 0)
    return fail(ErrorCode::invalid_argument, "groups ", groups,
                " must divide the output channels of conv2d weight ", shape_text(s));
  return std::vector<int64_t>{s[1] * s[2] * s[3], s[0]};
}

Status prepare_conv_weight(HostView w, int64_t groups, std::span<float> out) {
  std::vector<int64_t> shape = MESHPLAN_TRY(prepared_conv_weight_shape(w.shape, groups));
  int64_t n = volume(w.shape);
  if (static_cast<int64_t>(w.data.size()) != n || static_cast<int64_t>(out.size()) != n)
    return fail(ErrorCode::invalid_argument, "conv2d weight ", shape_text(w.shape), ": ",
                w.data.size(), " values in and ", out.size(), " out, expected ", n, " (prepared ",
                shape_text(shape), ")");
  ConvWeightDims from{w.shape[0], w.shape[1], w.shape[2], w.shape[3], false};
  ConvWeightDims to = from;
  to.prepared = true;
  for (int64_t o = 0; o < from.out_channels; ++o)
    for (int64_t ky = 0; ky < from.kh; ++ky)
      for (int64_t kx = 0; kx < from.kw; ++kx)
        for (int64_t ci = 0; ci < from.in_per_group; ++ci)
          out[to.index(o, ky, kx, ci)] = w.data[from.index(o, ky, kx, ci)];
  return {};
}

Result<std::vector<float>> prepare_conv_weight(HostView w, int64_t groups) {
  std::vector<float> out(w.data.size());
  MESHPLAN_TRY(prepare_conv_weight(w, groups, out));
  return out;
}

}  // namespace meshplan::device
