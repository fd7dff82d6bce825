// conv2d and pooling kernels, computed directly per output tile (no im2col): each output element
// of the NHWC result accumulates its window over the input's tiles. The output's 2-D tile view is
// [N * OH, OW] x [C], so a tile row holds up to 32 output pixels of one image row.
#include <limits>

#include "kernel_blocks.hpp"
#include "op_semantics_ext.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

Status run_conv(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  std::vector<Blocks> in;
  for (const TensorPlacement* t : op.operands)
    in.push_back(MESHPLAN_TRY(load_blocks(memory, chip, *t)));
  OpKind kind = op.kind;
  WindowGeom g = MESHPLAN_TRY(
      window_geom(kind, in[0].shape,
                  kind == OpKind::conv2d ? in[1].shape : std::span<const int64_t>{}, op.config));
  Activation act = op.config.activation;
  bool has_bias = in.size() == 3;
  return write_elements(
      memory, chip, op, cores,
      [&](const int64_t* o) {
        int64_t n = o[0], oy = o[1], ox = o[2], oc = o[3];
        int64_t grp = kind == OpKind::conv2d ? oc / g.cout_per_group : 0;
        float acc = kind == OpKind::max_pool2d ? -std::numeric_limits<float>::infinity() : 0.0f;
        int64_t count = 0;
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          int64_t iy = oy * g.sh - g.pt + ky * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            int64_t ix = ox * g.sw - g.pl + kx * g.dw;
            if (ix < 0 || ix >= g.w) continue;
            ++count;
            int64_t xi[4] = {n, iy, ix, oc};
            if (kind == OpKind::conv2d) {
              // Either weight form: [O, KH, KW, I/g] or prepared [KH*KW*I/g, O]. The sum runs
              // in the same order, so both forms give bit-equal results.
              int64_t wi[4] = {oc, ky, kx, 0};
              int64_t row = (ky * g.kw + kx) * g.cin_per_group;
              for (int64_t ci = 0; ci < g.cin_per_group; ++ci) {
                xi[3] = grp * g.cin_per_group + ci;
                float wv;
                if (g.weight.prepared) {
                  int64_t pi[2] = {row + ci, oc};
                  wv = in[1].at(pi);
                } else {
                  wi[3] = ci;
                  wv = in[1].at(wi);
                }
                acc += in[0].at(xi) * wv;
              }
            } else if (kind == OpKind::max_pool2d) {
              acc = std::max(acc, in[0].at(xi));
            } else {
              acc += in[0].at(xi);
            }
          }
        }
        if (kind == OpKind::conv2d) {
          if (has_bias) acc += in[2].at_broadcast(&oc, 1);
          return apply_activation(act, acc);
        }
        if (kind == OpKind::max_pool2d) return acc;
        return count ? acc / static_cast<float>(count) : 0.0f;
      },
      g.kh * g.kw * g.cin_per_group * kTileElems * kElementVisitNs);
}

}  // namespace meshplan::device
