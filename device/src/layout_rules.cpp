// Layout and dtype rules of tt-metal's binary eltwise, conv2d, softmax and layer/RMS norm device
// operations, written from the rules (docs/hardware-rules.md), not from tt-metal's code.
#include "layout_rules.hpp"

#include <algorithm>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/collective_rules.hpp"
#include "meshplan/device/placement.hpp"
#include "op_semantics_ext.hpp"

namespace meshplan::device {

namespace {

bool sharded(const TensorPlacement& t) {
  return t.memory != MemLayout::interleaved;
}

std::string shard_text(const TensorPlacement& t) {
  const CoreRange& g = t.shard.grid;
  return str(memory_name(t.memory), " [", t.shard.shape[0], ", ", t.shard.shape[1], "] on (", g.x0,
             ",", g.y0, ")-(", g.x1, ",", g.y1, ")",
             t.shard.extra_ranges ? str(" and ", int(t.shard.extra_ranges), " more ranges") : "",
             t.shard.orientation == ShardOrientation::col_major ? " col-major" : "");
}

/// tt-metal's softmax and layernorm kernels read f32, bf16 and bf8_b only: the refusal, or
/// empty.
std::string row_op_dtype_rule(const TensorPlacement& in) {
  if (in.dtype == DType::f32 || in.dtype == DType::bf16 || in.dtype == DType::bf8b) return {};
  return str("operand '", in.name, "' is ", dtype_name(in.dtype),
             "; tt-metal: \"Input tensor must be FLOAT32, BFLOAT16, or BFLOAT8_B\"");
}

/// The same cores in the same ranges (tt-metal compares shard grids as core range sets).
bool same_grid(const ShardSpec& a, const ShardSpec& b) {
  if (a.range_count() != b.range_count()) return false;
  for (int i = 0; i < a.range_count(); ++i)
    if (!(a.range(i) == b.range(i))) return false;
  return true;
}

/// Dim `i` counted from the end (1: the last), 1 past the rank (numpy broadcasting's padding).
int64_t dim_from_end(const TensorPlacement& t, size_t i) {
  return i <= t.shape.size() ? t.shape[t.shape.size() - i] : 1;
}

bool block_float(DType d) { return d == DType::bf8b || d == DType::bf4b; }

/// Whether ttnn runs the binary op on binary_ng rather than on the legacy binary program
/// (tt-metal: ttnn/cpp/ttnn/operations/eltwise/binary/binary.cpp): the legacy program only when
/// is_legacy_only holds (a sharded block-float operand, or a block-float operand broadcast within
/// a tile) and detail::is_binary_ng_only does not (an integer operand, a rank above 4, or a row
/// broadcast on one side against a column broadcast on the other).
bool runs_on_binary_ng(const TensorPlacement& a, const TensorPlacement& b) {
  auto subtile_broadcast = [](const TensorPlacement& x, const TensorPlacement& y) {
    return block_float(x.dtype) && ((dim_from_end(x, 2) == 1 && dim_from_end(y, 2) > 1) ||
                                    (dim_from_end(x, 1) == 1 && dim_from_end(y, 1) > 1));
  };
  bool legacy = (sharded(a) && block_float(a.dtype)) || (sharded(b) && block_float(b.dtype)) ||
                subtile_broadcast(a, b) || subtile_broadcast(b, a);
  if (!legacy) return true;
  auto integer = [](DType d) { return d == DType::i32 || d == DType::u32; };
  auto row_against_column = [](const TensorPlacement& x, const TensorPlacement& y) {
    return dim_from_end(x, 2) == 1 && dim_from_end(y, 2) > 1 && dim_from_end(x, 1) > 1 &&
           dim_from_end(y, 1) == 1;
  };
  return integer(a.dtype) || integer(b.dtype) || a.shape.size() > 4 || b.shape.size() > 4 ||
         row_against_column(a, b) || row_against_column(b, a);
}

// tt-metal: ttnn/cpp/ttnn/operations/eltwise/binary_ng/device/binary_ng_device_operation.cpp
// (validate_on_program_cache_hit): with an operand or the result sharded, binary_ng broadcasts
// along the last dim only. The refusal, or empty.
std::string binary_ng_broadcast_rule(const TensorPlacement& a, const TensorPlacement& b,
                                     const TensorPlacement& out) {
  const TensorPlacement* shard = sharded(a) ? &a : sharded(b) ? &b : sharded(out) ? &out : nullptr;
  if (!shard || !runs_on_binary_ng(a, b)) return {};
  size_t rank = std::max(a.shape.size(), b.shape.size());
  for (size_t i = 2; i <= rank; ++i) {
    int64_t da = dim_from_end(a, i), db = dim_from_end(b, i);
    if (da == db) continue;
    return str("operands '", a.name, "' ", shape_text(a.shape), " and '", b.name, "' ",
               shape_text(b.shape), " broadcast along dim ", static_cast<int64_t>(rank - i),
               " while '", shard->name, "' is ", memory_name(shard->memory),
               "; tt-metal's binary_ng: \"Cannot broadcast sharded tensors on dims other than W, "
               "violation for rank -",
               i, ", dim a: ", da, ", dim b: ", db, "\"");
  }
  return {};
}

// tt-metal: ttnn/cpp/ttnn/operations/eltwise/binary/device/binary_device_operation.cpp
// (validate_on_program_cache_miss, and compute_output_specs for the result's shard spec), and
// binary_ng's broadcast rule above.
std::string binary_rule(const OpLaunch& op) {
  const TensorPlacement& a = *op.operands[0];
  const TensorPlacement& b = *op.operands[1];
  const TensorPlacement& out = *op.results[0];
  if (std::string e = binary_ng_broadcast_rule(a, b, out); !e.empty()) return e;
  if (sharded(a) && sharded(b) && (a.memory != b.memory || !(a.shard == b.shard)))
    return str("operands '", a.name, "' (", shard_text(a), ") and '", b.name, "' (", shard_text(b),
               ") are both sharded but differently; tt-metal's binary op needs two sharded "
               "operands to share their memory layout and shard spec");
  if (!sharded(out)) return {};
  const TensorPlacement* src = sharded(a) ? &a : sharded(b) ? &b : nullptr;
  if (!src) return {};
  if (out.memory != src->memory)
    return str("result '", out.name, "' is ", memory_name(out.memory), " but operand '", src->name,
               "' is ", memory_name(src->memory),
               "; tt-metal's binary op gives a sharded result only in its sharded operand's "
               "memory layout");
  if (!(out.shard == src->shard))
    return str("result '", out.name, "' (", shard_text(out), ") is not sharded like operand '",
               src->name, "' (", shard_text(*src),
               "); tt-metal's binary op takes a sharded result's shard spec from its sharded "
               "operand");
  return {};
}

// tt-metal: ttnn/cpp/ttnn/operations/conv/conv2d/device/conv2d_device_operation.cpp
// (validate_on_program_cache_miss).
std::string conv_rule(const OpLaunch& op) {
  const TensorPlacement& w = *op.operands[1];
  if (sharded(w))
    return str("weights '", w.name, "' are ", memory_name(w.memory),
               "; tt-metal: \"Weights tensor should not be sharded\"");
  return {};
}

// tt-metal: ttnn/cpp/ttnn/operations/normalization/softmax/device/softmax_device_operation.cpp
// (validate_on_program_cache_miss and select_program_factory: only
// SoftmaxShardedMultiCoreProgramConfig reads a sharded input, over the last dim, in place).
std::string softmax_rule(const OpLaunch& op) {
  const TensorPlacement& in = *op.operands[0];
  const TensorPlacement& out = *op.results[0];
  if (std::string e = row_op_dtype_rule(in); !e.empty()) return e;
  if (!sharded(in)) return {};
  int64_t rank = static_cast<int64_t>(in.shape.size());
  int64_t d = op.config.num_dims == 1 ? op.config.dims[0] : rank - 1;
  if (d < 0) d += rank;
  if (d != rank - 1)
    return str("operand '", in.name, "' is ", memory_name(in.memory),
               " and the softmax is over dim ", d, " of ", rank,
               "; tt-metal's sharded softmax program runs over the last dim only");
  // Whole rows per shard ("shard width must equal to input tensor shape[3]"): each core
  // reduces its rows alone, so a shard narrower than the (tile-padded) row is refused.
  int64_t row = view_2d(in.shape, in.layout).cols;
  if (in.shard.shape[1] != row)
    return str("operand '", in.name, "' (", shard_text(in), ") holds ", in.shard.shape[1],
               " of each row's ", row,
               " columns per shard; tt-metal's sharded softmax needs whole rows per shard "
               "(\"shard width must equal to input tensor shape[3]\")");
  // One shard per core of the program's grid ("number of shards must equal to number of
  // cores"): tt-metal counts M * K / (block_h * block_w tiles), rounding down, so a partial last
  // shard or a core without a shard refuses the launch.
  int64_t rows = view_2d(in.shape, in.layout).rows;
  int64_t shards = rows * row / (in.shard.shape[0] * in.shard.shape[1]);
  if (shards != static_cast<int64_t>(in.shard.cores()))
    return str("operand '", in.name, "' (", shard_text(in), ") has ", rows, " rows in shards of ",
               in.shard.shape[0], ": ", shards, " whole shards on ", in.shard.cores(),
               " cores; tt-metal's sharded softmax needs one shard per core (\"number of shards "
               "must equal to number of cores\")");
  if (out.buffer != in.buffer || out.memory != in.memory || !(out.shard == in.shard) ||
      out.dtype != in.dtype)
    return str("result '", out.name, "' is not placed like operand '", in.name, "' (",
               shard_text(in),
               "); tt-metal's sharded softmax runs in place (\"Operation must be inplace for "
               "sharded multi-core program config\")");
  return {};
}

// tt-metal: ttnn/cpp/ttnn/operations/normalization/layernorm/device/layernorm_device_operation.cpp
// (validate_on_program_cache_miss, LayerNormShardedMultiCoreProgramConfig branch). ttnn's
// layer_norm and rms_norm derive that config from a sharded input's shard spec
// (create_program_config: block_h and block_w are the shard's sides in tiles), and the validation
// then wants the shards to be the even split of the tensor over the shard grid: with one row of
// shards (M == block_h), block_w = ceil(K tiles / cores); otherwise, counting cores from the
// origin to the grid's bounding box's far corner, block_w = ceil(K tiles / columns) and
// block_h = floor(M tiles / rows) (columns and rows swap for a column-major grid).
std::string norm_blocks_rule(const TensorPlacement& in) {
  View2D v = view_2d(in.shape, in.layout);
  int64_t mt = v.rows / kTileH, kt = v.cols / kTileW;
  int64_t block_h = in.shard.shape[0] / kTileH, block_w = in.shard.shape[1] / kTileW;
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  if (v.rows == in.shard.shape[0]) {
    int64_t cores = in.shard.cores();
    if (block_w != ceil_div(kt, cores))
      return str("operand '", in.name, "' (", shard_text(in), ") has shards ", block_w,
                 " tiles wide for ", kt, " tiles over ", cores,
                 " cores; tt-metal's sharded norm: "
                 "\"block_w (",
                 block_w, ") must equal to K (in tiles) / num_cores (", ceil_div(kt, cores), ")\"");
    return {};
  }
  int x1 = 0, y1 = 0;
  for (int i = 0; i < in.shard.range_count(); ++i) {
    x1 = std::max<int>(x1, in.shard.range(i).x1);
    y1 = std::max<int>(y1, in.shard.range(i).y1);
  }
  bool row_wise = in.shard.orientation == ShardOrientation::row_major;
  int64_t across = row_wise ? x1 + 1 : y1 + 1, down = row_wise ? y1 + 1 : x1 + 1;
  if (block_w != ceil_div(kt, across))
    return str("operand '", in.name, "' (", shard_text(in), ") has shards ", block_w,
               " tiles wide for ", kt, " tiles over ", across,
               row_wise ? " core columns" : " core rows", "; tt-metal's sharded norm: \"block_w (",
               block_w, ") must equal to K (in tiles) / ",
               row_wise ? "num_cores_c (" : "num_cores_r (", ceil_div(kt, across), ")\"");
  if (block_h != mt / down)
    return str("operand '", in.name, "' (", shard_text(in), ") has shards ", block_h,
               " tiles high for ", mt, " tiles over ", down,
               row_wise ? " core rows" : " core columns", "; tt-metal's sharded norm: \"block_h (",
               block_h, ") must equal to M (in tiles) / ",
               row_wise ? "num_cores_r (" : "num_cores_c (", mt / down, ")\"");
  return {};
}

// tt-metal: ttnn/cpp/ttnn/operations/normalization/layernorm/device/layernorm_device_operation.cpp
// (validate_on_program_cache_miss; RMS norm is the same device operation).
std::string norm_rule(const OpLaunch& op) {
  const TensorPlacement& in = *op.operands[0];
  const TensorPlacement& out = *op.results[0];
  if (std::string e = row_op_dtype_rule(in); !e.empty()) return e;
  // The scale (gamma) and shift (beta) operands are read as f32 or bf16 only.
  for (size_t i = 1; i < op.operands.size() && i < 3; ++i) {
    const TensorPlacement& p = *op.operands[i];
    if (p.dtype == DType::f32 || p.dtype == DType::bf16) continue;
    return str(i == 1 ? "weight" : "bias", " '", p.name, "' is ", dtype_name(p.dtype),
               i == 1 ? "; tt-metal: \"Gamma tensor dtype must be FLOAT32 or BFLOAT16\""
                      : "; tt-metal: \"Beta tensor must be FLOAT32 or BFLOAT16\"");
  }
  if (!sharded(in)) return {};
  if (in.memory == MemLayout::height_sharded)
    return str("operand '", in.name,
               "' is height_sharded; tt-metal: \"Height sharded inputs are not supported.\"");
  if (!sharded(out) || out.memory == MemLayout::height_sharded)
    return str("operand '", in.name, "' is ", memory_name(in.memory), " but result '", out.name,
               "' is ", memory_name(out.memory),
               "; tt-metal: \"Sharded inputs require sharded outputs.\" (width or block sharded)");
  if (out.memory != in.memory)
    return str("operand '", in.name, "' is ", memory_name(in.memory), " but result '", out.name,
               "' is ", memory_name(out.memory),
               "; tt-metal: \"Input and output memory layouts must match\"");
  return norm_blocks_rule(in);
}

// The collective launch rules (collective_launch_rule) on the launch's first operand.
std::string collective_rule(const OpLaunch& op) {
  const TensorPlacement& in = *op.operands[0];
  return collective_launch_rule(op.kind, in.name, in.shape, op.config);
}

// tt-metal: ttnn/cpp/ttnn/operations/pool/generic/generic_pools.cpp (ttnn's pool2d, which
// shards an interleaved input itself and takes a sharded one as it is, row-major only) and
// device/pool_op.cpp (validate_pool2d: a bf16 input; the channels split evenly over the channel
// cores of a width- or block-sharded input). Its row-major-input rule is met by ttnn's pool2d
// itself (docs/hardware-rules.md).
std::string pool_rule(const OpLaunch& op) {
  if (op.kind != OpKind::max_pool2d && op.kind != OpKind::avg_pool2d) return {};
  const TensorPlacement& in = *op.operands[0];
  if (in.dtype != DType::bf16)
    return str("operand '", in.name, "' is ", dtype_name(in.dtype),
               "; tt-metal's pool2d: \"Only BFLOAT16 supported for now\"");
  if (!sharded(in)) return {};
  if (in.shard.orientation != ShardOrientation::row_major)
    return str("operand '", in.name, "' (", shard_text(in),
               "); tt-metal's pool2d: \"Only row major orientation is supported.\"");
  if (in.memory == MemLayout::width_sharded || in.memory == MemLayout::block_sharded) {
    int64_t c = view_2d(in.shape, in.layout).cols;
    const CoreRange& g = in.shard.grid;
    int64_t cores_c = in.memory == MemLayout::width_sharded ? in.shard.cores() : g.x1 - g.x0 + 1;
    if (c % cores_c != 0)
      return str("operand '", in.name, "' (", shard_text(in), ") splits ", c, " channels over ",
                 cores_c,
                 " cores; tt-metal's pool2d: \"For width and block sharding, input "
                 "channels (",
                 c, ") should be divisible by num_shards (", cores_c, ")\"");
  }
  return {};
}

// tt-metal: ttnn/cpp/ttnn/operations/data_movement/concat/device/concat_device_operation.cpp
// (validate_on_program_cache_miss; uses_zero_copy_sharded_factory marks the L1-sharded path).
std::string concat_rule(const OpLaunch& op) {
  const TensorPlacement& first = *op.operands[0];
  const TensorPlacement& out = *op.results[0];
  for (const TensorPlacement* t : op.operands) {
    if (t->dtype != first.dtype)
      return str("operands '", first.name, "' (", dtype_name(first.dtype), ") and '", t->name,
                 "' (", dtype_name(t->dtype),
                 "); tt-metal: \"All Tensors should have same dtypes.\"");
    if (sharded(*t) != sharded(first))
      return str("operands '", first.name, "' (", memory_name(first.memory), ") and '", t->name,
                 "' (", memory_name(t->memory),
                 "); tt-metal: \"All tensors must be sharded or all must be interleaved\"");
    if (!sharded(first)) continue;
    if (!same_grid(t->shard, first.shard))
      return str("operands '", first.name, "' (", shard_text(first), ") and '", t->name, "' (",
                 shard_text(*t), "); tt-metal: \"Sharded tensors must have the same grid.\"");
    if (t->memory != first.memory)
      return str("operands '", first.name, "' (", shard_text(first), ") and '", t->name, "' (",
                 shard_text(*t),
                 "); tt-metal: \"Sharded tensors must have the same memory layout.\"");
    if (t->shard.orientation != first.shard.orientation)
      return str("operands '", first.name, "' (", shard_text(first), ") and '", t->name, "' (",
                 shard_text(*t),
                 "); tt-metal: \"Sharded tensors must have the same shard orientation.\"");
  }
  if (out.dtype != first.dtype)
    return str("result '", out.name, "' is ", dtype_name(out.dtype), " but the operands are ",
               dtype_name(first.dtype), "; tt-metal's concat gives its operands' dtype");
  // L1-sharded operands go to the zero-copy sharded programs (DRAM shards on either side go to
  // the generic one, which takes any layout).
  bool zero_copy = sharded(first) && first.buffer == BufferType::l1 &&
                   !(sharded(out) && out.buffer == BufferType::dram);
  if (!zero_copy) return {};
  if (out.memory != first.memory)
    return str("operands are ", memory_name(first.memory), " but result '", out.name, "' is ",
               memory_name(out.memory),
               "; tt-metal: \"Sharded output and inputs must have the same memory layout.\"");
  if (!same_grid(out.shard, first.shard))
    return str("result '", out.name, "' (", shard_text(out), ") and operand '", first.name, "' (",
               shard_text(first),
               "); tt-metal: \"Sharded output and inputs must have the same grid.\"");
  if (out.shard.orientation != first.shard.orientation)
    return str("result '", out.name, "' (", shard_text(out), ") and operand '", first.name, "' (",
               shard_text(first),
               "); tt-metal: \"Sharded output and inputs must have the same shard orientation.\"");
  int64_t rank = static_cast<int64_t>(first.shape.size());
  int64_t axis = op.config.axis < 0 ? op.config.axis + rank : op.config.axis;
  if (axis == rank - 1 && first.memory == MemLayout::width_sharded)
    return str("a concat along the last dim of ", memory_name(first.memory),
               " operands; tt-metal: \"Only support width concat on height-sharded or "
               "block-sharded tensors.\"");
  if (axis == rank - 2 && first.memory == MemLayout::height_sharded)
    return str("a concat along dim ", axis, " of ", memory_name(first.memory),
               " operands; tt-metal: \"Only support height concat on width-sharded or "
               "block-sharded tensors.\"");
  if (axis != rank - 1 && axis != rank - 2)
    return str("a concat along dim ", axis, " of ", rank,
               " of sharded operands; tt-metal: \"Only width or height concat on sharded "
               "tensors\"");
  return {};
}

// tt-metal: ttnn/cpp/ttnn/operations/data_movement/permute/device/permute_device_operation.cpp
// and slice/device/slice_device_operation.cpp (validate_on_program_cache_miss and
// compute_output_specs, which give the result the input's dtype); concat as above.
std::string shape_rule(const OpLaunch& op) {
  if (op.kind == OpKind::concat) return concat_rule(op);
  const TensorPlacement& in = *op.operands[0];
  const TensorPlacement& out = *op.results[0];
  if (op.kind != OpKind::permute && op.kind != OpKind::slice) return {};
  if (op.kind == OpKind::permute && sharded(in))
    return str("operand '", in.name, "' is ", memory_name(in.memory),
               "; tt-metal: \"Permute operation does not support sharded input tensor\"");
  if (out.dtype != in.dtype)
    return str("result '", out.name, "' is ", dtype_name(out.dtype), " but operand '", in.name,
               "' is ", dtype_name(in.dtype), "; tt-metal's ", op_name(op.kind),
               " gives its input's dtype");
  return {};
}

}  // namespace

namespace {

// tt-metal: ttnn/cpp/ttnn/operations/experimental/ccl/all_to_all_async_generic/device/
// all_to_all_async_generic_device_operation.cpp (validate_on_program_cache_miss), the all_to_all
// that takes a cluster_axis and any rank: in_dim is meshplan's concat_dim, out_dim its split_dim.
// Tiled tensors pad only the second-last dim (to a multiple of 16) and not the last.
std::string all_to_all_rule(std::string_view name, std::span<const int64_t> shape,
                            const OpConfig& config) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int n = collective_group_size(config);
  if (n <= 1)
    return str("cluster_axis ", int{config.cluster_axis}, " of the ", int{config.mesh_rows}, "x",
               int{config.mesh_cols}, " mesh groups ", n,
               " chip; tt-metal: \"all_to_all_async is a collective operation and requires more "
               "than 1 device\"");
  auto norm = [&](int64_t d) { return d < 0 ? d + rank : d; };
  const int64_t split = norm(config.split_dim), concat = norm(config.concat_dim);
  if (split < 0 || split >= rank || concat < 0 || concat >= rank)
    return str("operand '", name, "' of rank ", rank, " has no split_dim ", config.split_dim,
               " or concat_dim ", config.concat_dim, "; tt-metal: \"in_dim out of range\"");
  if (shape[split] % n != 0)
    return str("operand '", name, "' splits dim ", split, " (", shape[split], ") over ", n,
               " chips; tt-metal: \"AllToAllAsync: input tensor dimension ", shape[split],
               " must be divisible by num_devices ", n, "\"");
  std::vector<int64_t> out(shape.begin(), shape.end());
  out[split] /= n;
  out[concat] *= n;
  struct Check {
    int64_t dim, size, multiple;
    const char* side;
  };
  const Check checks[] = {{concat, shape[concat], 16, "operand"},
                          {split, out[split], 16, "result"},
                          {concat, shape[concat], 32, "operand"},
                          {split, out[split], 32, "result"}};
  for (size_t k = 0; k < 4; ++k) {
    const Check& c = checks[k];
    const bool height = k < 2;
    if (c.dim != (height ? rank - 2 : rank - 1) || c.size % c.multiple == 0) continue;
    return str("all_to_all's ", c.side, " of '", name, "' has ", c.size, " at dim ", c.dim,
               " (the ", height ? "second-last" : "last", "); tt-metal: \"", c.dim,
               height ? " dimension support only 0 or 16 padding, so must be divisible by 16\""
                      : " dimension doesn't support padding, so must be divisible by 32\"");
  }
  return {};
}

}  // namespace

