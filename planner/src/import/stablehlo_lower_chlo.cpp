// chlo's elementwise ops that JAX emits for jnp's hyperbolic and inverse trigonometric functions
// (chlo.sinh, cosh, tan, asin, acos, atan, asinh, acosh, atanh), written with device ops in
// forms that avoid cancellation near 0 and overflow at large magnitudes:
//   sinh x  = (expm1 x - expm1 -x) / 2 for |x| < 1, else e^(x - ln 2) - e^(-x - ln 2)
//   cosh x  = e^(x - ln 2) + e^(-x - ln 2)
//   tan x   = the device's tan
//   asin x  = atan2(x, sqrt((1 - x)(1 + x)))        acos x = atan2(sqrt((1 - x)(1 + x)), x)
//   atan x  = atan2(x, 1)
//   asinh x = sign x * log1p(|x| + x^2 / (1 + sqrt(x^2 + 1))) for |x| < 2^60,
//             else sign x * (log |x| + ln 2)
//   acosh x = log1p((x - 1) + sqrt((x - 1)(x + 1))) for x < 2^60, else log x + ln 2
//   atanh x = log1p(2x / (1 - x)) / 2
// Values outside an op's domain give NaN as the spec says (sqrt and log1p of negatives).
//
// All of them are computed in f32 (a bf16 operand is converted up and the result down, as XLA
// does). The special functions JAX emits (chlo.lgamma, digamma, erfc, erf_inv, bessel_i1e):
//   lgamma x   = Lanczos (g = 7, 9 terms) for x >= 1/2; reflection
//                log pi - log|sin(pi r)| - lgamma(1 - x), r = x - round(x), below
//   digamma x  = log w - 1/(2w) - asymptotic series in 1/w^2 - sum_{k<6} 1/(x + k), w = x + 6,
//                for x >= 1/2; reflection digamma(1 - x) - pi / tan(pi r) below; NaN at 0, -1, ..
//   erfc x     = t exp(-x^2 + P(t)), t = 1 / (1 + |x|/2) (a Chebyshev fit of relative error
//                < 1.2e-7), 2 - erfc|x| for x < 0
//   erf_inv x  = x P(w) with w = -log((1 - x)(1 + x)), one polynomial for w < 5 and one in
//                sqrt(w) beyond (Giles' single-precision fits), +-inf at +-1
//   bessel_i1e = e^-|x| (x/2) sum_k (x^2/4)^k / (k! (k+1)!) for |x| <= 15 (30 terms, nested),
//                the asymptotic expansion in 1/|x| (7 terms) beyond
// chlo.next_after (f32) steps x's bit pattern toward y.
// Each special function is within a few f32 ulps of the exact function away from its zeros
// (checked against mpmath by tests/e2e/chlo_special_ref.py, whose output the conformance test
// holds).
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <span>

#include "import/stablehlo_lower_internal.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

/// Emits elementwise ops of one shape and dtype.
struct Ew {
  Lowering& l;
  std::vector<int64_t> shape;
  DType dt;
  Result<GValue> op(OpKind k, std::vector<GValue> xs) {
    return l.emit(k, std::move(xs), {}, shape, dt);
  }
  Result<GValue> c(double v) { return l.constant(Folded{{1}, {static_cast<float>(v)}}, dt); }
};

constexpr double kLn2 = std::numbers::ln2;
constexpr double kBig = 1152921504606846976.0;  // 2^60: x^2 + 1 is x^2 beyond.

