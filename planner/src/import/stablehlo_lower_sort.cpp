// stablehlo.sort as JAX emits it (jnp.sort, jnp.argsort = sort of (x, iota), jnp.lexsort and
// lax.sort with several operands and num_keys, descending sorts with a GT comparator) and
// chlo.top_k. The comparator is recognised by what it computes on probe scalars: a
// lexicographic order on some operands, each ascending or descending, with JAX's canonicalising
// total order, a plain LT / GT or the IEEE total order (compare ... TOTALORDER). The lowering ranks
// every element against every other along the sort dim (stable: equal keys keep their order; NaN
// last ascending, first descending), turns the ranks into a permutation and reads every operand
// through embedding, so the moved values are copied bit for bit.
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

#include "import/stablehlo_lower_internal.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kSortPairs = int64_t{1} << 22;

/// One key of a lexicographic comparator: an operand and its direction. NaN sorts after every
/// number ascending and before every number descending (JAX's canonical total order; a plain
/// LT / GT leaves NaN unordered, and meshplan places it the same way); -0.0 equals +0.0.
struct SortKey {
  size_t operand = 0;
  bool descending = false;
  /// IEEE total order instead (chlo.top_k, whose decomposition compares GT with TOTALORDER):
  /// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
  bool total_order = false;
};

/// a before c on one key.
bool key_before(double a, double c, bool descending) {
  if (std::isnan(a) || std::isnan(c)) return descending ? !std::isnan(c) : !std::isnan(a);
  return descending ? a > c : a < c;
}

/// What the comparator computes on operands whose keys `prefix` are equal (value `tie` in both
/// arguments), operand `cand` taking (a, c) and every other operand (other, 1 - other).
std::optional<bool> probe(const Module& m, const Block& b, size_t operands,
                          const std::vector<SortKey>& prefix, std::optional<size_t> cand, double a,
                          double c, int other, double tie) {
  std::vector<double> in(2 * operands, 0.0);
  for (size_t k = 0; k < operands; ++k) {
    in[2 * k] = other;
    in[2 * k + 1] = 1 - other;
  }
  for (const SortKey& p : prefix) in[2 * p.operand] = in[2 * p.operand + 1] = tie;
  if (cand) {
    in[2 * *cand] = a;
    in[2 * *cand + 1] = c;
  }
  auto got = eval_scalar_region(m, b, in, true);
  if (!got || got->size() != 1) return std::nullopt;
  return (*got)[0] != 0;
}

/// The comparator as a lexicographic order on some of the operands, found key by key: with the
/// keys found so far equal, the next key is the operand whose values alone decide the result
/// (whatever the other operands hold); when every key is equal the comparator must say false
/// (a tie: the stable sort keeps the order). nullopt when it is not such an order.
std::optional<std::vector<SortKey>> lexicographic_keys(const Module& m, const Block& b,
                                                       const std::vector<bool>& floating) {
  const size_t operands = floating.size();
  if (b.args.size() != 2 * operands) return std::nullopt;
  std::vector<SortKey> keys;
  const std::vector<double> ties = {-1, 2};
  for (;;) {
    // All keys equal: a tie, whatever the other operands hold.
    bool tie = true;
    for (double t : ties)
      for (int other = 0; other < 2; ++other) {
        auto got = probe(m, b, operands, keys, std::nullopt, 0, 0, other, t);
        if (!got) return std::nullopt;
        tie &= !*got;
      }
    std::optional<SortKey> next;
    for (size_t k = 0; k < operands && !next; ++k) {
      bool used = false;
      for (const SortKey& p : keys) used |= p.operand == k;
      if (used) continue;
      std::vector<double> vals = {-2, -1, 0, 1, 2};
      if (floating[k]) vals = {-kNaN, -kInf, -1.5, -0.0, 0.0, 1.5, kInf, kNaN};
      for (bool desc : {false, true}) {
        bool canonical = true, plain = true, total = floating[k];
        for (double a : vals)
          for (double c : vals)
            for (int other = 0; other < 2; ++other)
              for (double t : ties) {
                // Equal keys leave the result to the later keys.
                const bool ordered = key_before(a, c, desc) || key_before(c, a, desc);
                const bool has_nan = std::isnan(a) || std::isnan(c);
                auto got = probe(m, b, operands, keys, k, a, c, other, t);
                if (!got) return std::nullopt;
                if (total) {  // The IEEE total order (a compare with TOTALORDER).
                  const bool t_before = desc ? total_lt(c, a) : total_lt(a, c);
                  if (t_before || (desc ? total_lt(a, c) : total_lt(c, a))) {
                    total &= *got == t_before;
                  } else {
                    auto same = probe(m, b, operands, keys, k, a, a, other, t);
                    if (!same) return std::nullopt;
                    total &= *got == *same;
                  }
                }
                if (!ordered && !has_nan) {
                  // Equal keys (-0.0 and +0.0 too) must leave the result to the later keys.
                  auto same = probe(m, b, operands, keys, k, a, a, other, t);
                  if (!same) return std::nullopt;
                  canonical &= *got == *same;
                  plain &= *got == *same;
                  continue;
                }
                if (ordered) canonical &= *got == key_before(a, c, desc);
                // A plain compare leaves NaN unordered: false both ways, whatever follows.
                plain &= has_nan ? !*got : *got == key_before(a, c, desc);
              }
        if (canonical || plain || total) {
          next = SortKey{k, desc, !canonical && !plain};
          break;
        }
      }
    }
    if (!next) return tie && !keys.empty() ? std::optional(keys) : std::nullopt;
    keys.push_back(*next);
    if (keys.size() == operands) return keys;
  }
}