// tt-metal: ttnn/cpp/ttnn/operations/ccl/all_gather/device/all_gather_device_operation.cpp and
// ttnn/cpp/ttnn/operations/experimental/ccl/reduce_scatter_common/reduce_scatter_validate_utils.cpp
// (reduce_scatter_common_validates, which ttnn's reduce_scatter device operation calls). Both
// keep the dtype and take interleaved tensors here (checked in OpModel::validate); aligned pages
// hold by construction (every tile size is a multiple of the DRAM and L1 alignments).
// all_reduce: ttnn/cpp/ttnn/operations/ccl/all_reduce/all_reduce.cpp passes ReduceType::Sum to
// experimental/ccl/all_reduce_async, whose finding_scatter_dim wants rank 2 or more.
// collective_permute: ttnn/cpp/ttnn/operations/point_to_point/device/host/
// point_to_point_device_op.cpp (PointToPointOp::validate), one launch per pair.
// all_to_all: all_to_all_rule above.
std::string collective_launch_rule(OpKind kind, std::string_view name,
                                   std::span<const int64_t> shape, const OpConfig& config) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (kind == OpKind::all_reduce) {
    if (rank < 2)
      return str("operand '", name, "' has rank ", rank,
                 "; tt-metal's all_reduce: \"Expected input tensor to be of at least rank 2\"");
    if (config.reduce != ReduceOp::sum)
      return str("all_reduce by ", reduce_name(config.reduce),
                 "; tt-metal's all_reduce reduces by sum only (ttnn::all_reduce passes "
                 "ReduceType::Sum)");
    return {};
  }
  if (kind == OpKind::collective_permute) {
    for (auto [from, to] : permute_pairs(config))
      if (from == to)
        return str("pair (", from, ", ", to, ") sends chip ", from,
                   " to itself; tt-metal's point_to_point: \"Can't send/receive to the same "
                   "device\"");
    return {};
  }
  if (kind == OpKind::all_to_all) return all_to_all_rule(name, shape, config);
  if (kind != OpKind::all_gather && kind != OpKind::reduce_scatter) return {};
  bool gather = kind == OpKind::all_gather;
  if (rank < 2)
    return str("operand '", name, "' has rank ", rank, "; tt-metal: ",
               gather ? "\"AllGather requires tensor of rank 2 or greater\""
                      : "\"reduce_scatter currently supports rank 2 tensors at minimum\"");
  int n = collective_group_size(config);
  if (gather && n <= 1)
    return str("cluster_axis ", int{config.cluster_axis}, " of the ", int{config.mesh_rows}, "x",
               int{config.mesh_cols}, " mesh groups ", n,
               " chip; tt-metal: \"all_gather op will only work for num_devices > 1\"");
  if (gather) return {};
  int64_t d = config.collective_dim < 0 ? config.collective_dim + rank : config.collective_dim;
  if (d >= rank - 2 && d < rank && n > 0) {
    // The last two dims are scattered in whole tiles: the tile-padded size in tiles splits evenly.
    int64_t tiles = (shape[d] + kTileW - 1) / kTileW;
    if (tiles % n != 0)
      return str("operand '", name, "' scatters dim ", d, " (", shape[d], ", ", tiles,
                 " tiles) over ", n, " chips; tt-metal: \"Number of tiles at dimension ", d,
                 " must be divisible by ring_size\"");
  }
  return {};
}

std::string layout_rule(const OpLaunch& op) {
  switch (op_family(op.kind)) {
    case OpFamily::eltwise_binary:
    case OpFamily::compare:
      return binary_rule(op);
    case OpFamily::conv:
      return op.kind == OpKind::conv2d ? conv_rule(op) : std::string();
    case OpFamily::softmax:
      return softmax_rule(op);
    case OpFamily::norm:
      return norm_rule(op);
    case OpFamily::collective:
      return collective_rule(op);
    case OpFamily::pool:
      return pool_rule(op);
    case OpFamily::shape:
      return shape_rule(op);
    case OpFamily::matmul:
    case OpFamily::eltwise_unary:
    case OpFamily::select:
    case OpFamily::reduction:
    case OpFamily::memory:
    case OpFamily::gather:
    case OpFamily::convert:
      return {};
  }
  return {};
}

}  // namespace meshplan::device
