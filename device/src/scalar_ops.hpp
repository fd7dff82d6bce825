// Scalar math of the elementwise ops and fused activations (internal to device/): the one
// definition of gelu, silu, ... that the kernels' per-element loops and the host reference share,
// as the chip's SFPU library is shared by every kernel.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
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

/// Integer elements as the device holds them: the 4-byte word of an i32 (two's complement) or
/// u32 element, with the signedness of its dtype. Integer results wrap modulo 2^32 (XLA).
struct IntWord {
  uint32_t w;
  bool sgn;
  int32_t s() const { return static_cast<int32_t>(w); }
};
inline bool is_int_dtype(DType d) {
  return d == DType::i32 || d == DType::u32;
}
/// Float value <-> integer word for the float paths of the integer-only ops (bitwise, shifts):
/// the value truncated to a 32-bit integer (the f32 paths hold integers exactly to 2^24).
inline uint32_t float_to_word(float x) {
  double t = std::isnan(x)
                 ? 0.0
                 : std::clamp(std::trunc(static_cast<double>(x)), -2147483648.0, 4294967295.0);
  return t < 0 ? static_cast<uint32_t>(static_cast<int32_t>(t)) : static_cast<uint32_t>(t);
}
inline float word_to_float(uint32_t w, bool sgn) {
  return sgn ? static_cast<float>(static_cast<int32_t>(w)) : static_cast<float>(w);
}

