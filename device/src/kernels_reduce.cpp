// Reduction kernels: reduce_sum/mean/max over any dims (each output element accumulates its
// reduced sub-tensor), and the row ops softmax, layer_norm and rms_norm, which read whole tile
// rows of the operand (the last dim) for each output tile.
#include <cmath>
#include <limits>

#include "kernel_blocks.hpp"
#include "op_semantics_ext.hpp"

namespace meshplan::device {

namespace {

Status run_reduce(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  Blocks in = MESHPLAN_TRY(load_blocks(memory, chip, *op.operands[0]));
  size_t rank = in.shape.size();
  auto mask = MESHPLAN_TRY(reduce_mask(op.config, rank));
  // The reduced dims, and for each kept dim the output dim it comes from.
  int reduced[kMaxRank], n_reduced = 0, out_dim[kMaxRank];
  int64_t count = 1;
  for (size_t d = 0, o = 0; d < rank; ++d) {
    if (mask[d]) {
      reduced[n_reduced++] = static_cast<int>(d);
      count *= in.shape[d];
      if (op.config.keepdim) ++o;
    } else {
      out_dim[d] = static_cast<int>(o++);
    }
  }
  bool is_max = op.kind == OpKind::reduce_max, is_mean = op.kind == OpKind::reduce_mean;
  return write_elements(memory, chip, op, cores, [&](const int64_t* out_idx) {
    int64_t idx[kMaxRank];
    for (size_t d = 0; d < rank; ++d) idx[d] = mask[d] ? 0 : out_idx[out_dim[d]];
    float best = -std::numeric_limits<float>::infinity();
    double sum = 0.0;
    for (int64_t i = 0; i < count; ++i) {
      int64_t rem = i;
      for (int k = n_reduced; k-- > 0;) {
        idx[reduced[k]] = rem % in.shape[reduced[k]];
        rem /= in.shape[reduced[k]];
      }
      float v = in.at(idx);
      best = std::max(best, v);
      sum += v;
    }
    return is_max ? best : static_cast<float>(is_mean ? sum / count : sum);
  });
}

/// softmax / layer_norm / rms_norm: per output tile, each of its rows is normalised using
/// statistics over the whole row (all tiles of that tile row), computed in f32.
Status run_row_op(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  Blocks x = MESHPLAN_TRY(load_blocks(memory, chip, *op.operands[0]));
  std::vector<Blocks> params;
  for (size_t i = 1; i < op.operands.size(); ++i)
    params.push_back(MESHPLAN_TRY(load_blocks(memory, chip, *op.operands[i])));
  TileIO out(memory, chip, *op.results[0]);
  const TileGrid& g = out.grid();
  int64_t n = g.cols;
  float eps = op.config.epsilon;
  // Parameters hold n values along their last dim; their block index is 0 except for the column.
  auto param = [&](size_t i, int64_t col) {
    const Blocks& p = params[i];
    return p.data[(col / kTileW) * kTileElems + (col % kTileW)];
  };
  return for_each_core(g.pages(), cores, [&](uint32_t, int64_t begin, int64_t end) -> Status {
    float tile[kTileElems];
    std::vector<float> row(static_cast<size_t>(n));
    for (int64_t p = begin; p < end; ++p) {
      std::fill(tile, tile + kTileElems, 0.0f);
      int64_t tr = p / g.tiles_w, tc = p % g.tiles_w;
      TileCoords coords = tile_coords(g, p);
      for (int r = 0; r < kTileH && coords.row0 + r < g.rows; ++r) {
        // The whole row, from every tile of tile row `tr`.
        for (int64_t c = 0; c < n; ++c)
          row[c] = x.data[(tr * g.tiles_w + c / kTileW) * kTileElems + r * kTileW + c % kTileW];
        float a = 0.0f, s = 1.0f;  // y = (x - a) * s, then op-specific
        if (op.kind == OpKind::softmax) {
          float m = -std::numeric_limits<float>::infinity();
          for (float v : row) m = std::max(m, v);
          float sum = 0.0f;
          for (float v : row) sum += std::exp(v - m);
          a = m, s = 1.0f / sum;
        } else {
          float mean = 0.0f;
          if (op.kind == OpKind::layer_norm) {
            for (float v : row) mean += v;
            mean /= static_cast<float>(n);
          }
          float sq = 0.0f;
          for (float v : row) sq += (v - mean) * (v - mean);
          a = mean, s = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
        }
        for (int c = 0; c < kTileW; ++c) {
          int64_t col = tc * kTileW + c;
          if (col >= n) break;
          float v;
          if (op.kind == OpKind::softmax) {
            v = std::exp(row[col] - a) * s;
          } else {
            v = (row[col] - a) * s;
            if (!params.empty()) v *= param(0, col);
            if (params.size() > 1) v += param(1, col);
          }
          tile[tile_offset(r, c)] = v;
        }
      }
      MESHPLAN_TRY(out.write(p, tile));
    }
    return {};
  });
}

}  // namespace

Status run_reduction(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  switch (op.kind) {
    case OpKind::reduce_sum:
    case OpKind::reduce_mean:
    case OpKind::reduce_max:
      return run_reduce(memory, chip, op, cores);
    case OpKind::softmax:
    case OpKind::layer_norm:
    case OpKind::rms_norm:
      return run_row_op(memory, chip, op, cores);
    default:
      return fail(ErrorCode::internal, op_name(op.kind), " is not a reduction");
  }
}

}  // namespace meshplan::device
