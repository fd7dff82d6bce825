// stablehlo.sort as JAX emits it (jnp.sort, jnp.argsort = sort of (x, iota), lax.sort with
// several operands): ascending on operand 0. The comparator is recognised by what it computes on
// probe scalars (JAX's canonicalising total order, or a plain LT). The lowering ranks every
// element against every other along the sort dim (stable: equal keys keep their order; NaN
// last), turns the ranks into a permutation and reads every operand through embedding, so the
// moved values are copied bit for bit.
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

#include "meshplan/device/op_semantics.hpp"
#include "stablehlo_lower_internal.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kSortPairs = int64_t{1} << 22;

std::string keyword(const Attr* a) {
  if (!a) return "";
  std::string s = a->kind == Attr::Kind::keyword ? a->text : a->text;
  if (auto sp = s.rfind(' '); sp != std::string::npos) s = s.substr(sp + 1);
  while (!s.empty() && (s.back() == '>' || s.back() == ')')) s.pop_back();
  return s;
}

/// a < b in IEEE total order (positive NaN above +inf, -0 below +0).
bool total_lt(double a, double b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  if (a == b) return std::signbit(a) && !std::signbit(b);
  return a < b;
}

/// The comparator region on scalars: its one result, or nullopt for an op it does not know.
std::optional<double> run_comparator(const Module& m, const Block& b,
                                     const std::vector<double>& in) {
  std::map<ValueId, double> env;
  for (size_t k = 0; k < in.size(); ++k) env[b.args[k]] = in[k];
  for (OpId o : b.ops) {
    const Op& op = m.ops[o];
    const std::string& n = op.name;
    if (n == "stablehlo.constant") {
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
    if (n == "stablehlo.return") return x.size() == 1 ? std::optional(x[0]) : std::nullopt;
    if (op.results.size() != 1) return std::nullopt;
    double r = 0;
    if (n == "stablehlo.compare" && x.size() == 2) {
      std::string dir = keyword(op.prop("comparison_direction"));
      if (keyword(op.prop("compare_type")) == "TOTALORDER") {
        bool lt = total_lt(x[0], x[1]), gt = total_lt(x[1], x[0]);
        r = dir == "EQ"   ? !lt && !gt
            : dir == "NE" ? lt || gt
            : dir == "LT" ? lt
            : dir == "LE" ? !gt
            : dir == "GT" ? gt
            : dir == "GE" ? !lt
                          : kNaN;
      } else {
        r = dir == "EQ"   ? x[0] == x[1]
            : dir == "NE" ? x[0] != x[1]
            : dir == "LT" ? x[0] < x[1]
            : dir == "LE" ? x[0] <= x[1]
            : dir == "GT" ? x[0] > x[1]
            : dir == "GE" ? x[0] >= x[1]
                          : kNaN;
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
    } else {
      return std::nullopt;
    }
    env[op.results[0]] = r;
  }
  return std::nullopt;
}

/// True when the comparator orders by operand 0 ascending, NaN last and -0 equal to +0 (JAX's
/// canonicalised total order), or is a plain LT on operand 0 (NaN unordered: placed last), and
/// ignores the other operands.
bool ascending_on_first(const Module& m, const Block& b, size_t operands, bool floating) {
  if (b.args.size() != 2 * operands) return false;
  std::vector<double> vals = {-2, -1, 0, 1, 2};
  if (floating) vals = {-kInf, -1.5, -0.0, 0.0, 1.5, kInf, kNaN};
  bool canonical = true, plain = true;
  for (double a : vals)
    for (double c : vals)
      for (int other = 0; other < 2; ++other) {
        std::vector<double> in(2 * operands, 0.0);
        in[0] = a;
        in[1] = c;
        for (size_t k = 1; k < operands; ++k) {
          in[2 * k] = other;
          in[2 * k + 1] = 1 - other;
        }
        auto got = run_comparator(m, b, in);
        if (!got) return false;
        bool want = std::isnan(a) ? false : std::isnan(c) ? true : a < c;
        canonical &= (*got != 0) == want;
        plain &= (*got != 0) == (a < c);
      }
  return canonical || plain;
}

}  // namespace

Status lower_sort(Lowering& l, const Op& op) {
  const Module& m = l.module();
  const size_t count = op.operands.size();
  auto refuse = [&](std::string_view why) {
    return l.unimplemented(op, str("stablehlo.sort ", why,
                                   " (supported: a comparator ordering operand 0 ascending, as "
                                   "jnp.sort / jnp.argsort / lax.sort emit it, with LT or JAX's "
                                   "total order; sort descending is sort then reverse)"));
  };
  if (count == 0 || op.results.size() != count || op.regions.size() != 1)
    return refuse("without operands, results and one comparator");
  const auto& shape = l.type(op.operands[0]).shape;
  for (size_t k = 1; k < count; ++k)
    if (l.type(op.operands[k]).shape != shape) return refuse("of operands of different shapes");
  const std::string& el = l.type(op.operands[0]).element;
  const bool floating = el.starts_with("f") || el == "bf16";
  if (!ascending_on_first(m, op.regions[0], count, floating))
    return refuse("whose comparator is not an ascending order on operand 0");
  const Attr* da = op.prop("dimension");
  if (!da) da = op.attr("dimension");
  int64_t dim = da ? da->i : -1;
  if (dim < 0) dim += static_cast<int64_t>(shape.size());
  if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.sort: dimension is not a dim of the operands");
  for (size_t k = 0; k < count; ++k)
    if (l.type(op.results[k]).shape != shape)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": stablehlo.sort: result ", k,
                  " has another shape than the operands");
  for (int64_t s : shape)
    if (s == 0) return refuse("of a zero-size tensor");
  const int64_t n = shape[static_cast<size_t>(dim)];
  const int64_t rows = device::volume(shape) / n;
  if (rows * n > kSortPairs || n > kSortPairs / (rows * n))
    return refuse(str("of ", rows, " rows of ", n,
                      " (meshplan compares every pair along the sort "
                      "dim: at most ",
                      kSortPairs, " pairs)"));
  // Sort dim last, as [rows, n].
  std::vector<int64_t> perm, inverse(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    if (static_cast<int64_t>(d) != dim) perm.push_back(static_cast<int64_t>(d));
  perm.push_back(dim);
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  std::vector<int64_t> moved;
  for (int64_t p : perm) moved.push_back(shape[static_cast<size_t>(p)]);
  GValue key = MESHPLAN_TRY(l.use(op.operands[0], op));
  const DType kd = l.graph().values[key].dtype;
  key = MESHPLAN_TRY(l.reshape(MESHPLAN_TRY(l.permute(key, perm)), {rows, n}));
  // before[m, i, j] = element j sorts before element i: NaN flags first, then values, then
  // position (stable).
  GValue v = key;
  std::optional<GValue> nan;
  if (floating) {
    nan = MESHPLAN_TRY(l.emit(OpKind::ne, {key, key}, {}, {rows, n}, kd));
    v = MESHPLAN_TRY(l.emit(OpKind::where,
                            {*nan, MESHPLAN_TRY(l.constant(Folded{{1}, {0.0f}}, kd)), key}, {},
                            {rows, n}, kd));
  }
  auto as_i = [&](GValue x) { return l.reshape(x, {rows, n, 1}); };
  auto as_j = [&](GValue x) { return l.reshape(x, {rows, 1, n}); };
  const std::vector<int64_t> cube = {rows, n, n};
  GValue vi = MESHPLAN_TRY(as_i(v)), vj = MESHPLAN_TRY(as_j(v));
  GValue lt = MESHPLAN_TRY(l.emit(OpKind::lt, {vj, vi}, {}, cube, kd));
  GValue eq = MESHPLAN_TRY(l.emit(OpKind::eq, {vj, vi}, {}, cube, kd));
  Folded tri{{1, n, n}, {}};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) tri.data.push_back(j < i ? 1.0f : 0.0f);
  GValue tie =
      MESHPLAN_TRY(l.emit(OpKind::multiply, {eq, MESHPLAN_TRY(l.constant(tri, kd))}, {}, cube, kd));
  GValue before = MESHPLAN_TRY(l.emit(OpKind::add, {lt, tie}, {}, cube, kd));
  if (nan) {
    GValue ni = MESHPLAN_TRY(as_i(*nan)), nj = MESHPLAN_TRY(as_j(*nan));
    GValue nlt = MESHPLAN_TRY(l.emit(OpKind::lt, {nj, ni}, {}, cube, kd));
    GValue neq = MESHPLAN_TRY(l.emit(OpKind::eq, {nj, ni}, {}, cube, kd));
    before = MESHPLAN_TRY(l.emit(OpKind::multiply, {neq, before}, {}, cube, kd));
    before = MESHPLAN_TRY(l.emit(OpKind::add, {nlt, before}, {}, cube, kd));
  }
  if (kd != DType::i32)
    before = MESHPLAN_TRY(
        l.emit(OpKind::typecast, {before}, {{"dtype", std::string("i32")}}, cube, DType::i32));
  GValue rank = MESHPLAN_TRY(l.emit(OpKind::reduce_sum, {before},
                                    {{"dims", std::vector<int64_t>{2}}, {"keepdim", true}},
                                    {rows, n, 1}, DType::i32));
  // source[m, r] = the i whose rank is r.
  Folded rs{{1, 1, n}, {}}, is{{1, n, 1}, {}}, base{{rows, 1}, {}};
  for (int64_t i = 0; i < n; ++i) {
    rs.data.push_back(static_cast<float>(i));
    is.data.push_back(static_cast<float>(i));
  }
  for (int64_t r = 0; r < rows; ++r) base.data.push_back(static_cast<float>(r * n));
  GValue at = MESHPLAN_TRY(
      l.emit(OpKind::eq, {rank, MESHPLAN_TRY(l.constant(rs, DType::i32))}, {}, cube, DType::i32));
  at = MESHPLAN_TRY(l.emit(OpKind::multiply, {at, MESHPLAN_TRY(l.constant(is, DType::i32))}, {},
                           cube, DType::i32));
  GValue src = MESHPLAN_TRY(l.emit(OpKind::reduce_sum, {at},
                                   {{"dims", std::vector<int64_t>{1}}, {"keepdim", false}},
                                   {rows, n}, DType::i32));
  src = MESHPLAN_TRY(l.emit(OpKind::add, {src, MESHPLAN_TRY(l.constant(base, DType::i32))}, {},
                            {rows, n}, DType::i32));
  src = MESHPLAN_TRY(l.reshape(src, {rows * n}));
  for (size_t k = 0; k < count; ++k) {
    GValue x = MESHPLAN_TRY(l.use(op.operands[k], op));
    const DType xd = l.graph().values[x].dtype;
    x = MESHPLAN_TRY(l.reshape(MESHPLAN_TRY(l.permute(x, perm)), {rows * n, 1}));
    GValue y = MESHPLAN_TRY(l.emit(OpKind::embedding, {src, x}, {}, {rows * n, 1}, xd));
    y = MESHPLAN_TRY(l.reshape(y, moved));
    l.bind(op.results[k], MESHPLAN_TRY(l.permute(y, inverse)));
  }
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