/// The scalar functions of ops.def's scalar column: unary ones take (x, config), binary ones
/// (a, b). IEEE results for out-of-domain inputs (log(-1) = NaN). Those with integer semantics
/// also have a static `word` function over IntWords (i32/u32, exact); the kernels use it when
/// the operands are integers, and compute through f32 otherwise.
namespace scalar {
inline IntWord iw(uint32_t w, bool sgn) {
  return IntWord{w, sgn};
}
inline uint32_t bool_word(bool b) {
  return b ? 1u : 0u;
}
/// a < b in the operands' signedness.
inline bool less(IntWord a, IntWord b) {
  return a.sgn ? a.s() < b.s() : a.w < b.w;
}
struct none {};
struct relu {
  float operator()(float x, const OpConfig&) const { return std::max(x, 0.0f); }
  static uint32_t word(IntWord x) { return x.sgn && x.s() < 0 ? 0u : x.w; }
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
  static uint32_t word(IntWord x) { return 0u - x.w; }  // -INT_MIN wraps to INT_MIN.
};
struct abs {
  float operator()(float x, const OpConfig&) const { return std::fabs(x); }
  static uint32_t word(IntWord x) {
    return x.sgn && x.s() < 0 ? 0u - x.w : x.w;
  }  // abs(INT_MIN) = INT_MIN.
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
  static uint32_t word(IntWord x) { return x.sgn && x.s() < 0 ? 0xffffffffu : x.w != 0 ? 1u : 0u; }
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
  // Integer exponentiation (StableHLO): exact modulo 2^32 by repeated squaring. A negative signed
  // exponent gives 0, except for bases 1 and -1, whose powers take the exponent's magnitude.
  static uint32_t word(IntWord a, IntWord b) {
    uint32_t e = b.w;
    if (b.sgn && b.s() < 0) {
      if (a.w != 1u && !(a.sgn && a.s() == -1)) return 0u;
      e = 0u - b.w;
    }
    uint32_t result = 1u, base = a.w;
    for (; e != 0u; e >>= 1) {
      if (e & 1u) result *= base;
      base *= base;
    }
    return result;
  }
};
struct remainder {  // Truncated division: the result takes the dividend's sign (C's fmod).
  float operator()(float a, float b) const { return std::fmod(a, b); }
  static uint32_t word(IntWord a, IntWord b) {  // Truncated; x % 0 = x, INT_MIN % -1 = 0 (XLA).
    if (b.w == 0) return a.w;
    if (!a.sgn) return a.w % b.w;
    if (b.s() == -1) return 0u;
    return static_cast<uint32_t>(a.s() % b.s());
  }
};
struct add {
  float operator()(float a, float b) const { return a + b; }
  static uint32_t word(IntWord a, IntWord b) { return a.w + b.w; }
};
struct subtract {
  float operator()(float a, float b) const { return a - b; }
  static uint32_t word(IntWord a, IntWord b) { return a.w - b.w; }
};
struct multiply {
  float operator()(float a, float b) const { return a * b; }
  static uint32_t word(IntWord a, IntWord b) { return a.w * b.w; }
};
struct divide {
  float operator()(float a, float b) const { return a / b; }
  static uint32_t word(
      IntWord a, IntWord b) {  // Truncating; x / 0 = -1 (all ones), INT_MIN / -1 = INT_MIN (XLA).
    if (b.w == 0) return 0xffffffffu;
    if (!a.sgn) return a.w / b.w;
    if (b.s() == -1) return 0u - a.w;
    return static_cast<uint32_t>(a.s() / b.s());
  }
};
// maximum and minimum propagate NaN (IEEE 754-2019 maximum/minimum, as StableHLO specifies):
// maximum(inf, NaN) = NaN, where std::max would return whichever operand came first.
struct maximum {
  float operator()(float a, float b) const {
    return std::isnan(a) || std::isnan(b) ? a + b : std::max(a, b);
  }
  static uint32_t word(IntWord a, IntWord b) { return less(a, b) ? b.w : a.w; }
};
struct minimum {
  float operator()(float a, float b) const {
    return std::isnan(a) || std::isnan(b) ? a + b : std::min(a, b);
  }
  static uint32_t word(IntWord a, IntWord b) { return less(b, a) ? b.w : a.w; }
};
// The comparisons: 1.0 where the relation holds, else 0.0 (NaN compares unequal).
struct eq {
  float operator()(float a, float b) const { return a == b ? 1.0f : 0.0f; }
  static uint32_t word(IntWord a, IntWord b) { return bool_word(a.w == b.w); }
};
struct ne {
  float operator()(float a, float b) const { return a != b ? 1.0f : 0.0f; }
  static uint32_t word(IntWord a, IntWord b) { return bool_word(a.w != b.w); }
};
struct lt {
  float operator()(float a, float b) const { return a < b ? 1.0f : 0.0f; }
  static uint32_t word(IntWord a, IntWord b) { return bool_word(less(a, b)); }
};
struct le {
  float operator()(float a, float b) const { return a <= b ? 1.0f : 0.0f; }
  static uint32_t word(IntWord a, IntWord b) { return bool_word(!less(b, a)); }
};
struct gt {
  float operator()(float a, float b) const { return a > b ? 1.0f : 0.0f; }
  static uint32_t word(IntWord a, IntWord b) { return bool_word(less(b, a)); }
};
struct ge {
  float operator()(float a, float b) const { return a >= b ? 1.0f : 0.0f; }
  static uint32_t word(IntWord a, IntWord b) { return bool_word(!less(a, b)); }
};

// Integer-only ops: the float operator() truncates to a 32-bit integer, applies the word
// function and returns the (signed) result; the integer kernels call word() directly.
// Shifts (StableHLO): the amount is read as unsigned; amounts >= 32 give 0 (left, logical) or
// the sign fill (arithmetic).
#define MESHPLAN_INT_BINARY_(name, expr)                                                        \
  struct name {                                                                                 \
    static uint32_t word(IntWord a, IntWord b) { return expr; }                                 \
    float operator()(float x, float y) const {                                                  \
      return word_to_float(word(iw(float_to_word(x), true), iw(float_to_word(y), true)), true); \
    }                                                                                           \
  };
MESHPLAN_INT_BINARY_(bitwise_and, a.w& b.w)
MESHPLAN_INT_BINARY_(bitwise_or, a.w | b.w)
MESHPLAN_INT_BINARY_(bitwise_xor, a.w ^ b.w)
MESHPLAN_INT_BINARY_(shift_left, b.w >= 32 ? 0u : a.w << b.w)
MESHPLAN_INT_BINARY_(shift_right_logical, b.w >= 32 ? 0u : a.w >> b.w)
MESHPLAN_INT_BINARY_(shift_right_arithmetic,
                     static_cast<uint32_t>(a.s() >> (b.w >= 32 ? 31u : b.w)))
#undef MESHPLAN_INT_BINARY_
struct bitwise_not {
  static uint32_t word(IntWord x) { return ~x.w; }
  float operator()(float x, const OpConfig&) const {
    return word_to_float(word(iw(float_to_word(x), true)), true);
  }
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
template <class F>
bool int_unary(IntWord x, uint32_t& out) {
  if constexpr (requires { F::word(x); }) {
    out = F::word(x);
    return true;
  } else {
    return false;
  }
}
template <class F>
bool int_binary(IntWord a, IntWord b, uint32_t& out) {
  if constexpr (requires { F::word(a, b); }) {
    out = F::word(a, b);
    return true;
  } else {
    return false;
  }
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

/// Whether elementwise op `k` has integer semantics (a word function): the kernels compute it
/// exactly on i32/u32 operands.
inline bool has_int_semantics(OpKind k) {
  IntWord z{0, true};
  uint32_t out = 0;
  switch (k) {
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, fn) \
  case OpKind::name:                                               \
    return scalar::int_unary<scalar::fn>(z, out) || scalar::int_binary<scalar::fn>(z, z, out);
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
  }
  return false;
}
/// Unary op `k` on an integer word; false (out untouched) if `k` has no integer semantics.
inline bool unary_word(OpKind k, IntWord x, uint32_t& out) {
  switch (k) {
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, fn) \
  case OpKind::name:                                               \
    return scalar::int_unary<scalar::fn>(x, out);
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
  }
  return false;
}
/// Binary op `k` (math or comparison: 1/0) on integer words of one signedness.
inline bool binary_word(OpKind k, IntWord a, IntWord b, uint32_t& out) {
  switch (k) {
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, fn) \
  case OpKind::name:                                               \
    return scalar::int_binary<scalar::fn>(a, b, out);
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
  }
  return false;
}

/// where: `a` where `cond` is nonzero (NaN counts as nonzero), else `b`.
inline float where_value(float cond, float a, float b) {
  return cond != 0.0f ? a : b;
}

/// The value `dtype` storage makes of `v` (typecast): bf16 rounds to nearest even, integers
/// truncate toward zero and saturate (u32 clamps negatives to 0; NaN becomes 0), f32 keeps it.
float storage_value(DType dtype, float v);

}  // namespace meshplan::device
