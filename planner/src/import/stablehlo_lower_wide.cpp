// i64 and ui64 are computed in the device's 32-bit words (i32, u32). A value outside the word's
// range cannot be represented, so it is refused instead of wrapped: a folded value at lowering
// time (a located error), a computed one at run time. For each op whose 64-bit result can leave
// the 32-bit range (add, subtract, multiply, negate, abs, and convert into i64/ui64 from floats
// or from unsigned words), the lowering computes from the op's own operands and result a 0/1
// mask of the elements whose exact 64-bit value the word does not hold, reduces it to one
// value, and appends it as a plan output named `overflow:<op>@<file:line:col>`; the runtime
// fails a run in which one of them is nonzero (docs/formats.md, "Overflow outputs"). Sums and
// products (reduce, reduce_window, dot_general, convolution, scatter, select_and_scatter,
// power) get the same output from an f32 bound of their exact value (see Shadow below).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>

#include "import/stablehlo_lower_internal.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

bool is_wide(std::string_view e) {
  return e == "i64" || e == "ui64";
}

bool is_float(std::string_view e) {
  return e == "f32" || e == "f64" || e == "f16" || e == "bf16";
}

/// The graph op whose first result is `v` (searched from the newest op), or null.
const planner::Op* producer(Lowering& l, GValue v) {
  const auto& ops = l.graph().ops;
  for (size_t k = ops.size(); k-- > 0;)
    if (!ops[k].results.empty() && ops[k].results[0] == v) return &ops[k];
  return nullptr;
}

/// Emits elementwise ops on one result shape and dtype family.
struct Emitter {
  Lowering& l;
  std::vector<int64_t> shape;

  Result<GValue> op(OpKind kind, std::vector<GValue> in, DType dt) {
    return l.emit(kind, std::move(in), {}, shape, dt);
  }
  Result<GValue> scalar(float v, DType dt) {
    return l.constant(Folded{std::vector<int64_t>(shape.size(), 1), {v}}, dt);
  }
  DType dtype(GValue v) const { return l.graph().values[v].dtype; }
};

