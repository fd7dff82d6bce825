// conv2d and pooling kernels. conv2d runs as TTNN's height-sharded conv does: each core walks the
// output tile rows of its range in blocks of act_block_h tile rows (conv_blocking.hpp), builds
// that block of the im2col matrix (32 * act_block_h rows x KH*KW*I/g columns per group), and
// multiplies it by the weight block in act_block_w_div chunks of K, accumulating f32 partials
// across the chunks. Every output element is the same f32 dot product over K in the same order
// (ky, kx, ci) whatever the block height and K split, so results do not depend on them. Pools
// compute each output element from its window directly. The output's 2-D tile view is
// [N * OH, OW] x [C] in the NHWC form, so a tile row holds up to 32 output pixels of one image
// row; in the flattened form (OpConfig::input_n/h/w) it is one [N*OH*OW] x [C] matrix and a tile
// row holds 32 consecutive output pixels, across image rows and images. Elements are reached
// through WindowGeom's index helpers, so the same loops serve both forms. run_conv loads every
// operand (the halo step's copy of the input) before it writes any result tile, so a result
// that takes the L1 of an input the conv freed (OpConfig::deallocate_activation) computes the
// same values.
#include <limits>

#include "kernel_blocks.hpp"
#include "meshplan/device/conv_blocking.hpp"
#include "op_semantics_ext.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

namespace {

/// The weight as [O][K] rows (K = KH*KW*I/g in (ky, kx, ci) order): the weight block every core
/// multiplies its activation blocks by. The only place the kernel reads the weight operand, in
/// either form ([O, KH, KW, I/g] or prepared [KH*KW*I/g, O], conv_weights.hpp): the packed rows
/// and so the results are bit-equal for both.
std::vector<float> pack_weight(const Blocks& w, const WindowGeom& g) {
  int64_t k = g.kh * g.kw * g.cin_per_group;
  std::vector<float> out(static_cast<size_t>(g.oc * k));
  for (int64_t oc = 0; oc < g.oc; ++oc)
    for (int64_t ky = 0; ky < g.kh; ++ky)
      for (int64_t kx = 0; kx < g.kw; ++kx)
        for (int64_t ci = 0; ci < g.cin_per_group; ++ci) {
          int64_t row = (ky * g.kw + kx) * g.cin_per_group + ci;
          float v;
          if (g.weight.prepared) {
            int64_t wi[2] = {row, oc};
            v = w.at(wi);
          } else {
            int64_t wi[4] = {oc, ky, kx, ci};
            v = w.at(wi);
          }
          out[static_cast<size_t>(oc * k + row)] = v;
        }
  return out;
}

/// Fills rows [0, 32 * block_rows) of the im2col block for output tile rows starting at `row0`:
/// row (t, r) is the output pixel at row (tile row % per_matrix) * 32 + r of matrix
/// tile row / per_matrix of the result's 2-D view (WindowGeom::output_pixel); columns
/// grp * K + (ky * KW + kx) * I/g + ci; tile padding rows and taps in the padding are 0.
void fill_im2col(const Blocks& x, const WindowGeom& g, int64_t per_matrix, int64_t row0,
                 int64_t block_rows, std::vector<float>& a) {
  int64_t k = g.kh * g.kw * g.cin_per_group, width = k * g.groups;
  a.assign(static_cast<size_t>(block_rows * kTileH * width), 0.0f);
  for (int64_t t = 0; t < block_rows; ++t) {
    int64_t tr = row0 + t;
    for (int64_t r = 0; r < kTileH; ++r) {
      int64_t n = 0, oy = 0, ox = 0;
      if (!g.output_pixel(tr / per_matrix, (tr % per_matrix) * kTileH + r, &n, &oy, &ox)) break;
      float* row = a.data() + (t * kTileH + r) * width;
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        int64_t iy = oy * g.sh - g.pt + ky * g.dh;
        if (iy < 0 || iy >= g.h) continue;
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          int64_t ix = ox * g.sw - g.pl + kx * g.dw;
          if (ix < 0 || ix >= g.w) continue;
          std::array<int64_t, 4> xi = g.input_index(n, iy, ix, 0);
          for (int64_t c = 0; c < g.c; ++c) {
            xi[3] = c;
            int64_t grp = c / g.cin_per_group, ci = c % g.cin_per_group;
            row[grp * k + (ky * g.kw + kx) * g.cin_per_group + ci] = x.at(xi.data());
          }
        }
      }
    }
  }
}

