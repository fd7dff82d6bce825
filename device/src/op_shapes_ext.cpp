// Shape rules of the op set beyond matmul/add/relu, and the attribute resolution they share
// with the references and kernels. Errors say what is wrong with the shapes or attributes; the
// caller adds the op and value names.
#include "op_semantics_ext.hpp"

#include <algorithm>
#include <sstream>

#include "meshplan/device/conv_weights.hpp"
#include "meshplan/device/formats.hpp"
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

namespace {

Status check_vector_operand(std::span<const int64_t> v, int64_t n, std::string_view what) {
  bool ok = !v.empty() && v.back() == n && volume(v) == n;
  if (!ok)
    return fail(ErrorCode::invalid_argument, what, " ", shape_text(v), " must hold ", n,
                " values along its last dim");
  return {};
}

}  // namespace

Result<Shape> infer_shape_ext(OpKind kind, std::span<const std::span<const int64_t>> in,
                              const OpConfig& c) {
  auto same = [&]() { return Shape(in[0].begin(), in[0].end()); };
  if (kind == OpKind::clamp) {
    if (!(c.clamp_min <= c.clamp_max))  // Also rejects NaN bounds.
      return fail(ErrorCode::invalid_argument, "clamp min ", c.clamp_min, " is not <= max ",
                  c.clamp_max, " (operand ", shape_text(in[0]), ")");
    return same();
  }
  if (is_unary(kind)) return same();
  if (is_binary(kind)) return broadcast_shapes(in[0], in[1]);
  if (kind == OpKind::where) {
    auto ab = broadcast_shapes(in[1], in[2]);
    auto out = ab ? broadcast_shapes(in[0], *ab) : ab;
    if (!out)
      return fail(ErrorCode::invalid_argument, "condition ", shape_text(in[0]), ", true values ",
                  shape_text(in[1]), " and false values ", shape_text(in[2]), " do not broadcast");
    return out;
  }
  switch (kind) {
    case OpKind::linear: {
      Shape out = MESHPLAN_TRY(infer_shape(OpKind::matmul, in.first(2), c));
      auto b = broadcast_shapes(out, in[2]);
      if (!b || *b != out)
        return fail(ErrorCode::invalid_argument, "linear bias ", shape_text(in[2]),
                    " does not broadcast to the result ", shape_text(out));
      return out;
    }
    case OpKind::reduce_sum:
    case OpKind::reduce_mean:
    case OpKind::reduce_max:
    case OpKind::reduce_min:
    case OpKind::reduce_prod: {
      auto mask = reduce_mask(c, in[0].size());
      if (!mask)
        return fail(ErrorCode::invalid_argument, op_name(kind), " of ", shape_text(in[0]), ": ",
                    mask.error().message);
      Shape out;
      for (size_t d = 0; d < in[0].size(); ++d)
        if (!(*mask)[d])
          out.push_back(in[0][d]);
        else if (c.keepdim)
          out.push_back(1);
      return out;
    }
    case OpKind::softmax: {
      if (in[0].empty()) return fail(ErrorCode::invalid_argument, "softmax needs rank >= 1");
      if (c.num_dims > 1)
        return fail(ErrorCode::invalid_argument, "softmax takes one dim, got ", int(c.num_dims));
      if (c.num_dims == 1) MESHPLAN_TRY(resolve_axis(c.dims[0], in[0].size(), "softmax dim"));
      return same();
    }
    case OpKind::layer_norm:
    case OpKind::rms_norm: {
      if (in[0].empty())
        return fail(ErrorCode::invalid_argument, op_name(kind), " needs rank >= 1");
      int64_t n = in[0].back();
      for (size_t i = 1; i < in.size(); ++i)
        MESHPLAN_TRY(check_vector_operand(in[i], n, i == 1 ? "weight" : "bias"));
      if (!(c.epsilon >= 0.0f))
        return fail(ErrorCode::invalid_argument, "epsilon ", c.epsilon, " must be >= 0");
      return same();
    }
    case OpKind::reshape: {
      if (c.num_shape == 0)
        return fail(ErrorCode::invalid_argument, "reshape needs a target 'shape'");
      if (c.num_shape > kMaxRank)
        return fail(ErrorCode::invalid_argument, "reshape target has ", int(c.num_shape),
                    " dims, more than ", kMaxRank);
      Shape out(c.shape, c.shape + c.num_shape);
      int infer = -1;
      int64_t known = 1;
      for (size_t d = 0; d < out.size(); ++d) {
        if (out[d] == -1 && infer < 0)
          infer = static_cast<int>(d);
        else if (out[d] <= 0)
          return fail(ErrorCode::invalid_argument, "reshape target ", shape_text(out), " has dim ",
                      out[d]);
        else
          known *= out[d];
      }
      int64_t vol = volume(in[0]);
      if (infer >= 0) {
        if (vol % known != 0)
          return fail(ErrorCode::invalid_argument, "cannot reshape ", shape_text(in[0]), " to ",
                      shape_text(out));
        out[infer] = vol / known;
      }
      if (volume(out) != vol)
        return fail(ErrorCode::invalid_argument, "cannot reshape ", shape_text(in[0]), " (", vol,
                    " elements) to ", shape_text(out), " (", volume(out), ")");
      return out;
    }
    case OpKind::permute: {
      auto perm = MESHPLAN_TRY(resolve_perm(c, in[0].size()));
      Shape out;
      for (size_t d = 0; d < in[0].size(); ++d) out.push_back(in[0][perm[d]]);
      return out;
    }
    case OpKind::concat: {
      int axis = MESHPLAN_TRY(resolve_axis(c.axis, in[0].size(), "concat axis"));
      Shape out = same();
      for (size_t i = 1; i < in.size(); ++i) {
        bool ok = in[i].size() == in[0].size();
        for (size_t d = 0; ok && d < in[0].size(); ++d)
          ok = static_cast<int>(d) == axis || in[i][d] == in[0][d];
        if (!ok)
          return fail(ErrorCode::invalid_argument, "concat along axis ", axis, ": operand ", i, " ",
                      shape_text(in[i]), " does not match operand 0 ", shape_text(in[0]));
        out[axis] += in[i][axis];
      }
      return out;
    }
    case OpKind::slice:
      return MESHPLAN_TRY(resolve_slice(c, in[0])).shape;
    case OpKind::embedding: {
      if (in[1].size() != 2)
        return fail(ErrorCode::invalid_argument, "embedding table ", shape_text(in[1]),
                    " is not [V, D]");
      if (in[0].size() >= static_cast<size_t>(kMaxRank))
        return fail(ErrorCode::invalid_argument, "embedding indices ", shape_text(in[0]),
                    " would give a result of rank ", in[0].size() + 1, ", more than ", kMaxRank);
      Shape out = same();
      out.push_back(in[1][1]);
      return out;
    }
    case OpKind::typecast:
      return same();
    case OpKind::conv2d: {
      WindowGeom g = MESHPLAN_TRY(window_geom(kind, in[0], in[1], c));
      if (in.size() == 3) MESHPLAN_TRY(check_vector_operand(in[2], g.oc, "conv2d bias"));
      return g.result_shape();
    }
    case OpKind::max_pool2d:
    case OpKind::avg_pool2d:
    case OpKind::global_avg_pool2d: {
      WindowGeom g = MESHPLAN_TRY(window_geom(kind, in[0], {}, c));
      return g.result_shape();
    }
    default:
      break;
  }
  return fail(ErrorCode::internal, "no shape rule for op kind ", static_cast<int>(kind));
}

float storage_value(DType dtype, float v) {
  switch (dtype) {
    case DType::f32:
      return v;
    case DType::bf16:
    case DType::bf8b:
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
