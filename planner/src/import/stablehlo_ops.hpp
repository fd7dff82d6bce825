// Names of StableHLO's elementwise ops (without the "stablehlo." prefix), shared by the parser
// and the printer, which both use the short "op %a, %b : type" form for them (internal).
#pragma once

#include <string_view>

namespace meshplan::planner::shlo {

/// The inherent attribute (a unit) the sdy-propagation parse leaves on the dot_general a
/// `stablehlo.dot` becomes, so that the printer writes it back as `stablehlo.dot`, as Shardy's
/// passes print it.
inline constexpr std::string_view kWrittenAsDot = "meshplan.written_as_dot";

/// One-operand elementwise math ops.
inline bool is_elementwise_unary(std::string_view n) {
  static constexpr std::string_view kNames[] = {"abs",
                                                "negate",
                                                "exponential",
                                                "log",
                                                "sqrt",
                                                "rsqrt",
                                                "tanh",
                                                "logistic",
                                                "not",
                                                "floor",
                                                "ceil",
                                                "sine",
                                                "cosine",
                                                "sign",
                                                "exponential_minus_one",
                                                "log_plus_one",
                                                "round_nearest_even"};
  for (std::string_view k : kNames)
    if (n == k) return true;
  return false;
}

/// Two-operand elementwise ops.
inline bool is_elementwise_binary(std::string_view n) {
  static constexpr std::string_view kNames[] = {"add",     "subtract", "multiply", "divide",
                                                "maximum", "minimum",  "power",    "remainder",
                                                "and",     "or",       "xor",      "atan2"};
  for (std::string_view k : kNames)
    if (n == k) return true;
  return false;
}

/// chlo's elementwise ops that the lowering writes with device ops (hyperbolic and inverse
/// trigonometric functions, lgamma, digamma, erfc, erf_inv, bessel_i1e, next_after;
/// stablehlo_lower_chlo.cpp).
inline bool is_chlo_decomposed(std::string_view n) {
  static constexpr std::string_view kNames[] = {
      "chlo.sinh",    "chlo.cosh",  "chlo.tan",     "chlo.asin",       "chlo.acos",
      "chlo.atan",    "chlo.asinh", "chlo.acosh",   "chlo.atanh",      "chlo.lgamma",
      "chlo.digamma", "chlo.erfc",  "chlo.erf_inv", "chlo.bessel_i1e", "chlo.next_after"};
  for (std::string_view k : kNames)
    if (n == k) return true;
  return false;
}

}  // namespace meshplan::planner::shlo