Result<GValue> build(Ew& e, const std::string& n, GValue x) {
  using K = OpKind;
  auto op = [&](K k, std::vector<GValue> xs) { return e.op(k, std::move(xs)); };
  if (n == "chlo.tan") return op(K::tan, {x});
  if (n == "chlo.atan") return op(K::atan2, {x, MESHPLAN_TRY(e.c(1.0))});
  if (n == "chlo.cosh" || n == "chlo.sinh") {
    GValue ln2 = MESHPLAN_TRY(e.c(kLn2));
    GValue nx = MESHPLAN_TRY(op(K::neg, {x}));
    GValue a = MESHPLAN_TRY(op(K::exp, {MESHPLAN_TRY(op(K::subtract, {x, ln2}))}));
    GValue b = MESHPLAN_TRY(op(K::exp, {MESHPLAN_TRY(op(K::subtract, {nx, ln2}))}));
    if (n == "chlo.cosh") return op(K::add, {a, b});
    GValue large = MESHPLAN_TRY(op(K::subtract, {a, b}));
    GValue small = MESHPLAN_TRY(
        op(K::subtract, {MESHPLAN_TRY(op(K::expm1, {x})), MESHPLAN_TRY(op(K::expm1, {nx}))}));
    small = MESHPLAN_TRY(op(K::multiply, {small, MESHPLAN_TRY(e.c(0.5))}));
    GValue near = MESHPLAN_TRY(op(K::lt, {MESHPLAN_TRY(op(K::abs, {x})), MESHPLAN_TRY(e.c(1.0))}));
    return op(K::where, {near, small, large});
  }
  if (n == "chlo.asin" || n == "chlo.acos") {
    GValue one = MESHPLAN_TRY(e.c(1.0));
    GValue r = MESHPLAN_TRY(op(K::multiply, {MESHPLAN_TRY(op(K::subtract, {one, x})),
                                             MESHPLAN_TRY(op(K::add, {one, x}))}));
    r = MESHPLAN_TRY(op(K::sqrt, {r}));
    return n == "chlo.asin" ? op(K::atan2, {x, r}) : op(K::atan2, {r, x});
  }
  if (n == "chlo.atanh") {
    GValue one = MESHPLAN_TRY(e.c(1.0));
    GValue q = MESHPLAN_TRY(
        op(K::divide, {MESHPLAN_TRY(op(K::add, {x, x})), MESHPLAN_TRY(op(K::subtract, {one, x}))}));
    return op(K::multiply, {MESHPLAN_TRY(op(K::log1p, {q})), MESHPLAN_TRY(e.c(0.5))});
  }
  if (n == "chlo.asinh") {
    GValue one = MESHPLAN_TRY(e.c(1.0));
    GValue ax = MESHPLAN_TRY(op(K::abs, {x}));
    GValue x2 = MESHPLAN_TRY(op(K::multiply, {x, x}));
    GValue s = MESHPLAN_TRY(op(K::sqrt, {MESHPLAN_TRY(op(K::add, {x2, one}))}));
    GValue t = MESHPLAN_TRY(op(K::divide, {x2, MESHPLAN_TRY(op(K::add, {one, s}))}));
    GValue small = MESHPLAN_TRY(op(K::log1p, {MESHPLAN_TRY(op(K::add, {ax, t}))}));
    GValue large =
        MESHPLAN_TRY(op(K::add, {MESHPLAN_TRY(op(K::log, {ax})), MESHPLAN_TRY(e.c(kLn2))}));
    GValue near = MESHPLAN_TRY(op(K::lt, {ax, MESHPLAN_TRY(e.c(kBig))}));
    GValue mag = MESHPLAN_TRY(op(K::where, {near, small, large}));
    // sign(x) * mag, keeping -0.0 for x = -0.0 and NaN for NaN.
    GValue neg = MESHPLAN_TRY(op(K::lt, {x, MESHPLAN_TRY(e.c(0.0))}));
    GValue r = MESHPLAN_TRY(op(K::where, {neg, MESHPLAN_TRY(op(K::neg, {mag})), mag}));
    GValue zero = MESHPLAN_TRY(op(K::eq, {x, MESHPLAN_TRY(e.c(0.0))}));
    return op(K::where, {zero, x, r});
  }
  if (n == "chlo.acosh") {
    GValue one = MESHPLAN_TRY(e.c(1.0));
    GValue xm = MESHPLAN_TRY(op(K::subtract, {x, one}));
    GValue r = MESHPLAN_TRY(
        op(K::sqrt, {MESHPLAN_TRY(op(K::multiply, {xm, MESHPLAN_TRY(op(K::add, {x, one}))}))}));
    GValue small = MESHPLAN_TRY(op(K::log1p, {MESHPLAN_TRY(op(K::add, {xm, r}))}));
    GValue large =
        MESHPLAN_TRY(op(K::add, {MESHPLAN_TRY(op(K::log, {x})), MESHPLAN_TRY(e.c(kLn2))}));
    GValue near = MESHPLAN_TRY(op(K::lt, {x, MESHPLAN_TRY(e.c(kBig))}));
    return op(K::where, {near, small, large});
  }
  return fail(ErrorCode::internal, "no decomposition for ", n);
}

constexpr double kPi = std::numbers::pi;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

