// Shape rules and host references of the pointwise families (eltwise_unary, eltwise_binary,
// compare, select): the scalar math comes from ops.def's scalar column (scalar_ops.hpp), the same
// functions the kernels run, applied here with plain loops over logical indices and numpy
// broadcasting, written independently of the tiled kernels they check.
#include "op_semantics_ext.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

Result<Shape> shape_eltwise(OpKind kind, Operands in, const OpConfig& c) {
  auto same = [&]() { return Shape(in[0].begin(), in[0].end()); };
  if (kind == OpKind::clamp && !(c.clamp_min <= c.clamp_max))  // Also rejects NaN bounds.
    return fail(ErrorCode::invalid_argument, "clamp min ", c.clamp_min, " is not <= max ",
                c.clamp_max, " (operand ", shape_text(in[0]), ")");
  switch (op_family(kind)) {
    case OpFamily::eltwise_unary:
      return same();
    case OpFamily::eltwise_binary:
    case OpFamily::compare:
      return broadcast_shapes(in[0], in[1]);
    case OpFamily::select: {
      auto ab = broadcast_shapes(in[1], in[2]);
      auto out = ab ? broadcast_shapes(in[0], *ab) : ab;
      if (!out)
        return fail(ErrorCode::invalid_argument, "condition ", shape_text(in[0]), ", true values ",
                    shape_text(in[1]), " and false values ", shape_text(in[2]),
                    " do not broadcast");
      return out;
    }
    case OpFamily::matmul:
    case OpFamily::reduction:
    case OpFamily::softmax:
    case OpFamily::norm:
    case OpFamily::memory:
    case OpFamily::shape:
    case OpFamily::gather:
    case OpFamily::convert:
    case OpFamily::conv:
    case OpFamily::pool:
    case OpFamily::collective:
      break;
  }
  return not_in_family(kind, "pointwise");
}

Status reference_eltwise(OpKind kind, std::span<const HostView> in, const OpConfig& c,
                         std::span<const int64_t> out_shape, std::span<float> out) {
  int64_t total = volume(out_shape);
  size_t out_rank = out_shape.size();
  int64_t idx[kMaxRank + 2] = {};
  switch (op_family(kind)) {
    case OpFamily::eltwise_unary:
      for (int64_t i = 0; i < total; ++i) out[i] = unary_value(kind, in[0].data[i], c);
      return {};
    case OpFamily::select:
      for (int64_t i = 0; i < total; ++i) {
        unravel(i, out_shape, idx);
        out[i] = where_value(broadcast_at(in[0], idx, out_rank), broadcast_at(in[1], idx, out_rank),
                             broadcast_at(in[2], idx, out_rank));
      }
      return {};
    case OpFamily::eltwise_binary:
    case OpFamily::compare:
      for (int64_t i = 0; i < total; ++i) {
        unravel(i, out_shape, idx);
        out[i] =
            apply_activation(c.activation, binary_value(kind, broadcast_at(in[0], idx, out_rank),
                                                        broadcast_at(in[1], idx, out_rank)));
      }
      return {};
    case OpFamily::matmul:
    case OpFamily::reduction:
    case OpFamily::softmax:
    case OpFamily::norm:
    case OpFamily::memory:
    case OpFamily::shape:
    case OpFamily::gather:
    case OpFamily::convert:
    case OpFamily::conv:
    case OpFamily::pool:
    case OpFamily::collective:
      break;
  }
  return not_in_family(kind, "pointwise");
}

}  // namespace meshplan::device
