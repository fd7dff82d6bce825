// Scalar math of the elementwise ops and fused activations (internal to device/): the one
// definition of gelu, silu, ... that the kernels' per-element loops and the host reference share,
// as the chip's SFPU library is shared by every kernel.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

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
/// Binary elementwise ops of any kind: math (add .. minimum) and the comparisons.
inline bool is_binary(OpKind k) {
  return is_binary_eltwise(k) || is_comparison(k);
}

/// The scalar functions of ops.def's scalar column: unary ones take (x, config), binary ones
/// (a, b). IEEE results for out-of-domain inputs (log(-1) = NaN).
namespace scalar {
struct none {};
struct relu {
  float operator()(float x, const OpConfig&) const { return std::max(x, 0.0f); }
};
struct gelu {
  float operator()(float x, const OpConfig&) const { return gelu_f(x); }
};
struct silu {
  float operator()(float x, const OpConfig&) const { return x * sigmoid_f(x); }
};
struct sigmoid {
  float operator()(float x, const OpConfig&) const { return sigmoid_f(x); }
};
struct tanh {
  float operator()(float x, const OpConfig&) const { return std::tanh(x); }
};
struct exp {
  float operator()(float x, const OpConfig&) const { return std::exp(x); }
};
struct log {
  float operator()(float x, const OpConfig&) const { return std::log(x); }
};
struct sqrt {
  float operator()(float x, const OpConfig&) const { return std::sqrt(x); }
};
struct rsqrt {
  float operator()(float x, const OpConfig&) const { return 1.0f / std::sqrt(x); }
};
struct reciprocal {
  float operator()(float x, const OpConfig&) const { return 1.0f / x; }
};
struct neg {
  float operator()(float x, const OpConfig&) const { return -x; }
};
struct abs {
  float operator()(float x, const OpConfig&) const { return std::fabs(x); }
};
struct clamp {  // NaN stays NaN, as std::max/std::min pass their first argument.
  float operator()(float x, const OpConfig& c) const {
    return std::min(std::max(x, c.clamp_min), c.clamp_max);
  }
};
struct gelu_tanh {  // The tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  float operator()(float x, const OpConfig&) const {
    return 0.5f * x * (1.0f + std::tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
  }
};
struct sin {
  float operator()(float x, const OpConfig&) const { return std::sin(x); }
};
struct cos {
  float operator()(float x, const OpConfig&) const { return std::cos(x); }
};
struct tan {
  float operator()(float x, const OpConfig&) const { return std::tan(x); }
};
struct floor {
  float operator()(float x, const OpConfig&) const { return std::floor(x); }
};
struct ceil {
  float operator()(float x, const OpConfig&) const { return std::ceil(x); }
};
struct round_even {  // Halves to the even neighbour (the default rounding mode).
  float operator()(float x, const OpConfig&) const { return std::nearbyint(x); }
};
struct round_afz {  // Halves away from zero.
  float operator()(float x, const OpConfig&) const { return std::round(x); }
};
struct sign {  // -1, +1; zeros and NaN map to themselves (sign(-0.0) = -0.0).
  float operator()(float x, const OpConfig&) const {
    return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
  }
};
struct log1p {
  float operator()(float x, const OpConfig&) const { return std::log1p(x); }
};
struct expm1 {
  float operator()(float x, const OpConfig&) const { return std::expm1(x); }
};
struct cbrt {
  float operator()(float x, const OpConfig&) const { return std::cbrt(x); }
};
struct erf {
  float operator()(float x, const OpConfig&) const { return std::erf(x); }
};
struct isfinite {  // 1.0 for finite values, 0.0 for infinities and NaN (the compares' booleans).
  float operator()(float x, const OpConfig&) const { return std::isfinite(x) ? 1.0f : 0.0f; }
};
struct atan2 {
  float operator()(float a, float b) const { return std::atan2(a, b); }
};
struct power {
  float operator()(float a, float b) const { return std::pow(a, b); }
};
struct remainder {  // Truncated division: the result takes the dividend's sign (C's fmod).
  float operator()(float a, float b) const { return std::fmod(a, b); }
};
struct add {
  float operator()(float a, float b) const { return a + b; }
};
struct subtract {
  float operator()(float a, float b) const { return a - b; }
};
struct multiply {
  float operator()(float a, float b) const { return a * b; }
};
struct divide {
  float operator()(float a, float b) const { return a / b; }
};
// maximum and minimum propagate NaN (IEEE 754-2019 maximum/minimum, as StableHLO specifies):
// maximum(inf, NaN) = NaN, where std::max would return whichever operand came first.
struct maximum {
  float operator()(float a, float b) const {
    return std::isnan(a) || std::isnan(b) ? a + b : std::max(a, b);
  }
};
struct minimum {
  float operator()(float a, float b) const {
    return std::isnan(a) || std::isnan(b) ? a + b : std::min(a, b);
  }
};
// The comparisons: 1.0 where the relation holds, else 0.0 (NaN compares unequal).
struct eq {
  float operator()(float a, float b) const { return a == b ? 1.0f : 0.0f; }
};
struct ne {
  float operator()(float a, float b) const { return a != b ? 1.0f : 0.0f; }
};
struct lt {
  float operator()(float a, float b) const { return a < b ? 1.0f : 0.0f; }
};
struct le {
  float operator()(float a, float b) const { return a <= b ? 1.0f : 0.0f; }
};
struct gt {
  float operator()(float a, float b) const { return a > b ? 1.0f : 0.0f; }
};
struct ge {
  float operator()(float a, float b) const { return a >= b ? 1.0f : 0.0f; }
};

template <class F>
float unary(float x, const OpConfig& c) {
  if constexpr (std::is_invocable_r_v<float, F, float, const OpConfig&>)
    return F{}(x, c);
  else
    return x;
}
template <class F>
float binary(float a, float b) {
  if constexpr (std::is_invocable_r_v<float, F, float, float> &&
                !std::is_invocable_v<F, float, const OpConfig&>)
    return F{}(a, b);
  else
    return a;
}
}  // namespace scalar

/// Unary elementwise op `k` (is_unary(k)), dispatched through ops.def's scalar column; other
/// kinds return `x`. `c` holds the attributes of the ops that have some (clamp's bounds).
inline float unary_value(OpKind k, float x, const OpConfig& c) {
  switch (k) {
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, fn) \
  case OpKind::name:                                               \
    return scalar::unary<scalar::fn>(x, c);
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
  }
  return x;
}

/// Binary elementwise op `k` (is_binary(k)); other kinds return `a`.
inline float binary_value(OpKind k, float a, float b) {
  switch (k) {
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, fn) \
  case OpKind::name:                                               \
    return scalar::binary<scalar::fn>(a, b);
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
  }
  return a;
}

/// where: `a` where `cond` is nonzero (NaN counts as nonzero), else `b`.
inline float where_value(float cond, float a, float b) {
  return cond != 0.0f ? a : b;
}

/// The value `dtype` storage makes of `v` (typecast): bf16 rounds to nearest even, integers
/// truncate toward zero and saturate (u32 clamps negatives to 0; NaN becomes 0), f32 keeps it.
float storage_value(DType dtype, float v);

}  // namespace meshplan::device