bool is_special(std::string_view n) {
  return n == "chlo.lgamma" || n == "chlo.digamma" || n == "chlo.erfc" || n == "chlo.erf_inv" ||
         n == "chlo.bessel_i1e";
}

/// Horner: coefficients from the highest power down.
Result<GValue> horner(Ew& e, GValue t, std::span<const double> c) {
  GValue p = MESHPLAN_TRY(e.c(c[0]));
  for (size_t i = 1; i < c.size(); ++i)
    p = MESHPLAN_TRY(
        e.op(OpKind::add, {MESHPLAN_TRY(e.op(OpKind::multiply, {p, t})), MESHPLAN_TRY(e.c(c[i]))}));
  return p;
}

/// lgamma for y >= 1/2 (other values give numbers the caller discards).
Result<GValue> lgamma_right(Ew& e, GValue y) {
  using K = OpKind;
  static constexpr std::array<double, 9> kLanczos = {
      0.99999999999980993,  676.5203681218851,     -1259.1392167224028,
      771.32342877765313,   -176.61502916214059,   12.507343278686905,
      -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};
  GValue z = MESHPLAN_TRY(e.op(K::subtract, {y, MESHPLAN_TRY(e.c(1.0))}));
  GValue a = MESHPLAN_TRY(e.c(kLanczos[0]));
  for (size_t i = 1; i < kLanczos.size(); ++i) {
    GValue d = MESHPLAN_TRY(e.op(K::add, {z, MESHPLAN_TRY(e.c(static_cast<double>(i)))}));
    a = MESHPLAN_TRY(
        e.op(K::add, {a, MESHPLAN_TRY(e.op(K::divide, {MESHPLAN_TRY(e.c(kLanczos[i])), d}))}));
  }
  GValue t = MESHPLAN_TRY(e.op(K::add, {z, MESHPLAN_TRY(e.c(7.5))}));
  GValue zh = MESHPLAN_TRY(e.op(K::add, {z, MESHPLAN_TRY(e.c(0.5))}));
  GValue r = MESHPLAN_TRY(e.op(K::multiply, {zh, MESHPLAN_TRY(e.op(K::log, {t}))}));
  r = MESHPLAN_TRY(e.op(K::subtract, {r, t}));
  r = MESHPLAN_TRY(e.op(K::add, {r, MESHPLAN_TRY(e.op(K::log, {a}))}));
  return e.op(K::add, {r, MESHPLAN_TRY(e.c(0.5 * std::log(2 * kPi)))});
}

/// digamma for y >= 1/2.
Result<GValue> digamma_right(Ew& e, GValue y) {
  using K = OpKind;
  GValue acc = MESHPLAN_TRY(e.op(K::reciprocal, {y}));
  for (int k = 1; k < 6; ++k)
    acc = MESHPLAN_TRY(
        e.op(K::add,
             {acc, MESHPLAN_TRY(e.op(K::reciprocal,
                                     {MESHPLAN_TRY(e.op(K::add, {y, MESHPLAN_TRY(e.c(k))}))}))}));
  GValue w = MESHPLAN_TRY(e.op(K::add, {y, MESHPLAN_TRY(e.c(6.0))}));
  GValue iw = MESHPLAN_TRY(e.op(K::reciprocal, {w}));
  GValue w2 = MESHPLAN_TRY(e.op(K::multiply, {iw, iw}));
  // 1/(12 w^2) - 1/(120 w^4) + 1/(252 w^6) - 1/(240 w^8) + 1/(132 w^10)
  static constexpr std::array<double, 6> kSeries = {1.0 / 132,  -1.0 / 240, 1.0 / 252,
                                                    -1.0 / 120, 1.0 / 12,   0.0};
  GValue ser = MESHPLAN_TRY(horner(e, w2, kSeries));
  GValue r = MESHPLAN_TRY(e.op(K::log, {w}));
  r = MESHPLAN_TRY(
      e.op(K::subtract, {r, MESHPLAN_TRY(e.op(K::multiply, {iw, MESHPLAN_TRY(e.c(0.5))}))}));
  r = MESHPLAN_TRY(e.op(K::subtract, {r, ser}));
  return e.op(K::subtract, {r, acc});
}