/// The 0/1 mask (shape of the result) of the elements of `op`'s result `r` (graph op `p`)
/// whose exact value leaves the 32-bit word; nullopt when none can.
Result<std::optional<GValue>> overflow_mask(Lowering& l, const Op& op, const planner::Op& p,
                                            GValue r) {
  const std::string& e = l.type(op.results[0]).element;
  const bool is_unsigned = e == "ui64";
  Emitter m{l, l.graph().values[r].shape};
  const DType dt = m.dtype(r);
  auto expect = [&](OpKind kind, size_t operands) -> Status {
    if (p.kind == kind && p.operands.size() == operands) return {};
    return l.unimplemented(
        op, str(op.name, " of ", e, " as meshplan lowers it here (its result is not one ",
                device::op_name(kind), " whose 32-bit overflow it can check)"));
  };
  const std::string& n = op.name;
  if (n == "stablehlo.add" || n == "stablehlo.subtract") {
    const bool add = n == "stablehlo.add";
    MESHPLAN_TRY(expect(add ? OpKind::add : OpKind::subtract, 2));
    GValue a = p.operands[0], b = p.operands[1];
    if (is_unsigned)  // a + b wrapped below a; a - b below zero when b > a.
      return std::optional(MESHPLAN_TRY(m.op(OpKind::lt, {add ? r : a, add ? a : b}, dt)));
    // Two's complement (Hacker's Delight 2-13): a + b overflows when both operands' signs
    // differ from the result's, a - b when a's sign differs from b's and from the result's.
    GValue s = MESHPLAN_TRY(m.op(OpKind::bitwise_xor, {a, r}, dt));
    GValue t = MESHPLAN_TRY(m.op(OpKind::bitwise_xor, {add ? b : a, add ? r : b}, dt));
    GValue both = MESHPLAN_TRY(m.op(OpKind::bitwise_and, {s, t}, dt));
    return std::optional(MESHPLAN_TRY(m.op(OpKind::lt, {both, MESHPLAN_TRY(m.scalar(0, dt))}, dt)));
  }
  if (n == "stablehlo.multiply") {
    MESHPLAN_TRY(expect(OpKind::multiply, 2));
    GValue a = p.operands[0], b = p.operands[1];
    // The wrapped product r is exact when a == 0 or r / a == b (truncating division), except
    // INT_MIN = -1 * INT_MIN, whose quotient INT_MIN / -1 wraps back to INT_MIN.
    // a and b may be broadcasting operands (of 1s in some dims): masks of one take its shape.
    const std::vector<int64_t> ones(m.shape.size(), 1);
    auto shape_of = [&](GValue x) { return device::broadcast_shapes(l.graph().values[x].shape, ones); };
    auto on = [&](GValue x, GValue c) -> Result<GValue> {
      return l.emit(OpKind::ne, {x, c}, {}, MESHPLAN_TRY(shape_of(x)), dt);
    };
    GValue zero = MESHPLAN_TRY(m.scalar(0, dt));
    GValue a_nonzero = MESHPLAN_TRY(on(a, zero));
    GValue q = MESHPLAN_TRY(m.op(OpKind::divide, {r, a}, dt));
    GValue q_differs = MESHPLAN_TRY(m.op(OpKind::ne, {q, b}, dt));
    GValue mask = MESHPLAN_TRY(m.op(OpKind::multiply, {a_nonzero, q_differs}, dt));
    if (is_unsigned) return std::optional(mask);
    auto equal = [&](GValue x, float c) -> Result<GValue> {
      return l.emit(OpKind::eq, {x, MESHPLAN_TRY(m.scalar(c, dt))}, {}, MESHPLAN_TRY(shape_of(x)),
                    dt);
    };
    GValue a_minus_one = MESHPLAN_TRY(equal(a, -1));
    GValue b_min = MESHPLAN_TRY(equal(b, -2147483648.0f));
    auto both = device::broadcast_shapes(MESHPLAN_TRY(shape_of(a)), MESHPLAN_TRY(shape_of(b)));
    if (!both) return std::unexpected(both.error());
    GValue special = MESHPLAN_TRY(l.emit(OpKind::multiply, {a_minus_one, b_min}, {}, *both, dt));
    return std::optional(MESHPLAN_TRY(m.op(OpKind::maximum, {mask, special}, dt)));
  }
  if (n == "stablehlo.negate" || n == "stablehlo.abs") {
    MESHPLAN_TRY(expect(n == "stablehlo.negate" ? OpKind::neg : OpKind::abs, 1));
    GValue zero = MESHPLAN_TRY(m.scalar(0, dt));
    if (is_unsigned)  // -x of a nonzero ui64 is 2^64 - x; abs is the identity.
      return n == "stablehlo.abs" ? std::optional<GValue>()
                                  : std::optional(MESHPLAN_TRY(m.op(OpKind::ne, {r, zero}, dt)));
    // Only INT_MIN overflows, and it stays INT_MIN: a negative abs, a negate equal to it.
    if (n == "stablehlo.abs") return std::optional(MESHPLAN_TRY(m.op(OpKind::lt, {r, zero}, dt)));
    return std::optional(
        MESHPLAN_TRY(m.op(OpKind::eq, {r, MESHPLAN_TRY(m.scalar(-2147483648.0f, dt))}, dt)));
  }
  if (n == "stablehlo.convert") {
    const std::string& from = l.type(op.operands[0]).element;
    if (is_float(from)) {
      MESHPLAN_TRY(expect(OpKind::typecast, 1));
      GValue x = p.operands[0];
      const DType ft = m.dtype(x);
      // Truncation toward zero leaves the word's range from 2^31 (2^32 unsigned) up and from
      // -2^31 - 1 (-1 unsigned) down.
      GValue hi = MESHPLAN_TRY(
          m.op(OpKind::ge,
               {x, MESHPLAN_TRY(m.scalar(is_unsigned ? 4294967296.0f : 2147483648.0f, ft))}, ft));
      GValue lo = MESHPLAN_TRY(
          m.op(is_unsigned ? OpKind::le : OpKind::lt,
               {x, MESHPLAN_TRY(m.scalar(is_unsigned ? -1.0f : -2147483648.0f, ft))}, ft));
      return std::optional(MESHPLAN_TRY(m.op(OpKind::maximum, {hi, lo}, ft)));
    }
    // An unsigned word of 2^31 or more is no i64 value the i32 word holds: the typecast's
    // reinterpreted word is negative.
    if (e == "i64" && from.starts_with("ui") && p.kind == OpKind::typecast)
      return std::optional(MESHPLAN_TRY(m.op(OpKind::lt, {r, MESHPLAN_TRY(m.scalar(0, dt))}, dt)));
    return std::nullopt;  // Signed or narrower integers, i1: exact.
  }
  return std::nullopt;
}

