// The attribute resolution (axes, permutations, slices, conv windows) that the shape rules, the
// references and the kernels all read, so the three agree on what an attribute means. Errors say
// what is wrong with the shapes or attributes; the caller adds the op and value names.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "meshplan/device/conv_weights.hpp"
#include "meshplan/device/formats.hpp"
#include "op_semantics_ext.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

std::string shape_text(std::span<const int64_t> s) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < s.size(); ++i) out << (i ? "x" : "") << s[i];
  out << "]";
  return out.str();
}

Result<int> resolve_axis(int64_t axis, size_t rank, std::string_view what) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    return fail(ErrorCode::invalid_argument, what, " ", axis, " is out of range for rank ", rank);
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

Result<std::array<bool, kMaxRank>> reduce_mask(const OpConfig& c, size_t rank) {
  std::array<bool, kMaxRank> mask{};
  if (rank > static_cast<size_t>(kMaxRank))
    return fail(ErrorCode::invalid_argument, "rank ", rank, " exceeds the ", kMaxRank,
                " dims reductions support");
  if (c.num_dims > kMaxRank)
    return fail(ErrorCode::invalid_argument, "dims has ", int(c.num_dims), " entries, more than ",
                kMaxRank);
  if (c.num_dims == 0) {
    for (size_t d = 0; d < rank; ++d) mask[d] = true;
    return mask;
  }
  for (int i = 0; i < c.num_dims; ++i) {
    int d = MESHPLAN_TRY(resolve_axis(c.dims[i], rank, "reduction dim"));
    if (mask[d])
      return fail(ErrorCode::invalid_argument, "reduction dim ", int(c.dims[i]),
                  " is listed twice");
    mask[d] = true;
  }
  return mask;
}

Result<std::array<int, kMaxRank>> resolve_perm(const OpConfig& c, size_t rank) {
  std::array<int, kMaxRank> perm{};
  if (c.num_dims != rank)
    return fail(ErrorCode::invalid_argument, "perm has ", int(c.num_dims),
                " entries, the operand has rank ", rank);
  std::array<bool, kMaxRank> seen{};
  for (size_t i = 0; i < rank; ++i) {
    int d = MESHPLAN_TRY(resolve_axis(c.dims[i], rank, "perm entry"));
    if (seen[d]) return fail(ErrorCode::invalid_argument, "perm lists dim ", d, " twice");
    seen[d] = true;
    perm[i] = d;
  }
  return perm;
}

