// Matmul program configs: block resolution, layout rules and circular-buffer sizes.
#include "meshplan/device/matmul_program.hpp"

#include <algorithm>
#include <span>

#include "meshplan/device/formats.hpp"
#include "meshplan/device/placement.hpp"

namespace meshplan::device {

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

std::string core_text(uint32_t core, uint16_t grid_x) {
  return str("(", core % grid_x, ",", core / grid_x, ")");
}

bool one_of(MemLayout m, MemLayout a, MemLayout b) {
  return m == a || m == b;
}

}  // namespace

MathFidelity weight_fidelity(DType weight) {
  return weight == DType::bf4b ? MathFidelity::lofi : MathFidelity::hifi2;
}

Result<MatmulBlocking> resolve_matmul(const OpLaunch& op, const ChipDesc& chip) {
  const OpConfig& cfg = op.config;
  const TensorPlacement& a = *op.operands[0];
  const TensorPlacement& b = *op.operands[1];
  const TensorPlacement& out = *op.results[0];
  if (a.shape.size() < 2 || b.shape.size() < 2 || out.shape.empty())
    return fail(ErrorCode::invalid_argument,
                "matmul needs operands of rank 2 or more and a result shape (got ranks ",
                a.shape.size(), ", ", b.shape.size(), ", ", out.shape.size(), ")");
  MatmulBlocking m;
  m.program = cfg.program;
  m.grid_x = cfg.grid_x;
  m.grid_y = cfg.grid_y;
  m.mcast_in0 = cfg.mcast_in0;
  m.transpose_mcast = cfg.transpose_mcast;
  TileGrid og = tile_grid(out.shape);
  m.mt = og.tiles_h;
  m.nt = og.tiles_w;
  int64_t k = cfg.transpose_a ? a.shape[a.shape.size() - 2] : a.shape.back();
  m.kt = std::max<int64_t>(1, ceil_div(k, kTileW));
  for (const TensorPlacement* t : {&a, &b, &out})
    if (t->dtype == DType::i32 || t->dtype == DType::u32)
      return fail(ErrorCode::invalid_argument, "tensor '", t->name,
                  "': matmul does not support dtype ", dtype_name(t->dtype));
  int64_t cores = static_cast<int64_t>(m.grid_x) * m.grid_y;
  if (m.program == MatmulProgram::none) {
    // Program none stands for tt-metal's non-multicast programs. Its result must be
    // interleaved: MatmulMultiCoreProgramConfig refuses any sharded output ("Output memory
    // layout must be INTERLEAVED"; "Unsupported op for output sharding"), and
    // MatmulMultiCoreReuseProgramConfig shards an output only like a sharded in0 with
    // per_core_N = N, a blocking program none does not have. Sharded operands are read as the
    // reuse program reads them: width shards are refused for in0 and for in1 alike, and the
    // shard shapes follow its rules below.
    for (const TensorPlacement* t : {&a, &b})
      if (t->memory == MemLayout::width_sharded)
        return fail(ErrorCode::invalid_argument,
                    "plain multi-core program (tt-metal MatmulMultiCoreReuseProgramConfig): ",
                    t == &a ? "in0 '" : "in1 '", t->name,
                    "' is width_sharded; tt-metal's non-multicast program reads height or block "
                    "shards only (",
                    t == &a ? "\"Error: memory layout, WIDTH_SHARDED, is not width sharded\""
                            : "\"Input B memory layout must not be WIDTH_SHARDED\"",
                    "; use the 1-D in0-multicast program for a width-sharded in0)");
    // The reuse program's shard shapes: an in0 shard holds all of K ("Error: K, ..., needs to
    // be equal to" the shard width), an in1 shard all of N and whole multiples of K rows, and two
    // sharded operands share buffer, memory layout, grid and orientation.
    auto reuse_bad = [&](auto&&... msg) {
      return fail(
          ErrorCode::invalid_argument,
          "plain multi-core program (tt-metal MatmulMultiCoreReuseProgramConfig): ", msg...);
    };
    int64_t k_elems = m.kt * kTileW, n_elems = m.nt * kTileW;
    // Transposed operands are read as stored (the shard holds the untransposed rows): the rules
    // are stated for untransposed ones only.
    if (a.memory != MemLayout::interleaved && !cfg.transpose_a && a.shard.shape[1] != k_elems)
      return reuse_bad("in0 '", a.name, "' shards ", a.shard.shape[1], " of its ", k_elems,
                       " K columns; tt-metal: \"Error: K, ", k_elems, ", needs to be equal to ",
                       a.shard.shape[1], "\"");
    // The reuse program's per_core_M is the in0 shard's tile rows (tt-metal wants "per_core_M *
    // in0_tile height" to equal the shard height), and it must tile the batches: divide the
    // per-batch M, or be a multiple of it that divides the batch-fused M; with a sharded in1 it
    // must be a multiple of M (whole batches per core, checked below after the pair rules, in
    // tt-metal's order).
    int64_t batch_a = volume(std::span(a.shape).first(a.shape.size() - 2));
    int64_t batch_b = volume(std::span(b.shape).first(b.shape.size() - 2));
    int64_t m_tiles = std::max<int64_t>(1, ceil_div(a.shape[a.shape.size() - 2], kTileH));
    int64_t per_core_m = a.shard.shape[0] / kTileH;
    if (a.memory != MemLayout::interleaved && !cfg.transpose_a && per_core_m > 0) {
      if (per_core_m > m_tiles && per_core_m % m_tiles != 0)
        return reuse_bad("in0 '", a.name, "' shards hold ", per_core_m,
                         " tile rows (its per_core_M) and M is ", m_tiles,
                         " tile rows per batch; tt-metal: \"per_core_M, ", per_core_m,
                         ", must be a multiple of M, ", m_tiles, " if per_core_M > M!\"");
      if (per_core_m > m_tiles && (batch_a * m_tiles) % per_core_m != 0)
        return reuse_bad("in0 '", a.name, "' shards hold ", per_core_m,
                         " tile rows (its per_core_M) of its ", batch_a * m_tiles,
                         "; tt-metal: \"input a total height, ", batch_a * m_tiles,
                         ", must be divisible by per_core_M, ", per_core_m, "!\"");
      if (per_core_m < m_tiles && m_tiles % per_core_m != 0)
        return reuse_bad("in0 '", a.name, "' shards hold ", per_core_m,
                         " tile rows (its per_core_M) and M is ", m_tiles,
                         " tile rows per batch; tt-metal: \"per_core_M, ", per_core_m,
                         ", must divide M, ", m_tiles, ", if per_core_M < M!\"");
    }
    if (b.memory != MemLayout::interleaved && !cfg.transpose_b) {
      if (b.shard.shape[1] != n_elems)
        return reuse_bad("in1 '", b.name, "' shards ", b.shard.shape[1], " of its ", n_elems,
                         " N columns; tt-metal: \"Input B shard shape[1] (", b.shard.shape[1],
                         ") must equal padded shape[-1] (", n_elems, ")\"");
      if (b.shard.shape[0] % k_elems != 0)
        return reuse_bad("in1 '", b.name, "' has shards of ", b.shard.shape[0],
                         " rows; tt-metal: \"Input B shard shape[0] (", b.shard.shape[0],
                         ") must be divisible by K (", k_elems, ")\"");
    }
    if (a.memory != MemLayout::interleaved && b.memory != MemLayout::interleaved) {
      bool same_grid = a.shard.range_count() == b.shard.range_count();
      for (int i = 0; same_grid && i < a.shard.range_count(); ++i)
        same_grid = a.shard.range(i) == b.shard.range(i);
      if (a.buffer != b.buffer)
        return reuse_bad("in0 '", a.name, "' and in1 '", b.name,
                         "' are sharded in different buffers; tt-metal: \"Input tensors A and B "
                         "must have matching buffer types\"");
      if (a.memory != b.memory)
        return reuse_bad("in0 '", a.name, "' is ", memory_name(a.memory), " but in1 '", b.name,
                         "' is ", memory_name(b.memory),
                         "; tt-metal: \"Input tensors A and B must have matching memory layouts\"");
      if (!same_grid)
        return reuse_bad("in0 '", a.name, "' and in1 '", b.name,
                         "' are sharded on different cores; tt-metal: \"Input tensors A and B "
                         "must have matching shard spec grids\"");
      if (a.shard.orientation != b.shard.orientation)
        return reuse_bad("in0 '", a.name, "' and in1 '", b.name,
                         "' have different shard orientations; tt-metal: \"Input tensors A and "
                         "B must have matching shard orientations\"");
    }
    // A sharded operand makes the plain program tt-metal's reuse program, which runs each batch
    // of in0 against its own batch of in1 (the multicast programs fuse the batches instead).
    if ((a.memory != MemLayout::interleaved || b.memory != MemLayout::interleaved) && batch_a > 1 &&
        batch_b == 1)
      return reuse_bad("in0 '", a.name, "' has ", batch_a, " batches and in1 '", b.name,
                       "' one, with a sharded operand; tt-metal: \"Batch broadcasting is not "
                       "supported for the chosen program config\" (a multicast program fuses "
                       "the batches)");
    if (a.memory != MemLayout::interleaved && b.memory != MemLayout::interleaved &&
        !cfg.transpose_a && per_core_m > 0 && per_core_m % m_tiles != 0)
      return reuse_bad("in0 '", a.name, "' shards hold ", per_core_m,
                       " tile rows (its per_core_M) and in1 '", b.name,
                       "' is sharded; tt-metal: \"per_core_M (", per_core_m,
                       ") must be a multiple of M (", m_tiles, ") when input B is sharded\"");
    if (out.memory != MemLayout::interleaved)
      return fail(ErrorCode::invalid_argument,
                  "plain multi-core program (tt-metal MatmulMultiCoreProgramConfig): result '",
                  out.name, "' is ", memory_name(out.memory),
                  "; Output memory layout must be INTERLEAVED (use a multicast program for a "
                  "sharded result)");
    m.per_core_tiles = std::max<int64_t>(1, ceil_div(m.mt * m.nt, cores));
    m.in0_block_w = m.kt;
    return m;
  }
  if (static_cast<uint8_t>(m.program) > static_cast<uint8_t>(MatmulProgram::mcast_2d))
    return fail(ErrorCode::invalid_argument, "unknown matmul program ",
                static_cast<int>(m.program));
  auto bad = [&](auto&&... msg) {
    return fail(ErrorCode::invalid_argument, program_name(m.program), " program: ", msg...);
  };
  // The multicast programs block the batch-fused rows (tt-metal's fuse_batch), which takes one
  // in1 for every batch of in0.
  if (int64_t batch_b = volume(std::span(b.shape).first(b.shape.size() - 2)); batch_b > 1)
    return bad("in1 '", b.name, "' has ", batch_b,
               " batches; the multicast programs fuse in0's batches into one M, which takes one "
               "in1 (tt-metal: \"Matmul with fused batch requires input tensors of shapes "
               "BCMK*11KN=BCMN or equivalent\")");

  // Block sizes: which dimension the grid splits, and how many cores each side offers.
  int64_t cores_m = 1, cores_n = 1;
  if (m.program == MatmulProgram::mcast_2d) {
    cores_m = m.transpose_mcast ? m.grid_x : m.grid_y;
    cores_n = m.transpose_mcast ? m.grid_y : m.grid_x;
  } else {
    (m.mcast_in0 ? cores_n : cores_m) = cores;
  }
  m.per_core_m = cfg.per_core_m ? cfg.per_core_m : ceil_div(m.mt, cores_m);
  m.per_core_n = cfg.per_core_n ? cfg.per_core_n : ceil_div(m.nt, cores_n);
  // Blocks larger than the output are meaningless (and would overflow the CB arithmetic).
  if (m.per_core_m > m.mt || m.per_core_n > m.nt)
    return bad("per-core block ", m.per_core_m, "x", m.per_core_n, " exceeds the ", m.mt, "x", m.nt,
               " output tiles");
  if (m.program == MatmulProgram::mcast_1d && m.mcast_in0 && m.per_core_m < m.mt)
    return bad("with in0 multicast every core computes all ", m.mt,
               " output tile rows, per_core_m is ", m.per_core_m);
  if (m.program == MatmulProgram::mcast_1d && !m.mcast_in0 && m.per_core_n < m.nt)
    return bad("with in1 multicast every core computes all ", m.nt,
               " output tile columns, per_core_n is ", m.per_core_n);
  if (ceil_div(m.mt, m.per_core_m) > cores_m)
    return bad(m.mt, " output tile rows in blocks of per_core_m ", m.per_core_m, " need ",
               ceil_div(m.mt, m.per_core_m), " cores, the grid offers ", cores_m);
  if (ceil_div(m.nt, m.per_core_n) > cores_n)
    return bad(m.nt, " output tile columns in blocks of per_core_n ", m.per_core_n, " need ",
               ceil_div(m.nt, m.per_core_n), " cores, the grid offers ", cores_n);

  // K steps and destination sub-blocks.
  if (cfg.in0_block_w) {
    m.in0_block_w = cfg.in0_block_w;
  } else {
    m.in0_block_w = 1;
    for (int64_t d = std::min<int64_t>(m.kt, 8); d >= 1; --d)
      if (m.kt % d == 0) {
        m.in0_block_w = d;
        break;
      }
  }
  if (m.kt % m.in0_block_w != 0)
    return bad("in0_block_w ", m.in0_block_w, " does not divide the ", m.kt, " K tiles");
  m.sub_h = cfg.out_subblock_h;
  m.sub_w = cfg.out_subblock_w;
  int64_t dst_tiles = out.dtype == DType::f32 ? 4 : 8;
  if (m.sub_h < 1 || m.sub_w < 1 || m.per_core_m % m.sub_h != 0 || m.per_core_n % m.sub_w != 0)
    return bad("out_subblock ", m.sub_h, "x", m.sub_w, " does not divide the per-core block ",
               m.per_core_m, "x", m.per_core_n);
  if (m.sub_h * m.sub_w > dst_tiles)
    return bad("out_subblock ", m.sub_h, "x", m.sub_w, " exceeds the ", dst_tiles,
               " destination-register tiles");
  if (m.sub_w != m.per_core_n && m.sub_h != 1)
    return bad("out_subblock_h must be 1 when out_subblock_w (", m.sub_w, ") is not per_core_n (",
               m.per_core_n, ")");

  // Layouts each program accepts.
  MemLayout a_ok = m.program == MatmulProgram::mcast_2d ? MemLayout::block_sharded
                   : m.mcast_in0                        ? MemLayout::width_sharded
                                                        : MemLayout::height_sharded;
  if (!one_of(a.memory, MemLayout::interleaved, a_ok))
    return bad("in0 '", a.name, "' is ", memory_name(a.memory),
               "; this program takes it interleaved or ", memory_name(a_ok));
  if (b.memory != MemLayout::interleaved)
    return bad("in1 '", b.name, "' is ", memory_name(b.memory),
               "; multicast programs take in1 interleaved");
  if (!one_of(out.memory, MemLayout::interleaved, a_ok))
    return bad("result '", out.name, "' is ", memory_name(out.memory),
               "; this program writes it interleaved or ", memory_name(a_ok));
  if (a.memory != MemLayout::interleaved) {
    // tt-metal: 1-D programs take in0 shards in ROW_MAJOR orientation only; the 2-D program
    // takes block shards ROW_MAJOR, or COL_MAJOR when transpose_mcast is set.
    ShardOrientation want = m.program == MatmulProgram::mcast_2d && m.transpose_mcast
                                ? ShardOrientation::col_major
                                : ShardOrientation::row_major;
    if (a.shard.orientation != want)
      return bad("in0 '", a.name, "' shards are ",
                 a.shard.orientation == ShardOrientation::row_major ? "ROW_MAJOR" : "COL_MAJOR",
                 "; tt-metal requires ",
                 want == ShardOrientation::row_major ? "ROW_MAJOR" : "COL_MAJOR",
                 m.program == MatmulProgram::mcast_2d
                     ? (m.transpose_mcast ? " with transpose_mcast" : " without transpose_mcast")
                     : " for 1-D multicast",
                 " shard orientation");
    if (cfg.transpose_a)
      return bad("in0 '", a.name, "' must be interleaved when transpose_a is set");
    int64_t shard_rows = a.shard.shape[0] / kTileH, shard_cols = a.shard.shape[1] / kTileW;
    if (a.memory != MemLayout::width_sharded && shard_rows != m.per_core_m)
      return bad("in0 '", a.name, "' shards hold ", shard_rows, " tile rows, the program's blocks ",
                 m.per_core_m);
    if (a.memory != MemLayout::height_sharded && shard_cols % m.in0_block_w != 0)
      return bad("in0 '", a.name, "' shards hold ", shard_cols,
                 " K tiles, not a multiple of in0_block_w ", m.in0_block_w);
  }
  if (out.memory != MemLayout::interleaved) {
    // The program writes each output tile from the core that computes it into that core's L1.
    AddressMap map(out, chip);
    for (int64_t tr = 0; tr < m.mt; ++tr)
      for (int64_t tc = 0; tc < m.nt; ++tc) {
        uint32_t holder = map.page(tr * m.nt + tc).bank,
                 computer = matmul_core_of(m, tr, tc, chip.grid_x);
        if (holder != computer)
          return bad("result '", out.name, "' keeps output tile (", tr, ",", tc, ") on core ",
                     core_text(holder, chip.grid_x), " but the program computes it on core ",
                     core_text(computer, chip.grid_x));
      }
  }
  return m;
}