// Sums and products (reduce, reduce_window, dot_general, convolution, scatter, power).
// Wrapping add and multiply in 32-bit words are exact modulo 2^32, so such a result is right
// whenever its exact value fits the word, and wrong (wrapped) otherwise; its operands and its
// wrapped result do not tell which. The check recomputes the op's lowering alongside in f32:
// for each value the lowering computed from the op's operands it keeps T, the value in f32
// arithmetic, S, the same in absolute values (an upper bound of |exact|, of the sum of the
// absolute terms for a sum), and e, a bound in units of u = 2^-24 on the relative error:
// |T - exact| <= e·u·S and S >= (1 - e·u)·S_exact. An operand word read into f32 rounds once
// (e = 1); a + b, a - b: max(ea, eb) + 1; a * b: ea + eb + 1; a sum of n values: e + n (n - 1
// roundings in any order, and one more for an accumulator wider than f32); a product of n:
// n·e + n; an integer power: 2^14 (the exponent's effect on the base's rounding, b·u for
// b < 2^13, and the device's f32 power, assumed within 2^-11 relative; a base |a| >= 2 with
// b >= 2^13 is beyond f32 and flagged as infinite). These are first-order bounds, good to a
// factor (1 + e·u) while e·u <= 1/4 (larger e is refused at lowering), so the check doubles
// them: err = 2·e·u·S, and an element is flagged unless T + err < 2^31 and T - err > -2^31
// (2^32 and -1 for ui64; the lower bound only when a subtract or negate took part). An exact
// value outside the word then always fails the test (rounding is monotone and the bounds are
// f32 values), and so do infinities and NaNs (comparisons with NaN are false). The check is
// conservative: a result within err of the word's edge is refused although it may fit (the
// largest i64 result that always passes is 2^31 - 1 - err). Data movement (reshape, permute,
// slice, concat) and select (`where`) carry T and S along. An op that is not linear in a
// computed operand (a compare, max, min, a gather's index, a select's condition, a bit op,
// power) first checks that operand the same way against its own word's range (i32 or u32):
// passing, the word is the exact value, and what the op computes from it is exact; the op's
// overflow output is the or of all these tests. Any other op of the lowering that sees a
// computed value (a typecast, conv2d, whose f32 precision the device does not promise) is a
// located error: its 64-bit value cannot be bounded here.
struct Shadow {
  bool exact = true;  ///< Computed from the op's operands without add/multiply: no wrap.
  GValue t = 0, s = 0;
  double e = 0;
  bool signs = false;  ///< A subtract or negate took part (an unsigned value may go below 0).
};

class ShadowBuilder {
 public:
  ShadowBuilder(Lowering& l, const Op& op, size_t first, std::string element)
      : l_(l), op_(op), element_(std::move(element)) {
    const auto& ops = l.graph().ops;
    end_ = ops.size();
    for (size_t k = first; k < end_; ++k)
      for (GValue r : ops[k].results) producer_[r] = k;
  }