/// Sorts `xs` (all of `shape`) along `dim` by `keys`, stably: ranks every element against every
/// other along the dim, turns the ranks into a permutation and reads every operand through
/// embedding (moved values are copied bit for bit). Returns the sorted operands.
Result<std::vector<GValue>> sort_values(Lowering& l, const std::vector<GValue>& xs,
                                        const std::vector<bool>& floating,
                                        const std::vector<int64_t>& shape, int64_t dim,
                                        const std::vector<SortKey>& keys) {
  const int64_t n = shape[static_cast<size_t>(dim)];
  const int64_t rows = device::volume(shape) / n;
  // Sort dim last, as [rows, n].
  std::vector<int64_t> perm, inverse(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    if (static_cast<int64_t>(d) != dim) perm.push_back(static_cast<int64_t>(d));
  perm.push_back(dim);
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  std::vector<int64_t> moved;
  for (int64_t p : perm) moved.push_back(shape[static_cast<size_t>(p)]);
  auto as_i = [&](GValue x) { return l.reshape(x, {rows, n, 1}); };
  auto as_j = [&](GValue x) { return l.reshape(x, {rows, 1, n}); };
  const std::vector<int64_t> cube = {rows, n, n};
  auto to_i32 = [&](GValue x) -> Result<GValue> {
    if (l.graph().values[x].dtype == DType::i32) return x;
    return l.emit(OpKind::typecast, {x}, {{"dtype", std::string("i32")}}, cube, DType::i32);
  };
  // before[m, i, j] = element j sorts before element i: the first key that differs decides,
  // NaN flags before values; all keys equal, position decides (stable).
  Folded tri{{1, n, n}, {}};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) tri.data.push_back(j < i ? 1.0f : 0.0f);
  GValue before = MESHPLAN_TRY(l.constant(tri, DType::i32));  // Broadcast over the rows.
  for (size_t q = keys.size(); q-- > 0;) {
    const SortKey& k = keys[q];
    GValue key = xs[k.operand];
    const DType kd = l.graph().values[key].dtype;
    key = MESHPLAN_TRY(l.reshape(MESHPLAN_TRY(l.permute(key, perm)), {rows, n}));
    GValue v = key;
    std::optional<GValue> nan;
    if (floating[k.operand]) {
      nan = MESHPLAN_TRY(l.emit(OpKind::ne, {key, key}, {}, {rows, n}, kd));
      v = MESHPLAN_TRY(l.emit(OpKind::where,
                              {*nan, MESHPLAN_TRY(l.constant(Folded{{1}, {0.0f}}, kd)), key}, {},
                              {rows, n}, kd));
    }
    const OpKind order = k.descending ? OpKind::gt : OpKind::lt;
    // One level of the key: j before i where u orders it first; equal u leaves it to `then`.
    auto level = [&](GValue u, DType ud, GValue then) -> Result<GValue> {
      GValue ui = MESHPLAN_TRY(as_i(u)), uj = MESHPLAN_TRY(as_j(u));
      GValue f = MESHPLAN_TRY(to_i32(MESHPLAN_TRY(l.emit(order, {uj, ui}, {}, cube, ud))));
      GValue e = MESHPLAN_TRY(to_i32(MESHPLAN_TRY(l.emit(OpKind::eq, {uj, ui}, {}, cube, ud))));
      e = MESHPLAN_TRY(l.emit(OpKind::multiply, {e, then}, {}, cube, DType::i32));
      return l.emit(OpKind::add, {f, e}, {}, cube, DType::i32);
    };
    if (nan && k.total_order) {
      const std::vector<int64_t> flat = {rows, n};
      auto ew = [&](OpKind op, std::vector<GValue> xs, DType dt) {
        return l.emit(op, std::move(xs), {}, flat, dt);
      };
      auto cast = [&](GValue x, DType to) -> Result<GValue> {
        if (l.graph().values[x].dtype == to) return x;
        return l.emit(OpKind::typecast, {x}, {{"dtype", std::string(device::dtype_name(to))}}, flat,
                      to);
      };
      auto ic = [&](float c) { return l.constant(Folded{{1}, {c}}, DType::i32); };
      // Sign bits (of NaN and of zero too) from the f32 words: s = 1 where the sign is set.
      GValue w = MESHPLAN_TRY(cast(key, DType::f32));
      w = MESHPLAN_TRY(
          l.emit(OpKind::bitcast, {w}, {{"dtype", std::string("i32")}}, flat, DType::i32));
      GValue sgn = MESHPLAN_TRY(ew(OpKind::lt, {w, MESHPLAN_TRY(ic(0))}, DType::i32));
      GValue flag = MESHPLAN_TRY(cast(*nan, DType::i32));
      // Class: +1 for +NaN, -1 for -NaN (flag * (1 - 2s)), 0 for numbers.
      GValue pm = MESHPLAN_TRY(
          ew(OpKind::subtract,
             {MESHPLAN_TRY(ic(1)), MESHPLAN_TRY(ew(OpKind::add, {sgn, sgn}, DType::i32))},
             DType::i32));
      GValue cls = MESHPLAN_TRY(ew(OpKind::multiply, {flag, pm}, DType::i32));
      // Zeros: +0 (1) above -0 (0); every other number 0 (its value already decides).
      GValue zero = MESHPLAN_TRY(cast(
          MESHPLAN_TRY(ew(OpKind::eq, {v, MESHPLAN_TRY(l.constant(Folded{{1}, {0.0f}}, kd))}, kd)),
          DType::i32));
      GValue plus = MESHPLAN_TRY(
          ew(OpKind::multiply,
             {zero, MESHPLAN_TRY(ew(OpKind::subtract, {MESHPLAN_TRY(ic(1)), sgn}, DType::i32))},
             DType::i32));
      before = MESHPLAN_TRY(level(plus, DType::i32, before));
      before = MESHPLAN_TRY(level(v, kd, before));
      before = MESHPLAN_TRY(level(cls, DType::i32, before));
      continue;
    }
    GValue vi = MESHPLAN_TRY(as_i(v)), vj = MESHPLAN_TRY(as_j(v));
    GValue first = MESHPLAN_TRY(to_i32(MESHPLAN_TRY(l.emit(order, {vj, vi}, {}, cube, kd))));
    GValue same = MESHPLAN_TRY(to_i32(MESHPLAN_TRY(l.emit(OpKind::eq, {vj, vi}, {}, cube, kd))));
    if (nan) {
      // NaN after every number ascending, before every number descending; NaNs are equal.
      GValue ni = MESHPLAN_TRY(as_i(*nan)), nj = MESHPLAN_TRY(as_j(*nan));
      GValue nfirst = MESHPLAN_TRY(to_i32(
          MESHPLAN_TRY(l.emit(k.descending ? OpKind::gt : OpKind::lt, {nj, ni}, {}, cube, kd))));
      GValue nsame = MESHPLAN_TRY(to_i32(MESHPLAN_TRY(l.emit(OpKind::eq, {nj, ni}, {}, cube, kd))));
      first = MESHPLAN_TRY(l.emit(OpKind::multiply, {nsame, first}, {}, cube, DType::i32));
      first = MESHPLAN_TRY(l.emit(OpKind::add, {nfirst, first}, {}, cube, DType::i32));
      same = MESHPLAN_TRY(l.emit(OpKind::multiply, {nsame, same}, {}, cube, DType::i32));
    }
    before = MESHPLAN_TRY(l.emit(OpKind::multiply, {same, before}, {}, cube, DType::i32));
    before = MESHPLAN_TRY(l.emit(OpKind::add, {first, before}, {}, cube, DType::i32));
  }
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
  std::vector<GValue> out;
  for (GValue x : xs) {
    const DType xd = l.graph().values[x].dtype;
    x = MESHPLAN_TRY(l.reshape(MESHPLAN_TRY(l.permute(x, perm)), {rows * n, 1}));
    GValue y = MESHPLAN_TRY(l.emit(OpKind::embedding, {src, x}, {}, {rows * n, 1}, xd));
    y = MESHPLAN_TRY(l.reshape(y, moved));
    out.push_back(MESHPLAN_TRY(l.permute(y, inverse)));
  }
  return out;
}

