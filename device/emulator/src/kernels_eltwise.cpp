// Elementwise kernels: unary ops (relu, gelu, exp, clamp, ...), binary ops (add, subtract,
// multiply, divide, maximum, minimum, the comparisons eq .. ge, the bitwise ops and shifts) and
// the ternary where, with numpy broadcasting over the logical shape and a fused activation.
// Ops with integer semantics on i32/u32 operands compute on the stored words, exactly (wrapping
// modulo 2^32); everything else computes through f32.
#include <algorithm>

#include "kernel_blocks.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

namespace {

/// No broadcasting: operand tile p feeds output tile p, computed in tile order without
/// untilizing (the common case, and the one tiny ops hit).
Status run_eltwise_same_shape(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op,
                              uint32_t cores) {
  TileIO out(memory, chip, *op.results[0]);
  const TileGrid& og = out.grid();
  std::vector<TileIO> ins;
  ins.reserve(op.operands.size());
  for (const TensorPlacement* t : op.operands) ins.emplace_back(memory, chip, *t);
  bool binary = is_binary(op.kind);
  Activation act = op.config.activation;
  auto per_core = [&](uint32_t, int64_t begin, int64_t end) -> Status {
    float x[kTileElems], y[kTileElems], z[kTileElems];
    for (int64_t p = begin; p < end; ++p) {
      MESHPLAN_TRY(ins[0].read(p, x));
      if (op.kind == OpKind::where) {
        MESHPLAN_TRY(ins[1].read(p, y));
        MESHPLAN_TRY(ins[2].read(p, z));
        for (int i = 0; i < kTileElems; ++i) x[i] = where_value(x[i], y[i], z[i]);
      } else if (binary) {
        MESHPLAN_TRY(ins[1].read(p, y));
        // The common ops as straight loops; the rest through binary_value.
        if (op.kind == OpKind::add)
          for (int i = 0; i < kTileElems; ++i) x[i] += y[i];
        else if (op.kind == OpKind::multiply)
          for (int i = 0; i < kTileElems; ++i) x[i] *= y[i];
        else
          for (int i = 0; i < kTileElems; ++i) x[i] = binary_value(op.kind, x[i], y[i]);
      } else if (op.kind == OpKind::relu) {
        for (int i = 0; i < kTileElems; ++i) x[i] = std::max(x[i], 0.0f);
      } else {
        for (int i = 0; i < kTileElems; ++i) x[i] = unary_value(op.kind, x[i], op.config);
      }
      if (act != Activation::none)
        for (int i = 0; i < kTileElems; ++i) x[i] = apply_activation(act, x[i]);
      // Edge tiles: padding outside the logical shape is written as 0.
      TileCoords tc = tile_coords(og, p);
      if (tc.row0 + kTileH > og.rows || tc.col0 + kTileW > og.cols)
        for (int r = 0; r < kTileH; ++r)
          for (int c = 0; c < kTileW; ++c)
            if (tc.row0 + r >= og.rows || tc.col0 + c >= og.cols) x[tile_offset(r, c)] = 0.0f;
      MESHPLAN_TRY(out.write(p, x));
    }
    return {};
  };
  // Timing class sfpu (gelu, exp, ...) costs ~8x a plain add per value (kernels_bench.cpp).
  bool cheap = timing_class(op.kind) == TimingClass::eltwise;
  int64_t ns_per_tile = cheap && act == Activation::none ? kTileCopyNs : 8 * kTileCopyNs;
  return for_each_core(memory, chip, *op.results[0], og.pages(), cores, ns_per_tile, per_core);
}

/// Whether `op` computes on integer words: an op with integer semantics (or where) whose
/// operands (where's values) are all i32 or all u32, with a result of that dtype (comparisons:
/// any dtype, written as 1/0) and no fused activation other than relu.
bool runs_on_words(const OpLaunch& op) {
  bool where = op.kind == OpKind::where;
  if (!where && !has_int_semantics(op.kind)) return false;
  if (op.config.activation != Activation::none && op.config.activation != Activation::relu)
    return false;
  size_t first = where ? 1 : 0;
  DType d = op.operands[first]->dtype;
  if (!is_int_dtype(d)) return false;
  for (size_t i = first; i < op.operands.size(); ++i)
    if (op.operands[i]->dtype != d) return false;
  return is_comparison(op.kind) || op.results[0]->dtype == d;
}

/// The integer path: every output element from the operands' words (numpy broadcasting).
Status run_eltwise_words(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op,
                         uint32_t cores) {
  bool where = op.kind == OpKind::where;
  size_t first = where ? 1 : 0;
  bool sgn = op.operands[first]->dtype == DType::i32;
  std::vector<WordBlocks> in;
  for (size_t i = first; i < op.operands.size(); ++i)
    in.push_back(load_words(memory, chip, *op.operands[i]));
  Blocks cond;
  if (where) cond = MESHPLAN_TRY(load_blocks(memory, chip, *op.operands[0]));
  bool unary = is_unary(op.kind), relu = op.config.activation == Activation::relu;
  size_t rank = op.results[0]->shape.size();
  auto word = [&](const int64_t* idx) {
    uint32_t v = 0;
    IntWord a{in[0].at_broadcast(idx, rank), sgn};
    if (where)
      v = cond.at_broadcast(idx, rank) != 0.0f ? a.w : in[1].at_broadcast(idx, rank);
    else if (unary)
      unary_word(op.kind, a, v);
    else
      binary_word(op.kind, a, IntWord{in[1].at_broadcast(idx, rank), sgn}, v);
    if (relu) v = scalar::relu::word(IntWord{v, sgn});
    return v;
  };
  bool cheap = timing_class(op.kind) == TimingClass::eltwise;
  int64_t ns_per_tile = cheap && !relu ? kTileCopyNs : 8 * kTileCopyNs;
  if (is_int_dtype(op.results[0]->dtype))
    return write_word_elements(memory, chip, op, cores, word, ns_per_tile);
  // A comparison into a float dtype: 1/0.
  return write_elements(
      memory, chip, op, cores, [&](const int64_t* idx) { return static_cast<float>(word(idx)); },
      ns_per_tile);
}

}  // namespace

