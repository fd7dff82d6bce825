// Matmul and linear kernel: each core of the program computes its block of output tiles
// (matmul_work), one out sub-block at a time, accumulating in f32 over K in steps of in0_block_w
// tiles; then (linear) the broadcast bias, then the optional fused activation. Operands are read
// through their address maps (any layout).
#include "core_pool.hpp"
#include "kernel_blocks.hpp"
#include "meshplan/device/matmul_program.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

namespace {

void transpose_blocks(std::vector<float>& blocks) {
  for (size_t off = 0; off < blocks.size(); off += kTileElems)
    for (int r = 0; r < kTileH; ++r)
      for (int c = r + 1; c < kTileW; ++c)
        std::swap(blocks[off + r * kTileW + c], blocks[off + c * kTileW + r]);
}

/// acc += x * y for row-major 32x32 blocks. The pointers never alias (restrict lets -O2
/// vectorise the fixed 32-wide inner loop without runtime checks).
void mac_tile(float* __restrict acc, const float* __restrict x, const float* __restrict y) {
  for (int i = 0; i < kTileH; ++i) {
    float* __restrict arow = acc + i * kTileW;
    for (int p = 0; p < kTileW; ++p) {
      float xv = x[i * kTileW + p];
      const float* __restrict yrow = y + p * kTileW;
      for (int j = 0; j < kTileW; ++j) arow[j] += xv * yrow[j];
    }
  }
}

}  // namespace

Status run_matmul(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t) {
  MatmulBlocking m = MESHPLAN_TRY(resolve_matmul(op, chip));
  TileIO a(memory, chip, *op.operands[0]), b(memory, chip, *op.operands[1]);
  const OpConfig& cfg = op.config;
  auto as = op.operands[0]->shape, bs = op.operands[1]->shape;
  // Tile counts per matrix as stored.
  int64_t a_th = (as[as.size() - 2] + kTileH - 1) / kTileH,
          a_tw = (as.back() + kTileW - 1) / kTileW;
  int64_t b_th = (bs[bs.size() - 2] + kTileH - 1) / kTileH,
          b_tw = (bs.back() + kTileW - 1) / kTileW;
  bool b_batched = bs.size() > 2;
  TileGrid og = tile_grid(op.results[0]->shape);

  // Every core reads the operand tiles it needs over the NoC; the emulator reads them once.
  // Transposed operands are transposed per block here so the inner loop is always plain.
  std::vector<float> a_blocks, b_blocks;
  MESHPLAN_TRY(a.read_all_blocks(a_blocks));
  MESHPLAN_TRY(b.read_all_blocks(b_blocks));
  if (cfg.transpose_a) transpose_blocks(a_blocks);
  if (cfg.transpose_b) transpose_blocks(b_blocks);
  auto a_block = [&](int64_t batch, int64_t mt, int64_t kt) -> const float* {
    int64_t r = cfg.transpose_a ? kt : mt, c = cfg.transpose_a ? mt : kt;
    return a_blocks.data() + ((batch * a_th + r) * a_tw + c) * kTileElems;
  };
  auto b_block = [&](int64_t batch, int64_t kt, int64_t nt) -> const float* {
    int64_t r = cfg.transpose_b ? nt : kt, c = cfg.transpose_b ? kt : nt;
    return b_blocks.data() + (((b_batched ? batch : 0) * b_th + r) * b_tw + c) * kTileElems;
  };

  // Per-element epilogue of an output value (inside the logical shape): linear's broadcast bias,
  // then the fused activation.
  Blocks bias;
  bool has_bias = op.kind == OpKind::linear;
  if (has_bias) bias = MESHPLAN_TRY(load_blocks(memory, chip, *op.operands[2]));
  auto oshape = op.results[0]->shape;
  auto epilogue = [&](const TileCoords& tc, int r, int c, float v) {
    if (has_bias) {
      int64_t idx[kMaxRank] = {};
      output_index(oshape, tc, r, c, idx);
      v += bias.at_broadcast(idx, oshape.size());
    }
    return apply_activation(cfg.activation, v);
  };

  // Computes output tiles `pages` (at most 8) together, K in steps of in0_block_w, and writes them.
  auto compute = [&](TileIO& out, const int64_t* pages, int count) -> Status {
    float acc[8][kTileElems];
    TileCoords tc[8];
    for (int t = 0; t < count; ++t) {
      tc[t] = tile_coords(og, pages[t]);
      std::fill(acc[t], acc[t] + kTileElems, 0.0f);
    }
    for (int64_t k0 = 0; k0 < m.kt; k0 += m.in0_block_w)
      for (int t = 0; t < count; ++t)
        for (int64_t kt = k0; kt < k0 + m.in0_block_w; ++kt)
          mac_tile(acc[t], a_block(tc[t].batch, tc[t].row0 / kTileH, kt),
                   b_block(tc[t].batch, kt, tc[t].col0 / kTileW));
    float tile[kTileElems];
    for (int t = 0; t < count; ++t) {
      for (int r = 0; r < kTileH; ++r)
        for (int c = 0; c < kTileW; ++c) {
          bool inside = tc[t].row0 + r < og.rows && tc[t].col0 + c < og.cols;
          tile[tile_offset(r, c)] = inside ? epilogue(tc[t], r, c, acc[t][r * kTileW + c]) : 0.0f;
        }
      MESHPLAN_TRY(out.write(pages[t], tile));
    }
    return {};
  };

  std::vector<MatmulWork> work = matmul_work(m, chip.grid_x);
  // The same threshold as every other kernel (for_each_core); matmul's cores follow its program's
  // blocks rather than contiguous tile ranges, so it calls run_on_cores itself.
  bool parallel = work.size() > 1 && use_pool(memory, m.mt * m.nt * m.kt * kTileMacNs);
  if (parallel) back_for_writes(memory, chip, *op.results[0]);
  return run_on_cores(memory, work.size(), parallel, [&](size_t i) -> Status {
    const MatmulWork& w = work[i];
    TileIO out(memory, chip, *op.results[0]);
    int64_t pages[8];
    if (m.program == MatmulProgram::none) {
      for (int64_t p = w.p0; p < w.p1; ++p) MESHPLAN_TRY(compute(out, &p, 1));
      return {};
    }
    for (int64_t r = w.r0; r < w.r1; r += m.sub_h)
      for (int64_t c = w.c0; c < w.c1; c += m.sub_w) {
        int count = 0;
        for (int64_t sr = r; sr < std::min(w.r1, r + m.sub_h); ++sr)
          for (int64_t sc = c; sc < std::min(w.c1, c + m.sub_w); ++sc)
            pages[count++] = sr * m.nt + sc;
        MESHPLAN_TRY(compute(out, pages, count));
      }
    return {};
  });
}

}  // namespace meshplan::device
