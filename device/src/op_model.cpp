// OpModel validation rules; the emulator calls the same code before every launch.
#include "meshplan/device/op_model.hpp"

#include <algorithm>

#include "layout_rules.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/conv_blocking.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/matmul_program.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "op_semantics_ext.hpp"

namespace meshplan::device {

Status check_placement(const TensorPlacement& t, const ChipDesc& chip) {
  if (static_cast<uint8_t>(t.dtype) > static_cast<uint8_t>(DType::bf4b))
    return fail(ErrorCode::invalid_argument, "tensor '", t.name, "': unknown dtype ",
                static_cast<int>(t.dtype));
  if (static_cast<uint8_t>(t.memory) > static_cast<uint8_t>(MemLayout::block_sharded) ||
      static_cast<uint8_t>(t.buffer) > static_cast<uint8_t>(BufferType::l1) ||
      static_cast<uint8_t>(t.layout) > static_cast<uint8_t>(TileLayout::row_major))
    return fail(ErrorCode::invalid_argument, "tensor '", t.name,
                "': unknown buffer, memory or tile layout value");
  if (t.layout == TileLayout::row_major && element_bytes(t.dtype) == 0)
    return fail(ErrorCode::invalid_argument, "tensor '", t.name, "': ", dtype_name(t.dtype),
                " is a block format and must be tiled, not row-major");
  for (int64_t d : t.shape)
    if (d < 0)
      return fail(ErrorCode::invalid_argument, "tensor '", t.name, "': negative dimension ", d);
  MESHPLAN_TRY(check_shard_spec(t, chip));
  uint32_t expected = expected_page_size(t);
  if (t.page_size != expected)
    return fail(ErrorCode::invalid_argument, "tensor '", t.name, "': page size ", t.page_size,
                " does not match its ", t.layout == TileLayout::tile ? "tile" : "row", " size ",
                expected);
  return {};
}

namespace {

bool is_sharded(const TensorPlacement& t) {
  return t.memory != MemLayout::interleaved;
}

/// tt-metal's reshard rules for to_memory_config between two sharded layouts (tt-metal:
/// ttnn/cpp/ttnn/operations/data_movement/sharded/reshard/device/reshard_device_operation.cpp,
/// its input validation): the dtype and the tile layout stay ("Input tensor dtype must equal
/// output tensor dtype", "... layout must equal ..."), and row-major shards' rows are whole
/// L1-aligned pages on both sides unless both are height-sharded (the one path that re-strides
/// unaligned rows).
std::string sharded_reshard_rule(const TensorPlacement& in, const TensorPlacement& out,
                                 const ChipDesc& chip) {
  if (in.dtype != out.dtype)
    return str("operand '", in.name, "' (", dtype_name(in.dtype), ") and result '", out.name, "' (",
               dtype_name(out.dtype),
               ") are both sharded: tt-metal's reshard does not cast (\"Input tensor dtype must "
               "equal output tensor dtype\")");
  if (in.layout != out.layout)
    return str("operand '", in.name, "' and result '", out.name,
               "' are both sharded: tt-metal's reshard keeps the tile or row-major layout "
               "(\"Input tensor layout must equal output tensor layout\")");
  bool height_to_height =
      in.memory == MemLayout::height_sharded && out.memory == MemLayout::height_sharded;
  if (in.layout == TileLayout::row_major && !height_to_height)
    for (const TensorPlacement* t : {&in, &out}) {
      uint64_t row = static_cast<uint64_t>(t->shard.shape[1]) * element_bytes(t->dtype);
      if (row % chip.l1_alignment != 0)
        return str("tensor '", t->name, "' shards rows of ", row, " bytes, not a multiple of the ",
                   chip.l1_alignment,
                   "-byte L1 alignment; tt-metal reshards unaligned row-major shards only "
                   "between height-sharded layouts (\"row-major shard width ... must be aligned "
                   "... for reshard\")");
    }
  return {};
}

/// tt-metal's sharded_to_interleaved rules for to_memory_config from a sharded to an interleaved
/// tensor (tt-metal: ttnn/cpp/ttnn/operations/data_movement/sharded/sharded_to_interleaved/device/
/// sharded_to_interleaved_device_operation.cpp, validate_inputs): a cast needs tiled tensors ("If
/// diff output type, tensor must be TILED"), and a row-major shard's row is a whole number of
/// L1-aligned bytes ("Shard page size must be aligned to 16B for L1 Tensor", the alignment being
/// the chip's).
std::string sharded_to_interleaved_rule(const TensorPlacement& in, const TensorPlacement& out,
                                        const ChipDesc& chip) {
  if (in.dtype != out.dtype &&
      (in.layout == TileLayout::row_major || out.layout == TileLayout::row_major))
    return str("operand '", in.name, "' (", dtype_name(in.dtype), ", sharded) and result '",
               out.name, "' (", dtype_name(out.dtype),
               "): tt-metal's sharded_to_interleaved converts dtypes between tiled tensors only "
               "(\"If diff output type, tensor must be TILED\")");
  if (in.layout == TileLayout::row_major) {
    uint64_t row = static_cast<uint64_t>(in.shard.shape[1]) * element_bytes(in.dtype);
    if (row % chip.l1_alignment != 0)
      return str("operand '", in.name, "' shards rows of ", row, " bytes, not a multiple of the ",
                 chip.l1_alignment,
                 "-byte L1 alignment (tt-metal's sharded_to_interleaved: \"Shard page size must "
                 "be aligned to ",
                 chip.l1_alignment, "B for L1 Tensor\")");
  }
  return {};
}

/// tt-metal's interleaved_to_sharded rules for to_memory_config from an interleaved to a sharded
/// tensor (docs/hardware-rules.md): a row-major shard's row must be a whole number of L1-aligned
/// bytes ("Shard page size must currently have L1 aligned page size"), and a cast needs tiled
/// tensors ("Input tensor layout must be TILE when dtype conversion is needed").
std::string reshard_rule(const OpLaunch& op, const ChipDesc& chip) {
  if (op.kind != OpKind::to_memory_config || op.operands.empty() || op.results.empty()) return {};
  const TensorPlacement& in = *op.operands[0];
  const TensorPlacement& out = *op.results[0];
  if (is_sharded(in) && is_sharded(out)) return sharded_reshard_rule(in, out, chip);
  if (is_sharded(in)) return sharded_to_interleaved_rule(in, out, chip);
  if (in.memory != MemLayout::interleaved || !is_sharded(out)) return {};
  if (in.dtype != out.dtype &&
      (in.layout == TileLayout::row_major || out.layout == TileLayout::row_major))
    return str("operand '", in.name, "' (", dtype_name(in.dtype), ") and result '", out.name, "' (",
               dtype_name(out.dtype),
               "): tt-metal converts dtypes between tiled tensors only (\"Input tensor layout "
               "must be TILE when dtype conversion is needed\")");
  if (out.layout == TileLayout::row_major) {
    uint64_t row = static_cast<uint64_t>(out.shard.shape[1]) * element_bytes(out.dtype);
    if (row % chip.l1_alignment != 0)
      return str("result '", out.name, "' shards rows of ", row, " bytes, not a multiple of the ",
                 chip.l1_alignment,
                 "-byte L1 alignment (tt-metal: \"Shard page size must currently have L1 "
                 "aligned page size\")");
  }
  return {};
}

}  // namespace

OpTiming OpModel::cost(const OpLaunch& op) const {
  if (!is_collective(op.kind)) return estimate(chip_, op);
  OpTiming t;
  t.duration_ns = collective_op_ns(mesh_ ? *mesh_ : default_collective_mesh(chip_, op.config), op);
  t.cores_used = 1;
  return t;
}

uint64_t OpModel::circular_buffer_bytes(const OpLaunch& op) const {
  bool is_matmul = is_matmul_family(op.kind);
  if (is_matmul && op.operands.size() >= 2 && op.results.size() == 1) {
    if (auto m = resolve_matmul(op, chip_)) return matmul_cb_bytes(*m, op);
  }
  if (op.kind == OpKind::conv2d && op.operands.size() >= 2 && op.results.size() == 1) {
    if (auto b = resolve_conv(op, chip_)) return conv_cb_bytes(*b, op);
  }
  // Double-buffered input tiles for each operand and output tiles, as TTNN's eltwise and
  // matmul kernels allocate them (2 tiles each; matmul's in0/in1 blocks are one k-tile wide).
  uint64_t bytes = 0;
  for (const TensorPlacement* t : op.operands) bytes += 2ull * tile_bytes(t->dtype);
  for (const TensorPlacement* t : op.results) bytes += 2ull * tile_bytes(t->dtype);
  if (is_matmul_family(op.kind) && !op.results.empty()) bytes += kTileElems * 4;  // f32 partials
  // Row ops keep the tiles of the operand along their reduced dim in f32 to compute its
  // statistics: a tile row (last dim), a tile column (softmax over the rows dim), or one tile per
  // index of a leading dim.
  bool row_op = op_family(op.kind) == OpFamily::softmax || op_family(op.kind) == OpFamily::norm;
  if (row_op && !op.operands.empty()) {
    auto shape = op.operands[0]->shape;
    TileGrid g = tile_grid(shape);
    int64_t rank = static_cast<int64_t>(shape.size()), line_tiles = g.tiles_w;
    if (op.kind == OpKind::softmax && op.config.num_dims == 1 && rank > 0) {
      int64_t d = op.config.dims[0] < 0 ? op.config.dims[0] + rank : op.config.dims[0];
      if (d == rank - 2)
        line_tiles = (g.rows + kTileH - 1) / kTileH;
      else if (d >= 0 && d < rank - 2)
        line_tiles = shape[d];
    }
    bytes += static_cast<uint64_t>(line_tiles) * kTileElems * 4;
  }
  return bytes;
}

OpValidation OpModel::validate(const OpLaunch& op) const {
  OpValidation v;
  auto reject = [&](auto&&... msg) {
    v.ok = false;
    v.reason = str("op '", op.name, "' (", op_name(op.kind), "): ", msg...);
    return v;
  };
  const OpInfo& info = op_info(op.kind);
  if (!operand_count_ok(op.kind, op.operands.size()) ||
      static_cast<int>(op.results.size()) != info.results)
    return reject("expected ", operand_count_text(op.kind), " operands and ", info.results,
                  " results, got ", op.operands.size(), " and ", op.results.size());
  if (op.config.grid_x == 0 || op.config.grid_y == 0 || op.config.grid_x > chip_.grid_x ||
      op.config.grid_y > chip_.grid_y)
    return reject("core grid ", op.config.grid_x, "x", op.config.grid_y,
                  " does not fit the chip's ", chip_.grid_x, "x", chip_.grid_y);
  std::vector<std::span<const int64_t>> shapes;
  for (const TensorPlacement* t : op.operands) {
    if (auto s = check_placement(*t, chip_); !s) return reject(s.error().message);
    if (t->layout != TileLayout::tile && op.kind != OpKind::to_memory_config)
      return reject("operand '", t->name, "' must be tiled");
    shapes.push_back(t->shape);
  }
  auto inferred = infer_shape(op.kind, shapes, op.config);
  if (!inferred) return reject(inferred.error().message);
  // Collectives move whole interleaved buffers (DRAM or L1) between chips; the dtype is kept.
  if (is_collective(op.kind)) {
    for (const TensorPlacement* t : op.operands)
      if (t->memory != MemLayout::interleaved)
        return reject("operand '", t->name, "' is ", memory_name(t->memory),
                      "; collectives take interleaved DRAM or L1 tensors");
    for (const TensorPlacement* t : op.results) {
      if (t->memory != MemLayout::interleaved)
        return reject("result '", t->name, "' is ", memory_name(t->memory),
                      "; collectives give interleaved DRAM or L1 tensors");
      if (t->dtype != op.operands[0]->dtype)
        return reject("result '", t->name, "' is ", dtype_name(t->dtype), " but operand '",
                      op.operands[0]->name, "' is ", dtype_name(op.operands[0]->dtype),
                      "; collectives do not cast");
    }
  }
  // Ops whose dtypes are part of their meaning: integer indices, and typecast's target.
  if (op.kind == OpKind::embedding && op.operands[0]->dtype != DType::i32 &&
      op.operands[0]->dtype != DType::u32)
    return reject("indices '", op.operands[0]->name, "' must be i32 or u32, not ",
                  dtype_name(op.operands[0]->dtype));
  // The bit ops are integer ops (tt-metal's int32 SFPU kernels).
  if (op.kind == OpKind::bitwise_and || op.kind == OpKind::bitwise_or ||
      op.kind == OpKind::bitwise_xor || op.kind == OpKind::bitwise_not ||
      op.kind == OpKind::shift_left || op.kind == OpKind::shift_right_arithmetic ||
      op.kind == OpKind::shift_right_logical)
    for (const TensorPlacement* t : op.operands)
      if (t->dtype != DType::i32 && t->dtype != DType::u32)
        return reject(op_name(op.kind), " operand '", t->name, "' must be i32 or u32, not ",
                      dtype_name(t->dtype));
  if (op.kind == OpKind::bitcast &&
      (element_bytes(op.operands[0]->dtype) != 4 || element_bytes(op.config.dtype) != 4))
    return reject("bitcast of '", op.operands[0]->name, "' from ",
                  dtype_name(op.operands[0]->dtype), " to ", dtype_name(op.config.dtype),
                  ": only between the 4-byte dtypes f32, i32 and u32");
  if ((op.kind == OpKind::typecast || op.kind == OpKind::bitcast) &&
      op.results[0]->dtype != op.config.dtype)
    return reject("result '", op.results[0]->name, "' is ", dtype_name(op.results[0]->dtype),
                  " but the op casts to ", dtype_name(op.config.dtype));
  for (const TensorPlacement* t : op.results) {
    if (auto s = check_placement(*t, chip_); !s) return reject(s.error().message);
    if (t->layout != TileLayout::tile && op.kind != OpKind::to_memory_config)
      return reject("result '", t->name, "' must be tiled");
    if (!std::equal(t->shape.begin(), t->shape.end(), inferred->begin(), inferred->end()))
      return reject("result '", t->name, "' has shape ", shape_text(t->shape),
                    ", its operands give ", shape_text(*inferred));
    if (t->buffer == BufferType::l1)
      v.output_l1_bytes_per_core += AddressMap(*t, chip_).bytes_per_bank();
  }
  if (auto why = reshard_rule(op, chip_); !why.empty()) return reject(why);
  if (auto why = layout_rule(op); !why.empty()) return reject(why);
  // Freeing the input inside the op (TTNN's conv2d deallocate_activation): conv2d only, and
  // meshplan frees only an L1 input there (as tt-mlir sets it only for one).
  if (op.config.deallocate_activation && op.kind != OpKind::conv2d)
    return reject("deallocate_activation is a conv2d option, not one of ", op_name(op.kind));
  if (op.config.deallocate_activation && op.operands[0]->buffer != BufferType::l1)
    return reject("deallocate_activation frees an L1 input; '", op.operands[0]->name,
                  "' is in DRAM");
  if (is_matmul_family(op.kind)) {
    auto m = resolve_matmul(op, chip_);
    if (!m) return reject(m.error().message);
    v.cb_bytes_per_core = matmul_cb_bytes(*m, op);
  } else if (op.kind == OpKind::conv2d) {
    auto b = resolve_conv(op, chip_);
    if (!b) return reject(b.error().message);
    v.cb_bytes_per_core = conv_cb_bytes(*b, op);
    uint64_t usable = chip_.l1_usable_top() - chip_.l1_unreserved_base;
    if (v.cb_bytes_per_core + v.output_l1_bytes_per_core > usable)
      return reject(
          "act_block_h ", b->act_block_h, " with act_block_w_div ", b->act_block_w_div, " needs ",
          v.cb_bytes_per_core, " bytes of circular buffers per core (activation block ",
          b->act_block_h, "x", b->k_block_tiles, " tiles double-buffered, weight block ",
          b->weights_resident ? b->k_tiles : b->k_block_tiles, "x",
          b->weights_resident ? b->cols_per_core : 2, b->weights_resident ? "" : " streamed",
          ", output block ", b->act_block_h, "x", b->cols_per_core,
          b->act_block_w_div > 1 ? str(", f32 partials ", b->act_block_h, "x", b->cols_per_core)
                                 : std::string(),
          ") plus ", v.output_l1_bytes_per_core,
          " bytes of L1 output: ", v.cb_bytes_per_core + v.output_l1_bytes_per_core, " needed, ",
          usable, " available");
  } else {
    v.cb_bytes_per_core = circular_buffer_bytes(op);
  }
  uint64_t usable = chip_.l1_usable_top() - chip_.l1_unreserved_base;
  if (v.cb_bytes_per_core + v.output_l1_bytes_per_core > usable) {
    std::string l1_results;
    for (const TensorPlacement* t : op.results)
      if (t->buffer == BufferType::l1)
        l1_results += str(l1_results.empty() ? "" : ", ", "'", t->name, "'");
    return reject("needs ", v.cb_bytes_per_core, " bytes of circular buffers and ",
                  v.output_l1_bytes_per_core, " bytes of L1 output",
                  l1_results.empty() ? "" : str(" (", l1_results, ")"),
                  " per core (on core (0,0) and every other core of its ", op.config.grid_x, "x",
                  op.config.grid_y, " grid), more than the ", usable, " usable");
  }
  v.ok = true;
  return v;
}

}  // namespace meshplan::device
