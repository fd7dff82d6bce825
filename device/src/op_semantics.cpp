// Shape rules and host reference implementations of the ops in ops.def: operand checks, then
// dispatch on the op's family to op_semantics_<family>.cpp.
#include "meshplan/device/op_semantics.hpp"

#include <algorithm>
#include <sstream>

#include "meshplan/device/collective_ops.hpp"
#include "op_semantics_ext.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

std::unexpected<Error> not_in_family(OpKind kind, std::string_view family) {
  return fail(ErrorCode::internal, op_name(kind), " reached the ", family,
              " rules, which do not handle it");
}

Result<Shape> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t x = d < a.size() ? a[a.size() - 1 - d] : 1;
    int64_t y = d < b.size() ? b[b.size() - 1 - d] : 1;
    if (x != y && x != 1 && y != 1)
      return fail(ErrorCode::invalid_argument, "shapes ", shape_text(a), " and ", shape_text(b),
                  " do not broadcast");
    out[out.size() - 1 - d] = std::max(x, y);
  }
  return out;
}

Result<DType> infer_dtype(OpKind kind, std::span<const DType> in, const OpConfig& config) {
  if (in.empty()) return fail(ErrorCode::invalid_argument, op_name(kind), " has no operands");
  if (kind == OpKind::embedding) {
    if (in.size() != 2)
      return fail(ErrorCode::invalid_argument, "embedding takes 2 operands, got ", in.size());
    if (in[0] != DType::i32 && in[0] != DType::u32)
      return fail(ErrorCode::invalid_argument, "embedding indices must be i32 or u32, got ",
                  dtype_name(in[0]));
    return in[1];
  }
  if (kind == OpKind::where) {
    // The condition may have any dtype (nonzero = true); the values share the result's.
    if (in.size() != 3)
      return fail(ErrorCode::invalid_argument, "where takes 3 operands, got ", in.size());
    if (in[1] != in[2])
      return fail(ErrorCode::invalid_argument, "dtype mismatch: where's true values are ",
                  dtype_name(in[1]), ", its false values ", dtype_name(in[2]));
    return in[1];
  }
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i] != in[0])
      return fail(ErrorCode::invalid_argument, "dtype mismatch: operand 0 is ", dtype_name(in[0]),
                  ", operand ", i, " is ", dtype_name(in[i]));
  return kind == OpKind::typecast || kind == OpKind::bitcast ? config.dtype : in[0];
}

Result<Shape> infer_shape(OpKind kind, std::span<const std::span<const int64_t>> operands,
                          const OpConfig& config) {
  const OpInfo& info = op_info(kind);
  if (!operand_count_ok(kind, operands.size()))
    return fail(ErrorCode::invalid_argument, info.name, " takes ", operand_count_text(kind),
                " operand(s), got ", operands.size());
  for (auto s : operands)
    if (s.size() > static_cast<size_t>(kMaxRank))
      return fail(ErrorCode::invalid_argument, "operand ", shape_text(s), " has rank ", s.size(),
                  ", more than the ", kMaxRank, " dims ops support");
  for (auto s : operands)
    for (int64_t d : s)
      if (d <= 0)
        return fail(ErrorCode::invalid_argument, "dimension ", d, " in ", shape_text(s),
                    " is not positive");
  switch (op_family(kind)) {
    case OpFamily::matmul:
      return shape_matmul(kind, operands, config);
    case OpFamily::eltwise_unary:
    case OpFamily::eltwise_binary:
    case OpFamily::compare:
    case OpFamily::select:
      return shape_eltwise(kind, operands, config);
    case OpFamily::reduction:
    case OpFamily::softmax:
    case OpFamily::norm:
      return shape_reduce(kind, operands, config);
    case OpFamily::memory:
    case OpFamily::shape:
    case OpFamily::gather:
    case OpFamily::convert:
      return shape_movement(kind, operands, config);
    case OpFamily::conv:
    case OpFamily::pool:
      return shape_conv(kind, operands, config);
    case OpFamily::collective:
      return infer_collective_shape(kind, operands, config);
  }
  return fail(ErrorCode::internal, "no shape rule for op kind ", static_cast<int>(kind));
}

Status reference(OpKind kind, std::span<const HostView> in, const OpConfig& config,
                 std::span<const int64_t> out_shape, std::span<float> out) {
  if (static_cast<int64_t>(out.size()) != volume(out_shape))
    return fail(ErrorCode::invalid_argument, "reference ", op_name(kind), ": result buffer holds ",
                out.size(), " values, shape ", shape_text(out_shape), " needs ", volume(out_shape));
  if (out_shape.size() > static_cast<size_t>(kMaxRank))
    return fail(ErrorCode::invalid_argument, op_name(kind), ": result rank ", out_shape.size(),
                " exceeds ", kMaxRank);
  switch (op_family(kind)) {
    case OpFamily::matmul:
      return reference_matmul(kind, in, config, out_shape, out);
    case OpFamily::eltwise_unary:
    case OpFamily::eltwise_binary:
    case OpFamily::compare:
    case OpFamily::select:
      return reference_eltwise(kind, in, config, out_shape, out);
    case OpFamily::reduction:
    case OpFamily::softmax:
    case OpFamily::norm:
      return reference_reduce(kind, in, config, out_shape, out);
    case OpFamily::memory:
    case OpFamily::shape:
    case OpFamily::gather:
    case OpFamily::convert:
      return reference_movement(kind, in, config, out_shape, out);
    case OpFamily::conv:
    case OpFamily::pool:
      return reference_conv(kind, in, config, out_shape, out);
    case OpFamily::collective:
      return fail(ErrorCode::invalid_argument, op_name(kind),
                  " is a mesh op: its reference needs every chip's operand (a mesh reference)");
  }
  return fail(ErrorCode::internal, "no reference for op kind ", static_cast<int>(kind));
}

}  // namespace meshplan::device
