// Narrow integer types (i8, i16, ui8, ui16): computed in the device's 32-bit words and brought
// back to their own width after the ops that can leave it, so that they wrap modulo 2^8 / 2^16
// as StableHLO's integer arithmetic and integer-to-integer convert say; and f16, computed in f32,
// overflowing to infinity past its range.
#include <cmath>
#include <set>
#include <string_view>

#include "import/stablehlo_lower_internal.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

/// Bits and signedness of a narrow integer type; {0, false} for any other type.
std::pair<int, bool> narrow_width(std::string_view e) {
  if (e == "i8") return {8, true};
  if (e == "i16") return {16, true};
  if (e == "ui8") return {8, false};
  if (e == "ui16") return {16, false};
  return {0, false};
}

/// x (an integer held as a float) modulo 2^bits, as a two's complement value when `is_signed`.
/// Non-finite values (a float converted to an integer: the spec leaves it open) become 0.
float wrap_value(float x, int bits, bool is_signed) {
  if (!std::isfinite(x)) return 0.0f;
  const double m = std::ldexp(1.0, bits);
  double v = std::fmod(std::trunc(static_cast<double>(x)), m);
  if (v < 0) v += m;
  if (is_signed && v >= m / 2) v -= m;
  return static_cast<float>(v);
}

/// f16 is computed in f32: a result beyond f16's range (|x| >= 65520, which rounds past
/// 65504) becomes the infinity of its sign, as f16 arithmetic overflows.
Status overflow_f16(Lowering& l, const Op& op) {
  for (ValueId r : op.results) {
    if (l.type(r).element != "f16" || l.folded(r)) continue;
    std::optional<GValue> g = l.bound(r);
    if (!g) continue;
    const std::vector<int64_t> shape = l.graph().values[*g].shape;
    const DType dt = l.graph().values[*g].dtype;
    const std::vector<int64_t> one(shape.size(), 1);
    auto c = [&](float v) { return l.constant(Folded{one, {v}}, dt); };
    GValue big = MESHPLAN_TRY(
        l.emit(OpKind::ge,
               {MESHPLAN_TRY(l.emit(OpKind::abs, {*g}, {}, shape, dt)), MESHPLAN_TRY(c(65520))}, {},
               shape, dt));
    GValue inf =
        MESHPLAN_TRY(l.emit(OpKind::multiply, {*g, MESHPLAN_TRY(c(INFINITY))}, {}, shape, dt));
    l.bind(r, MESHPLAN_TRY(l.emit(OpKind::where, {big, inf, *g}, {}, shape, dt)));
  }
  return {};
}

}  // namespace

std::optional<std::pair<double, double>> narrow_range(std::string_view e) {
  auto [bits, is_signed] = narrow_width(e);
  if (bits == 0) return std::nullopt;
  const double m = std::ldexp(1.0, bits);
  return is_signed ? std::pair(-m / 2, m / 2 - 1) : std::pair(0.0, m - 1);
}

Status wrap_narrow(Lowering& l, const Op& op) {
  static const std::set<std::string_view> kMayLeaveRange = {"stablehlo.add",
                                                            "stablehlo.subtract",
                                                            "stablehlo.multiply",
                                                            "stablehlo.negate",
                                                            "stablehlo.abs",
                                                            "stablehlo.divide",
                                                            "stablehlo.power",
                                                            "stablehlo.convert",
                                                            "stablehlo.iota",
                                                            "stablehlo.reduce",
                                                            "stablehlo.reduce_window",
                                                            "stablehlo.dot_general",
                                                            "stablehlo.dot",
                                                            "stablehlo.convolution",
                                                            "stablehlo.scatter",
                                                            "stablehlo.select_and_scatter",
                                                            "stablehlo.not",
                                                            "stablehlo.shift_left",
                                                            "stablehlo.shift_right_logical",
                                                            "stablehlo.shift_right_arithmetic"};
  static const std::set<std::string_view> kMayOverflow = {"stablehlo.add",
                                                          "stablehlo.subtract",
                                                          "stablehlo.multiply",
                                                          "stablehlo.divide",
                                                          "stablehlo.power",
                                                          "stablehlo.exponential",
                                                          "stablehlo.exponential_minus_one",
                                                          "stablehlo.convert",
                                                          "stablehlo.reduce",
                                                          "stablehlo.reduce_window",
                                                          "stablehlo.dot_general",
                                                          "stablehlo.dot",
                                                          "stablehlo.convolution",
                                                          "stablehlo.scatter",
                                                          "stablehlo.tan",
                                                          "chlo.tan",
                                                          "chlo.sinh",
                                                          "chlo.cosh"};
  if (kMayOverflow.contains(op.name)) MESHPLAN_TRY(overflow_f16(l, op));
  if (!kMayLeaveRange.contains(op.name)) return {};
  for (ValueId r : op.results) {
    auto [bits, is_signed] = narrow_width(l.type(r).element);
    if (bits == 0) continue;
    if (const Folded* f = l.folded(r)) {
      Folded w = *f;
      for (float& x : w.data) x = wrap_value(x, bits, is_signed);
      l.fold(r, std::move(w));
      continue;
    }
    std::optional<GValue> g = l.bound(r);
    if (!g) continue;  // a pending broadcast of a wrapped value
    const planner::Value& v = l.graph().values[*g];
    const std::vector<int64_t> shape = v.shape;
    const DType dt = v.dtype;
    const std::vector<int64_t> one(shape.size(), 1);
    GValue x = *g;
    if (is_signed) {
      // The low bits moved to the top of the word and shifted back arithmetically: the sign
      // bit of the narrow type fills the word.
      GValue s = MESHPLAN_TRY(l.constant(Folded{one, {static_cast<float>(32 - bits)}}, dt));
      x = MESHPLAN_TRY(l.emit(OpKind::shift_left, {x, s}, {}, shape, dt));
      x = MESHPLAN_TRY(l.emit(OpKind::shift_right_arithmetic, {x, s}, {}, shape, dt));
    } else {
      GValue mask = MESHPLAN_TRY(
          l.constant(Folded{one, {static_cast<float>((uint32_t{1} << bits) - 1)}}, dt));
      x = MESHPLAN_TRY(l.emit(OpKind::bitwise_and, {x, mask}, {}, shape, dt));
    }
    l.bind(r, x);
  }
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
