// Shape rules and host reference implementations of the ops in ops.def.
#include "meshplan/device/op_semantics.hpp"

#include <algorithm>
#include <sstream>

#include "meshplan/device/collective_ops.hpp"
#include "op_semantics_ext.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

namespace {

std::string shape_str(std::span<const int64_t> s) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < s.size(); ++i) out << (i ? "x" : "") << s[i];
  out << "]";
  return out.str();
}

float activate(Activation a, float v) {
  return apply_activation(a, v);
}

struct MatmulDims {
  int64_t batch, m, k, n;
  bool b_batched;
};

Result<MatmulDims> matmul_dims(std::span<const int64_t> a, std::span<const int64_t> b,
                               const OpConfig& c, Shape* out) {
  if (a.size() < 2 || b.size() < 2)
    return fail(ErrorCode::invalid_argument, "matmul needs operands of rank >= 2, got ",
                shape_str(a), " and ", shape_str(b));
  int64_t am = a[a.size() - 2], ak = a[a.size() - 1];
  if (c.transpose_a) std::swap(am, ak);
  int64_t bk = b[b.size() - 2], bn = b[b.size() - 1];
  if (c.transpose_b) std::swap(bk, bn);
  if (ak != bk)
    return fail(ErrorCode::invalid_argument, "matmul contracting dims differ: ", shape_str(a),
                " x ", shape_str(b), " (K ", ak, " vs ", bk, ")");
  bool b_batched = b.size() > 2;
  if (b_batched && !std::equal(a.begin(), a.end() - 2, b.begin(), b.end() - 2))
    return fail(ErrorCode::invalid_argument, "matmul batch dims differ: ", shape_str(a), " x ",
                shape_str(b));
  if (out) {
    out->assign(a.begin(), a.end() - 2);
    out->push_back(am);
    out->push_back(bn);
  }
  return MatmulDims{volume(a.first(a.size() - 2)), am, ak, bn, b_batched};
}

// Index into a broadcast operand for a flat output index.
int64_t broadcast_index(int64_t flat, std::span<const int64_t> out, std::span<const int64_t> in) {
  int64_t idx = 0, stride = 1;
  for (size_t d = 0; d < out.size(); ++d) {
    size_t od = out.size() - 1 - d;
    int64_t coord = flat % out[od];
    flat /= out[od];
    if (d < in.size()) {
      size_t id = in.size() - 1 - d;
      if (in[id] != 1) idx += coord * stride;
      stride *= in[id];
    }
  }
  return idx;
}

}  // namespace

Result<Shape> broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t x = d < a.size() ? a[a.size() - 1 - d] : 1;
    int64_t y = d < b.size() ? b[b.size() - 1 - d] : 1;
    if (x != y && x != 1 && y != 1)
      return fail(ErrorCode::invalid_argument, "shapes ", shape_str(a), " and ", shape_str(b),
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
  return kind == OpKind::typecast ? config.dtype : in[0];
}

Result<Shape> infer_shape(OpKind kind, std::span<const std::span<const int64_t>> operands,
                          const OpConfig& config) {
  const OpInfo& info = op_info(kind);
  if (!operand_count_ok(kind, operands.size()))
    return fail(ErrorCode::invalid_argument, info.name, " takes ", operand_count_text(kind),
                " operand(s), got ", operands.size());
  for (auto s : operands)
    if (s.size() > static_cast<size_t>(kMaxRank))
      return fail(ErrorCode::invalid_argument, "operand ", shape_str(s), " has rank ", s.size(),
                  ", more than the ", kMaxRank, " dims ops support");
  for (auto s : operands)
    for (int64_t d : s)
      if (d <= 0)
        return fail(ErrorCode::invalid_argument, "dimension ", d, " in ", shape_str(s),
                    " is not positive");
  if (is_collective(kind)) return infer_collective_shape(kind, operands, config);
  switch (kind) {
    case OpKind::matmul: {
      Shape out;
      MESHPLAN_TRY(matmul_dims(operands[0], operands[1], config, &out));
      return out;
    }
    case OpKind::add:
      return broadcast_shapes(operands[0], operands[1]);
    case OpKind::relu:
    case OpKind::to_memory_config:
      return Shape(operands[0].begin(), operands[0].end());
    default:
      return infer_shape_ext(kind, operands, config);
  }
  return fail(ErrorCode::internal, "no shape rule for op kind ", static_cast<int>(kind));
}

Status reference(OpKind kind, std::span<const HostView> in, const OpConfig& config,
                 std::span<const int64_t> out_shape, std::span<float> out) {
  if (static_cast<int64_t>(out.size()) != volume(out_shape))
    return fail(ErrorCode::invalid_argument, "reference ", op_name(kind), ": result buffer holds ",
                out.size(), " values, shape ", shape_str(out_shape), " needs ", volume(out_shape));
  if (is_collective(kind))
    return fail(ErrorCode::invalid_argument, op_name(kind),
                " is a mesh op: its reference needs every chip's operand (a mesh reference)");
  switch (kind) {
    case OpKind::matmul: {
      MatmulDims d = MESHPLAN_TRY(matmul_dims(in[0].shape, in[1].shape, config, nullptr));
      for (int64_t bt = 0; bt < d.batch; ++bt) {
        const float* a = in[0].data.data() + bt * d.m * d.k;
        const float* b = in[1].data.data() + (d.b_batched ? bt * d.k * d.n : 0);
        float* c = out.data() + bt * d.m * d.n;
        for (int64_t i = 0; i < d.m; ++i)
          for (int64_t j = 0; j < d.n; ++j) {
            float acc = 0.0f;
            for (int64_t p = 0; p < d.k; ++p) {
              float av = config.transpose_a ? a[p * d.m + i] : a[i * d.k + p];
              float bv = config.transpose_b ? b[j * d.k + p] : b[p * d.n + j];
              acc += av * bv;
            }
            c[i * d.n + j] = activate(config.activation, acc);
          }
      }
      return {};
    }
    case OpKind::add: {
      int64_t n = volume(out_shape);
      for (int64_t i = 0; i < n; ++i)
        out[i] =
            activate(config.activation, in[0].data[broadcast_index(i, out_shape, in[0].shape)] +
                                            in[1].data[broadcast_index(i, out_shape, in[1].shape)]);
      return {};
    }
    case OpKind::relu: {
      for (size_t i = 0; i < out.size(); ++i) out[i] = std::max(in[0].data[i], 0.0f);
      return {};
    }
    case OpKind::to_memory_config: {
      std::copy(in[0].data.begin(), in[0].data.end(), out.begin());
      return {};
    }
    default:
      return reference_ext(kind, in, config, out_shape, out);
  }
  return fail(ErrorCode::internal, "no reference for op kind ", static_cast<int>(kind));
}

}  // namespace meshplan::device
