// A scalar evaluator for the small regions the lowering recognises by what they compute on
// probe inputs (sort comparators, argmax/argmin and select/or reducers): constants, compare (with
// or without the IEEE total order), select, and/or/not, maximum/minimum.
#include <cmath>
#include <limits>
#include <map>

#include "import/stablehlo_lower_internal.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The last word of a keyword attribute (`#stablehlo<comparison_direction LT>` -> "LT").
std::string keyword(const Attr* a) {
  if (!a) return "";
  std::string s = a->text;
  if (auto sp = s.rfind(' '); sp != std::string::npos) s = s.substr(sp + 1);
  while (!s.empty() && (s.back() == '>' || s.back() == ')')) s.pop_back();
  return s;
}

/// `dir` applied with `lt` as the strict order (NaN: no direction holds).
double compare(const std::string& dir, bool lt, bool gt, bool eq) {
  return dir == "EQ"   ? eq
         : dir == "NE" ? !eq
         : dir == "LT" ? lt
         : dir == "LE" ? lt || eq
         : dir == "GT" ? gt
         : dir == "GE" ? gt || eq
                       : kNaN;
}

}  // namespace

bool total_lt(double a, double b) {
  // Place each value on a line: -NaN, numbers, +NaN; signed zeros apart.
  auto rank = [](double x) { return std::isnan(x) ? (std::signbit(x) ? -1 : 1) : 0; };
  if (rank(a) != rank(b)) return rank(a) < rank(b);
  if (std::isnan(a)) return false;
  if (a == b) return std::signbit(a) && !std::signbit(b);
  return a < b;
}

std::optional<std::vector<double>> eval_scalar_region(const Module& m, const Block& b,
                                                      std::span<const double> args,
                                                      bool total_order) {
  if (args.size() != b.args.size()) return std::nullopt;
  std::map<ValueId, double> env;
  for (size_t k = 0; k < args.size(); ++k) env[b.args[k]] = args[k];
  for (OpId o : b.ops) {
    const Op& op = m.ops[o];
    const std::string& n = op.name;
    if (n == "stablehlo.constant" || n == "sdy.constant") {
      const Attr* v = op.prop("value");
      if (!v || v->kind != Attr::Kind::dense || v->values.size() != 1 || op.results.size() != 1)
        return std::nullopt;
      env[op.results[0]] = v->values[0];
      continue;
    }
    std::vector<double> x;
    for (ValueId v : op.operands) {
      auto it = env.find(v);
      if (it == env.end()) return std::nullopt;
      x.push_back(it->second);
    }
    if (n == "stablehlo.return") return x;
    if (op.results.size() != 1) return std::nullopt;
    double r = 0;
    if (n == "stablehlo.compare" && x.size() == 2) {
      const std::string dir = keyword(op.prop("comparison_direction"));
      if (keyword(op.prop("compare_type")) == "TOTALORDER") {
        if (!total_order) return std::nullopt;
        bool lt = total_lt(x[0], x[1]), gt = total_lt(x[1], x[0]);
        r = compare(dir, lt, gt, !lt && !gt);
      } else {
        r = compare(dir, x[0]<x[1], x[0]> x[1], x[0] == x[1]);
      }
      if (std::isnan(r)) return std::nullopt;
    } else if (n == "stablehlo.select" && x.size() == 3) {
      r = x[0] != 0 ? x[1] : x[2];
    } else if (n == "stablehlo.and" && x.size() == 2) {
      r = x[0] != 0 && x[1] != 0;
    } else if (n == "stablehlo.or" && x.size() == 2) {
      r = x[0] != 0 || x[1] != 0;
    } else if (n == "stablehlo.not" && x.size() == 1) {
      r = x[0] == 0;
    } else if ((n == "stablehlo.maximum" || n == "stablehlo.minimum") && x.size() == 2) {
      r = std::isnan(x[0]) || std::isnan(x[1]) ? kNaN
          : n == "stablehlo.maximum"           ? std::max(x[0], x[1])
                                               : std::min(x[0], x[1]);
    } else {
      return std::nullopt;
    }
    env[op.results[0]] = r;
  }
  return std::nullopt;
}

std::optional<std::string> region_reduction(const Module& m, const Block& b) {
  if (b.args.size() != 2) return std::nullopt;
  const std::string& element = m.values[b.args[0]].type.element;
  if (m.values[b.args[1]].type.element != element || !m.values[b.args[0]].type.shape.empty())
    return std::nullopt;
  const bool boolean = element == "i1";
  // The evaluator reads and/or/not as logical ops: exact on i1 values only.
  for (OpId o : b.ops) {
    const Op& op = m.ops[o];
    const bool logical =
        op.name == "stablehlo.and" || op.name == "stablehlo.or" || op.name == "stablehlo.not";
    for (ValueId r : op.results)
      if ((logical || boolean) && m.values[r].type.element != "i1") return std::nullopt;
  }
  auto eval = [&](double x, double y) -> std::optional<double> {
    const double args[] = {x, y};
    auto r = eval_scalar_region(m, b, args, false);
    if (!r || r->size() != 1) return std::nullopt;
    return r->front();
  };
  if (boolean) {  // Two i1 arguments: the truth table is the whole function.
    int table = 0;
    for (int x = 0; x < 2; ++x)
      for (int y = 0; y < 2; ++y) {
        auto r = eval(x, y);
        if (!r || (*r != 0 && *r != 1)) return std::nullopt;
        table |= static_cast<int>(*r) << (2 * x + y);
      }
    if (table == 0b1000) return "stablehlo.and";
    if (table == 0b1110) return "stablehlo.or";
    return std::nullopt;
  }
  // Other types: the region must agree with maximum (or minimum) on every pair of probes,
  // NaN included (maximum and minimum propagate NaN; select(a > b, a, b) does not).
  const bool integer = element.front() == 'i' || element.front() == 'u' || element.front() == 's';
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const std::vector<double> probes =
      integer ? std::vector<double>{-7, -1, 0, 1, 2, 100}
              : std::vector<double>{-kInf, -3.5, -1, 0, 0.25, 1, 7, kInf, kNaN};
  for (const bool max : {true, false}) {
    bool all = true;
    for (double x : probes)
      for (double y : probes) {
        auto r = eval(x, y);
        const double want = std::isnan(x) || std::isnan(y) ? kNaN
                            : max                          ? std::max(x, y)
                                                           : std::min(x, y);
        if (!r || (std::isnan(want) ? !std::isnan(*r) : *r != want)) all = false;
      }
    if (all) return max ? "stablehlo.maximum" : "stablehlo.minimum";
  }
  return std::nullopt;
}

}  // namespace meshplan::planner::shlo::lowering
