// Shape rules and host references of the window families (conv, pool): conv2d and the pools,
// in the NHWC and the flattened form (WindowGeom), accumulated in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "op_semantics_ext.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

namespace {

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
                acc = std::isnan(acc) || std::isnan(px[o]) ? acc + px[o]  // NaN propagates.
                                                           : std::max<double>(acc, px[o]);
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

Result<Shape> shape_conv(OpKind kind, Operands in, const OpConfig& c) {
  switch (op_family(kind)) {
    case OpFamily::conv: {
      WindowGeom g = MESHPLAN_TRY(window_geom(kind, in[0], in[1], c));
      if (in.size() == 3) MESHPLAN_TRY(check_vector_operand(in[2], g.oc, "conv2d bias"));
      return g.result_shape();
    }
    case OpFamily::pool: {
      WindowGeom g = MESHPLAN_TRY(window_geom(kind, in[0], {}, c));
      return g.result_shape();
    }
    case OpFamily::matmul:
    case OpFamily::eltwise_unary:
    case OpFamily::eltwise_binary:
    case OpFamily::compare:
    case OpFamily::select:
    case OpFamily::reduction:
    case OpFamily::softmax:
    case OpFamily::norm:
    case OpFamily::memory:
    case OpFamily::shape:
    case OpFamily::gather:
    case OpFamily::convert:
    case OpFamily::collective:
      break;
  }
  return not_in_family(kind, "window");
}

Status reference_conv(OpKind kind, std::span<const HostView> in, const OpConfig& c,
                      std::span<const int64_t>, std::span<float> out) {
  if (op_family(kind) != OpFamily::conv && op_family(kind) != OpFamily::pool)
    return not_in_family(kind, "window");
  return windowed(kind, in, c, out);
}

}  // namespace meshplan::device
