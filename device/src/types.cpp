// Names and sizes of the shared enums.
#include "meshplan/device/types.hpp"

#include <array>

namespace meshplan::device {

namespace {
static_assert(
    [] {
      for (const OpInfo& i : kOpInfos)
        if (i.min_operands < 1 || i.max_operands < i.min_operands || i.max_operands > kMaxOperands)
          return false;
      return true;
    }(),
    "ops.def: every op takes 1 to kMaxOperands operands, min <= max");
}  // namespace

std::string_view op_name(OpKind kind) {
  return op_info(kind).name;
}

std::optional<OpKind> op_from_stablehlo(std::string_view name) {
  if (name.empty()) return std::nullopt;
  for (int i = 0; i < kNumOpKinds; ++i)
    if (kOpInfos[i].stablehlo == name) return static_cast<OpKind>(i);
  return std::nullopt;
}

bool operand_count_ok(OpKind kind, size_t count) {
  OperandRange r = operand_range(kind);
  return count >= static_cast<size_t>(r.min) && count <= static_cast<size_t>(r.max);
}

std::string operand_count_text(OpKind kind) {
  OperandRange r = operand_range(kind);
  return r.min == r.max ? std::to_string(r.min)
                        : std::to_string(r.min) + " to " + std::to_string(r.max);
}

namespace {
constexpr std::array<std::string_view, 6> kActivationNames = {"none", "relu",    "gelu",
                                                              "silu", "sigmoid", "tanh"};
}

std::string_view activation_name(Activation activation) {
  return kActivationNames[static_cast<size_t>(activation)];
}

std::optional<Activation> activation_from_name(std::string_view name) {
  for (size_t i = 0; i < kActivationNames.size(); ++i)
    if (kActivationNames[i] == name) return static_cast<Activation>(i);
  return std::nullopt;
}

std::optional<OpKind> op_from_name(std::string_view name) {
  for (int i = 0; i < kNumOpKinds; ++i)
    if (kOpInfos[i].name == name) return static_cast<OpKind>(i);
  return std::nullopt;
}

namespace {
constexpr std::array<std::string_view, 6> kDTypeNames = {"f32", "bf16", "bf8b",
                                                         "i32", "u32",  "bf4b"};
}

std::string_view dtype_name(DType dtype) {
  return kDTypeNames[static_cast<size_t>(dtype)];
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (size_t i = 0; i < kDTypeNames.size(); ++i)
    if (kDTypeNames[i] == name) return static_cast<DType>(i);
  return std::nullopt;
}

std::string_view buffer_name(BufferType buffer) {
  return buffer == BufferType::dram ? "dram" : "l1";
}

std::string_view memory_name(MemLayout memory) {
  switch (memory) {
    case MemLayout::interleaved:
      return "interleaved";
    case MemLayout::height_sharded:
      return "height_sharded";
    case MemLayout::width_sharded:
      return "width_sharded";
    case MemLayout::block_sharded:
      return "block_sharded";
  }
  return "?";
}

std::string_view fidelity_name(MathFidelity fidelity) {
  constexpr std::array<std::string_view, 4> kNames = {"lofi", "hifi2", "hifi3", "hifi4"};
  return kNames[static_cast<size_t>(fidelity)];
}

std::string_view program_name(MatmulProgram program) {
  switch (program) {
    case MatmulProgram::none:
      return "none";
    case MatmulProgram::mcast_1d:
      return "mcast_1d";
    case MatmulProgram::mcast_2d:
      return "mcast_2d";
  }
  return "?";
}

uint32_t tile_bytes(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::i32:
    case DType::u32:
      return 4096;
    case DType::bf16:
      return 2048;
    case DType::bf8b:
      return 1088;
    case DType::bf4b:
      return 576;
  }
  return 0;
}

uint32_t element_bytes(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::i32:
    case DType::u32:
      return 4;
    case DType::bf16:
      return 2;
    case DType::bf8b:
    case DType::bf4b:
      return 0;
  }
  return 0;
}

std::string_view reduce_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "?";
}

std::optional<ReduceOp> reduce_from_name(std::string_view name) {
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min})
    if (reduce_name(op) == name) return op;
  return std::nullopt;
}

int64_t volume(std::span<const int64_t> shape) {
  int64_t v = 1;
  for (int64_t d : shape) v *= d;
  return v;
}

}  // namespace meshplan::device
