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
#include <cmath>
#include <numbers>

#include "stablehlo_lower_internal.hpp"

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

}  // namespace

Status lower_chlo(Lowering& l, const Op& op) {
  if (op.operands.size() != 1 || op.results.size() != 1 ||
      !(l.type(op.operands[0]) == l.type(op.results[0])))
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                " takes one operand and has one result of the operand's type");
  const std::string& el = l.type(op.operands[0]).element;
  if (el != "f32" && el != "bf16" && el != "f16" && el != "f64")
    return l.unimplemented(op, str(op.name, " of ", el, " (supported: float types)"));
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  const auto& shape = l.type(op.operands[0]).shape;
  const DType dt = l.graph().values[x].dtype;
  // bf16 operands are computed in f32 and rounded once at the end (as XLA upcasts bf16
  // elementwise math): the decompositions' intermediates, rounded to bf16 each, lose the result
  // near their poles (atanh near +-1 divides by 1 - x).
  const DType compute = dt == DType::bf16 ? DType::f32 : dt;
  auto cast = [&](GValue v, DType to) -> Result<GValue> {
    if (l.graph().values[v].dtype == to) return v;
    return l.emit(OpKind::typecast, {v}, {{"dtype", std::string(device::dtype_name(to))}}, shape,
                  to);
  };
  Ew e{l, shape, compute};
  GValue r = MESHPLAN_TRY(build(e, op.name, MESHPLAN_TRY(cast(x, compute))));
  l.bind(op.results[0], MESHPLAN_TRY(cast(r, dt)));
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