/// erfc for z >= 0.
Result<GValue> erfc_right(Ew& e, GValue z) {
  using K = OpKind;
  static constexpr std::array<double, 10> kFit = {0.17087277, -0.82215223, 1.48851587, -1.13520398,
                                                  0.27886807, -0.18628806, 0.09678418, 0.37409196,
                                                  1.00002368, -1.26551223};
  GValue t = MESHPLAN_TRY(
      e.op(K::reciprocal,
           {MESHPLAN_TRY(e.op(K::add, {MESHPLAN_TRY(e.op(K::multiply, {z, MESHPLAN_TRY(e.c(0.5))})),
                                       MESHPLAN_TRY(e.c(1.0))}))}));
  GValue p = MESHPLAN_TRY(horner(e, t, kFit));
  p = MESHPLAN_TRY(e.op(K::subtract, {p, MESHPLAN_TRY(e.op(K::multiply, {z, z}))}));
  return e.op(K::multiply, {t, MESHPLAN_TRY(e.op(K::exp, {p}))});
}

Result<GValue> build_special(Ew& e, const std::string& n, GValue x) {
  using K = OpKind;
  auto op = [&](K k, std::vector<GValue> xs) { return e.op(k, std::move(xs)); };
  auto c = [&](double v) { return e.c(v); };
  GValue half = MESHPLAN_TRY(c(0.5));
  if (n == "chlo.lgamma" || n == "chlo.digamma") {
    GValue left = MESHPLAN_TRY(op(K::lt, {x, half}));
    GValue y = MESHPLAN_TRY(
        op(K::where, {left, MESHPLAN_TRY(op(K::subtract, {MESHPLAN_TRY(c(1.0)), x})), x}));
    // pi r, r = x - round(x): sin and tan of pi x without the rounding of pi x for large x.
    GValue pr = MESHPLAN_TRY(op(K::subtract, {x, MESHPLAN_TRY(op(K::round_even, {x}))}));
    pr = MESHPLAN_TRY(op(K::multiply, {pr, MESHPLAN_TRY(c(kPi))}));
    if (n == "chlo.lgamma") {
      GValue right = MESHPLAN_TRY(lgamma_right(e, y));
      GValue s = MESHPLAN_TRY(op(K::abs, {MESHPLAN_TRY(op(K::sin, {pr}))}));
      GValue refl = MESHPLAN_TRY(
          op(K::subtract, {MESHPLAN_TRY(c(std::log(kPi))), MESHPLAN_TRY(op(K::log, {s}))}));
      refl = MESHPLAN_TRY(op(K::subtract, {refl, right}));
      GValue r = MESHPLAN_TRY(op(K::where, {left, refl, right}));
      // +-inf: +inf (the Lanczos sum's inf - inf and the reflection's NaN are not).
      GValue inf =
          MESHPLAN_TRY(op(K::eq, {MESHPLAN_TRY(op(K::abs, {x})), MESHPLAN_TRY(c(kInfinity))}));
      return op(K::where, {inf, MESHPLAN_TRY(c(kInfinity)), r});
    }
    GValue right = MESHPLAN_TRY(digamma_right(e, y));
    GValue refl = MESHPLAN_TRY(
        op(K::subtract, {right, MESHPLAN_TRY(op(K::divide, {MESHPLAN_TRY(c(kPi)),
                                                            MESHPLAN_TRY(op(K::tan, {pr}))}))}));
    GValue r = MESHPLAN_TRY(op(K::where, {left, refl, right}));
    // Poles at 0, -1, -2, ... (and -inf): NaN.
    GValue pole = MESHPLAN_TRY(op(K::eq, {x, MESHPLAN_TRY(op(K::floor, {x}))}));
    GValue nonpos = MESHPLAN_TRY(op(K::le, {x, MESHPLAN_TRY(c(0.0))}));
    GValue nan = MESHPLAN_TRY(c(std::numeric_limits<double>::quiet_NaN()));
    return op(K::where, {nonpos, MESHPLAN_TRY(op(K::where, {pole, nan, r})), r});
  }
  if (n == "chlo.erfc") {
    GValue r = MESHPLAN_TRY(erfc_right(e, MESHPLAN_TRY(op(K::abs, {x}))));
    GValue neg = MESHPLAN_TRY(op(K::lt, {x, MESHPLAN_TRY(c(0.0))}));
    return op(K::where, {neg, MESHPLAN_TRY(op(K::subtract, {MESHPLAN_TRY(c(2.0)), r})), r});
  }
  if (n == "chlo.erf_inv") {
    static constexpr std::array<double, 9> kCentral = {
        2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
        -0.00125372503, -0.00417768164, 0.246640727,    1.50140941};
    static constexpr std::array<double, 9> kTail = {-0.000200214257, 0.000100950558, 0.00134934322,
                                                    -0.00367342844,  0.00573950773,  -0.0076224613,
                                                    0.00943887047,   1.00167406,     2.83297682};
    GValue one = MESHPLAN_TRY(c(1.0));
    GValue w = MESHPLAN_TRY(op(K::multiply, {MESHPLAN_TRY(op(K::subtract, {one, x})),
                                             MESHPLAN_TRY(op(K::add, {one, x}))}));
    w = MESHPLAN_TRY(op(K::neg, {MESHPLAN_TRY(op(K::log, {w}))}));
    GValue central =
        MESHPLAN_TRY(horner(e, MESHPLAN_TRY(op(K::subtract, {w, MESHPLAN_TRY(c(2.5))})), kCentral));
    GValue tail = MESHPLAN_TRY(horner(
        e, MESHPLAN_TRY(op(K::subtract, {MESHPLAN_TRY(op(K::sqrt, {w})), MESHPLAN_TRY(c(3.0))})),
        kTail));
    GValue p = MESHPLAN_TRY(
        op(K::where, {MESHPLAN_TRY(op(K::lt, {w, MESHPLAN_TRY(c(5.0))})), central, tail}));
    GValue r = MESHPLAN_TRY(op(K::multiply, {p, x}));
    GValue ends = MESHPLAN_TRY(op(K::eq, {MESHPLAN_TRY(op(K::abs, {x})), one}));
    return op(K::where, {ends, MESHPLAN_TRY(op(K::multiply, {x, MESHPLAN_TRY(c(kInfinity))})), r});
  }
  if (n == "chlo.bessel_i1e") {
    constexpr double kSeriesEnd = 15.0;
    constexpr int kTerms = 30;
    GValue a = MESHPLAN_TRY(op(K::abs, {x}));
    GValue y = MESHPLAN_TRY(
        op(K::multiply, {MESHPLAN_TRY(op(K::multiply, {x, x})), MESHPLAN_TRY(c(0.25))}));
    // 1 + y/(1*2) (1 + y/(2*3) (1 + ...)): nested, so no term's coefficient underflows.
    GValue p = MESHPLAN_TRY(c(1.0));
    for (int k = kTerms; k >= 1; --k) {
      p = MESHPLAN_TRY(op(K::multiply, {p, y}));
      p = MESHPLAN_TRY(op(K::multiply, {p, MESHPLAN_TRY(c(1.0 / (k * (k + 1.0))))}));
      p = MESHPLAN_TRY(op(K::add, {p, MESHPLAN_TRY(c(1.0))}));
    }
    GValue small = MESHPLAN_TRY(op(K::multiply, {MESHPLAN_TRY(op(K::multiply, {x, half})), p}));
    small = MESHPLAN_TRY(
        op(K::multiply, {small, MESHPLAN_TRY(op(K::exp, {MESHPLAN_TRY(op(K::neg, {a}))}))}));
    // (1 + sum_k b_k / a^k) / sqrt(2 pi a), b_k = prod_j (-(4 - (2j - 1)^2) / (8j)).
    std::array<double, 8> b{};
    double bk = 1.0;
    b[7] = 1.0;
    for (int k = 1; k < 8; ++k) {
      bk *= -(4.0 - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k);
      b[static_cast<size_t>(7 - k)] = bk;
    }
    GValue s = MESHPLAN_TRY(horner(e, MESHPLAN_TRY(op(K::reciprocal, {a})), b));
    GValue big = MESHPLAN_TRY(
        op(K::divide,
           {s, MESHPLAN_TRY(
                   op(K::sqrt, {MESHPLAN_TRY(op(K::multiply, {a, MESHPLAN_TRY(c(2 * kPi))}))}))}));
    GValue neg = MESHPLAN_TRY(op(K::lt, {x, MESHPLAN_TRY(c(0.0))}));
    big = MESHPLAN_TRY(op(K::where, {neg, MESHPLAN_TRY(op(K::neg, {big})), big}));
    GValue near = MESHPLAN_TRY(op(K::le, {a, MESHPLAN_TRY(c(kSeriesEnd))}));
    return op(K::where, {near, small, big});
  }
  return fail(ErrorCode::internal, "no decomposition for ", n);
}

}  // namespace

