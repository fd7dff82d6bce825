// Scalar math of the elementwise ops and fused activations (internal to device/): the one
// definition of gelu, silu, ... that the kernels' per-element loops and the host reference share,
// as the chip's SFPU library is shared by every kernel.
#pragma once

#include <algorithm>
#include <cmath>

#include "meshplan/device/types.hpp"

namespace meshplan::device {

/// gelu with erf (not the tanh approximation).
inline float gelu_f(float x) {
  return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
}
inline float sigmoid_f(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

inline float apply_activation(Activation a, float v) {
  switch (a) {
    case Activation::none:
      return v;
    case Activation::relu:
      return std::max(v, 0.0f);
    case Activation::gelu:
      return gelu_f(v);
    case Activation::silu:
      return v * sigmoid_f(v);
    case Activation::sigmoid:
      return sigmoid_f(v);
    case Activation::tanh:
      return std::tanh(v);
  }
  return v;
}

inline bool is_unary(OpKind k) {
  return is_unary_eltwise(k);
}

/// The comparisons eq .. ge: 1.0 where the relation holds, else 0.0 (NaN compares unequal).
inline bool is_comparison(OpKind k) {
  switch (k) {
    case OpKind::eq:
    case OpKind::ne:
    case OpKind::lt:
    case OpKind::le:
    case OpKind::gt:
    case OpKind::ge:
      return true;
    default:
      return false;
  }
}

inline bool is_binary(OpKind k) {
  switch (k) {
    case OpKind::add:
    case OpKind::subtract:
    case OpKind::multiply:
    case OpKind::divide:
    case OpKind::maximum:
    case OpKind::minimum:
      return true;
    default:
      return is_comparison(k);
  }
}

/// Unary elementwise op `k` (is_unary(k)); IEEE results for out-of-domain inputs (log(-1) = NaN).
/// `c` holds the attributes of the ops that have some (clamp's bounds).
inline float unary_value(OpKind k, float x, const OpConfig& c) {
  switch (k) {
    case OpKind::clamp:  // NaN stays NaN, as std::max/std::min pass their first argument.
      return std::min(std::max(x, c.clamp_min), c.clamp_max);
    case OpKind::relu:
      return std::max(x, 0.0f);
    case OpKind::gelu:
      return gelu_f(x);
    case OpKind::silu:
      return x * sigmoid_f(x);
    case OpKind::sigmoid:
      return sigmoid_f(x);
    case OpKind::tanh:
      return std::tanh(x);
    case OpKind::exp:
      return std::exp(x);
    case OpKind::log:
      return std::log(x);
    case OpKind::sqrt:
      return std::sqrt(x);
    case OpKind::rsqrt:
      return 1.0f / std::sqrt(x);
    case OpKind::reciprocal:
      return 1.0f / x;
    case OpKind::neg:
      return -x;
    case OpKind::abs:
      return std::fabs(x);
    default:
      return x;
  }
}

/// Binary elementwise op `k` (is_binary(k)).
inline float binary_value(OpKind k, float a, float b) {
  switch (k) {
    case OpKind::add:
      return a + b;
    case OpKind::subtract:
      return a - b;
    case OpKind::multiply:
      return a * b;
    case OpKind::divide:
      return a / b;
    case OpKind::maximum:
      return std::max(a, b);
    case OpKind::minimum:
      return std::min(a, b);
    case OpKind::eq:
      return a == b ? 1.0f : 0.0f;
    case OpKind::ne:
      return a != b ? 1.0f : 0.0f;
    case OpKind::lt:
      return a < b ? 1.0f : 0.0f;
    case OpKind::le:
      return a <= b ? 1.0f : 0.0f;
    case OpKind::gt:
      return a > b ? 1.0f : 0.0f;
    case OpKind::ge:
      return a >= b ? 1.0f : 0.0f;
    default:
      return a;
  }
}

/// where: `a` where `cond` is nonzero (NaN counts as nonzero), else `b`.
inline float where_value(float cond, float a, float b) {
  return cond != 0.0f ? a : b;
}

/// The value `dtype` storage makes of `v` (typecast): bf16 rounds to nearest even, integers
/// truncate toward zero and saturate (u32 clamps negatives to 0; NaN becomes 0), f32 keeps it.
float storage_value(DType dtype, float v);

}  // namespace meshplan::device
