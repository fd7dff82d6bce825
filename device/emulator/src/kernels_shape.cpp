// Data-rearranging kernels: reshape, permute, concat, slice and embedding gather each output
// tile element from its source operand element; typecast converts tile by tile. Integer tensors
// are moved as their words (carried bit for bit in the f32 blocks), so they stay exact.
#include "core_pool.hpp"
#include "kernel_blocks.hpp"
#include "meshplan/device/op_cases.hpp"
#include "op_semantics_ext.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

namespace {

/// typecast: integer operands are read as their words, so that i32 <-> u32 wraps modulo 2^32 and
/// an integer becomes the nearest f32 exactly; floats become integers truncated and saturated.
/// bitcast: the words as they are (same width).
Status run_typecast(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  TileIO in(memory, chip, *op.operands[0]), out(memory, chip, *op.results[0]);
  DType from = op.operands[0]->dtype, to = op.config.dtype;
  bool int_from = from == DType::i32 || from == DType::u32;
  bool words = op.kind == OpKind::bitcast || (int_from && (to == DType::i32 || to == DType::u32));
  return for_each_core(memory, chip, *op.results[0], out.grid().pages(), cores, kTileCopyNs,
                       [&](uint32_t, int64_t begin, int64_t end) -> Status {
                         float tile[kTileElems];
                         uint32_t w[kTileElems];
                         for (int64_t p = begin; p < end; ++p) {
                           if (words) {
                             in.read_words(p, w);
                             out.write_words(p, w);
                             continue;
                           }
                           if (int_from) {
                             in.read_words(p, w);
                             for (int i = 0; i < kTileElems; ++i)
                               tile[i] = word_to_float(w[i], from == DType::i32);
                           } else {
                             MESHPLAN_TRY(in.read(p, tile));
                           }
                           for (float& v : tile) v = storage_value(to, v);
                           MESHPLAN_TRY(out.write(p, tile));
                         }
                         return {};
                       });
}

/// An i32/u32 operand's words, bit-cast into the f32 values of Blocks (row-major 32x32 blocks):
/// for kernels that only move values.
Blocks load_bits(ChipMemory& memory, const ChipDesc& chip, const TensorPlacement& t) {
  WordBlocks w = load_words(memory, chip, t);
  Blocks b;
  b.shape = w.shape;
  b.grid = w.grid;
  b.per_matrix = w.per_matrix;
  b.data.resize(w.words.size());
  for (size_t p = 0; p < w.words.size(); p += kTileElems)
    for (int r = 0; r < kTileH; ++r)
      for (int c = 0; c < kTileW; ++c)
        b.data[p + static_cast<size_t>(r * kTileW + c)] =
            std::bit_cast<float>(w.words[p + static_cast<size_t>(tile_offset(r, c))]);
  return b;
}

}  // namespace

Status run_shape_op(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  if (op.kind == OpKind::typecast || op.kind == OpKind::bitcast)
    return run_typecast(memory, chip, op, cores);
  // reshape, permute, slice and concat of integers move words (they never cast).
  bool bits = op.kind != OpKind::embedding && is_int_dtype(op.results[0]->dtype);
  for (const TensorPlacement* t : op.operands) bits = bits && t->dtype == op.results[0]->dtype;
  std::vector<Blocks> in;
  for (const TensorPlacement* t : op.operands)
    in.push_back(bits ? load_bits(memory, chip, *t) : MESHPLAN_TRY(load_blocks(memory, chip, *t)));
  auto emit = [&](auto&& fn) -> Status {
    if (bits)
      return write_word_elements(memory, chip, op, cores, [&](const int64_t* idx) {
        return std::bit_cast<uint32_t>(fn(idx));
      });
    return write_elements(memory, chip, op, cores, fn);
  };
  auto oshape = op.results[0]->shape;
  size_t rank = oshape.size();
  const OpConfig& c = op.config;
  switch (op.kind) {
    case OpKind::reshape: {
      auto ost = strides_of(oshape);
      auto ishape = in[0].shape;
      return emit([&](const int64_t* idx) {
        int64_t flat = 0;
        for (size_t d = 0; d < rank; ++d) flat += idx[d] * ost[d];
        int64_t src[kMaxRank];
        for (size_t d = ishape.size(); d-- > 0;) {
          src[d] = flat % ishape[d];
          flat /= ishape[d];
        }
        return in[0].at(src);
      });
    }
    case OpKind::permute: {
      auto perm = MESHPLAN_TRY(resolve_perm(c, rank));
      return emit([&](const int64_t* idx) {
        int64_t src[kMaxRank];
        for (size_t d = 0; d < rank; ++d) src[perm[d]] = idx[d];
        return in[0].at(src);
      });
    }
    case OpKind::slice: {
      SliceSpec s = MESHPLAN_TRY(resolve_slice(c, in[0].shape));
      return emit([&](const int64_t* idx) {
        int64_t src[kMaxRank];
        for (size_t d = 0; d < rank; ++d) src[d] = s.begin[d] + idx[d] * s.step[d];
        return in[0].at(src);
      });
    }
    case OpKind::concat: {
      int axis = MESHPLAN_TRY(resolve_axis(c.axis, rank, "concat axis"));
      std::vector<int64_t> starts;
      int64_t at = 0;
      for (const Blocks& b : in) {
        starts.push_back(at);
        at += b.shape[axis];
      }
      return emit([&](const int64_t* idx) {
        size_t i = in.size() - 1;
        while (idx[axis] < starts[i]) --i;
        int64_t src[kMaxRank];
        std::copy(idx, idx + rank, src);
        src[axis] -= starts[i];
        return in[i].at(src);
      });
    }
    case OpKind::embedding: {
      // Indices are checked before any tile is written, so a bad index leaves the result untouched.
      int64_t rows = in[1].shape[0];
      const Blocks& ids = in[0];
      std::vector<int64_t> idx(ids.shape.size(), 0);
      for (int64_t i = 0; i < volume(ids.shape); ++i) {
        int64_t rem = i;
        for (size_t d = idx.size(); d-- > 0;) {
          idx[d] = rem % ids.shape[d];
          rem /= ids.shape[d];
        }
        float v = ids.at(idx.data());
        if (!(v >= 0.0f) || v >= static_cast<float>(rows))
          return fail(ErrorCode::invalid_argument, "embedding index ", v, " at position ", i,
                      " of indices '", op.operands[0]->name, "' is outside the ", rows,
                      " rows of table '", op.operands[1]->name, "'");
      }
      return write_elements(memory, chip, op, cores, [&](const int64_t* out_idx) {
        int64_t row[2] = {static_cast<int64_t>(ids.at(out_idx)), out_idx[rank - 1]};
        return in[1].at(row);
      });
    }
    case OpKind::to_memory_config:
    case OpKind::typecast:  // run above
    case OpKind::bitcast:
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE4_(family, memory, shape, gather, convert, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      return fail(ErrorCode::internal, op_name(op.kind), " is not a shape op");
  }
  return fail(ErrorCode::internal, op_name(op.kind), " is not a shape op");
}

}  // namespace meshplan::device