bool is_floating(const std::string& el) {
  return el.starts_with("f") || el == "bf16";
}

/// The refusal for sorts of more than kSortPairs compared pairs, or nullopt.
std::optional<std::string> too_large(const std::vector<int64_t>& shape, int64_t dim) {
  const int64_t n = shape[static_cast<size_t>(dim)];
  const int64_t rows = device::volume(shape) / n;
  if (rows * n > kSortPairs || n > kSortPairs / (rows * n))
    return str("of ", rows, " rows of ", n,
               " (meshplan compares every pair along the sort dim: at most ", kSortPairs,
               " pairs)");
  return std::nullopt;
}

}  // namespace

Status lower_sort(Lowering& l, const Op& op) {
  const Module& m = l.module();
  const size_t count = op.operands.size();
  auto refuse = [&](std::string_view why) {
    return l.unimplemented(op, str("stablehlo.sort ", why,
                                   " (supported: a comparator that orders lexicographically on "
                                   "some operands, each ascending or descending with LT / GT or "
                                   "JAX's total order, as jnp.sort / jnp.argsort / jnp.lexsort / "
                                   "lax.sort emit it)"));
  };
  if (count == 0 || op.results.size() != count || op.regions.size() != 1)
    return refuse("without operands, results and one comparator");
  const auto& shape = l.type(op.operands[0]).shape;
  std::vector<bool> floating;
  for (size_t k = 0; k < count; ++k) {
    if (l.type(op.operands[k]).shape != shape) return refuse("of operands of different shapes");
    floating.push_back(is_floating(l.type(op.operands[k]).element));
  }
  auto keys = lexicographic_keys(m, op.regions[0], floating);
  if (!keys) return refuse("whose comparator is not a lexicographic order on its operands");
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
  if (auto big = too_large(shape, dim)) return refuse(*big);
  std::vector<GValue> xs;
  for (ValueId v : op.operands) xs.push_back(MESHPLAN_TRY(l.use(v, op)));
  auto sorted = MESHPLAN_TRY(sort_values(l, xs, floating, shape, dim, *keys));
  for (size_t k = 0; k < count; ++k) l.bind(op.results[k], sorted[k]);
  return {};
}

