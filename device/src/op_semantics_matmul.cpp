// Shape rule and host reference of the matmul family (matmul, linear): a plain triple loop in
// f32 with the fused activation, written independently of the tiled kernels.
#include <algorithm>

#include "op_semantics_ext.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

namespace {

struct MatmulDims {
  int64_t batch, m, k, n;
  bool b_batched;
};

Result<MatmulDims> matmul_dims(std::span<const int64_t> a, std::span<const int64_t> b,
                               const OpConfig& c, Shape* out) {
  if (a.size() < 2 || b.size() < 2)
    return fail(ErrorCode::invalid_argument, "matmul needs operands of rank >= 2, got ",
                shape_text(a), " and ", shape_text(b));
  int64_t am = a[a.size() - 2], ak = a[a.size() - 1];
  if (c.transpose_a) std::swap(am, ak);
  int64_t bk = b[b.size() - 2], bn = b[b.size() - 1];
  if (c.transpose_b) std::swap(bk, bn);
  if (ak != bk)
    return fail(ErrorCode::invalid_argument, "matmul contracting dims differ: ", shape_text(a),
                " x ", shape_text(b), " (K ", ak, " vs ", bk, ")");
  bool b_batched = b.size() > 2;
  if (b_batched && !std::equal(a.begin(), a.end() - 2, b.begin(), b.end() - 2))
    return fail(ErrorCode::invalid_argument, "matmul batch dims differ: ", shape_text(a), " x ",
                shape_text(b));
  if (out) {
    out->assign(a.begin(), a.end() - 2);
    out->push_back(am);
    out->push_back(bn);
  }
  return MatmulDims{volume(a.first(a.size() - 2)), am, ak, bn, b_batched};
}

}  // namespace

Result<Shape> shape_matmul(OpKind kind, Operands in, const OpConfig& c) {
  if (op_family(kind) != OpFamily::matmul) return not_in_family(kind, "matmul");
  Shape out;
  MESHPLAN_TRY(matmul_dims(in[0], in[1], c, &out));
  if (kind == OpKind::matmul) return out;
  auto b = broadcast_shapes(out, in[2]);  // linear's bias
  if (!b || *b != out)
    return fail(ErrorCode::invalid_argument, "linear bias ", shape_text(in[2]),
                " does not broadcast to the result ", shape_text(out));
  return out;
}

Status reference_matmul(OpKind kind, std::span<const HostView> in, const OpConfig& config,
                        std::span<const int64_t> out_shape, std::span<float> out) {
  if (op_family(kind) != OpFamily::matmul) return not_in_family(kind, "matmul");
  // linear: the matmul without activation, then bias and activation.
  Activation act = config.activation;
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
        c[i * d.n + j] = kind == OpKind::matmul ? apply_activation(act, acc) : acc;
      }
  }
  if (kind == OpKind::matmul) return {};
  int64_t idx[kMaxRank + 2] = {};
  for (int64_t i = 0; i < volume(out_shape); ++i) {
    unravel(i, out_shape, idx);
    out[i] = apply_activation(act, out[i] + broadcast_at(in[2], idx, out_shape.size()));
  }
  return {};
}

}  // namespace meshplan::device