  Result<Shadow> of(GValue v) {
    if (auto it = memo_.find(v); it != memo_.end()) return it->second;
    auto p = producer_.find(v);
    if (p == producer_.end()) return Shadow{};        // an operand of the op (or a constant)
    const planner::Op o = l_.graph().ops[p->second];  // emitting below may move the ops
    std::vector<Shadow> in;
    bool all_exact = true;
    for (GValue x : o.operands) {
      in.push_back(MESHPLAN_TRY(of(x)));
      all_exact = all_exact && in.back().exact;
    }
    Shadow r = MESHPLAN_TRY(compute(o, in, all_exact));
    memo_[v] = r;
    return r;
  }

  /// The masks of the intermediate values checked so far (f32 0/1, each of its value's shape).
  const std::vector<GValue>& masks() const { return masks_; }

  /// The 0/1 mask (f32, shape of `v`) of the elements of `v` (shadow `sh`) whose exact value
  /// may lie outside the word: unless T + err < 2^31 and T - err > -2^31 (2^32 and -1
  /// unsigned; the lower test only when a subtract or negate took part), err = 2·e·u·S.
  Result<GValue> range_mask(GValue v, const Shadow& sh, bool is_unsigned) {
    constexpr double kMaxE = 4194304.0;  // e·u <= 1/4
    if (sh.e > kMaxE)
      return fail(
          ErrorCode::unimplemented, op_.loc.str(), ": unimplemented: ", op_.name, ": ", element_,
          " result may leave the 32-bit range it is computed in (the f32 bound meshplan "
          "checks it with would be too loose: ",
          static_cast<int64_t>(sh.e), " roundings, at most ", static_cast<int64_t>(kMaxE), ")");
    Emitter m{l_, l_.graph().values[v].shape};
    const DType f = DType::f32;
    // c = 2·e·u rounded up to an f32.
    const float c = std::nextafter(static_cast<float>(2.0 * sh.e * std::ldexp(1.0, -24)),
                                   std::numeric_limits<float>::infinity());
    GValue err = MESHPLAN_TRY(m.op(OpKind::multiply, {sh.s, MESHPLAN_TRY(m.scalar(c, f))}, f));
    GValue hi = MESHPLAN_TRY(m.op(OpKind::add, {sh.t, err}, f));
    GValue ok = MESHPLAN_TRY(
        m.op(OpKind::lt,
             {hi, MESHPLAN_TRY(m.scalar(is_unsigned ? 4294967296.0f : 2147483648.0f, f))}, f));
    if (!is_unsigned || sh.signs) {
      GValue lo = MESHPLAN_TRY(m.op(OpKind::subtract, {sh.t, err}, f));
      GValue ok_lo = MESHPLAN_TRY(m.op(
          OpKind::gt, {lo, MESHPLAN_TRY(m.scalar(is_unsigned ? -1.0f : -2147483648.0f, f))}, f));
      ok = MESHPLAN_TRY(m.op(OpKind::multiply, {ok, ok_lo}, f));
    }
    return m.op(OpKind::eq, {ok, MESHPLAN_TRY(m.scalar(0, f))}, f);
  }