namespace {

/// The k largest (or smallest) elements along the last dim and their indices, in that order;
/// equal values keep index order. `what` names the op in messages.
Status top_k(Lowering& l, const Op& op, std::string_view what, const Attr* ka, bool largest) {
  auto bad = [&](std::string_view why) {
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", what, ": ", why);
  };
  if (op.operands.size() != 1 || op.results.size() != 2)
    return bad("takes one operand and has two results (values, indices)");
  if (!ka) return bad("k is missing");
  if (ka->kind != Attr::Kind::integer) return bad("k is not an integer");
  const auto& shape = l.type(op.operands[0]).shape;
  if (shape.empty()) return bad("the operand has rank 0 (top_k works along the last dim)");
  const int64_t last = static_cast<int64_t>(shape.size()) - 1;
  const int64_t n = shape.back(), k = ka->i;
  if (k < 0 || k > n) return bad(str("k = ", k, " is outside [0, ", n, "]"));
  std::vector<int64_t> out = shape;
  out.back() = k;
  const std::string& el = l.type(op.operands[0]).element;
  if (l.type(op.results[0]).shape != out || l.type(op.results[1]).shape != out ||
      l.type(op.results[0]).element != el)
    return bad(str("the results are not two ", out.size(),
                   "-D tensors of the operand's shape "
                   "with k along the last dim"));
  const std::string& ix = l.type(op.results[1]).element;
  if (ix != "i32" && ix != "i64" && ix != "ui32")
    return bad(str("the indices are ", ix, " (expected i32)"));
  for (int64_t s : shape)
    if (s == 0 || k == 0)
      return l.unimplemented(op, str(what, " of a zero-size tensor or with k = 0"));
  if (auto big = too_large(shape, last)) return l.unimplemented(op, str(what, " ", *big));
  Folded idx{shape, {}};
  const int64_t total = device::volume(shape);
  idx.data.reserve(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) idx.data.push_back(static_cast<float>(i % n));
  std::vector<GValue> xs = {MESHPLAN_TRY(l.use(op.operands[0], op)),
                            MESHPLAN_TRY(l.constant(idx, DType::i32))};
  // Largest first (smallest first) in IEEE total order (+NaN first, -NaN last, +0 before -0,
  // or the reverse); equal values keep index order (the lower index first).
  auto sorted = MESHPLAN_TRY(
      sort_values(l, xs, {is_floating(el), false}, shape, last, {SortKey{0, largest, true}}));
  std::vector<int64_t> begins(shape.size(), 0), steps(shape.size(), 1);
  for (size_t r = 0; r < 2; ++r) {
    if (k == n) {
      l.bind(op.results[r], sorted[r]);
      continue;
    }
    const DType dt = l.graph().values[sorted[r]].dtype;
    l.bind(op.results[r],
           MESHPLAN_TRY(l.emit(OpKind::slice, {sorted[r]},
                               {{"begins", begins}, {"ends", out}, {"steps", steps}}, out, dt)));
  }
  return {};
}

}  // namespace

Status lower_top_k(Lowering& l, const Op& op) {
  const Attr* ka = op.prop("k");
  if (!ka) ka = op.attr("k");
  return top_k(l, op, "chlo.top_k", ka, true);
}

Status lower_mhlo_topk(Lowering& l, const Op& op) {
  const Attr* attrs = op.attr("mhlo.attributes");
  if (!attrs || attrs->kind != Attr::Kind::dict)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": custom_call @mhlo.topk: mhlo.attributes = {k = K, largest = B} is missing");
  const Attr* ka = nullptr;
  bool largest = true;  // XLA's TopK default
  for (const auto& [name, a] : attrs->dict) {
    if (name == "k") {
      ka = &a;
    } else if (name == "largest") {
      if (a.kind != Attr::Kind::boolean)
        return fail(ErrorCode::invalid_argument, op.loc.str(),
                    ": custom_call @mhlo.topk: largest is not true or false");
      largest = a.i != 0;
    } else {
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": custom_call @mhlo.topk: unknown "
                  "attribute '", name, "' in mhlo.attributes (it takes k and largest)");
    }
  }
  return top_k(l, op, "custom_call @mhlo.topk", ka, largest);
}

}  // namespace meshplan::planner::shlo::lowering
