// i64 and ui64 are computed in the device's 32-bit words (i32, u32). A value outside the word's
// range cannot be represented, so it is refused instead of wrapped: a folded value at lowering
// time (a located error), a computed one at run time. For each op whose 64-bit result can leave
// the 32-bit range (add, subtract, multiply, negate, abs, and convert into i64/ui64 from floats
// or from unsigned words), the lowering computes from the op's own operands and result a 0/1
// mask of the elements whose exact 64-bit value the word does not hold, reduces it to one
// value, and appends it as a plan output named `overflow:<op>@<file:line:col>`; the runtime
// fails a run in which one of them is nonzero (docs/formats.md, "Overflow outputs").
#include <cmath>
#include <set>
#include <string_view>

#include "import/stablehlo_lower_internal.hpp"

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
    return l.unimplemented(op, str(op.name, " of ", e,
                                   " as meshplan lowers it here (its result is not one ",
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
    GValue zero = MESHPLAN_TRY(m.scalar(0, dt));
    GValue a_nonzero = MESHPLAN_TRY(m.op(OpKind::ne, {a, zero}, dt));
    GValue q = MESHPLAN_TRY(m.op(OpKind::divide, {r, a}, dt));
    GValue q_differs = MESHPLAN_TRY(m.op(OpKind::ne, {q, b}, dt));
    GValue mask = MESHPLAN_TRY(m.op(OpKind::multiply, {a_nonzero, q_differs}, dt));
    if (is_unsigned) return std::optional(mask);
    GValue a_minus_one = MESHPLAN_TRY(m.op(OpKind::eq, {a, MESHPLAN_TRY(m.scalar(-1, dt))}, dt));
    GValue b_min =
        MESHPLAN_TRY(m.op(OpKind::eq, {b, MESHPLAN_TRY(m.scalar(-2147483648.0f, dt))}, dt));
    GValue special = MESHPLAN_TRY(m.op(OpKind::multiply, {a_minus_one, b_min}, dt));
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
      GValue hi = MESHPLAN_TRY(m.op(
          OpKind::ge, {x, MESHPLAN_TRY(m.scalar(is_unsigned ? 4294967296.0f : 2147483648.0f, ft))},
          ft));
      GValue lo = MESHPLAN_TRY(
          m.op(is_unsigned ? OpKind::le : OpKind::lt,
               {x, MESHPLAN_TRY(m.scalar(is_unsigned ? -1.0f : -2147483648.0f, ft))}, ft));
      return std::optional(MESHPLAN_TRY(m.op(OpKind::maximum, {hi, lo}, ft)));
    }
    // An unsigned word of 2^31 or more is no i64 value the i32 word holds: the typecast's
    // reinterpreted word is negative.
    if (e == "i64" && from.starts_with("ui") && p.kind == OpKind::typecast)
      return std::optional(
          MESHPLAN_TRY(m.op(OpKind::lt, {r, MESHPLAN_TRY(m.scalar(0, dt))}, dt)));
    return std::nullopt;  // Signed or narrower integers, i1: exact.
  }
  return std::nullopt;
}

}  // namespace

Status check_wide(Lowering& l, const Op& op, std::vector<PendingOverflow>& pending) {
  static const std::set<std::string_view> kMayLeaveWord = {
      "stablehlo.add",    "stablehlo.subtract", "stablehlo.multiply",
      "stablehlo.negate", "stablehlo.abs",      "stablehlo.convert"};
  if (!kMayLeaveWord.contains(op.name) || op.results.size() != 1) return {};
  const ValueId r = op.results[0];
  const std::string& e = l.type(r).element;
  if (!is_wide(e)) return {};
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
    return {};
  }
  std::optional<GValue> g = l.bound(r);
  if (!g) return {};
  const planner::Op* p = producer(l, *g);
  if (!p) return {};  // The result is an operand as it is (a convert to its own word dtype).
  const planner::Op produced = *p;  // emitting below may move the graph's ops
  std::optional<GValue> mask = MESHPLAN_TRY(overflow_mask(l, op, produced, *g));
  if (!mask) return {};
  const auto shape = l.graph().values[*mask].shape;
  const DType dt = l.graph().values[*mask].dtype;
  const int64_t n = device::volume(shape);
  GValue flat = MESHPLAN_TRY(l.reshape(*mask, {1, n}));
  GValue any = MESHPLAN_TRY(
      l.emit(OpKind::reduce_max, {flat}, {{"dims", std::vector<int64_t>{1}}}, {1}, dt));
  pending.push_back(PendingOverflow{any, op.name, op.loc.str()});
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
