// Matmul and linear kernel: tile-by-tile f32 accumulation over the k-tiles, then (linear) the
// broadcast bias, then the optional fused activation.
#include "kernel_blocks.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

Status run_matmul(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  TileIO a(memory, chip, *op.operands[0]), b(memory, chip, *op.operands[1]), out(memory, chip, *op.results[0]);
  const OpConfig& cfg = op.config;
  auto as = op.operands[0]->shape, bs = op.operands[1]->shape;
  // Tile counts per matrix as stored.
  int64_t a_th = (as[as.size() - 2] + kTileH - 1) / kTileH, a_tw = (as.back() + kTileW - 1) / kTileW;
  int64_t b_th = (bs[bs.size() - 2] + kTileH - 1) / kTileH, b_tw = (bs.back() + kTileW - 1) / kTileW;
  int64_t kt_count = cfg.transpose_a ? a_th : a_tw;
  bool b_batched = bs.size() > 2;
  const TileGrid& og = out.grid();

  std::vector<float> a_blocks, b_blocks;
  MESHPLAN_TRY(a.read_all_blocks(a_blocks));
  MESHPLAN_TRY(b.read_all_blocks(b_blocks));
  Blocks bias;
  bool has_bias = op.kind == OpKind::linear;
  if (has_bias) bias = MESHPLAN_TRY(load_blocks(memory, chip, *op.operands[2]));
  auto oshape = op.results[0]->shape;
  auto a_block = [&](int64_t batch, int64_t mt, int64_t kt) -> const float* {
    int64_t r = cfg.transpose_a ? kt : mt, c = cfg.transpose_a ? mt : kt;
    return a_blocks.data() + ((batch * a_th + r) * a_tw + c) * kTileElems;
  };
  auto b_block = [&](int64_t batch, int64_t kt, int64_t nt) -> const float* {
    int64_t r = cfg.transpose_b ? nt : kt, c = cfg.transpose_b ? kt : nt;
    return b_blocks.data() + (((b_batched ? batch : 0) * b_th + r) * b_tw + c) * kTileElems;
  };

  return for_each_core(og.pages(), cores, [&](uint32_t, int64_t begin, int64_t end) -> Status {
    float acc[kTileElems], tile[kTileElems];
    for (int64_t p = begin; p < end; ++p) {
      TileCoords tc = tile_coords(og, p);
      int64_t mt = tc.row0 / kTileH, nt = tc.col0 / kTileW;
      std::fill(acc, acc + kTileElems, 0.0f);
      for (int64_t kt = 0; kt < kt_count; ++kt) {
        const float* x = a_block(tc.batch, mt, kt);
        const float* y = b_block(tc.batch, kt, nt);
        for (int i = 0; i < kTileH; ++i)
          for (int p2 = 0; p2 < kTileW; ++p2) {
            float xv = cfg.transpose_a ? x[p2 * kTileW + i] : x[i * kTileW + p2];
            if (xv == 0.0f) continue;
            const float* yrow = y + (cfg.transpose_b ? 0 : p2 * kTileW);
            for (int j = 0; j < kTileW; ++j)
              acc[i * kTileW + j] += xv * (cfg.transpose_b ? y[j * kTileW + p2] : yrow[j]);
          }
      }
      int64_t idx[kMaxRank] = {};
      for (int r = 0; r < kTileH; ++r)
        for (int c = 0; c < kTileW; ++c) {
          bool inside = tc.row0 + r < og.rows && tc.col0 + c < og.cols;
          float v = acc[r * kTileW + c];
          if (inside && has_bias) {
            output_index(oshape, tc, r, c, idx);
            v += bias.at_broadcast(idx, oshape.size());
          }
          tile[tile_offset(r, c)] = inside ? apply_activation(cfg.activation, v) : 0.0f;
        }
      MESHPLAN_TRY(out.write(p, tile));
    }
    return {};
  });
}

}  // namespace meshplan::device
