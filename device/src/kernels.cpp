// Kernels: each emulated core computes its share of the output tiles from tiles it reads through
// the operands' address maps, and writes its tiles back through the result's address map.
// Padding outside a tensor's logical shape is written as zero.
#include "kernels.hpp"

#include <algorithm>
#include <vector>

#include "meshplan/device/formats.hpp"
#include "meshplan/device/timing.hpp"

namespace meshplan::device {

namespace {

/// Reads and writes tiles of one placement.
class TileIO {
 public:
  TileIO(ChipMemory& memory, const ChipDesc& chip, const TensorPlacement& t)
      : memory_(memory), t_(t), map_(t, chip), grid_(tile_grid(t.shape)), page_(t.page_size) {}

  const TileGrid& grid() const { return grid_; }

  /// Page p as 1024 f32 values in tile order.
  Status read(int64_t p, float* tile) {
    PageLocation loc = map_.page(p);
    memory_.bank(t_.buffer, loc.bank).read(loc.offset, page_.data(), page_.size());
    return unpack_tile(t_.dtype, page_.data(), tile);
  }

  Status write(int64_t p, const float* tile) {
    MESHPLAN_TRY(pack_tile(t_.dtype, tile, page_.data()));
    PageLocation loc = map_.page(p);
    memory_.bank(t_.buffer, loc.bank).write(loc.offset, page_.data(), page_.size());
    return {};
  }

  /// Reads every tile, converted to row-major 32x32 blocks, into `blocks` (pages * 1024).
  Status read_all_blocks(std::vector<float>& blocks) {
    blocks.assign(static_cast<size_t>(grid_.pages() * kTileElems), 0.0f);
    float tile[kTileElems];
    for (int64_t p = 0; p < grid_.pages(); ++p) {
      MESHPLAN_TRY(read(p, tile));
      float* block = blocks.data() + p * kTileElems;
      for (int r = 0; r < kTileH; ++r)
        for (int c = 0; c < kTileW; ++c) block[r * kTileW + c] = tile[tile_offset(r, c)];
    }
    return {};
  }

 private:
  ChipMemory& memory_;
  const TensorPlacement& t_;
  AddressMap map_;
  TileGrid grid_;
  std::vector<std::byte> page_;
};

float activate(Activation a, float v) { return a == Activation::relu ? std::max(v, 0.0f) : v; }

/// Logical coordinates of tile page `p` element (r, c): batch index, row, column.
struct TileCoords {
  int64_t batch, row0, col0;
};
TileCoords tile_coords(const TileGrid& g, int64_t p) {
  int64_t per_matrix = (g.rows + kTileH - 1) / kTileH;
  int64_t tr = p / g.tiles_w, tc = p % g.tiles_w;
  return TileCoords{tr / per_matrix, (tr % per_matrix) * kTileH, tc * kTileW};
}

/// Splits `tiles` output tiles over `cores` cores in contiguous ranges; calls fn(core, begin, end).
template <class Fn>
Status for_each_core(int64_t tiles, uint32_t cores, Fn&& fn) {
  int64_t per_core = (tiles + cores - 1) / cores;
  for (uint32_t core = 0; core < cores; ++core) {
    int64_t begin = core * per_core, end = std::min(tiles, begin + per_core);
    if (begin >= end) break;
    MESHPLAN_TRY(fn(core, begin, end));
  }
  return {};
}

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
  int64_t o_th = (og.rows + kTileH - 1) / kTileH;

  std::vector<float> a_blocks, b_blocks;
  MESHPLAN_TRY(a.read_all_blocks(a_blocks));
  MESHPLAN_TRY(b.read_all_blocks(b_blocks));
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
      for (int r = 0; r < kTileH; ++r)
        for (int c = 0; c < kTileW; ++c) {
          bool inside = tc.row0 + r < og.rows && tc.col0 + c < og.cols;
          tile[tile_offset(r, c)] = inside ? activate(cfg.activation, acc[r * kTileW + c]) : 0.0f;
        }
      (void)o_th;
      MESHPLAN_TRY(out.write(p, tile));
    }
    return {};
  });
}

/// Elementwise ops with numpy broadcasting over the logical shape.
Status run_eltwise(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  TileIO out(memory, chip, *op.results[0]);
  const TileGrid& og = out.grid();
  auto oshape = op.results[0]->shape;
  size_t n_in = op.operands.size();
  std::vector<std::vector<float>> blocks(n_in);
  std::vector<TileGrid> grids(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    TileIO in(memory, chip, *op.operands[i]);
    grids[i] = in.grid();
    MESHPLAN_TRY(in.read_all_blocks(blocks[i]));
  }
  // Value of operand i at the output's logical (batch, row, col), broadcasting.
  auto value = [&](size_t i, int64_t batch, int64_t row, int64_t col) -> float {
    auto ishape = op.operands[i]->shape;
    const TileGrid& g = grids[i];
    int64_t r = g.rows == 1 ? 0 : row, c = g.cols == 1 ? 0 : col;
    if (ishape.size() < 2) r = 0;
    // Map the output batch index onto the operand's batch dims (right-aligned, size-1 dims broadcast).
    int64_t ib = 0;
    if (g.batch > 1) {
      int64_t rem = batch, stride = 1;
      size_t orank = oshape.size(), irank = ishape.size();
      for (size_t d = 2; d < orank; ++d) {
        size_t od = orank - 1 - d;
        int64_t coord = rem % oshape[od];
        rem /= oshape[od];
        if (d < irank) {
          size_t id = irank - 1 - d;
          if (ishape[id] != 1) ib += coord * stride;
          stride *= ishape[id];
        }
      }
    }
    int64_t per_matrix = (g.rows + kTileH - 1) / kTileH;
    int64_t page = (ib * per_matrix + r / kTileH) * g.tiles_w + c / kTileW;
    return blocks[i][page * kTileElems + (r % kTileH) * kTileW + (c % kTileW)];
  };
  return for_each_core(og.pages(), cores, [&](uint32_t, int64_t begin, int64_t end) -> Status {
    float tile[kTileElems];
    for (int64_t p = begin; p < end; ++p) {
      TileCoords tc = tile_coords(og, p);
      for (int r = 0; r < kTileH; ++r)
        for (int c = 0; c < kTileW; ++c) {
          int64_t row = tc.row0 + r, col = tc.col0 + c;
          float v = 0.0f;
          if (row < og.rows && col < og.cols) {
            switch (op.kind) {
              case OpKind::add: v = value(0, tc.batch, row, col) + value(1, tc.batch, row, col); break;
              case OpKind::relu: v = std::max(value(0, tc.batch, row, col), 0.0f); break;
              default: break;
            }
            v = activate(op.config.activation, v);
          }
          tile[tile_offset(r, c)] = v;
        }
      MESHPLAN_TRY(out.write(p, tile));
    }
    return {};
  });
}

}  // namespace

Result<OpTiming> run_kernel(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op) {
  OpTiming timing = estimate(chip, op);
  switch (op.kind) {
    case OpKind::matmul: MESHPLAN_TRY(run_matmul(memory, chip, op, timing.cores_used)); break;
    case OpKind::add:
    case OpKind::relu: MESHPLAN_TRY(run_eltwise(memory, chip, op, timing.cores_used)); break;
  }
  return timing;
}

}  // namespace meshplan::device