Status run_conv2d(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op,
                  const std::vector<Blocks>& in, const WindowGeom& g, uint32_t cores) {
  ConvBlocking b = MESHPLAN_TRY(resolve_conv(op, chip));
  std::vector<float> weight = pack_weight(in[1], g);
  int64_t k = g.kh * g.kw * g.cin_per_group;
  bool has_bias = in.size() == 3;
  Activation act = op.config.activation;
  TileIO out(memory, chip, *op.results[0]);
  const TileGrid& og = out.grid();
  int64_t per_matrix = (og.rows + kTileH - 1) / kTileH;
  // K elements per chunk: whole tiles (the last chunk of a K that is not a multiple of 32 is
  // short by the padding).
  int64_t chunk = b.k_block_tiles * kTileW;
  auto per_core = [&](uint32_t, int64_t begin, int64_t end) -> Status {
    std::vector<float> a, partials;
    float tile[kTileElems];
    int64_t first = begin / og.tiles_w, last = (end - 1) / og.tiles_w;
    for (int64_t row0 = first; row0 <= last; row0 += b.act_block_h) {
      int64_t rows = std::min(b.act_block_h, last + 1 - row0);
      fill_im2col(in[0], g, per_matrix, row0, rows, a);
      int64_t p0 = std::max(begin, row0 * og.tiles_w);
      int64_t p1 = std::min(end, (row0 + rows) * og.tiles_w);
      partials.assign(static_cast<size_t>((p1 - p0) * kTileElems), 0.0f);
      // One pass per K chunk over the block's output tiles, each adding its chunk's products.
      for (int64_t k0 = 0; k0 < k; k0 += chunk) {
        int64_t k1 = std::min(k, k0 + chunk);
        for (int64_t p = p0; p < p1; ++p) {
          int64_t t = p / og.tiles_w - row0, col0 = (p % og.tiles_w) * kTileW;
          float* acc_tile = partials.data() + (p - p0) * kTileElems;
          for (int r = 0; r < kTileH; ++r)
            for (int c = 0; c < kTileW; ++c) {
              int64_t oc = col0 + c, tr = p / og.tiles_w, pn = 0, py = 0, px = 0;
              if (oc >= g.oc ||
                  !g.output_pixel(tr / per_matrix, (tr % per_matrix) * kTileH + r, &pn, &py, &px))
                continue;
              const float* arow =
                  a.data() + ((t * kTileH + r) * g.groups + oc / g.cout_per_group) * k;
              const float* wrow = weight.data() + oc * k;
              float acc = acc_tile[r * kTileW + c];
              for (int64_t i = k0; i < k1; ++i) acc += arow[i] * wrow[i];
              acc_tile[r * kTileW + c] = acc;
            }
        }
      }
      for (int64_t p = p0; p < p1; ++p) {
        int64_t col0 = (p % og.tiles_w) * kTileW;
        const float* acc_tile = partials.data() + (p - p0) * kTileElems;
        for (int r = 0; r < kTileH; ++r)
          for (int c = 0; c < kTileW; ++c) {
            int64_t oc = col0 + c, tr = p / og.tiles_w, pn = 0, py = 0, px = 0;
            float v = 0.0f;
            if (oc < g.oc &&
                g.output_pixel(tr / per_matrix, (tr % per_matrix) * kTileH + r, &pn, &py, &px)) {
              float acc = acc_tile[r * kTileW + c];
              if (has_bias) acc += in[2].at_broadcast(&oc, 1);
              v = apply_activation(act, acc);
            }
            tile[tile_offset(r, c)] = v;
          }
        MESHPLAN_TRY(out.write(p, tile));
      }
    }
    return {};
  };
  return for_each_core(memory, chip, *op.results[0], og.pages(), cores,
                       k * kTileElems * kElementVisitNs, per_core);
}

}  // namespace

Status run_conv(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  std::vector<Blocks> in;
  for (const TensorPlacement* t : op.operands)
    in.push_back(MESHPLAN_TRY(load_blocks(memory, chip, *t)));
  OpKind kind = op.kind;
  WindowGeom g = MESHPLAN_TRY(
      window_geom(kind, in[0].shape,
                  kind == OpKind::conv2d ? in[1].shape : std::span<const int64_t>{}, op.config));
  if (kind == OpKind::conv2d) return run_conv2d(memory, chip, op, in, g, cores);
  return write_elements(
      memory, chip, op, cores,
      [&](const int64_t* o) {
        auto [n, oy, ox, oc] = g.output_nhwc(o);
        float acc = kind == OpKind::max_pool2d ? -std::numeric_limits<float>::infinity() : 0.0f;
        int64_t count = 0;
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          int64_t iy = oy * g.sh - g.pt + ky * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            int64_t ix = ox * g.sw - g.pl + kx * g.dw;
            if (ix < 0 || ix >= g.w) continue;
            ++count;
            std::array<int64_t, 4> xi = g.input_index(n, iy, ix, oc);
            if (kind == OpKind::max_pool2d)
              acc = scalar::maximum{}(acc, in[0].at(xi.data()));  // NaN propagates.
            else
              acc += in[0].at(xi.data());
          }
        }
        if (kind == OpKind::max_pool2d) return acc;
        return count ? acc / static_cast<float>(count) : 0.0f;
      },
      g.kh * g.kw * kTileElems * kElementVisitNs);
}

}  // namespace meshplan::device
