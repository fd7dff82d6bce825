// Element types, memory kinds, op kinds and op configs shared by the planner, device and runtime.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace meshplan::device {

/// Values match fb::DType.
/// Append only: plans store the value. bf4b (bfloat4_b) is the 4-bit-mantissa block float.
enum class DType : uint8_t { f32 = 0, bf16 = 1, bf8b = 2, i32 = 3, u32 = 4, bf4b = 5 };
/// Values match fb::BufferType.
enum class BufferType : uint8_t { dram = 0, l1 = 1 };
/// Values match fb::MemLayout.
enum class MemLayout : uint8_t {
  interleaved = 0,
  height_sharded = 1,
  width_sharded = 2,
  block_sharded = 3
};
/// Values match fb::TileLayout.
enum class TileLayout : uint8_t { tile = 0, row_major = 1 };
/// Values match fb::Activation.
enum class Activation : uint8_t { none = 0, relu = 1, gelu = 2, silu = 3, sigmoid = 4, tanh = 5 };
/// Values match fb::MathFidelity.
enum class MathFidelity : uint8_t { lofi = 0, hifi2 = 1, hifi3 = 2, hifi4 = 3 };
/// How reducing collectives combine values. Values match fb::ReduceOp.
enum class ReduceOp : uint8_t { sum = 0, max = 1, min = 2 };
std::string_view reduce_name(ReduceOp op);
std::optional<ReduceOp> reduce_from_name(std::string_view name);

/// Op kinds, generated from ops.def; values match fb::OpKind.
enum class OpKind : uint16_t {
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) name,
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
};
inline constexpr int kNumOpKinds = 0
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) +1
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
    ;

/// Most operands or results one op may have (the runtime's fixed launch arrays); verify_plan
/// rejects plans that exceed it.
inline constexpr int kMaxOperands = 8;
/// Most dims of a tensor that op attributes (perm, slice bounds, reshape target) can describe.
inline constexpr int kMaxRank = 8;
/// Most chips a mesh op may name in its attributes (collective_permute's pairs).
inline constexpr int kMaxMeshChips = 64;

/// What kind of computation an op is (ops.def's family column): selects its shape rule,
/// reference, kernel and sharding rule.
enum class OpFamily : uint8_t {
  matmul,          ///< matmul, linear
  eltwise_unary,   ///< result element i from operand element i alone
  eltwise_binary,  ///< two operands, numpy broadcasting
  compare,         ///< eq .. ge: 1.0 where the relation holds, else 0.0
  select,          ///< where(cond, a, b)
  reduction,       ///< reduce_* over dims
  softmax,
  norm,        ///< layer_norm, rms_norm
  memory,      ///< to_memory_config
  shape,       ///< reshape, permute, concat, slice
  gather,      ///< embedding
  convert,     ///< typecast
  conv,        ///< conv2d
  pool,        ///< max/avg/global_avg pools
  collective,  ///< mesh ops (collective_ops.hpp)
};
/// How the timing model and the emulator cost an op (ops.def's timing column).
enum class TimingClass : uint8_t {
  matmul,         ///< tile matmuls
  eltwise,        ///< one cheap FPU/SFPU pass per tile (add, relu, compares, casts)
  sfpu,           ///< transcendental SFPU math (~8x an add per value in the emulator)
  data_movement,  ///< moves bytes only
  rows_1pass,     ///< reads every operand tile once (reductions)
  rows_2pass,     ///< two passes over each row (rms_norm)
  rows_3pass,     ///< three passes over each row (softmax, layer_norm)
  conv,           ///< im2col tile matmuls
  pool,           ///< window reads per output
  collective,     ///< mesh links (collective_timing.hpp)
};
/// Op flags (ops.def's flags column), bits.
inline constexpr uint32_t kActivation = 1u << 0;  ///< takes a fused "activation" attribute