uint32_t matmul_core_of(const MatmulBlocking& m, int64_t tr, int64_t tc, uint16_t chip_grid_x) {
  int64_t x = 0, y = 0;
  switch (m.program) {
    case MatmulProgram::none: {
      int64_t k = (tr * m.nt + tc) / m.per_core_tiles;
      x = k % m.grid_x;
      y = k / m.grid_x;
      break;
    }
    case MatmulProgram::mcast_1d: {
      int64_t k = m.mcast_in0 ? tc / m.per_core_n : tr / m.per_core_m;
      x = k % m.grid_x;
      y = k / m.grid_x;
      break;
    }
    case MatmulProgram::mcast_2d: {
      int64_t bm = tr / m.per_core_m, bn = tc / m.per_core_n;
      x = m.transpose_mcast ? bm : bn;
      y = m.transpose_mcast ? bn : bm;
      break;
    }
  }
  return static_cast<uint32_t>(y * chip_grid_x + x);
}

std::vector<MatmulWork> matmul_work(const MatmulBlocking& m, uint16_t chip_grid_x) {
  std::vector<MatmulWork> work;
  if (m.program == MatmulProgram::none) {
    int64_t tiles = m.mt * m.nt;
    for (int64_t k = 0; k * m.per_core_tiles < tiles; ++k) {
      MatmulWork w;
      w.core = static_cast<uint32_t>((k / m.grid_x) * chip_grid_x + k % m.grid_x);
      w.p0 = k * m.per_core_tiles;
      w.p1 = std::min(tiles, w.p0 + m.per_core_tiles);
      work.push_back(w);
    }
    return work;
  }
  for (int64_t r0 = 0; r0 < m.mt; r0 += m.per_core_m)
    for (int64_t c0 = 0; c0 < m.nt; c0 += m.per_core_n) {
      MatmulWork w;
      w.core = matmul_core_of(m, r0, c0, chip_grid_x);
      w.r0 = r0;
      w.r1 = std::min(m.mt, r0 + m.per_core_m);
      w.c0 = c0;
      w.c1 = std::min(m.nt, c0 + m.per_core_n);
      work.push_back(w);
    }
  std::sort(work.begin(), work.end(),
            [](const MatmulWork& x, const MatmulWork& y) { return x.core < y.core; });
  return work;
}

uint64_t matmul_cb_bytes(const MatmulBlocking& m, const OpLaunch& op) {
  const TensorPlacement& a = *op.operands[0];
  const TensorPlacement& b = *op.operands[1];
  const TensorPlacement& out = *op.results[0];
  // linear's bias streams through its own double-buffered tile.
  uint64_t bias = op.operands.size() > 2 ? 2ull * tile_bytes(op.operands[2]->dtype) : 0;
  if (m.program == MatmulProgram::none)
    return 2ull * (tile_bytes(a.dtype) + tile_bytes(b.dtype) + tile_bytes(out.dtype)) +
           kTileElems * 4 + bias;
  uint64_t block = static_cast<uint64_t>(m.per_core_m * m.per_core_n);
  uint64_t bytes = 2ull * m.per_core_m * m.in0_block_w * tile_bytes(a.dtype);
  bytes += 2ull * m.in0_block_w * m.per_core_n * tile_bytes(b.dtype);
  if (out.memory == MemLayout::interleaved) bytes += block * tile_bytes(out.dtype);
  if (m.kt / m.in0_block_w > 1) bytes += block * kTileElems * 4;
  return bytes + bias;
}

}  // namespace meshplan::device