Status run_eltwise(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  if (!is_pointwise(op.kind))
    return fail(ErrorCode::internal, op_name(op.kind), " is not an elementwise op");
  if (runs_on_words(op)) return run_eltwise_words(memory, chip, op, cores);
  auto oshape = op.results[0]->shape;
  bool same_shapes = true;
  for (const TensorPlacement* t : op.operands)
    same_shapes =
        same_shapes && std::equal(t->shape.begin(), t->shape.end(), oshape.begin(), oshape.end());
  if (same_shapes) return run_eltwise_same_shape(memory, chip, op, cores);

  std::vector<Blocks> in;
  for (const TensorPlacement* t : op.operands)
    in.push_back(MESHPLAN_TRY(load_blocks(memory, chip, *t)));
  size_t rank = oshape.size();
  Activation act = op.config.activation;
  if (is_unary(op.kind))
    return write_elements(memory, chip, op, cores, [&](const int64_t* idx) {
      return apply_activation(act, unary_value(op.kind, in[0].at(idx), op.config));
    });
  if (op.kind == OpKind::where)
    return write_elements(memory, chip, op, cores, [&](const int64_t* idx) {
      return where_value(in[0].at_broadcast(idx, rank), in[1].at_broadcast(idx, rank),
                         in[2].at_broadcast(idx, rank));
    });
  return write_elements(memory, chip, op, cores, [&](const int64_t* idx) {
    return apply_activation(
        act, binary_value(op.kind, in[0].at_broadcast(idx, rank), in[1].at_broadcast(idx, rank)));
  });
}

}  // namespace meshplan::device