  /// Makes the operands of `o` that a wrap may have changed exact for an op that is not
  /// linear in them (a compare, max, min, a gather index, a select's condition): each gets its
  /// own range test (its word's range: i32 or u32), and, passing it, is its exact value.
  Status checkpoint(const planner::Op& o, std::vector<Shadow>& in) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].exact) continue;
      const DType dt = l_.graph().values[o.operands[i]].dtype;
      if (dt != DType::i32 && dt != DType::u32) return unbounded(o);
      masks_.push_back(MESHPLAN_TRY(range_mask(o.operands[i], in[i], dt == DType::u32)));
      in[i] = Shadow{};
      memo_[o.operands[i]] = Shadow{};
    }
    return {};
  }

  /// T and S of an exact value: its word in f32 (one rounding) and the absolute value.
  Result<Shadow> materialize(GValue v, const Shadow& sh) {
    if (!sh.exact) return sh;
    Shadow r;
    r.exact = false;
    r.e = 1;
    r.t = v;
    if (l_.graph().values[v].dtype != DType::f32)
      r.t = MESHPLAN_TRY(f32(OpKind::typecast, {v}, v, {{"dtype", std::string("f32")}}));
    r.s = MESHPLAN_TRY(f32(OpKind::abs, {r.t}, v));
    return r;
  }

 private:
  Result<GValue> f32(OpKind kind, std::vector<GValue> in, GValue like,
                     std::vector<Attribute> attrs = {}) {
    return l_.emit(kind, std::move(in), std::move(attrs), l_.graph().values[like].shape,
                   DType::f32);
  }

  std::unexpected<Error> unbounded(const planner::Op& o) const {
    return fail(ErrorCode::unimplemented, op_.loc.str(), ": unimplemented: ", op_.name, ": ",
                element_,
                " result may leave the 32-bit range it is computed in (meshplan lowers it "
                "through ",
                device::op_name(o.kind), ", which it cannot bound the exact 64-bit value through)");
  }

  Result<Shadow> compute(const planner::Op& o, std::vector<Shadow>& in, bool all_exact) {
    const GValue res = o.results[0];
    switch (o.kind) {
      case OpKind::reshape:
      case OpKind::permute:
      case OpKind::slice:
      case OpKind::concat: {
        if (all_exact) return Shadow{};
        Shadow r{false, 0, 0, 0, false};
        std::vector<GValue> ts, ss;
        for (size_t i = 0; i < in.size(); ++i) {
          Shadow m = MESHPLAN_TRY(materialize(o.operands[i], in[i]));
          ts.push_back(m.t);
          ss.push_back(m.s);
          r.e = std::max(r.e, m.e);
          r.signs = r.signs || m.signs;
        }
        r.t = MESHPLAN_TRY(f32(o.kind, ts, res, o.attributes));
        r.s = MESHPLAN_TRY(f32(o.kind, ss, res, o.attributes));
        return r;
      }
      case OpKind::where: {
        if (!in[0].exact) {  // a condition from a computed value
          std::vector<Shadow> cond = {in[0]};
          planner::Op c = o;
          c.operands = {o.operands[0]};
          MESHPLAN_TRY(checkpoint(c, cond));
          in[0] = cond[0];
        }
        if (in[1].exact && in[2].exact) return Shadow{};
        Shadow a = MESHPLAN_TRY(materialize(o.operands[1], in[1]));
        Shadow b = MESHPLAN_TRY(materialize(o.operands[2], in[2]));
        Shadow r{false, 0, 0, std::max(a.e, b.e), a.signs || b.signs};
        r.t = MESHPLAN_TRY(f32(OpKind::where, {o.operands[0], a.t, b.t}, res));
        r.s = MESHPLAN_TRY(f32(OpKind::where, {o.operands[0], a.s, b.s}, res));
        return r;
      }
      case OpKind::reduce_max:
      case OpKind::reduce_min: {
        const auto& values = l_.graph().values;
        if (all_exact) return Shadow{};
        // Over one element (how a reshape to rank 0 is lowered): data movement.
        if (device::volume(values[o.operands[0]].shape) != device::volume(values[res].shape)) {
          MESHPLAN_TRY(checkpoint(o, in));
          return Shadow{};
        }
        Shadow a = MESHPLAN_TRY(materialize(o.operands[0], in[0]));
        return Shadow{false, MESHPLAN_TRY(f32(o.kind, {a.t}, res, o.attributes)),
                      MESHPLAN_TRY(f32(o.kind, {a.s}, res, o.attributes)), a.e, a.signs};
      }
      case OpKind::maximum:
      case OpKind::minimum:
      case OpKind::eq:
      case OpKind::ne:
      case OpKind::lt:
      case OpKind::le:
      case OpKind::gt:
      case OpKind::ge:
      case OpKind::embedding:
        MESHPLAN_TRY(checkpoint(o, in));
        return Shadow{};
      case OpKind::add:
      case OpKind::subtract:
      case OpKind::multiply: {
        Shadow a = MESHPLAN_TRY(materialize(o.operands[0], in[0]));
        Shadow b = MESHPLAN_TRY(materialize(o.operands[1], in[1]));
        Shadow r{false, 0, 0, 0, a.signs || b.signs || o.kind == OpKind::subtract};
        r.t = MESHPLAN_TRY(f32(o.kind, {a.t, b.t}, res));
        if (o.kind == OpKind::multiply) {
          r.s = MESHPLAN_TRY(f32(OpKind::multiply, {a.s, b.s}, res));
          r.e = a.e + b.e + 1;
        } else {
          r.s = MESHPLAN_TRY(f32(OpKind::add, {a.s, b.s}, res));
          r.e = std::max(a.e, b.e) + 1;
        }
        return r;
      }
      case OpKind::neg:
      case OpKind::abs: {
        Shadow a = MESHPLAN_TRY(materialize(o.operands[0], in[0]));
        Shadow r{false, MESHPLAN_TRY(f32(o.kind, {a.t}, res)), a.s, a.e,
                 a.signs || o.kind == OpKind::neg};
        return r;
      }
      case OpKind::reduce_sum:
      case OpKind::reduce_prod: {
        Shadow a = MESHPLAN_TRY(materialize(o.operands[0], in[0]));
        const double n =
            static_cast<double>(device::volume(l_.graph().values[o.operands[0]].shape)) /
            static_cast<double>(std::max<int64_t>(1, device::volume(l_.graph().values[res].shape)));
        Shadow r{false, MESHPLAN_TRY(f32(o.kind, {a.t}, res, o.attributes)),
                 MESHPLAN_TRY(f32(o.kind, {a.s}, res, o.attributes)),
                 o.kind == OpKind::reduce_sum ? a.e + n : n * a.e + n, a.signs};
        return r;
      }
      case OpKind::power: {
        MESHPLAN_TRY(checkpoint(o, in));
        Shadow a = MESHPLAN_TRY(materialize(o.operands[0], in[0]));
        Shadow b = MESHPLAN_TRY(materialize(o.operands[1], in[1]));
        Shadow r{false, MESHPLAN_TRY(f32(OpKind::power, {a.t, b.t}, res)),
                 MESHPLAN_TRY(f32(OpKind::power, {a.s, b.t}, res)), 16384, false};
        return r;
      }
      case OpKind::bitwise_and:
      case OpKind::bitwise_or:
      case OpKind::bitwise_xor:
      case OpKind::clamp:
      case OpKind::sign:
        MESHPLAN_TRY(checkpoint(o, in));
        return Shadow{};
      default:
        return unbounded(o);
    }
  }

  Lowering& l_;
  const Op& op_;
  std::string element_;
  size_t end_ = 0;
  std::map<GValue, size_t> producer_;
  std::map<GValue, Shadow> memo_;
  std::vector<GValue> masks_;
};