namespace {

/// chlo.next_after on f32: the neighbour of x's bit pattern toward y (the i32 word +-1, as the
/// format orders magnitudes), y when x == y, the smallest subnormal with y's sign from +-0, NaN
/// when either is NaN.
Status lower_next_after(Lowering& l, const Op& op) {
  using K = OpKind;
  if (op.operands.size() != 2 || op.results.size() != 1 ||
      !(l.type(op.operands[0]) == l.type(op.results[0])) ||
      !(l.type(op.operands[1]) == l.type(op.results[0])))
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": chlo.next_after takes two operands and has one result, all of one type");
  const std::string& el = l.type(op.operands[0]).element;
  if (el != "f32")
    return l.unimplemented(op, str("chlo.next_after of ", el,
                                   " (supported: f32, whose bit pattern the device holds)"));
  const std::vector<int64_t>& shape = l.type(op.operands[0]).shape;
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  GValue y = MESHPLAN_TRY(l.use(op.operands[1], op));
  Ew f{l, shape, DType::f32}, i{l, shape, DType::i32};
  auto bitcast = [&](GValue v, DType to) {
    return l.emit(K::bitcast, {v}, {{"dtype", std::string(device::dtype_name(to))}}, shape, to);
  };
  GValue zero = MESHPLAN_TRY(f.c(0.0));
  GValue up = MESHPLAN_TRY(
      f.op(K::eq, {MESHPLAN_TRY(f.op(K::gt, {y, x})), MESHPLAN_TRY(f.op(K::gt, {x, zero}))}));
  GValue step = MESHPLAN_TRY(l.emit(K::where, {up, MESHPLAN_TRY(i.c(1.0)), MESHPLAN_TRY(i.c(-1.0))},
                                    {}, shape, DType::i32));
  GValue bits = MESHPLAN_TRY(bitcast(x, DType::i32));
  GValue r = MESHPLAN_TRY(bitcast(MESHPLAN_TRY(i.op(K::add, {bits, step})), DType::f32));
  // From +-0: y's sign bit | 1.
  GValue tiny = MESHPLAN_TRY(i.op(
      K::bitwise_and, {MESHPLAN_TRY(bitcast(y, DType::i32)), MESHPLAN_TRY(i.c(-2147483648.0))}));
  tiny = MESHPLAN_TRY(
      bitcast(MESHPLAN_TRY(i.op(K::bitwise_or, {tiny, MESHPLAN_TRY(i.c(1.0))})), DType::f32));
  r = MESHPLAN_TRY(f.op(K::where, {MESHPLAN_TRY(f.op(K::eq, {x, zero})), tiny, r}));
  r = MESHPLAN_TRY(f.op(K::where, {MESHPLAN_TRY(f.op(K::eq, {x, y})), y, r}));
  r = MESHPLAN_TRY(f.op(K::where, {MESHPLAN_TRY(f.op(K::ne, {y, y})), y, r}));
  l.bind(op.results[0], r);
  return {};
}

}  // namespace

