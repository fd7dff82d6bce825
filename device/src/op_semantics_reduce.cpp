// Shape rules and host references of the row families (reduction, softmax, norm): reductions
// and row statistics accumulated in double, written independently of the tiled kernels.
#include <algorithm>
#include <cmath>
#include <limits>

#include "op_semantics_ext.hpp"

namespace meshplan::device {

namespace {

/// Rows of the last dim: calls fn(row pointer in, row pointer out, length) for each.
template <class Fn>
void for_each_row(const HostView& in, std::span<float> out, Fn&& fn) {
  int64_t n = in.shape.back(), rows = volume(in.shape) / n;
  for (int64_t r = 0; r < rows; ++r) fn(in.data.data() + r * n, out.data() + r * n, n);
}

}  // namespace

Result<Shape> shape_reduce(OpKind kind, Operands in, const OpConfig& c) {
  auto same = [&]() { return Shape(in[0].begin(), in[0].end()); };
  switch (op_family(kind)) {
    case OpFamily::reduction: {
      auto mask = reduce_mask(c, in[0].size());
      if (!mask)
        return fail(ErrorCode::invalid_argument, op_name(kind), " of ", shape_text(in[0]), ": ",
                    mask.error().message);
      Shape out;
      for (size_t d = 0; d < in[0].size(); ++d)
        if (!(*mask)[d])
          out.push_back(in[0][d]);
        else if (c.keepdim)
          out.push_back(1);
      return out;
    }
    case OpFamily::softmax: {
      if (in[0].empty()) return fail(ErrorCode::invalid_argument, "softmax needs rank >= 1");
      if (c.num_dims > 1)
        return fail(ErrorCode::invalid_argument, "softmax takes one dim, got ", int(c.num_dims));
      if (c.num_dims == 1) MESHPLAN_TRY(resolve_axis(c.dims[0], in[0].size(), "softmax dim"));
      return same();
    }
    case OpFamily::norm: {
      if (in[0].empty())
        return fail(ErrorCode::invalid_argument, op_name(kind), " needs rank >= 1");
      int64_t n = in[0].back();
      for (size_t i = 1; i < in.size(); ++i)
        MESHPLAN_TRY(check_vector_operand(in[i], n, i == 1 ? "weight" : "bias"));
      if (!(c.epsilon >= 0.0f))
        return fail(ErrorCode::invalid_argument, "epsilon ", c.epsilon, " must be >= 0");
      return same();
    }
    case OpFamily::matmul:
    case OpFamily::eltwise_unary:
    case OpFamily::eltwise_binary:
    case OpFamily::compare:
    case OpFamily::select:
    case OpFamily::memory:
    case OpFamily::shape:
    case OpFamily::gather:
    case OpFamily::convert:
    case OpFamily::conv:
    case OpFamily::pool:
    case OpFamily::collective:
      break;
  }
  return not_in_family(kind, "row");
}

Status reference_reduce(OpKind kind, std::span<const HostView> in, const OpConfig& c,
                        std::span<const int64_t> out_shape, std::span<float> out) {
  int64_t total = volume(out_shape);
  int64_t idx[kMaxRank + 2] = {};
  switch (op_family(kind)) {
    case OpFamily::reduction: {
      auto mask = MESHPLAN_TRY(reduce_mask(c, in[0].shape.size()));
      if (kind == OpKind::reduce_min || kind == OpKind::reduce_prod) {
        // Plain loops: min (exact; NaN propagates), product in double.
        bool is_min = kind == OpKind::reduce_min;
        std::vector<double> acc(out.size(), is_min ? std::numeric_limits<double>::infinity() : 1.0);
        for (int64_t i = 0; i < volume(in[0].shape); ++i) {
          unravel(i, in[0].shape, idx);
          int64_t o = 0;
          for (size_t d = 0; d < in[0].shape.size(); ++d)
            if (!mask[d]) o = o * in[0].shape[d] + idx[d];
          double v = in[0].data[i];
          acc[o] = !is_min                               ? acc[o] * v
                   : std::isnan(v) || std::isnan(acc[o]) ? v + acc[o]  // min propagates NaN.
                                                         : std::min(acc[o], v);
        }
        for (size_t o = 0; o < out.size(); ++o) out[o] = static_cast<float>(acc[o]);
        return {};
      }
      bool is_max = kind == OpKind::reduce_max;
      std::fill(out.begin(), out.end(), is_max ? -std::numeric_limits<float>::infinity() : 0.0f);
      std::vector<double> acc(out.size(), 0.0);
      int64_t n_in = volume(in[0].shape), count = 1;
      for (size_t d = 0; d < in[0].shape.size(); ++d)
        if (mask[d]) count *= in[0].shape[d];
      for (int64_t i = 0; i < n_in; ++i) {
        unravel(i, in[0].shape, idx);
        int64_t o = 0;
        for (size_t d = 0; d < in[0].shape.size(); ++d)
          if (!mask[d]) o = o * in[0].shape[d] + idx[d];
        if (is_max)  // NaN propagates, as StableHLO's maximum.
          out[o] = std::isnan(out[o]) || std::isnan(in[0].data[i])
                       ? out[o] + in[0].data[i]
                       : std::max(out[o], in[0].data[i]);
        else
          acc[o] += in[0].data[i];
      }
      if (!is_max)
        for (size_t o = 0; o < out.size(); ++o)
          out[o] = static_cast<float>(kind == OpKind::reduce_mean ? acc[o] / count : acc[o]);
      return {};
    }
    case OpFamily::softmax: {
      // Over dim d: the lines start at the elements whose index along d is 0, and step by d's
      // stride.
      size_t rank = in[0].shape.size();
      if (rank == 0) return fail(ErrorCode::invalid_argument, "softmax needs rank >= 1");
      int d = static_cast<int>(rank) - 1;
      if (c.num_dims == 1) d = MESHPLAN_TRY(resolve_axis(c.dims[0], rank, "softmax dim"));
      int64_t n = in[0].shape[d], stride = strides_of(in[0].shape)[d];
      const float* x = in[0].data.data();
      for (int64_t i = 0; i < total && n > 0; ++i) {
        if ((i / stride) % n != 0) continue;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < n; ++j) m = std::max(m, x[i + j * stride]);
        double s = 0;
        for (int64_t j = 0; j < n; ++j) s += std::exp(double(x[i + j * stride]) - m);
        for (int64_t j = 0; j < n; ++j)
          out[i + j * stride] = static_cast<float>(std::exp(double(x[i + j * stride]) - m) / s);
      }
      return {};
    }
    case OpFamily::norm: {
      const float* w = in.size() > 1 ? in[1].data.data() : nullptr;
      const float* b = in.size() > 2 ? in[2].data.data() : nullptr;
      bool rms = kind == OpKind::rms_norm;
      double eps = c.epsilon;
      for_each_row(in[0], out, [&](const float* x, float* y, int64_t n) {
        double mean = 0, sq = 0;
        for (int64_t j = 0; j < n; ++j) mean += x[j];
        mean /= n;
        if (rms) mean = 0;
        for (int64_t j = 0; j < n; ++j) sq += (x[j] - mean) * (x[j] - mean);
        double inv = 1.0 / std::sqrt(sq / n + eps);
        for (int64_t j = 0; j < n; ++j)
          y[j] = static_cast<float>((x[j] - mean) * inv * (w ? w[j] : 1.0f) + (b ? b[j] : 0.0f));
      });
      return {};
    }
    case OpFamily::matmul:
    case OpFamily::eltwise_unary:
    case OpFamily::eltwise_binary:
    case OpFamily::compare:
    case OpFamily::select:
    case OpFamily::memory:
    case OpFamily::shape:
    case OpFamily::gather:
    case OpFamily::convert:
    case OpFamily::conv:
    case OpFamily::pool:
    case OpFamily::collective:
      break;
  }
  return not_in_family(kind, "row");
}

}  // namespace meshplan::device
