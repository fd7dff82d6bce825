// Integer bit ops on i64 and ui64, whose values the device holds in 32-bit words (i64
// sign-extended in i32, ui64 zero-extended in u32; a value beyond the word is refused, at lowering
// or at run time, by stablehlo_lower_wide.cpp). Two cases lower:
// - every operand folded: the op is evaluated exactly in 64 bits at lowering time, as the
//   StableHLO spec defines it (shift amounts of 64 or more, or negative, leave 0 for
//   shift_left and shift_right_logical and the sign fill for shift_right_arithmetic); a result
//   beyond the word is a located error, one f32 does not hold is built on the device exactly;
// - otherwise the ops whose 64-bit result is the word op's result on such values: and, or, xor
//   (sign or zero extension commutes with them), not of i64, shift_right_arithmetic of i64
//   (amounts from 32 on give the sign fill in both), shift_right_logical and
//   shift_right_arithmetic of ui64 (a zero-extended value has no sign bit: both are the word's
//   logical shift, 0 from 32 on). The others can leave the word (not of ui64, shift_left, a
//   logical shift of a negative i64) or count the 32 high bits (popcnt, count_leading_zeros)
//   and are refused, naming what lowers.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "import/stablehlo_lower_internal.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

/// The exact value of folded element `f` of an i64 (`is_unsigned` false) or ui64 operand: every
/// folded integer is f32-exact, except the word's largest value, which folds as 2^31 (2^32).
std::optional<int64_t> exact(float f, bool is_unsigned) {
  double v = f;
  if (!std::isfinite(v) || v != std::floor(v)) return std::nullopt;
  if (!is_unsigned && v == 2147483648.0) return 2147483647;
  if (is_unsigned && v == 4294967296.0) return 4294967295;
  if (is_unsigned ? (v < 0 || v > 4294967295.0) : (v < -2147483648.0 || v > 2147483647.0))
    return std::nullopt;
  return static_cast<int64_t>(v);
}

/// `n` applied to the 64-bit patterns `a` and `b` (b unused by the unary ops).
uint64_t evaluate(std::string_view n, uint64_t a, uint64_t b) {
  if (n == "stablehlo.and") return a & b;
  if (n == "stablehlo.or") return a | b;
  if (n == "stablehlo.xor") return a ^ b;
  if (n == "stablehlo.not") return ~a;
  if (n == "stablehlo.popcnt") return static_cast<uint64_t>(std::popcount(a));
  if (n == "stablehlo.count_leading_zeros") return static_cast<uint64_t>(std::countl_zero(a));
  if (n == "stablehlo.shift_left") return b >= 64 ? 0 : a << b;
  if (n == "stablehlo.shift_right_logical") return b >= 64 ? 0 : a >> b;
  // shift_right_arithmetic: the sign fill for amounts of 64 or more (b is the unsigned pattern,
  // so a negative amount is one of them).
  const int64_t s = static_cast<int64_t>(a);
  return static_cast<uint64_t>(b >= 64 ? (s < 0 ? -1 : 0) : s >> b);
}

