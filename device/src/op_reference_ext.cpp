// Host f32 references of the op set beyond matmul/add/relu: plain loops over logical indices,
// written independently of the tiled kernels they check.
#include <algorithm>
#include <cmath>
#include <limits>

#include "op_semantics_ext.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

namespace {

void unravel(int64_t flat, std::span<const int64_t> shape, int64_t* idx) {
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
}

/// Value of `v` at the output index `idx` (rank `out_rank`), numpy-broadcasting.
float broadcast_at(const HostView& v, const int64_t* idx, size_t out_rank) {
  int64_t flat = 0;
  size_t r = v.shape.size();
  for (size_t d = 0; d < r; ++d) {
    int64_t coord = v.shape[d] == 1 ? 0 : idx[out_rank - r + d];
    flat = flat * v.shape[d] + coord;
  }
  return v.data[flat];
}

/// Rows of the last dim: calls fn(row pointer in, row pointer out, length) for each.
template <class Fn>
void for_each_row(const HostView& in, std::span<float> out, Fn&& fn) {
  int64_t n = in.shape.back(), rows = volume(in.shape) / n;
  for (int64_t r = 0; r < rows; ++r) fn(in.data.data() + r * n, out.data() + r * n, n);
}

Status windowed(OpKind kind, std::span<const HostView> in, const OpConfig& c,
                std::span<float> out) {
  WindowGeom g = MESHPLAN_TRY(window_geom(
      kind, in[0].shape, kind == OpKind::conv2d ? in[1].shape : std::span<const int64_t>{}, c));
  const float* x = in[0].data.data();
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox)
        for (int64_t o = 0; o < g.oc; ++o) {
          double acc = kind == OpKind::max_pool2d ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t count = 0;
          int64_t grp = kind == OpKind::conv2d ? o / g.cout_per_group : 0;
          for (int64_t ky = 0; ky < g.kh; ++ky)
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              int64_t iy = oy * g.sh - g.pt + ky * g.dh, ix = ox * g.sw - g.pl + kx * g.dw;
              if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
              // Both forms are the same row-major bytes: element (n, iy, ix, 0) of the NHWC
              // form is element (0, 0, (n * H + iy) * W + ix, 0) of the flattened one.
              const float* px = x + ((n * g.h + iy) * g.w + ix) * g.c;
              ++count;
              if (kind == OpKind::conv2d) {
                const float* pw = in[1].data.data();
                for (int64_t ci = 0; ci < g.cin_per_group; ++ci)
                  acc += double(px[grp * g.cin_per_group + ci]) * pw[g.weight.index(o, ky, kx, ci)];
              } else if (kind == OpKind::max_pool2d) {
                acc = std::max<double>(acc, px[o]);
              } else {
                acc += px[o];
              }
            }
          float v;
          if (kind == OpKind::conv2d) {
            v = static_cast<float>(acc) + (in.size() == 3 ? in[2].data[o] : 0.0f);
            v = apply_activation(c.activation, v);
          } else if (kind == OpKind::max_pool2d) {
            v = static_cast<float>(acc);
          } else {
            v = count ? static_cast<float>(acc / count) : 0.0f;
          }
          out[((n * g.oh + oy) * g.ow + ox) * g.oc + o] = v;  // Same bytes in both forms.
        }
  return {};
}

}  // namespace

