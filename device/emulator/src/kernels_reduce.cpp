// Reduction kernels: reduce_sum/mean/max/min/prod over any dims (each output element accumulates
// its reduced sub-tensor); the row ops softmax (last dim), layer_norm and rms_norm, which read
// whole tile rows of the operand for each output tile; and softmax over any other dim, which reads
// the line of operand values along that dim through each output element.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>

#include "kernel_blocks.hpp"
#include "op_semantics_ext.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

namespace {

/// The dims a reduction folds and, for each kept dim, the output dim it comes from; `count`
/// operand elements fold into each output element.
struct ReducedDims {
  std::array<bool, kMaxRank> mask{};
  int reduced[kMaxRank] = {};
  int n_reduced = 0;
  int out_dim[kMaxRank] = {};
  int64_t count = 1;
  std::span<const int64_t> shape;

  /// Sets `idx` (operand rank) to the kept dims of output element `out_idx`.
  void start(const int64_t* out_idx, int64_t* idx) const {
    for (size_t d = 0; d < shape.size(); ++d) idx[d] = mask[d] ? 0 : out_idx[out_dim[d]];
  }
  /// Sets the reduced dims of `idx` to the i-th of the `count` elements (row-major).
  void visit(int64_t i, int64_t* idx) const {
    for (int j = n_reduced; j-- > 0;) {
      idx[reduced[j]] = i % shape[reduced[j]];
      i /= shape[reduced[j]];
    }
  }
};

Result<ReducedDims> reduced_dims(const OpConfig& config, std::span<const int64_t> shape) {
  ReducedDims r;
  r.shape = shape;
  r.mask = MESHPLAN_TRY(reduce_mask(config, shape.size()));
  for (size_t d = 0, o = 0; d < shape.size(); ++d) {
    if (r.mask[d]) {
      r.reduced[r.n_reduced++] = static_cast<int>(d);
      r.count *= shape[d];
      if (config.keepdim) ++o;
    } else {
      r.out_dim[d] = static_cast<int>(o++);
    }
  }
  return r;
}

/// reduce_sum / max / min / prod of an i32 or u32 operand into its own dtype: on the stored
/// words, exactly (sum and product wrap modulo 2^32; max and min in the dtype's signedness).
Status run_reduce_words(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op,
                        uint32_t cores) {
  WordBlocks in = load_words(memory, chip, *op.operands[0]);
  bool sgn = op.operands[0]->dtype == DType::i32;
  ReducedDims rd = MESHPLAN_TRY(reduced_dims(op.config, in.shape));
  size_t rank = in.shape.size();
  OpKind k = op.kind;
  // The identities: 0, 1, the dtype's lowest (max) and highest (min) values.
  uint32_t init = k == OpKind::reduce_prod  ? 1u
                  : k == OpKind::reduce_max ? (sgn ? 0x80000000u : 0u)
                  : k == OpKind::reduce_min ? (sgn ? 0x7fffffffu : 0xffffffffu)
                                            : 0u;
  return write_word_elements(
      memory, chip, op, cores,
      [&](const int64_t* out_idx) {
        int64_t idx[kMaxRank];
        rd.start(out_idx, idx);
        uint32_t acc = init;
        for (int64_t i = 0; i < rd.count; ++i) {
          rd.visit(i, idx);
          IntWord a{acc, sgn}, v{in.at_broadcast(idx, rank), sgn};
          acc = k == OpKind::reduce_sum    ? scalar::add::word(a, v)
                : k == OpKind::reduce_prod ? scalar::multiply::word(a, v)
                : k == OpKind::reduce_max  ? scalar::maximum::word(a, v)
                                           : scalar::minimum::word(a, v);
        }
        return acc;
      },
      std::max<int64_t>(rd.count, 1) * kTileElems * kElementVisitNs);
}

Status run_reduce(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  DType dt = op.operands[0]->dtype;
  if (is_int_dtype(dt) && op.results[0]->dtype == dt && op.kind != OpKind::reduce_mean)
    return run_reduce_words(memory, chip, op, cores);
  Blocks in = MESHPLAN_TRY(load_blocks(memory, chip, *op.operands[0]));
  ReducedDims rd = MESHPLAN_TRY(reduced_dims(op.config, in.shape));
  const int64_t count = rd.count;
  bool is_max = op.kind == OpKind::reduce_max, is_mean = op.kind == OpKind::reduce_mean;
  bool is_min = op.kind == OpKind::reduce_min, is_prod = op.kind == OpKind::reduce_prod;
  return write_elements(
      memory, chip, op, cores,
      [&](const int64_t* out_idx) {
        int64_t idx[kMaxRank];
        rd.start(out_idx, idx);
        float best = -std::numeric_limits<float>::infinity();
        double sum = 0.0, least = std::numeric_limits<double>::infinity(), prod = 1.0;
        for (int64_t i = 0; i < count; ++i) {
          rd.visit(i, idx);
          float v = in.at(idx);
          // max / min propagate NaN (StableHLO's maximum / minimum).
          best = scalar::maximum{}(best, v);
          sum += v;
          least =
              std::isnan(v) || std::isnan(least) ? double(v) + least : std::min(least, double(v));
          prod *= v;
        }
        if (is_min) return static_cast<float>(least);
        if (is_prod) return static_cast<float>(prod);
        return is_max ? best : static_cast<float>(is_mean ? sum / count : sum);
      },
      std::max<int64_t>(count, 1) * kTileElems * kElementVisitNs);
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
  auto per_core = [&](uint32_t, int64_t begin, int64_t end) -> Status {
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
  };
  // Each tile row's statistics are recomputed per tile: a few passes over 32 rows of n values
  // read from contiguous blocks (measured ~kElementVisitNs per row value in all).
  return for_each_core(memory, chip, *op.results[0], g.pages(), cores,
                       kTileH * std::max<int64_t>(n, 1) * kElementVisitNs, per_core);
}

/// softmax over dim `d` other than the last: every output element is exp(x - max) / sum over the
/// line of operand values through it along `d`. Within one output tile the lines are shared by a
/// tile column (d is the rows dim) or are one per element (d is a leading dim); their statistics
/// are computed once per tile, in f32 with a double sum as the reference does.
Status run_softmax_dim(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, int d,
                       uint32_t cores) {
  Blocks x = MESHPLAN_TRY(load_blocks(memory, chip, *op.operands[0]));
  TileIO out(memory, chip, *op.results[0]);
  const TileGrid& g = out.grid();
  auto shape = op.results[0]->shape;
  int rank = static_cast<int>(shape.size());
  int64_t n = shape[d];
  auto per_core = [&](uint32_t, int64_t begin, int64_t end) -> Status {
    float tile[kTileElems], line_max[kTileElems], line_inv[kTileElems];
    bool have[kTileElems];
    int64_t idx[kMaxRank] = {};
    for (int64_t p = begin; p < end; ++p) {
      std::fill(tile, tile + kTileElems, 0.0f);
      std::fill(have, have + kTileElems, false);
      TileCoords tc = tile_coords(g, p);
      for (int r = 0; r < kTileH && tc.row0 + r < g.rows; ++r)
        for (int c = 0; c < kTileW && tc.col0 + c < g.cols; ++c) {
          output_index(shape, tc, r, c, idx);
          int key = d == rank - 2 ? c : r * kTileW + c;
          int64_t at = idx[d];
          if (!have[key]) {
            float m = -std::numeric_limits<float>::infinity();
            for (idx[d] = 0; idx[d] < n; ++idx[d]) m = std::max(m, x.at(idx));
            double sum = 0.0;
            for (idx[d] = 0; idx[d] < n; ++idx[d]) sum += std::exp(double(x.at(idx)) - m);
            line_max[key] = m;
            line_inv[key] = static_cast<float>(1.0 / sum);
            have[key] = true;
          }
          idx[d] = at;
          tile[tile_offset(r, c)] =
              static_cast<float>(std::exp(double(x.at(idx)) - line_max[key])) * line_inv[key];
        }
      MESHPLAN_TRY(out.write(p, tile));
    }
    return {};
  };
  int64_t lines_per_tile = d == rank - 2 ? kTileW : kTileElems;
  return for_each_core(memory, chip, *op.results[0], g.pages(), cores,
                       (lines_per_tile * 2 * n + kTileElems) * kElementVisitNs, per_core);
}

}  // namespace

Status run_reduction(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  switch (op_family(op.kind)) {
    case OpFamily::reduction:
      return run_reduce(memory, chip, op, cores);
    case OpFamily::softmax: {
      int rank = static_cast<int>(op.operands[0]->shape.size());
      int d = rank - 1;
      if (op.config.num_dims == 1)
        d = MESHPLAN_TRY(resolve_axis(op.config.dims[0], static_cast<size_t>(rank), "softmax dim"));
      if (d == rank - 1) return run_row_op(memory, chip, op, cores);
      return run_softmax_dim(memory, chip, op, d, cores);
    }
    case OpFamily::norm:
      return run_row_op(memory, chip, op, cores);
    // kernels.cpp dispatches only the three row families here.
    case OpFamily::matmul:
    case OpFamily::eltwise_unary:
    case OpFamily::eltwise_binary:
    case OpFamily::compare:
    case OpFamily::select:
    case OpFamily::memory:
    case OpFamily::shape:
    case OpFamily::gather:
    case OpFamily::convert:
    case OpFamily::conv:
    case OpFamily::pool:
    case OpFamily::collective:
      break;
  }
  return fail(ErrorCode::internal, op_name(op.kind), " is not a reduction");
}

}  // namespace meshplan::device
