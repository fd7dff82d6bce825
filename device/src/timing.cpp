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

int fidelity_factor(MathFidelity f) { return static_cast<int>(f) + 1; }

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
  if (op.kind == OpKind::matmul && op.operands.size() == 2 && !op.results.empty()) {
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
    double cycles_per_tile = 2.0 * kTileH * kTileW * kTileW / chip.matmul_flops_per_cycle * fidelity_factor(op.config.fidelity);
    compute_cycles = static_cast<double>(tiles_per_core * kt) * cycles_per_tile;
  } else if (op.kind == OpKind::to_memory_config) {
    compute_cycles = 0.0;  // Pure data movement: the time is the bytes moved.
  } else if (!op.results.empty()) {
    int64_t tiles = tile_grid(op.results[0]->shape).pages();
    int64_t tiles_per_core = (tiles + t.cores_used - 1) / t.cores_used;
    compute_cycles = static_cast<double>(tiles_per_core * kTileElems) / chip.eltwise_elems_per_cycle;
  }
  uint64_t dram_bytes = 0, l1_bytes = 0;
  auto count = [&](const TensorPlacement* p) {
    (p->buffer == BufferType::dram ? dram_bytes : l1_bytes) += tensor_bytes(*p);
  };
  for (const TensorPlacement* p : op.operands) count(p);
  for (const TensorPlacement* p : op.results) count(p);
  double dram_ns = static_cast<double>(dram_bytes) / chip.dram_gbps;  // bytes / (GB/s) = ns
  double noc_ns = static_cast<double>(l1_bytes) / (chip.noc_bytes_per_cycle * t.cores_used * chip.clock_ghz);
  double compute_ns = compute_cycles / chip.clock_ghz;
  t.compute_ns = static_cast<uint64_t>(std::ceil(compute_ns));
  t.dram_ns = static_cast<uint64_t>(std::ceil(dram_ns));
  t.duration_ns = chip.dispatch_ns + static_cast<uint64_t>(std::ceil(std::max(compute_ns, dram_ns + noc_ns)));
  return t;
}

}  // namespace meshplan::device