Status lower_chlo(Lowering& l, const Op& op) {
  if (op.name == "chlo.next_after") return lower_next_after(l, op);
  if (op.operands.size() != 1 || op.results.size() != 1 ||
      !(l.type(op.operands[0]) == l.type(op.results[0])))
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                " takes one operand and has one result of the operand's type");
  const std::string& el = l.type(op.operands[0]).element;
  if (el != "f32" && el != "bf16" && el != "f16" && el != "f64")
    return l.unimplemented(op, str(op.name, " of ", el, " (supported: float types)"));
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  const std::vector<int64_t>& shape = l.type(op.operands[0]).shape;
  const DType dt = l.graph().values[x].dtype;
  // Computed in f32 whatever the operand's width: the formulas' intermediate sums and
  // differences (1 - x, the Lanczos sum, ...) lose too much when rounded to bf16 at each step.
  auto cast = [&](GValue v, DType to) -> Result<GValue> {
    if (l.graph().values[v].dtype == to) return v;
    return l.emit(OpKind::typecast, {v}, {{"dtype", std::string(device::dtype_name(to))}}, shape,
                  to);
  };
  Ew e{l, shape, DType::f32};
  GValue xf = MESHPLAN_TRY(cast(x, DType::f32));
  GValue r =
      MESHPLAN_TRY(is_special(op.name) ? build_special(e, op.name, xf) : build(e, op.name, xf));
  l.bind(op.results[0], MESHPLAN_TRY(cast(r, dt)));
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
