// Analytic timing model (see timing.hpp).
#include "meshplan/device/timing.hpp"

#include <algorithm>
#include <cmath>

#include "meshplan/device/formats.hpp"
#include "meshplan/device/matmul_program.hpp"

namespace meshplan::device {

namespace {

uint64_t tensor_bytes(const TensorPlacement& t) {
  return static_cast<uint64_t>(page_count(t)) * t.page_size;
}

int fidelity_factor(MathFidelity f) {
  return static_cast<int>(f) + 1;
}

bool is_data_movement(OpKind k) {
  switch (k) {
    case OpKind::to_memory_config:
    case OpKind::reshape:
    case OpKind::permute:
    case OpKind::concat:
    case OpKind::slice:
    case OpKind::embedding:
      return true;
    default:
      return false;
  }
}

int64_t ceil_tiles(int64_t n, int64_t tile) {
  return (n + tile - 1) / tile;
}

/// Compute cycles of the busiest core for ops whose work follows their operands, not their
/// result: reductions and row ops read every operand tile (softmax and layer_norm make 3 passes
/// over a row, rms_norm 2, reductions 1); conv2d is counted as the tile-matmuls of its im2col form
/// ([N*OH*OW, KH*KW*I/g] x [.., O/g] per group); pools touch KH*KW input elements per output.
bool extra_compute_cycles(const ChipDesc& chip, const OpLaunch& op, uint32_t cores,
                          double* cycles) {
  auto in = op.operands[0]->shape;
  auto out = op.results[0]->shape;
  double per_elem = 1.0 / chip.eltwise_elems_per_cycle;
  int64_t in_tiles = tile_grid(in).pages();
  int passes = 0;
  switch (op.kind) {
    case OpKind::reduce_sum:
    case OpKind::reduce_mean:
    case OpKind::reduce_max:
      passes = 1;
      break;
    case OpKind::rms_norm:
      passes = 2;
      break;
    case OpKind::softmax:
    case OpKind::layer_norm:
      passes = 3;
      break;
    case OpKind::conv2d: {
      if (op.operands.size() < 2 || in.size() != 4 || out.size() != 4) return false;
      auto w = op.operands[1]->shape;
      if (w.size() != 4) return false;
      int64_t groups = std::max<int32_t>(1, op.config.groups);
      int64_t m = out[0] * out[1] * out[2], k = w[1] * w[2] * w[3], n = w[0] / groups;
      int64_t tile_matmuls =
          ceil_tiles(m, kTileH) * ceil_tiles(k, kTileW) * ceil_tiles(n, kTileW) * groups;
      double per_tile = 2.0 * kTileH * kTileW * kTileW / chip.matmul_flops_per_cycle *
                        fidelity_factor(op.config.fidelity);
      *cycles = static_cast<double>(ceil_tiles(tile_matmuls, cores)) * per_tile;
      return true;
    }
    case OpKind::max_pool2d:
    case OpKind::avg_pool2d:
    case OpKind::global_avg_pool2d: {
      if (in.size() != 4 || out.size() != 4) return false;
      int64_t window = op.kind == OpKind::global_avg_pool2d
                           ? in[1] * in[2]
                           : int64_t{op.config.kernel[0]} * op.config.kernel[1];
      *cycles = static_cast<double>(ceil_tiles(volume(out) * window, cores)) * per_elem;
      return true;
    }
    default:
      return false;
  }
  *cycles = static_cast<double>(ceil_tiles(in_tiles, cores) * kTileElems * passes) * per_elem;
  return true;
}

}  // namespace

uint32_t cores_used(const OpLaunch& op) {
  int64_t grid = static_cast<int64_t>(op.config.grid_x) * op.config.grid_y;
  int64_t tiles = op.results.empty() ? 1 : tile_grid(op.results[0]->shape).pages();
  return static_cast<uint32_t>(std::max<int64_t>(1, std::min(grid, tiles)));
}

OpTiming estimate(const ChipDesc& chip, const OpLaunch& op) {
  OpTiming t;
  t.cores_used = cores_used(op);
  double compute_cycles = 0.0;
  bool is_matmul = op.kind == OpKind::matmul || op.kind == OpKind::linear;
  if (is_matmul && op.operands.size() >= 2 && !op.results.empty()) {
    TileGrid out = tile_grid(op.results[0]->shape);
    auto a = op.operands[0]->shape;
    int64_t k = op.config.transpose_a ? a[a.size() - 2] : a[a.size() - 1];
    int64_t kt = (k + kTileW - 1) / kTileW;
    int64_t tiles_per_core = (out.pages() + t.cores_used - 1) / t.cores_used;
    // A multicast program's busiest core computes one whole block.
    if (op.config.program != MatmulProgram::none)
      if (auto m = resolve_matmul(op, chip)) {
        tiles_per_core = m->per_core_m * m->per_core_n;
        t.cores_used = static_cast<uint32_t>(matmul_work(*m, chip.grid_x).size());
      }
    double cycles_per_tile = 2.0 * kTileH * kTileW * kTileW / chip.matmul_flops_per_cycle *
                             fidelity_factor(op.config.fidelity);
    compute_cycles = static_cast<double>(tiles_per_core * kt) * cycles_per_tile;
  } else if (is_data_movement(op.kind)) {
    compute_cycles = 0.0;  // Pure data movement: the time is the bytes moved.
  } else if (!op.results.empty() && !op.operands.empty() &&
             extra_compute_cycles(chip, op, t.cores_used, &compute_cycles)) {
    // Reductions, row ops, conv2d and pools: modelled from their operands (see
    // extra_compute_cycles).
  } else if (!op.results.empty()) {
    int64_t tiles = tile_grid(op.results[0]->shape).pages();
    int64_t tiles_per_core = (tiles + t.cores_used - 1) / t.cores_used;
    compute_cycles =
        static_cast<double>(tiles_per_core * kTileElems) / chip.eltwise_elems_per_cycle;
  }
  uint64_t dram_bytes = 0, l1_bytes = 0;
  auto count = [&](const TensorPlacement* p) {
    (p->buffer == BufferType::dram ? dram_bytes : l1_bytes) += tensor_bytes(*p);
  };
  for (const TensorPlacement* p : op.operands) count(p);
  for (const TensorPlacement* p : op.results) count(p);
  double dram_ns = static_cast<double>(dram_bytes) / chip.dram_gbps;  // bytes / (GB/s) = ns
  double noc_ns =
      static_cast<double>(l1_bytes) / (chip.noc_bytes_per_cycle * t.cores_used * chip.clock_ghz);
  double compute_ns = compute_cycles / chip.clock_ghz;
  t.compute_ns = static_cast<uint64_t>(std::ceil(compute_ns));
  t.dram_ns = static_cast<uint64_t>(std::ceil(dram_ns));
  t.duration_ns =
      chip.dispatch_ns + static_cast<uint64_t>(std::ceil(std::max(compute_ns, dram_ns + noc_ns)));
  return t;
}

}  // namespace meshplan::device
