// stablehlo.reduce_precision: rounds each value to a float format of E exponent and M mantissa
// bits. Exact where meshplan has the format: to a format every value already fits (the identity)
// and f32 to bf16's (8, 7), a round trip through bf16 (round to nearest even, as the spec says;
// overflow to infinity, NaN stays NaN). Other formats are refused.
#include "import/stablehlo_lower_internal.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

/// Exponent and mantissa bits of a float element type meshplan computes exactly, or {0, 0}.
std::pair<int64_t, int64_t> format_of(const std::string& el) {
  if (el == "f32") return {8, 23};
  if (el == "bf16") return {8, 7};
  return {0, 0};
}

int64_t int_of(const Op& op, const char* name) {
  const Attr* a = op.prop(name);
  if (!a) a = op.attr(name);
  return a ? a->i : -1;
}

}  // namespace

Status lower_reduce_precision(Lowering& l, const Op& op) {
  const int64_t e = int_of(op, "exponent_bits"), m = int_of(op, "mantissa_bits");
  if (op.operands.size() != 1 || op.results.size() != 1)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.reduce_precision takes one operand and has one result");
  if (e < 1 || m < 0)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.reduce_precision needs exponent_bits >= 1 and mantissa_bits >= 0");
  const std::string& el = l.type(op.operands[0]).element;
  auto [own_e, own_m] = format_of(el);
  if (own_e == 0)
    return l.unimplemented(
        op, str("stablehlo.reduce_precision of ", el, " (supported: f32 and bf16 operands)"));
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  if (e >= own_e && m >= own_m) {  // Every value fits: the identity.
    l.bind(op.results[0], x);
    return {};
  }
  if (el != "f32" || e != 8 || m != 7)
    return l.unimplemented(op, str("stablehlo.reduce_precision of ", el, " to e", e, "m", m,
                                   " (supported: f32 to e8m7, bf16's format, and formats "
                                   "the operand already fits)"));
  const auto& shape = l.type(op.operands[0]).shape;
  GValue b = MESHPLAN_TRY(
      l.emit(OpKind::typecast, {x}, {{"dtype", std::string("bf16")}}, shape, DType::bf16));
  MESHPLAN_TRY(l.emit_for(op, OpKind::typecast, {b}, {{"dtype", std::string("f32")}}));
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