/// Static facts about an op kind: its ops.def row.
struct OpInfo {
  std::string_view name;
  int operands;  ///< -1: variable; see operand_range().
  int results;
  int min_operands, max_operands;
  OpFamily family;
  TimingClass timing;
  uint32_t flags;
  std::string_view stablehlo;  ///< The StableHLO op lowered one-to-one to this op, or "".
};
inline constexpr OpInfo kOpInfos[kNumOpKinds] = {
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar)                         \
  {#name, (lo) == (hi) ? (lo) : -1, 1, lo, hi, OpFamily::family, TimingClass::timing, (flags), \
   shlo},
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
};
constexpr const OpInfo& op_info(OpKind kind) {
  return kOpInfos[static_cast<size_t>(kind)];
}
constexpr OpFamily op_family(OpKind kind) {
  return op_info(kind).family;
}
constexpr TimingClass timing_class(OpKind kind) {
  return op_info(kind).timing;
}
constexpr bool has_flag(OpKind kind, uint32_t flag) {
  return (op_info(kind).flags & flag) != 0;
}
/// Elementwise unary ops: one operand, result element i computed from operand element i alone
/// (relu .. abs, clamp). The one list kernels, references and planner passes share.
constexpr bool is_unary_eltwise(OpKind kind) {
  return op_family(kind) == OpFamily::eltwise_unary;
}
/// Elementwise binary math ops (add .. minimum), not the comparisons.
constexpr bool is_binary_eltwise(OpKind kind) {
  return op_family(kind) == OpFamily::eltwise_binary;
}
/// The comparisons eq .. ge.
constexpr bool is_comparison(OpKind kind) {
  return op_family(kind) == OpFamily::compare;
}
/// Pointwise ops of any arity (unary, binary, compare, select): result element i from the
/// operand elements at i after broadcasting.
constexpr bool is_pointwise(OpKind kind) {
  OpFamily f = op_family(kind);
  return f == OpFamily::eltwise_unary || f == OpFamily::eltwise_binary || f == OpFamily::compare ||
         f == OpFamily::select;
}
constexpr bool is_matmul_family(OpKind kind) {
  return op_family(kind) == OpFamily::matmul;
}
/// The op of `kind` whose ops.def row names StableHLO op `name` (with its dialect prefix).
std::optional<OpKind> op_from_stablehlo(std::string_view name);
/// Fewest and most operands `kind` takes.
struct OperandRange {
  int min, max;
};
constexpr OperandRange operand_range(OpKind kind) {
  return {op_info(kind).min_operands, op_info(kind).max_operands};
}
/// True if `kind` accepts `count` operands.
bool operand_count_ok(OpKind kind, size_t count);
/// "2", "1 to 3" or "1 to 8": the operand counts `kind` takes, for messages.
std::string operand_count_text(OpKind kind);
std::string_view activation_name(Activation activation);
std::optional<Activation> activation_from_name(std::string_view name);
std::string_view op_name(OpKind kind);
std::optional<OpKind> op_from_name(std::string_view name);

std::string_view dtype_name(DType dtype);
std::optional<DType> dtype_from_name(std::string_view name);
std::string_view buffer_name(BufferType buffer);
std::string_view memory_name(MemLayout memory);
std::string_view fidelity_name(MathFidelity fidelity);

inline constexpr int64_t kTileH = 32;
inline constexpr int64_t kTileW = 32;
inline constexpr int64_t kTileElems = kTileH * kTileW;

/// Bytes of one 32x32 tile in `dtype` (bf8b: 1024 mantissas + 64 shared exponents; bf4b: 1024
/// nibbles + 64 shared exponents).
uint32_t tile_bytes(DType dtype);
/// Bytes of one element in row-major layout; 0 for block formats (bf8b, bf4b), which must be tiled.
uint32_t element_bytes(DType dtype);

/// Matmul programs, after TTNN's program configs. Values match fb::MatmulProgram.
///  - none: the simple multi-core program; output tiles split in contiguous ranges over the grid.
///  - mcast_1d: a 1-D multicast program; with mcast_in0 the cores split N (in0 multicast to all;
///    in0 interleaved or width-sharded, output interleaved or width-sharded), otherwise they split
///    M (in1 multicast; in0 interleaved or height-sharded, output interleaved or height-sharded).
///  - mcast_2d: the 2-D multicast program; cores split M along y and N along x (swapped with
///    transpose_mcast); in0 and output interleaved or block-sharded.
enum class MatmulProgram : uint8_t { none = 0, mcast_1d = 1, mcast_2d = 2 };
std::string_view program_name(MatmulProgram program);

/// Per-op settings the planner chooses and the kernels obey.
struct OpConfig {
  // The members, their defaults and their documentation are the rows of op_config_fields.def.
#define MESHPLAN_CONFIG_SCALAR(name, type, init, fbs) type name = init;
#define MESHPLAN_CONFIG_LOCAL(name, type, init) type name = init;
#define MESHPLAN_CONFIG_LIST(name, type, count, sets_count, fbs) type name[kMaxRank] = {};
#define MESHPLAN_CONFIG_FIXED(name, type, n, fbs, ...) type name[n] = {__VA_ARGS__};
#define MESHPLAN_CONFIG_VECTOR(name, type, max, multiple, fbs) std::vector<type> name;
#define MESHPLAN_CONFIG_BOUND(name, type, init, fbs) type name = init;
#include "meshplan/device/op_config_fields.def"
};

/// Product of a shape's dims (1 for a scalar).
int64_t volume(std::span<const int64_t> shape);

}  // namespace meshplan::device