/// Whether a region of `op` (nested ones too) adds, subtracts or multiplies: a reduce,
/// reduce_window or scatter whose regions only select, compare, take max or min keeps the
/// values it is given (an argmax's index, a replacing scatter) and cannot leave the word.
bool region_computes(const Module& m, const Op& op) {
  for (const Block& b : op.regions)
    for (OpId k : b.ops) {
      const Op& o = m.ops[k];
      if (o.name == "stablehlo.add" || o.name == "stablehlo.subtract" ||
          o.name == "stablehlo.multiply" || region_computes(m, o))
        return true;
    }
  return false;
}

/// The 0/1 mask of the elements of the wide result `r` (graph value `g`) of a sum or product
/// `op` whose exact value may leave the word, or-ed with the masks of the intermediate values
/// the lowering checked on the way; nullopt when nothing the lowering computed can wrap.
Result<std::optional<GValue>> sum_overflow_mask(Lowering& l, const Op& op, size_t first, ValueId r,
                                                GValue g) {
  const bool is_unsigned = l.type(r).element == "ui64";
  ShadowBuilder b(l, op, first, l.type(r).element);
  Shadow sh = MESHPLAN_TRY(b.of(g));
  std::vector<GValue> masks = b.masks();
  if (!sh.exact) masks.push_back(MESHPLAN_TRY(b.range_mask(g, sh, is_unsigned)));
  if (masks.empty()) return std::nullopt;
  Emitter m{l, l.graph().values[g].shape};
  // One mask of the result's shape: the intermediate ones reduced to one element each.
  std::optional<GValue> any;
  for (GValue k : masks) {
    if (l.graph().values[k].shape != m.shape) {
      const int64_t n = device::volume(l.graph().values[k].shape);
      GValue flat = MESHPLAN_TRY(l.reshape(k, {1, n}));
      k = MESHPLAN_TRY(
          l.emit(OpKind::reduce_max, {flat}, {{"dims", std::vector<int64_t>{1}}}, {1}, DType::f32));
      k = MESHPLAN_TRY(l.reshape(k, std::vector<int64_t>(m.shape.size(), 1)));
    }
    any = any ? MESHPLAN_TRY(m.op(OpKind::maximum, {*any, k}, DType::f32)) : k;
  }
  return any;
}

}  // namespace