Status reference_ext(OpKind kind, std::span<const HostView> in, const OpConfig& c,
                     std::span<const int64_t> out_shape, std::span<float> out) {
  int64_t total = volume(out_shape);
  size_t out_rank = out_shape.size();
  int64_t idx[kMaxRank + 2] = {};
  if (out_rank > static_cast<size_t>(kMaxRank))
    return fail(ErrorCode::invalid_argument, op_name(kind), ": result rank ", out_rank, " exceeds ",
                kMaxRank);
  if (is_unary(kind)) {
    for (int64_t i = 0; i < total; ++i) out[i] = unary_value(kind, in[0].data[i], c);
    return {};
  }
  if (kind == OpKind::where) {
    for (int64_t i = 0; i < total; ++i) {
      unravel(i, out_shape, idx);
      out[i] = where_value(broadcast_at(in[0], idx, out_rank), broadcast_at(in[1], idx, out_rank),
                           broadcast_at(in[2], idx, out_rank));
    }
    return {};
  }
  if (is_binary(kind)) {
    for (int64_t i = 0; i < total; ++i) {
      unravel(i, out_shape, idx);
      out[i] = apply_activation(c.activation, binary_value(kind, broadcast_at(in[0], idx, out_rank),
                                                           broadcast_at(in[1], idx, out_rank)));
    }
    return {};
  }
  switch (kind) {
    case OpKind::linear: {
      OpConfig plain = c;
      plain.activation = Activation::none;
      MESHPLAN_TRY(reference(OpKind::matmul, in.first(2), plain, out_shape, out));
      for (int64_t i = 0; i < total; ++i) {
        unravel(i, out_shape, idx);
        out[i] = apply_activation(c.activation, out[i] + broadcast_at(in[2], idx, out_rank));
      }
      return {};
    }
    case OpKind::reduce_sum:
    case OpKind::reduce_mean:
    case OpKind::reduce_max:
    case OpKind::reduce_min:
    case OpKind::reduce_prod: {
      auto mask = MESHPLAN_TRY(reduce_mask(c, in[0].shape.size()));
      if (kind == OpKind::reduce_min || kind == OpKind::reduce_prod) {
        // Plain loops: min in f32 (NaN-free inputs give the exact minimum), product in double.
        bool is_min = kind == OpKind::reduce_min;
        std::vector<double> acc(out.size(), is_min ? std::numeric_limits<double>::infinity() : 1.0);
        for (int64_t i = 0; i < volume(in[0].shape); ++i) {
          unravel(i, in[0].shape, idx);
          int64_t o = 0;
          for (size_t d = 0; d < in[0].shape.size(); ++d)
            if (!mask[d]) o = o * in[0].shape[d] + idx[d];
          double v = in[0].data[i];
          acc[o] = is_min ? std::min(acc[o], v) : acc[o] * v;
        }
        for (size_t o = 0; o < out.size(); ++o) out[o] = static_cast<float>(acc[o]);
        return {};
      }
      bool is_max = kind == OpKind::reduce_max;
      std::fill(out.begin(), out.end(), is_max ? -std::numeric_limits<float>::infinity() : 0.0f);
      std::vector<double> acc(out.size(), 0.0);
      int64_t n_in = volume(in[0].shape), count = 1;
      for (size_t d = 0; d < in[0].shape.size(); ++d)
        if (mask[d]) count *= in[0].shape[d];
      for (int64_t i = 0; i < n_in; ++i) {
        unravel(i, in[0].shape, idx);
        int64_t o = 0;
        for (size_t d = 0; d < in[0].shape.size(); ++d)
          if (!mask[d]) o = o * in[0].shape[d] + idx[d];
        if (is_max)
          out[o] = std::max(out[o], in[0].data[i]);
        else
          acc[o] += in[0].data[i];
      }
      if (!is_max)
        for (size_t o = 0; o < out.size(); ++o)
          out[o] = static_cast<float>(kind == OpKind::reduce_mean ? acc[o] / count : acc[o]);
      return {};
    }
    case OpKind::softmax: {
      // Over dim d: the lines start at the elements whose index along d is 0, and step by d's
      // stride.
      size_t rank = in[0].shape.size();
      if (rank == 0) return fail(ErrorCode::invalid_argument, "softmax needs rank >= 1");
      int d = static_cast<int>(rank) - 1;
      if (c.num_dims == 1) d = MESHPLAN_TRY(resolve_axis(c.dims[0], rank, "softmax dim"));
      int64_t n = in[0].shape[d], stride = strides_of(in[0].shape)[d];
      const float* x = in[0].data.data();
      for (int64_t i = 0; i < total && n > 0; ++i) {
        if ((i / stride) % n != 0) continue;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < n; ++j) m = std::max(m, x[i + j * stride]);
        double s = 0;
        for (int64_t j = 0; j < n; ++j) s += std::exp(double(x[i + j * stride]) - m);
        for (int64_t j = 0; j < n; ++j)
          out[i + j * stride] = static_cast<float>(std::exp(double(x[i + j * stride]) - m) / s);
      }
      return {};
    }
    case OpKind::layer_norm:
    case OpKind::rms_norm: {
      const float* w = in.size() > 1 ? in[1].data.data() : nullptr;
      const float* b = in.size() > 2 ? in[2].data.data() : nullptr;
      bool rms = kind == OpKind::rms_norm;
      double eps = c.epsilon;
      for_each_row(in[0], out, [&](const float* x, float* y, int64_t n) {
        double mean = 0, sq = 0;
        for (int64_t j = 0; j < n; ++j) mean += x[j];
        mean /= n;
        if (rms) mean = 0;
        for (int64_t j = 0; j < n; ++j) sq += (x[j] - mean) * (x[j] - mean);
        double inv = 1.0 / std::sqrt(sq / n + eps);
        for (int64_t j = 0; j < n; ++j)
          y[j] = static_cast<float>((x[j] - mean) * inv * (w ? w[j] : 1.0f) + (b ? b[j] : 0.0f));
      });
      return {};
    }
    case OpKind::reshape:
      std::copy(in[0].data.begin(), in[0].data.end(), out.begin());
      return {};
    case OpKind::typecast:
      for (int64_t i = 0; i < total; ++i) out[i] = storage_value(c.dtype, in[0].data[i]);
      return {};
    case OpKind::permute: {
      auto perm = MESHPLAN_TRY(resolve_perm(c, in[0].shape.size()));
      auto st = strides_of(in[0].shape);
      for (int64_t i = 0; i < total; ++i) {
        unravel(i, out_shape, idx);
        int64_t src = 0;
        for (size_t d = 0; d < out_rank; ++d) src += idx[d] * st[perm[d]];
        out[i] = in[0].data[src];
      }
      return {};
    }
    case OpKind::slice: {
      SliceSpec s = MESHPLAN_TRY(resolve_slice(c, in[0].shape));
      auto st = strides_of(in[0].shape);
      for (int64_t i = 0; i < total; ++i) {
        unravel(i, out_shape, idx);
        int64_t src = 0;
        for (size_t d = 0; d < out_rank; ++d) src += (s.begin[d] + idx[d] * s.step[d]) * st[d];
        out[i] = in[0].data[src];
      }
      return {};
    }
    case OpKind::concat: {
      int axis = MESHPLAN_TRY(resolve_axis(c.axis, out_rank, "concat axis"));
      auto ost = strides_of(out_shape);
      int64_t offset = 0;
      for (const HostView& v : in) {
        for (int64_t i = 0; i < volume(v.shape); ++i) {
          unravel(i, v.shape, idx);
          idx[axis] += offset;
          int64_t dst = 0;
          for (size_t d = 0; d < out_rank; ++d) dst += idx[d] * ost[d];
          out[dst] = v.data[i];
        }
        offset += v.shape[axis];
      }
      return {};
    }
    case OpKind::embedding: {
      int64_t rows = in[1].shape[0], dim = in[1].shape[1];
      for (int64_t i = 0; i < volume(in[0].shape); ++i) {
        float f = in[0].data[i];
        int64_t row = static_cast<int64_t>(f);
        if (!(f >= 0.0f) || row >= rows)
          return fail(ErrorCode::invalid_argument, "embedding index ", f, " at position ", i,
                      " is outside the table's ", rows, " rows");
        std::copy_n(in[1].data.data() + row * dim, dim, out.data() + i * dim);
      }
      return {};
    }
    case OpKind::conv2d:
    case OpKind::max_pool2d:
    case OpKind::avg_pool2d:
    case OpKind::global_avg_pool2d:
      return windowed(kind, in, c, out);
    default:
      break;
  }
  return fail(ErrorCode::internal, "no reference for op kind ", static_cast<int>(kind));
}

}  // namespace meshplan::device
