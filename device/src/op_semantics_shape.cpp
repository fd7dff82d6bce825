// Shape rules and host references of the data-movement families (memory, shape, gather,
// convert): to_memory_config, reshape, permute, concat, slice, embedding and typecast.
#include <algorithm>
#include <bit>

#include "meshplan/device/op_cases.hpp"
#include "op_semantics_ext.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

Result<Shape> shape_movement(OpKind kind, Operands in, const OpConfig& c) {
  auto same = [&]() { return Shape(in[0].begin(), in[0].end()); };
  switch (kind) {
    case OpKind::to_memory_config:
      return same();
    case OpKind::reshape: {
      if (c.num_shape == 0)
        return fail(ErrorCode::invalid_argument, "reshape needs a target 'shape'");
      if (c.num_shape > kMaxRank)
        return fail(ErrorCode::invalid_argument, "reshape target has ", int(c.num_shape),
                    " dims, more than ", kMaxRank);
      Shape out(c.shape, c.shape + c.num_shape);
      int infer = -1;
      int64_t known = 1;
      for (size_t d = 0; d < out.size(); ++d) {
        if (out[d] == -1 && infer < 0)
          infer = static_cast<int>(d);
        else if (out[d] <= 0)
          return fail(ErrorCode::invalid_argument, "reshape target ", shape_text(out), " has dim ",
                      out[d]);
        else
          known *= out[d];
      }
      int64_t vol = volume(in[0]);
      if (infer >= 0) {
        if (vol % known != 0)
          return fail(ErrorCode::invalid_argument, "cannot reshape ", shape_text(in[0]), " to ",
                      shape_text(out));
        out[infer] = vol / known;
      }
      if (volume(out) != vol)
        return fail(ErrorCode::invalid_argument, "cannot reshape ", shape_text(in[0]), " (", vol,
                    " elements) to ", shape_text(out), " (", volume(out), ")");
      return out;
    }
    case OpKind::permute: {
      auto perm = MESHPLAN_TRY(resolve_perm(c, in[0].size()));
      Shape out;
      for (size_t d = 0; d < in[0].size(); ++d) out.push_back(in[0][perm[d]]);
      return out;
    }
    case OpKind::concat: {
      int axis = MESHPLAN_TRY(resolve_axis(c.axis, in[0].size(), "concat axis"));
      Shape out = same();
      for (size_t i = 1; i < in.size(); ++i) {
        bool ok = in[i].size() == in[0].size();
        for (size_t d = 0; ok && d < in[0].size(); ++d)
          ok = static_cast<int>(d) == axis || in[i][d] == in[0][d];
        if (!ok)
          return fail(ErrorCode::invalid_argument, "concat along axis ", axis, ": operand ", i, " ",
                      shape_text(in[i]), " does not match operand 0 ", shape_text(in[0]));
        out[axis] += in[i][axis];
      }
      return out;
    }
    case OpKind::slice:
      return MESHPLAN_TRY(resolve_slice(c, in[0])).shape;
    case OpKind::embedding: {
      if (in[1].size() != 2)
        return fail(ErrorCode::invalid_argument, "embedding table ", shape_text(in[1]),
                    " is not [V, D]");
      if (in[0].size() >= static_cast<size_t>(kMaxRank))
        return fail(ErrorCode::invalid_argument, "embedding indices ", shape_text(in[0]),
                    " would give a result of rank ", in[0].size() + 1, ", more than ", kMaxRank);
      Shape out = same();
      out.push_back(in[1][1]);
      return out;
    }
    case OpKind::typecast:
    case OpKind::bitcast:
      return same();
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE4_(family, memory, shape, gather, convert, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      return not_in_family(kind, "data-movement");
  }
  return not_in_family(kind, "data-movement");
}

Status reference_movement(OpKind kind, std::span<const HostView> in, const OpConfig& c,
                          std::span<const int64_t> out_shape, std::span<float> out) {
  int64_t total = volume(out_shape);
  size_t out_rank = out_shape.size();
  int64_t idx[kMaxRank + 2] = {};
  switch (kind) {
    case OpKind::to_memory_config:
    case OpKind::reshape:
      std::copy(in[0].data.begin(), in[0].data.end(), out.begin());
      return {};
    case OpKind::typecast:
      for (int64_t i = 0; i < total; ++i) out[i] = storage_value(c.dtype, in[0].data[i]);
      return {};
    case OpKind::bitcast:
      // f32 words read as integers: the f32 host value holds the operand's bits, and the integer
      // is held as the nearest f32 (exact in sign and to 2^24, as every integer tensor's host
      // value). The other way the host value of an integer beyond 2^24 no longer holds its bits.
      if (c.dtype != DType::i32 && c.dtype != DType::u32)
        return fail(ErrorCode::unimplemented, "bitcast to ", dtype_name(c.dtype),
                    " has no f32 host reference (the f32 host value of an integer does not hold "
                    "its bits)");
      for (int64_t i = 0; i < total; ++i) {
        const uint32_t bits = std::bit_cast<uint32_t>(in[0].data[i]);
        out[i] = c.dtype == DType::i32 ? static_cast<float>(std::bit_cast<int32_t>(bits))
                                       : static_cast<float>(bits);
      }
      return {};
    case OpKind::permute: {
      auto perm = MESHPLAN_TRY(resolve_perm(c, in[0].shape.size()));
      auto st = strides_of(in[0].shape);
      for (int64_t i = 0; i < total; ++i) {
        unravel(i, out_shape, idx);
        int64_t src = 0;
        for (size_t d = 0; d < out_rank; ++d) src += idx[d] * st[perm[d]];
        out[i] = in[0].data[src];
      }
      return {};
    }
    case OpKind::slice: {
      SliceSpec s = MESHPLAN_TRY(resolve_slice(c, in[0].shape));
      auto st = strides_of(in[0].shape);
      for (int64_t i = 0; i < total; ++i) {
        unravel(i, out_shape, idx);
        int64_t src = 0;
        for (size_t d = 0; d < out_rank; ++d) src += (s.begin[d] + idx[d] * s.step[d]) * st[d];
        out[i] = in[0].data[src];
      }
      return {};
    }
    case OpKind::concat: {
      int axis = MESHPLAN_TRY(resolve_axis(c.axis, out_rank, "concat axis"));
      auto ost = strides_of(out_shape);
      int64_t offset = 0;
      for (const HostView& v : in) {
        for (int64_t i = 0; i < volume(v.shape); ++i) {
          unravel(i, v.shape, idx);
          idx[axis] += offset;
          int64_t dst = 0;
          for (size_t d = 0; d < out_rank; ++d) dst += idx[d] * ost[d];
          out[dst] = v.data[i];
        }
        offset += v.shape[axis];
      }
      return {};
    }
    case OpKind::embedding: {
      int64_t rows = in[1].shape[0], dim = in[1].shape[1];
      for (int64_t i = 0; i < volume(in[0].shape); ++i) {
        float f = in[0].data[i];
        int64_t row = static_cast<int64_t>(f);
        if (!(f >= 0.0f) || row >= rows)
          return fail(ErrorCode::invalid_argument, "embedding index ", f, " at position ", i,
                      " is outside the table's ", rows, " rows");
        std::copy_n(in[1].data.data() + row * dim, dim, out.data() + i * dim);
      }
      return {};
    }
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE4_(family, memory, shape, gather, convert, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      return not_in_family(kind, "data-movement");
  }
  return not_in_family(kind, "data-movement");
}

}  // namespace meshplan::device