Result<SliceSpec> resolve_slice(const OpConfig& c, std::span<const int64_t> in) {
  if (c.num_slice == 0 || c.num_slice > in.size())
    return fail(ErrorCode::invalid_argument, "slice has ", int(c.num_slice),
                " begins/ends/steps for an operand of rank ", in.size());
  SliceSpec s;
  for (size_t d = 0; d < in.size(); ++d) {
    int64_t n = in[d], b = 0, e = n, st = 1;
    if (d < c.num_slice) {
      b = c.begins[d], e = c.ends[d], st = c.steps[d];
      if (st <= 0)
        return fail(ErrorCode::invalid_argument, "slice step ", st, " in dim ", d,
                    " must be positive");
      if (b < 0) b += n;
      if (e < 0) e += n;
      b = std::clamp<int64_t>(b, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
    }
    if (e <= b)
      return fail(ErrorCode::invalid_argument, "slice of dim ", d, " (size ", n, ") from ",
                  c.begins[d], " to ", c.ends[d], " is empty");
    s.begin[d] = b;
    s.step[d] = st;
    s.shape.push_back((e - b + st - 1) / st);
  }
  return s;
}

Result<WindowGeom> window_geom(OpKind kind, std::span<const int64_t> in,
                               std::span<const int64_t> weight, const OpConfig& c) {
  if (in.size() != 4)
    return fail(ErrorCode::invalid_argument, "input ", shape_text(in), " is not NHWC (rank 4)");
  WindowGeom g;
  g.n = in[0], g.h = in[1], g.w = in[2], g.c = in[3];
  std::array<int64_t, 4> nhwc{in[0], in[1], in[2], in[3]};
  if (c.input_n != 0 || c.input_h != 0 || c.input_w != 0) {
    if (c.input_n == 0 || c.input_h == 0 || c.input_w == 0)
      return fail(ErrorCode::invalid_argument, "flattened input geometry input_nhw [", c.input_n,
                  ",", c.input_h, ",", c.input_w, "] needs all three of N, H, W positive");
    int64_t rows = int64_t{c.input_n} * c.input_h * c.input_w;
    if (in[0] != 1 || in[1] != 1 || in[2] != rows)
      return fail(ErrorCode::invalid_argument, "flattened input ", shape_text(in), " is not [1x1x",
                  rows, "xC] for input_nhw [", c.input_n, ",", c.input_h, ",", c.input_w,
                  "] (N*H*W = ", rows, ")");
    g.flat = true;
    g.n = c.input_n, g.h = c.input_h, g.w = c.input_w;
    nhwc = {g.n, g.h, g.w, g.c};
  }
  g.sh = c.stride[0], g.sw = c.stride[1], g.dh = c.dilation[0], g.dw = c.dilation[1];
  g.pt = c.padding[0], g.pl = c.padding[2];
  if (g.sh <= 0 || g.sw <= 0 || g.dh <= 0 || g.dw <= 0)
    return fail(ErrorCode::invalid_argument, "stride [", g.sh, ",", g.sw, "] and dilation [", g.dh,
                ",", g.dw, "] must be positive");
  for (int32_t p : c.padding)
    if (p < 0) return fail(ErrorCode::invalid_argument, "padding ", p, " is negative");
  if (kind == OpKind::conv2d) {
    ConvWeightDims wd = MESHPLAN_TRY(conv_weight_dims(nhwc, weight, c));
    g.groups = c.groups;
    g.oc = wd.out_channels, g.kh = wd.kh, g.kw = wd.kw;
    g.cin_per_group = wd.in_per_group;
    g.cout_per_group = g.oc / g.groups;
    g.weight = wd;
  } else if (kind == OpKind::global_avg_pool2d) {
    g.oc = g.c, g.kh = g.h, g.kw = g.w, g.sh = g.sw = g.dh = g.dw = 1, g.pt = g.pl = 0;
    g.oh = g.ow = 1;
    return g;
  } else {
    g.oc = g.c, g.kh = c.kernel[0], g.kw = c.kernel[1];
    if (g.kh <= 0 || g.kw <= 0)
      return fail(ErrorCode::invalid_argument, "pool kernel [", g.kh, ",", g.kw,
                  "] must be positive");
    if (c.padding[0] >= g.kh || c.padding[1] >= g.kh || c.padding[2] >= g.kw ||
        c.padding[3] >= g.kw)
      return fail(ErrorCode::invalid_argument, "pool padding must be smaller than the kernel [",
                  g.kh, ",", g.kw, "]");
  }
  int64_t eh = g.h + c.padding[0] + c.padding[1] - g.dh * (g.kh - 1) - 1;
  int64_t ew = g.w + c.padding[2] + c.padding[3] - g.dw * (g.kw - 1) - 1;
  if (eh < 0 || ew < 0)
    return fail(ErrorCode::invalid_argument, "window ", g.kh, "x", g.kw, " (dilation ", g.dh, "x",
                g.dw, ") does not fit input ", shape_text(nhwc), " with its padding");
  g.oh = eh / g.sh + 1;
  g.ow = ew / g.sw + 1;
  return g;
}

Status check_vector_operand(std::span<const int64_t> v, int64_t n, std::string_view what) {
  bool ok = !v.empty() && v.back() == n && volume(v) == n;
  if (!ok)
    return fail(ErrorCode::invalid_argument, what, " ", shape_text(v), " must hold ", n,
                " values along its last dim");
  return {};
}

float storage_value(DType dtype, float v) {
  switch (dtype) {
    case DType::f32:
      return v;
    case DType::bf16:
    case DType::bf8b:
    case DType::bf4b:
      return round_bf16(v);
    // Out-of-range values saturate (NaN becomes 0), so the integer encoding never overflows.
    case DType::i32:
      return std::isnan(v) ? 0.0f : std::clamp(std::trunc(v), -2147483648.0f, 2147483520.0f);
    case DType::u32:
      return std::isnan(v) ? 0.0f : std::clamp(std::trunc(v), 0.0f, 4294967040.0f);
  }
  return v;
}

}  // namespace meshplan::device