Status fold_wide_bit_op(Lowering& l, const Op& op, const std::vector<const Folded*>& in) {
  const TensorType& rt = l.type(op.results[0]);
  const bool is_unsigned = rt.element == "ui64";
  const size_t size = static_cast<size_t>(device::volume(rt.shape));
  Folded out{rt.shape, {}};
  bool f32_exact = true;
  for (size_t i = 0; i < size; ++i) {
    uint64_t word[2] = {0, 0};
    for (size_t k = 0; k < in.size(); ++k) {
      const Folded& f = *in[k];
      if (f.data.size() != size && f.data.size() != 1)
        return l.unimplemented(op, str(op.name, " of a folded operand of ", f.data.size(),
                                       " values for a result of ", size));
      auto v = exact(f.data[f.data.size() == 1 ? 0 : i], is_unsigned);
      if (!v)
        return l.unimplemented(op, str(op.name, " on ", rt.element, " of operand ", k,
                                       " whose element ", i, " is not a ", rt.element,
                                       " value the device word holds"));
      word[k] = static_cast<uint64_t>(*v);
    }
    uint64_t r = evaluate(op.name, word[0], word[1]);
    // The exact result as a number of the result type.
    const bool fits = is_unsigned ? r <= 4294967295u
                                  : static_cast<int64_t>(r) >= -2147483648LL &&
                                        static_cast<int64_t>(r) <= 2147483647LL;
    if (!fits)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name, ": value ",
                  is_unsigned ? std::to_string(r) : std::to_string(static_cast<int64_t>(r)),
                  " of type ", rt.element, " (element ", i, ") is outside the range of ",
                  is_unsigned ? "u32" : "i32", ", the device dtype it is computed in");
    const double v = is_unsigned ? static_cast<double>(r)
                                 : static_cast<double>(static_cast<int64_t>(r));
    f32_exact = f32_exact && static_cast<double>(static_cast<float>(v)) == v;
    out.data.push_back(static_cast<float>(v));
  }
  if (f32_exact) {
    l.fold(op.results[0], std::move(out));
    return {};
  }
  // Some value f32 does not hold: built on the device as (w >> 16) << 16 | (w & 0xffff), both
  // halves f32-exact. Recomputed from the exact words.
  DType dt = MESHPLAN_TRY(dtype_of(rt, op.loc));
  Folded hi{rt.shape, {}}, lo{rt.shape, {}};
  for (size_t i = 0; i < size; ++i) {
    uint64_t word[2] = {0, 0};
    for (size_t k = 0; k < in.size(); ++k)
      word[k] = static_cast<uint64_t>(
          *exact(in[k]->data[in[k]->data.size() == 1 ? 0 : i], is_unsigned));
    const uint32_t w = static_cast<uint32_t>(evaluate(op.name, word[0], word[1]));
    hi.data.push_back(static_cast<float>(w >> 16));
    lo.data.push_back(static_cast<float>(w & 0xffffu));
  }
  GValue sixteen = MESHPLAN_TRY(
      l.constant(Folded{std::vector<int64_t>(rt.shape.size(), 1), {16.0f}}, dt));
  GValue h = MESHPLAN_TRY(
      l.emit(OpKind::shift_left, {MESHPLAN_TRY(l.constant(hi, dt)), sixteen}, {}, rt.shape, dt));
  l.bind(op.results[0], MESHPLAN_TRY(l.emit(OpKind::bitwise_or,
                                            {h, MESHPLAN_TRY(l.constant(lo, dt))}, {}, rt.shape,
                                            dt)));
  return {};
}

}  // namespace

Status lower_wide_bit_op(Lowering& l, const Op& op) {
  const std::string& n = op.name;
  const std::string& e = l.type(op.results[0]).element;
  std::vector<const Folded*> in;
  for (ValueId v : op.operands) in.push_back(l.folded(v));
  if (op.operands.size() <= 2 && std::ranges::all_of(in, [](const Folded* f) { return f; }))
    return fold_wide_bit_op(l, op, in);
  const bool is_unsigned = e == "ui64";
  const bool word_exact = n == "stablehlo.and" || n == "stablehlo.or" || n == "stablehlo.xor" ||
                          (n == "stablehlo.not" && !is_unsigned) ||
                          n == "stablehlo.shift_right_arithmetic" ||
                          (n == "stablehlo.shift_right_logical" && is_unsigned);
  if (!word_exact)
    return l.unimplemented(
        op, str(n, " on ", e, " of values known only at run time (on i64 and ui64, which the "
                              "device holds in 32-bit words, and, or, xor, not of i64, "
                              "shift_right_arithmetic, and shift_right_logical of ui64 lower; "
                              "every bit op of constants folds)"));
  OpKind kind = (n == "stablehlo.shift_right_arithmetic" && is_unsigned)
                    ? OpKind::shift_right_logical
                    : *device::op_from_stablehlo(n);
  std::vector<GValue> operands;
  for (ValueId v : op.operands) operands.push_back(MESHPLAN_TRY(l.use(v, op)));
  MESHPLAN_TRY(l.emit_for(op, kind, std::move(operands)));
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
