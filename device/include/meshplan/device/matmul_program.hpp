// Matmul program configs (after TTNN's 1-D and 2-D multicast programs): how the output's tile
// grid is cut into per-core blocks, which layouts each program accepts, and the circular buffers
// it needs. One truth shared by OpModel::validate() and the emulator's matmul kernel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "meshplan/device/device.hpp"

namespace meshplan::device {

/// A matmul launch resolved against its program config: sizes in tiles, defaults filled in.
/// Output tiles are addressed in the output's 2-D tile view: row tr in [0, mt), column tc.
struct MatmulBlocking {
  MatmulProgram program = MatmulProgram::none;
  int64_t mt = 0;                          ///< Output tile rows (batch * M tiles).
  int64_t nt = 0;                          ///< Output tile columns.
  int64_t kt = 0;                          ///< K tiles.
  int64_t per_core_m = 0, per_core_n = 0;  ///< Block per core (programs); unused for none.
  int64_t per_core_tiles = 0;              ///< none: contiguous output tiles per core.
  int64_t in0_block_w = 1, sub_h = 1, sub_w = 1;
  uint32_t grid_x = 1, grid_y = 1;  ///< The op's core grid (from the origin).
  bool mcast_in0 = true, transpose_mcast = false;
};

/// The output tiles one core computes: a rectangle of tile rows [r0, r1) x columns [c0, c1)
/// (programs), or the page range [p0, p1) in page order (program none).
struct MatmulWork {
  uint32_t core = 0;  ///< Core index y * chip grid_x + x.
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
  int64_t p0 = 0, p1 = 0;
};

/// Resolves op.config for a matmul launch and checks the program's rules: block sizes that
/// cover the output on the grid, in0_block_w dividing K, sub-blocks dividing the block and
/// fitting the destination registers (8 tiles, 4 for f32 results), each program's operand and
/// result layouts, and that a sharded result or in0 is held by the core that uses it. The
/// error message names the tensor/core at fault; callers prefix the op. Preconditions: operand
/// and result counts and shapes were checked.
Result<MatmulBlocking> resolve_matmul(const OpLaunch& op, const ChipDesc& chip);

/// The math fidelity tt-metal's LLM demos run a matmul at, by the dtype of its weight (in1):
/// bfloat4_b LoFi (tt-transformers' performance config: FF1/FF3 in bfp4 at LoFi), bfloat8_b
/// and everything wider HiFi2 (tt-transformers' default, "BFP8/HIFI2 everywhere"). The planner
/// sets it on matmul and linear ops whose weights it stores in a block float.
MathFidelity weight_fidelity(DType weight);

/// Core (y * chip_grid_x + x) computing output tile (tr, tc).
uint32_t matmul_core_of(const MatmulBlocking& m, int64_t tr, int64_t tc, uint16_t chip_grid_x);

/// Every core's share of the output, in core order; cores without work are left out.
std::vector<MatmulWork> matmul_work(const MatmulBlocking& m, uint16_t chip_grid_x);

/// Circular-buffer bytes per core. Programs: double-buffered in0 block (per_core_m x
/// in0_block_w) and in1 block (in0_block_w x per_core_n), the output block unless the result is
/// sharded (its shard is the buffer), and f32 partials when K takes more than one block.
/// Program none: two tiles per operand and result plus one f32 partial tile. linear adds two
/// bias tiles either way.
uint64_t matmul_cb_bytes(const MatmulBlocking& m, const OpLaunch& op);

}  // namespace meshplan::device
