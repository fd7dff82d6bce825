// Analytic timing model (see timing.hpp).
#include "meshplan/device/timing.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "meshplan/device/conv_blocking.hpp"
#include "meshplan/device/conv_weights.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/matmul_program.hpp"
#include "op_semantics_ext.hpp"

namespace meshplan::device {

namespace {

uint64_t tensor_bytes(const TensorPlacement& t) {
  return static_cast<uint64_t>(page_count(t)) * t.page_size;
}

int fidelity_factor(MathFidelity f) {
  return static_cast<int>(f) + 1;
}

/// Cycles of one 32x32x32 tile-matmul on one core as achieved: the FPU's peak at `fidelity`
/// (16 cycles at LoFi, x2 HiFi2, x3 HiFi3, x4 HiFi4 on Wormhole) over the achieved share of it,
/// ChipDesc::matmul_utilization (Wormhole 0.89: 18.0, 36.0, 53.9 and 71.9 cycles). Matmuls and
/// conv2d.
double tile_matmul_cycles(const ChipDesc& chip, MathFidelity fidelity) {
  return 2.0 * kTileH * kTileW * kTileW / chip.matmul_flops_per_cycle * fidelity_factor(fidelity) /
         chip.matmul_utilization;
}

bool is_data_movement(OpKind k) {
  return timing_class(k) == TimingClass::data_movement;
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
  switch (timing_class(op.kind)) {
    case TimingClass::rows_1pass:
      passes = 1;
      break;
    case TimingClass::rows_2pass:
      passes = 2;
      break;
    case TimingClass::rows_3pass:
      passes = 3;
      break;
    case TimingClass::conv: {
      if (op.operands.size() < 2 || in.size() != 4 || out.size() != 4) return false;
      // K from the window and the input channels (conv_window), never from the weight's form.
      int64_t kh = 1, kw = 1;
      conv_window(op, &kh, &kw);
      int64_t groups = std::max<int32_t>(1, op.config.groups);
      int64_t m = out[0] * out[1] * out[2], k = kh * kw * (in[3] / groups), n = out[3] / groups;
      int64_t tile_matmuls =
          ceil_tiles(m, kTileH) * ceil_tiles(k, kTileW) * ceil_tiles(n, kTileW) * groups;
      double per_tile = tile_matmul_cycles(chip, op.config.fidelity);
      *cycles = static_cast<double>(ceil_tiles(tile_matmuls, cores)) * per_tile;
      return true;
    }
    case TimingClass::pool: {
      if (in.size() != 4 || out.size() != 4) return false;
      // global: H*W input elements per output element, in the NHWC and the flattened form.
      int64_t window = op.kind == OpKind::global_avg_pool2d
                           ? volume(in) / std::max<int64_t>(1, volume(out))
                           : int64_t{op.config.kernel[0]} * op.config.kernel[1];
      *cycles = static_cast<double>(ceil_tiles(volume(out) * window, cores)) * per_elem;
      return true;
    }
    case TimingClass::matmul:
    case TimingClass::eltwise:
    case TimingClass::sfpu:
    case TimingClass::data_movement:
    case TimingClass::collective:
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

namespace {

/// Per-core data movement of one op (see timing.hpp): bytes the busiest core moves, by path.
struct Movement {
  double noc_read = 0;   ///< Bytes in from other cores' L1, weighted by contention.
  double dram_read = 0;  ///< Bytes the core reads from DRAM (ChipDesc::dram_read_bytes_per_cycle).
  double mcast_cycles = 0;  ///< Cycles of multicast operand blocks (sender and receivers alike).
  double noc_write = 0;     ///< Bytes out through the write NoC port, weighted by contention.
  double local = 0;         ///< Bytes of its own L1 (sharded operands and results).
  double dram = 0;          ///< Bytes to or from DRAM over all cores.
};

/// Cycles of the core's incoming traffic: reads from other cores' L1 at the NoC port's width,
/// reads from DRAM at one core's measured DRAM read rate, and the multicast blocks it takes part
/// in, one after another.
double read_cycles(const ChipDesc& chip, const Movement& m) {
  return m.noc_read / chip.noc_bytes_per_cycle + m.dram_read / chip.dram_read_bytes_per_cycle +
         m.mcast_cycles;
}

bool same_shards(const TensorPlacement& a, const TensorPlacement& b) {
  return a.buffer == BufferType::l1 && b.buffer == BufferType::l1 &&
         a.memory != MemLayout::interleaved && a.memory == b.memory && a.shard == b.shard;
}

/// Whether `op` reads operand `t` where its result `r` keeps it: sharded alike, and each result
/// element comes from the operand element at the same place (elementwise ops and casts; a reshape
/// that keeps the 2-D view; row ops when whole rows sit on one core). Permute, concat, slice,
/// embedding, convolutions and pools move elements between shards.
bool in_place(const OpLaunch& op, const TensorPlacement& t, const TensorPlacement& r) {
  if (!same_shards(t, r)) return false;
  switch (op_family(op.kind)) {
    case OpFamily::gather:
    case OpFamily::conv:
    case OpFamily::pool:
      return false;
    case OpFamily::shape: {
      if (op.kind != OpKind::reshape) return false;  // permute, concat, slice
      View2D a = view_2d(t.shape, t.layout), b = view_2d(r.shape, r.layout);
      return a.rows == b.rows && a.cols == b.cols;
    }
    case OpFamily::softmax:
    case OpFamily::norm:
    case OpFamily::reduction:
      return t.memory == MemLayout::height_sharded;
    case OpFamily::matmul:
    case OpFamily::eltwise_unary:
    case OpFamily::eltwise_binary:
    case OpFamily::compare:
    case OpFamily::select:
    case OpFamily::memory:
    case OpFamily::convert:
    case OpFamily::collective:
      return true;
  }
  return true;
}

class MovementModel {
 public:
  explicit MovementModel(const ChipDesc& chip) : chip_(chip) {
    // Mean hops of uniform traffic on a unidirectional ring of n routers: (n - 1) / 2.
    hops_ = std::max(chip.grid_x - 1, chip.grid_y - 1) / 2.0;
  }

  /// Contention factor of `readers` cores each moving the same bytes to or from pages spread over
  /// every core's L1 (interleaved banks, or shards held elsewhere): the busiest link carries
  /// readers x bytes x mean hops / routers; a core's own port carries its bytes.
  double spread(double readers) const {
    return std::max(1.0, readers * hops_ / std::max(1, chip_.cores()));
  }

  /// A core reads `bytes` of `t` that live elsewhere; `readers` cores do the same.
  void read(Movement& m, const TensorPlacement& t, double bytes, double readers) const {
    if (t.buffer == BufferType::dram) {
      m.dram_read += bytes;
      m.dram += bytes * readers;
    } else {
      m.noc_read += bytes * spread(readers);
    }
  }
  void write(Movement& m, const TensorPlacement& t, double bytes, double writers) const {
    if (t.buffer == BufferType::dram) {
      m.noc_write += bytes;
      m.dram += bytes * writers;
    } else if (t.memory != MemLayout::interleaved) {
      m.local += bytes;  // The op's grid is its result's shard grid: each core writes its shard.
    } else {
      m.noc_write += bytes * spread(writers);
    }
  }

  /// Matmul programs: per-core in0 and in1 blocks, read once from their source by the
  /// multicast senders and multicast to the rest (1 x bytes on every link of the row/column), or
  /// read by every core for itself (program none: rows and columns of its contiguous range of
  /// output tiles; cores sharing rows or columns read them again).
  void matmul(Movement& m, const OpLaunch& op, uint32_t cores) const {
    const TensorPlacement& a = *op.operands[0];
    const TensorPlacement& b = *op.operands[1];
    auto r = resolve_matmul(op, chip_);
    if (!r) return generic(m, op, cores);
    const MatmulBlocking& mb = *r;
    double ta = tile_bytes(a.dtype), tb = tile_bytes(b.dtype);
    double w = cores;
    if (mb.program == MatmulProgram::none) {
      // Each core's contiguous range of output tiles spans some rows (in0) and columns (in1).
      int64_t tiles = mb.mt * mb.nt, tpc = std::max<int64_t>(1, mb.per_core_tiles);
      Movement busiest;
      double dram = 0;
      for (int64_t p0 = 0; p0 < tiles; p0 += tpc) {
        int64_t p1 = std::min(tiles, p0 + tpc);
        int64_t rows = (p1 - 1) / mb.nt - p0 / mb.nt + 1;
        int64_t cols = rows == 1   ? p1 - p0
                       : rows == 2 ? std::min(mb.nt, mb.nt - p0 % mb.nt + (p1 - 1) % mb.nt + 1)
                                   : mb.nt;
        Movement c;
        read(c, a, static_cast<double>(rows * mb.kt) * ta, w);
        read(c, b, static_cast<double>(mb.kt * cols) * tb, w);
        dram += c.dram / w;  // read() counted every core's copy; this core's own
        if (read_cycles(chip_, c) > read_cycles(chip_, busiest)) busiest = c;
      }
      m.noc_read += busiest.noc_read;
      m.dram_read += busiest.dram_read;
      m.dram += dram;
    } else {
      double in0 = static_cast<double>(mb.per_core_m * mb.kt) * ta;
      double in1 = static_cast<double>(mb.kt * mb.per_core_n) * tb;
      int64_t blocks_m = (mb.mt + mb.per_core_m - 1) / mb.per_core_m;
      int64_t blocks_n = (mb.nt + mb.per_core_n - 1) / mb.per_core_n;
      // Who shares each operand block: 2-D shares in0 along a row of blocks_n cores and in1
      // along a column of blocks_m; 1-D shares the multicast operand with every core.
      bool share0 = mb.program == MatmulProgram::mcast_2d || mb.mcast_in0;
      bool share1 = mb.program == MatmulProgram::mcast_2d || !mb.mcast_in0;
      operand(m, a, in0, share0, share0 ? static_cast<double>(blocks_m) : w);
      operand(m, b, in1, share1, share1 ? static_cast<double>(blocks_n) : w);
    }
    for (const TensorPlacement* t : op.results) {
      double bytes = static_cast<double>(tensor_bytes(*t)) / w;
      if (mb.program == MatmulProgram::none && t->memory != MemLayout::interleaved &&
          t->buffer == BufferType::l1)
        m.noc_write += bytes * spread(w);  // Program none computes tiles off their shard.
      else
        write(m, *t, bytes, w);
    }
  }

  /// Every other op: each of its cores handles 1/cores of every operand and result. An operand
  /// the op reads in place (in_place) is already on the core that uses it.
  void generic(Movement& m, const OpLaunch& op, uint32_t cores) const {
    double w = cores;
    const TensorPlacement* result = op.results.empty() ? nullptr : op.results[0];
    for (const TensorPlacement* t : op.operands) {
      bool local = result && in_place(op, *t, *result);
      // A reshard out of a sharded tensor runs on that tensor's grid when it leaves L1 sharding.
      if (op.kind == OpKind::to_memory_config && t->buffer == BufferType::l1 &&
          t->memory != MemLayout::interleaved && t->shard.cores() == cores &&
          t->shard.grid.x0 == 0 && t->shard.grid.y0 == 0 &&
          t->shard.grid.x1 + 1u == op.config.grid_x && t->shard.grid.y1 + 1u == op.config.grid_y)
        local = true;
      if (local)
        m.local += static_cast<double>(AddressMap(*t, chip_).bytes_per_bank());
      else
        read(m, *t, static_cast<double>(tensor_bytes(*t)) / w, w);
    }
    for (const TensorPlacement* t : op.results)
      write(m, *t, static_cast<double>(tensor_bytes(*t)) / w, w);
  }

  /// conv2d (conv_blocking.hpp): each core reads its share of the input and writes every
  /// im2col block it builds (rows_per_core x k_tiles tiles) into its own L1; the weight block
  /// (k_tiles x cols_per_core) and the bias are read by a sender and multicast, as the matmul
  /// programs do with in1 -- once when the weights stay resident, once per activation block
  /// when they stream; each core writes its share of the result.
  void conv(Movement& m, const OpLaunch& op, const ConvBlocking& b) const {
    double w = b.cores;
    const TensorPlacement& x = *op.operands[0];
    read(m, x, static_cast<double>(tensor_bytes(x)) / w, w);
    m.local += static_cast<double>(b.rows_per_core * b.k_tiles) * tile_bytes(x.dtype);
    const TensorPlacement& wt = *op.operands[1];
    // Streamed weights are read again for every activation block.
    double weight_reads = b.weights_resident ? 1.0 : static_cast<double>(b.n_blocks);
    // One sender per group of cores sharing a column range (cores split the columns when
    // their ranges are shorter than a tile row), so all of the weights leave their source.
    double senders = static_cast<double>((b.cols + b.cols_per_core - 1) / b.cols_per_core);
    // The core's columns' share of the weight as stored: k_tiles x cols_per_core tiles for a
    // weight in its matmul form, more for a [O, KH, KW, I] weight whose tiles are padded.
    double block = static_cast<double>(tensor_bytes(wt)) * static_cast<double>(b.cols_per_core) /
                   static_cast<double>(b.cols);
    operand(m, wt, weight_reads * block, true, senders);
    if (op.operands.size() > 2)
      operand(m, *op.operands[2],
              static_cast<double>(b.cols_per_core) * tile_bytes(op.operands[2]->dtype), true,
              senders);
    for (const TensorPlacement* t : op.results)
      write(m, *t, static_cast<double>(tensor_bytes(*t)) / w, w);
  }

 private:
  /// A matmul operand block of `bytes` per core. Shared blocks are read from the source by
  /// `readers` senders (local for shards) and multicast; own blocks are read by each core.
  void operand(Movement& m, const TensorPlacement& t, double bytes, bool shared,
               double readers) const {
    bool sharded = t.buffer == BufferType::l1 && t.memory != MemLayout::interleaved;
    if (shared) {
      // The sender reads a block, then multicasts it while it reads the next (tt-metal's
      // multicast senders issue the next block's reads without waiting for the multicast to
      // land): the slower of its read and its multicast sets the pace, at the measured
      // multicast rate, and every receiver takes the blocks at that pace.
      Movement src;
      if (sharded)
        src.local = bytes;
      else
        read(src, t, bytes, readers);
      m.mcast_cycles += std::max(static_cast<double>(bytes) / chip_.mcast_bytes_per_cycle,
                                 read_cycles(chip_, src));
      m.local += src.local;
      m.dram += src.dram;
    } else if (sharded) {
      m.local += bytes;  // resolve_matmul checked the shard is the core's own block.
    } else {
      read(m, t, bytes, readers);
    }
  }

  const ChipDesc& chip_;
  double hops_ = 0;
};

/// Whether ttnn's slice runs `op` through row-major (tt-metal:
/// ttnn/cpp/ttnn/operations/data_movement/slice/slice.cpp): a tiled input goes to ROW_MAJOR first
/// (to_layout) and its result back to TILE when a step is not 1, the input has rank 1 or is
/// sharded, or either of the last two dims' begins is not a whole number of tiles -- the tiled
/// SliceDeviceOperation refuses those ("Can only slice tilized tensor with height begin index
/// aligned to tiles", "... width begin index ..."). A slice of the whole tensor is no slice.
bool slice_through_row_major(const OpLaunch& op) {
  if (op.kind != OpKind::slice || op.operands.empty() || op.results.empty()) return false;
  const TensorPlacement& in = *op.operands[0];
  size_t rank = in.shape.size();
  if (in.layout != TileLayout::tile || rank == 0) return false;
  auto s = resolve_slice(op.config, in.shape);
  if (!s) return false;
  bool unit = true, whole = true;
  for (size_t d = 0; d < rank; ++d) {
    unit = unit && s->step[d] == 1;
    whole = whole && s->begin[d] == 0 && s->shape[d] == in.shape[d];
  }
  if (unit && whole) return false;
  if (!unit || rank == 1 || in.memory != MemLayout::interleaved) return true;
  return s->begin[rank - 1] % kTileW != 0 || s->begin[rank - 2] % kTileH != 0;
}

OpTiming estimate_launch(const ChipDesc& chip, const OpLaunch& op);

/// A slice ttnn runs through row-major (slice_through_row_major) as the three programs it
/// launches, each timed as a launch of its own (a dispatch each): the input untilized into a
/// row-major copy, the row-major slice, the result tilized back. The row-major tensors live
/// interleaved in the result's buffer (ttnn converts into the slice's memory config), in the
/// input's dtype (bf16 for the block floats, which have no row-major form); tilize and untilize are
/// timed as the data they move (to_memory_config's model).
OpTiming row_major_slice(const ChipDesc& chip, const OpLaunch& op) {
  const TensorPlacement& in = *op.operands[0];
  const TensorPlacement& out = *op.results[0];
  DType dt = in.dtype == DType::bf8b || in.dtype == DType::bf4b ? DType::bf16 : in.dtype;
  TensorPlacement rm_in =
      make_interleaved("row-major input", in.shape, dt, out.buffer, 0, TileLayout::row_major);
  TensorPlacement rm_out =
      make_interleaved("row-major result", out.shape, dt, out.buffer, 0, TileLayout::row_major);
  auto stage = [&](OpKind kind, const TensorPlacement& a, const TensorPlacement& r) {
    const TensorPlacement* ins[1] = {&a};
    const TensorPlacement* outs[1] = {&r};
    return estimate_launch(chip, OpLaunch{kind, op.name, ins, outs, op.config});
  };
  const OpTiming parts[3] = {stage(OpKind::to_memory_config, in, rm_in),
                             stage(OpKind::slice, rm_in, rm_out),
                             stage(OpKind::to_memory_config, rm_out, out)};
  OpTiming t;
  t.cores_used = cores_used(op);
  for (const OpTiming& p : parts) {
    t.duration_ns += p.duration_ns;
    t.compute_ns += p.compute_ns;
    t.dram_ns += p.dram_ns;
  }
  return t;
}

}  // namespace

OpTiming estimate(const ChipDesc& chip, const OpLaunch& op) {
  if (slice_through_row_major(op)) return row_major_slice(chip, op);
  return estimate_launch(chip, op);
}

namespace {

OpTiming estimate_launch(const ChipDesc& chip, const OpLaunch& op) {
  OpTiming t;
  t.cores_used = cores_used(op);
  double compute_cycles = 0.0;
  bool is_matmul = is_matmul_family(op.kind);
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
    double cycles_per_tile = tile_matmul_cycles(chip, op.config.fidelity);
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
  MovementModel model(chip);
  Movement m;
  std::optional<ConvBlocking> conv;
  if (op.kind == OpKind::conv2d)
    if (auto b = resolve_conv(op, chip)) conv = *b;
  if (is_matmul && op.operands.size() >= 2 && !op.results.empty())
    model.matmul(m, op, t.cores_used);
  else if (conv)
    model.conv(m, op, *conv);
  else
    model.generic(m, op, t.cores_used);
  double noc_bytes_per_ns = chip.noc_bytes_per_cycle * chip.clock_ghz;
  double l1_bytes_per_ns = chip.l1_bytes_per_cycle * chip.clock_ghz;
  double dram_ns = m.dram / chip.dram_gbps;  // bytes / (GB/s) = ns
  double movement_ns = std::max({dram_ns, read_cycles(chip, m) / chip.clock_ghz,
                                 m.noc_write / noc_bytes_per_ns, m.local / l1_bytes_per_ns});
  double compute_ns = compute_cycles / chip.clock_ghz;
  t.compute_ns = static_cast<uint64_t>(std::ceil(compute_ns));
  t.dram_ns = static_cast<uint64_t>(std::ceil(dram_ns));
  double busy_ns = std::max(compute_ns, movement_ns);
  if (conv) {
    // The reader/compute/writer pipeline over n_blocks activation blocks of act_block_w_div K
    // chunks each: the slower stage runs throughout and the faster one adds its work on one
    // (block, chunk) step (the first step's data before compute starts, or the last step's
    // compute after its data); every step pays a hand-off.
    double n = static_cast<double>(conv->n_blocks * conv->act_block_w_div);
    busy_ns +=
        std::min(compute_ns, movement_ns) / n + n * chip.conv_block_sync_cycles / chip.clock_ghz;
  }
  t.duration_ns = chip.dispatch_ns + static_cast<uint64_t>(std::ceil(busy_ns));
  return t;
}

}  // namespace

uint64_t host_transfer_ns(const ChipDesc& chip, uint64_t bytes, bool to_device) {
  double gbps = to_device ? chip.pcie_h2d_gbps : chip.pcie_d2h_gbps;
  return static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) / gbps));  // B / (GB/s) = ns
}

}  // namespace meshplan::device