Status check_wide(Lowering& l, const Op& op, size_t first, std::vector<PendingOverflow>& pending) {
  static const std::set<std::string_view> kMayLeaveWord = {
      "stablehlo.add",    "stablehlo.subtract", "stablehlo.multiply",
      "stablehlo.negate", "stablehlo.abs",      "stablehlo.convert"};
  static const std::set<std::string_view> kSums = {"stablehlo.reduce",
                                                   "stablehlo.reduce_window",
                                                   "stablehlo.dot_general",
                                                   "stablehlo.dot",
                                                   "stablehlo.convolution",
                                                   "stablehlo.scatter",
                                                   "stablehlo.select_and_scatter",
                                                   "stablehlo.power"};
  const bool elementwise = kMayLeaveWord.contains(op.name) && op.results.size() == 1;
  if (!elementwise && !kSums.contains(op.name)) return {};
  if (!op.regions.empty() && !region_computes(l.module(), op)) return {};
  for (const ValueId r : op.results) {
    const std::string& e = l.type(r).element;
    if (!is_wide(e)) continue;
    if (const Folded* f = l.folded(r)) {
      const bool is_unsigned = e == "ui64";
      for (size_t i = 0; i < f->data.size(); ++i) {
        const double x = f->data[i];
        if (is_unsigned ? x < 0 || x > 4294967295.0 : x < -2147483648.0 || x > 2147483647.0)
          return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name, ": value ",
                      std::to_string(static_cast<int64_t>(x)), " of type ", e, " (element ", i,
                      ") is outside the range of ", is_unsigned ? "u32" : "i32",
                      ", the device dtype it is computed in");
      }
      continue;
    }
    std::optional<GValue> g = l.bound(r);
    if (!g) continue;
    std::optional<GValue> mask;
    if (elementwise) {
      const planner::Op* p = producer(l, *g);
      if (!p) continue;  // The result is an operand as it is (a convert to its own word dtype).
      const planner::Op produced = *p;  // emitting below may move the graph's ops
      mask = MESHPLAN_TRY(overflow_mask(l, op, produced, *g));
    } else {
      mask = MESHPLAN_TRY(sum_overflow_mask(l, op, first, r, *g));
    }
    if (!mask) continue;
    const auto shape = l.graph().values[*mask].shape;
    const DType dt = l.graph().values[*mask].dtype;
    const int64_t n = device::volume(shape);
    GValue flat = MESHPLAN_TRY(l.reshape(*mask, {1, n}));
    GValue any = MESHPLAN_TRY(
        l.emit(OpKind::reduce_max, {flat}, {{"dims", std::vector<int64_t>{1}}}, {1}, dt));
    pending.push_back(PendingOverflow{any, op.name, op.loc.str()});
  }
  return {};
}

Status add_overflow_outputs(Lowering& l, const std::vector<PendingOverflow>& pending) {
  Graph& g = l.graph();
  for (const PendingOverflow& o : pending) {
    g.values[o.flag].name = str("overflow:", o.op, "@", o.loc);
    g.outputs.push_back(o.flag);
  }
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
