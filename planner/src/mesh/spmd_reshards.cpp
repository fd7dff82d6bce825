// Explicit reshards: each op's operands are resharded to one common factor sharding (Shardy's
// sdy-insert-explicit-reshards), partial sums along sharded reduction factors become
// sdy.all_reduce, and results placed otherwise than propagation decided are resharded after.
#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

#include "mesh/sharding_rules_shardy.hpp"
#include "mesh/spmd_reshard.hpp"
#include "mesh/spmd_reshards_mesh.hpp"
#include "mesh/spmd_reshards_partial.hpp"
#include "mesh/spmd_util.hpp"
#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

namespace {

using Axes = std::vector<AxisRef>;

/// One operand or result of an op seen through its factor rule: which factors it holds, the
/// axes each of them has now, and its global number of elements.
struct FactorTensor {
  std::vector<bool> has;
  std::vector<Axes> axes;
  int64_t elements = 0;
  bool scalar() const {
    return std::none_of(has.begin(), has.end(), [](bool b) { return b; });
  }
};

/// A full axis written as itself (`"x"`, not `"x":(1)2` of "x"=2), so that equal references
/// compare equal.
AxisRef canonical(const AxisMath& math, AxisRef a) {
  if (a.pre_size == 1 && a.size != 0 && a.size == math.mesh.axis_size(a.name)) a.size = 0;
  return a;
}

/// The leading part of `a` that shares no device with any of `others` (empty when none).
std::optional<AxisRef> prefix_without_overlap(const AxisMath& math, const AxisRef& a,
                                              const Axes& others) {
  int64_t keep = math.size(a);
  for (const AxisRef& o : others) {
    if (!math.overlaps(a, o)) continue;
    if (o.pre_size <= a.pre_size || o.pre_size % a.pre_size != 0) return std::nullopt;
    keep = std::min(keep, o.pre_size / a.pre_size);
  }
  if (keep <= 1) return std::nullopt;
  if (keep == math.size(a)) return a;
  return canonical(math, AxisRef{a.name, a.pre_size, keep});
}

/// Cuts `axes` at the first axis that shares devices with `others`, keeping that axis' leading
/// part that does not; true when anything was cut.
bool truncate_overlaps(const AxisMath& math, Axes& axes, const Axes& others) {
  for (size_t i = 0; i < axes.size(); ++i) {
    auto p = prefix_without_overlap(math, axes[i], others);
    if (p && *p == axes[i]) continue;
    axes.resize(i);
    if (p) axes.push_back(*p);
    return true;
  }
  return false;
}

/// `a` is a strict prefix of `b`: the same leading axes, the last of `a` possibly the leading
/// part of the matching axis of `b`.
bool strict_prefix(const AxisMath& math, const Axes& a, const Axes& b) {
  if (a.empty()) return !b.empty();
  if (a.size() > b.size()) return false;
  for (size_t i = 0; i + 1 < a.size(); ++i)
    if (!(a[i] == b[i])) return false;
  const AxisRef& x = a.back();
  const AxisRef& y = b[a.size() - 1];
  const bool leading = x.name == y.name && x.pre_size == y.pre_size &&
                       math.size(y) % math.size(x) == 0 && math.size(x) < math.size(y);
  return leading || (a.size() < b.size() && x == y);
}

bool axis_less(const AxisRef& a, const AxisRef& b) {
  return std::tie(a.name, a.pre_size, a.size) < std::tie(b.name, b.pre_size, b.size);
}

bool permutation(const std::vector<bool>& perm, size_t fi) {
  return fi < perm.size() && perm[fi];
}

/// A factor's candidate axes when no common factor sharding exists (see common_axes).
struct Candidate {
  size_t factor = 0;
  Axes axes;
  int64_t source_elements = 0;  ///< elements of the tensors that already hold these axes
  int precedence = 0;           ///< pass-through 3, reduction 2, permutation 1, needs replication 0
  int64_t split = 0;            ///< devices these axes add to the factor's current axes
};

bool candidate_less(const Candidate& a, const Candidate& b) {
  if (a.source_elements != b.source_elements) return a.source_elements < b.source_elements;
  if (a.precedence != b.precedence) return a.precedence < b.precedence;
  if (a.split != b.split) return a.split < b.split;
  if (a.factor != b.factor) return a.factor < b.factor;
  if (a.axes.size() != b.axes.size()) return a.axes.size() < b.axes.size();
  return std::lexicographical_compare(a.axes.begin(), a.axes.end(), b.axes.begin(), b.axes.end(),
                                      axis_less);
}

/// Every tensor holding a factor has the same axes for it, factors that need replication have
/// none and no axis serves two factors: those axes, else nullopt.
std::optional<std::vector<Axes>> compatible_axes(const AxisMath& math, const FactorRule& rule,
                                                 const std::vector<FactorTensor>& ts) {
  const size_t nf = rule.factor_sizes.size();
  std::vector<Axes> out(nf);
  Axes seen;
  for (size_t fi = 0; fi < nf; ++fi) {
    std::optional<Axes> common;
    for (const FactorTensor& t : ts) {
      if (!t.has[fi]) continue;
      if (!common) common = t.axes[fi];
      if (!(*common == t.axes[fi])) return std::nullopt;
    }
    if (!common || common->empty()) continue;
    if (rule.need_replication[fi]) return std::nullopt;
    for (const AxisRef& a : *common)
      for (const AxisRef& s : seen)
        if (math.overlaps(a, s)) return std::nullopt;
    seen.insert(seen.end(), common->begin(), common->end());
    out[fi] = *common;
  }
  return out;
}

/// Two non-scalar tensors, one factor per dim and none needing replication: the larger tensor
/// (then the more split one) keeps its sharding; the other's factors keep what does not clash.
std::vector<Axes> unary_axes(const AxisMath& math, const FactorRule& rule,
                             const std::vector<bool>& perm, const std::vector<FactorTensor>& ts,
                             size_t a, size_t b) {
  auto devices = [&](const FactorTensor& t) {
    int64_t n = 1;
    for (const Axes& x : t.axes) n *= math.product(x);
    return n;
  };
  // Shardy's preference: a tensor without sharded permutation factors, then the larger one,
  // then the more split one.
  auto unpermuted = [&](const FactorTensor& t) {
    for (size_t fi = 0; fi < t.axes.size(); ++fi)
      if (t.has[fi] && permutation(perm, fi) && !t.axes[fi].empty()) return false;
    return true;
  };
  if (std::tuple(unpermuted(ts[b]), ts[b].elements, devices(ts[b])) >
      std::tuple(unpermuted(ts[a]), ts[a].elements, devices(ts[a])))
    std::swap(a, b);
  std::vector<Axes> out(rule.factor_sizes.size());
  Axes kept;
  for (size_t fi = 0; fi < out.size(); ++fi)
    if (ts[a].has[fi]) {
      out[fi] = ts[a].axes[fi];
      kept.insert(kept.end(), out[fi].begin(), out[fi].end());
    }
  for (size_t fi = 0; fi < out.size(); ++fi)
    if (!ts[a].has[fi] && ts[b].has[fi]) {
      out[fi] = ts[b].axes[fi];
      truncate_overlaps(math, out[fi], kept);
    }
  return out;
}

/// Greedy choice: repeatedly give the factor the axes that the most elements already hold
/// (then pass-through before reduction factors, then more devices), dropping or cutting the
/// other candidates that clash with it. A factor is only split once every factor before it in
/// a dim is fully split (a dim's shards are contiguous ranges).
std::vector<Axes> greedy_axes(const AxisMath& math, const FactorRule& rule,
                              const std::vector<bool>& perm, const std::vector<FactorTensor>& ts) {
  const size_t nf = rule.factor_sizes.size();
  std::vector<std::vector<size_t>> waits(nf);  // factors that must be full first
  auto deps = [&](const std::vector<std::vector<int>>& dims) {
    for (const auto& dim : dims)
      for (size_t i = 1; i < dim.size(); ++i)
        waits[static_cast<size_t>(dim[i])].push_back(static_cast<size_t>(dim[i - 1]));
  };
  for (const auto& dims : rule.operands) deps(dims);
  for (const auto& dims : rule.results) deps(dims);
  std::vector<Candidate> cands;
  for (const FactorTensor& t : ts)
    for (size_t fi = 0; fi < nf; ++fi)
      for (Axes axes = t.axes[fi]; t.has[fi] && !axes.empty(); axes.pop_back()) {
        bool known = false;
        for (const Candidate& c : cands) known |= c.factor == fi && c.axes == axes;
        if (known) continue;
        Candidate c;
        c.factor = fi;
        c.axes = axes;
        c.precedence = rule.need_replication[fi] ? 0
                       : rule.reduction[fi]      ? 2
                       : permutation(perm, fi)   ? 1
                                                 : 3;
        c.split = math.product(axes);
        cands.push_back(c);
      }
  for (Candidate& c : cands)
    for (const FactorTensor& t : ts)
      if (t.has[c.factor] &&
          (t.axes[c.factor] == c.axes || strict_prefix(math, c.axes, t.axes[c.factor])))
        c.source_elements += t.elements;
  std::vector<Axes> chosen(nf);
  std::vector<bool> full(nf, false);
  auto ready = [&](size_t fi) {
    return std::all_of(waits[fi].begin(), waits[fi].end(), [&](size_t w) { return full[w]; });
  };
  while (!cands.empty()) {
    std::optional<size_t> best;
    for (size_t i = 0; i < cands.size(); ++i)
      if (ready(cands[i].factor) && (!best || candidate_less(cands[*best], cands[i]))) best = i;
    if (!best) break;
    const Candidate pick = cands[*best];
    chosen[pick.factor] = pick.axes;
    full[pick.factor] = math.product(pick.axes) == rule.factor_sizes[pick.factor];
    std::vector<Candidate> keep;
    for (Candidate c : cands) {
      if (c.factor == pick.factor) {
        if (!strict_prefix(math, pick.axes, c.axes)) continue;
        c.split = math.product(c.axes) / math.product(pick.axes);
      } else if (truncate_overlaps(math, c.axes, pick.axes)) {
        if (c.axes == chosen[c.factor]) continue;
        c.split = math.product(c.axes) / math.product(chosen[c.factor]);
      } else {
        c.split = math.product(c.axes);
      }
      keep.push_back(std::move(c));
    }
    cands = std::move(keep);
  }
  return chosen;
}

/// Axes chosen for factors that need replication move to the batching factors (pass-through
/// factors of every non-scalar tensor) where they divide what is left of the factor.
void distribute_to_batching(const AxisMath& math, const FactorRule& rule,
                            const std::vector<FactorTensor>& ts, std::vector<Axes>& fs) {
  const size_t nf = rule.factor_sizes.size();
  auto everywhere = [&](size_t fi) {
    return std::all_of(ts.begin(), ts.end(),
                       [&](const FactorTensor& t) { return t.scalar() || t.has[fi]; });
  };
  for (size_t r = 0; r < nf; ++r) {
    if (!rule.need_replication[r]) continue;
    Axes give = std::move(fs[r]);
    fs[r].clear();
    if (give.empty() || !everywhere(r)) continue;
    size_t next = 0;
    for (size_t fi = 0; fi < nf && next < give.size(); ++fi) {
      if (rule.need_replication[fi] || rule.reduction[fi] || !everywhere(fi)) continue;
      const int64_t size = rule.factor_sizes[fi];
      const int64_t split = math.product(fs[fi]);
      if (size == 0 || size % split != 0) continue;
      int64_t room = size / split;
      for (; next < give.size() && room % math.size(give[next]) == 0; ++next) {
        room /= math.size(give[next]);
        fs[fi].push_back(give[next]);
        fs[fi] = math.normalize(fs[fi]);
      }
    }
  }
}

/// The axes each factor of an op is split over, from what its operands and results hold:
/// their common sharding when they agree; else, for a unary op, the larger tensor's; else the
/// greedy choice above.
std::vector<Axes> common_axes(const AxisMath& math, const FactorRule& rule,
                              const std::vector<bool>& perm, const std::vector<FactorTensor>& ts) {
  if (auto same = compatible_axes(math, rule, ts)) return *same;
  std::vector<size_t> nonscalar;
  for (size_t i = 0; i < ts.size(); ++i)
    if (!ts[i].scalar()) nonscalar.push_back(i);
  const bool replication = std::any_of(rule.need_replication.begin(), rule.need_replication.end(),
                                       [](bool b) { return b; });
  bool multi = false;
  for (const auto* list : {&rule.operands, &rule.results})
    for (const auto& dims : *list)
      for (const auto& dim : dims) multi |= dim.size() > 1;
  if (nonscalar.size() == 2 && !replication && !multi)
    return unary_axes(math, rule, perm, ts, nonscalar[0], nonscalar[1]);
  std::vector<Axes> fs = greedy_axes(math, rule, perm, ts);
  if (replication) distribute_to_batching(math, rule, ts, fs);
  return fs;
}

// Shardy's reshape with overflow axes. Projecting a dim's axes onto its factors (major factor
// first) stops at a non-minor factor whose remaining size shares no divisor with the next
// (sub-)axis; the axes from there on are that factor's overflow axes and the later factors of
// the dim get nothing. A reshape whose operand or result has overflow axes takes all axes of
// the side split over more devices (in factor order, overflow included) and deals them out
// again on each side, axis by axis: each (sub-)axis goes to the first factor (in dim order)
// it shares a divisor with, split where it is larger than what the factor has left; an axis
// no factor can take, and every axis after it, overflows the side's last factor. The
// operand's and result's shardings built from those, projected again, agree on the longest
// common prefix of each factor's axes: the factor sharding the reshape runs with.

/// One factor's axes in one tensor: `present` when the tensor's projection reaches it.
struct OverflowFactor {
  bool present = false;
  Axes axes;
  Axes overflow;
};

/// Appends `a` to `axes`, merged with the last one when it is that axis' next sub-axis.
void push_merged(const AxisMath& math, Axes& axes, AxisRef a) {
  axes.push_back(a);
  axes = math.normalize(std::move(axes));
}

/// `axes` with every reference spelled as (pre-size, size), sizes resolved.
Axes resolved(const AxisMath& math, const Axes& axes) {
  Axes out;
  for (AxisRef a : axes) {
    a.size = math.size(a);
    out.push_back(a);
  }
  return out;
}

/// Shardy's projection of `s` onto the factors of `dims`, keeping overflow axes.
std::vector<OverflowFactor> project_with_overflow(const AxisMath& math, const FactorRule& rule,
                                                  const std::vector<std::vector<int>>& dims,
                                                  const TensorSharding& s) {
  std::vector<OverflowFactor> out(rule.factor_sizes.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    const Axes axes = d < s.dims.size() ? resolved(math, s.dims[d].axes) : Axes{};
    size_t next = 0;  // the next axis of `axes` after `piece`
    std::optional<AxisRef> piece;
    auto advance = [&] {
      piece = next < axes.size() ? std::optional<AxisRef>(axes[next]) : std::nullopt;
      ++next;
    };
    auto rest_into = [&](Axes& into) {
      for (; piece; advance()) push_merged(math, into, *piece);
    };
    advance();
    bool overflowed = false;
    for (size_t j = 0; j < dims[d].size(); ++j) {
      OverflowFactor& f = out[static_cast<size_t>(dims[d][j])];
      f.present = true;
      if (overflowed) break;
      if (j + 1 == dims[d].size()) {  // the minor-most factor takes the rest
        rest_into(f.axes);
        break;
      }
      int64_t left = rule.factor_sizes[static_cast<size_t>(dims[d][j])];
      while (piece) {
        if (piece->size == 1) {
          push_merged(math, f.axes, *piece);
          advance();
          continue;
        }
        const int64_t g = std::gcd(left, piece->size);
        if (g == 1) break;
        if (piece->size > g) {
          push_merged(math, f.axes, AxisRef{piece->name, piece->pre_size, g});
          piece->pre_size *= g;
          piece->size /= g;
          left /= g;
        } else {
          push_merged(math, f.axes, *piece);
          left /= piece->size;
          advance();
        }
      }
      if (left > 1 && piece) {
        overflowed = true;
        rest_into(f.overflow);
      }
    }
  }
  return out;
}

bool has_overflow(const std::vector<OverflowFactor>& fs) {
  return std::any_of(fs.begin(), fs.end(),
                     [](const OverflowFactor& f) { return !f.overflow.empty(); });
}

/// Deals `all` out over the factors of `dims` that `fs` reaches (see above).
void redistribute(const AxisMath& math, const FactorRule& rule,
                  const std::vector<std::vector<int>>& dims, std::vector<OverflowFactor>& fs,
                  const Axes& all) {
  std::vector<size_t> order;
  for (const auto& dim : dims)
    for (int f : dim)
      if (fs[static_cast<size_t>(f)].present) order.push_back(static_cast<size_t>(f));
  if (order.empty()) return;
  std::vector<int64_t> left;
  for (size_t f : order) {
    fs[f].axes.clear();
    fs[f].overflow.clear();
    left.push_back(rule.factor_sizes[f]);
  }
  const Axes pieces = resolved(math, all);
  size_t next = 0;
  std::optional<AxisRef> piece;
  auto advance = [&] {
    piece = next < pieces.size() ? std::optional<AxisRef>(pieces[next]) : std::nullopt;
    ++next;
  };
  advance();
  while (piece) {
    bool used = false;
    for (size_t i = 0; i < order.size() && piece; ++i) {
      if (left[i] <= 1) continue;
      const int64_t g = std::gcd(left[i], piece->size);
      if (g == 1 && piece->size != 1) continue;
      used = true;
      Axes& into = fs[order[i]].axes;
      if (piece->size > g) {
        push_merged(math, into, AxisRef{piece->name, piece->pre_size, g});
        piece->pre_size *= g;
        piece->size /= g;
        left[i] /= g;
      } else {
        push_merged(math, into, *piece);
        left[i] /= piece->size;
        advance();
        break;
      }
    }
    if (!used) {
      for (Axes& into = fs[order.back()].overflow; piece; advance()) push_merged(math, into, *piece);
    }
  }
}

/// The sharding of a tensor of `dims` built from its factors' axes (Shardy's
/// createTensorShardingAttr): a dim takes its factors' axes major first, up to and including
/// the first factor that is not fully split or that overflows.
TensorSharding sharding_from(const AxisMath& math, const FactorRule& rule,
                             const std::vector<std::vector<int>>& dims,
                             const std::vector<OverflowFactor>& fs, const std::string& mesh) {
  TensorSharding s = replicated_sharding(mesh, dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    Axes& into = s.dims[d].axes;
    for (int f32 : dims[d]) {
      const OverflowFactor& f = fs[static_cast<size_t>(f32)];
      for (const AxisRef& a : f.axes) push_merged(math, into, a);
      if (!f.overflow.empty()) {
        for (const AxisRef& a : f.overflow) push_merged(math, into, a);
        break;
      }
      if (math.product(f.axes) < rule.factor_sizes[static_cast<size_t>(f32)]) break;
    }
  }
  return s;
}

/// The longest common prefix of two axis lists; where they first differ, the smaller of two
/// references that start the same sub-range of one axis is kept.
Axes common_prefix(const AxisMath& math, const Axes& a, const Axes& b) {
  Axes out;
  const Axes ra = resolved(math, a), rb = resolved(math, b);
  for (size_t i = 0; i < ra.size() && i < rb.size(); ++i) {
    if (ra[i] == rb[i]) {
      out.push_back(ra[i]);
      continue;
    }
    if (ra[i].name == rb[i].name && ra[i].pre_size == rb[i].pre_size) {
      const int64_t small = std::min(ra[i].size, rb[i].size);
      const int64_t large = std::max(ra[i].size, rb[i].size);
      if (large % small == 0) out.push_back(AxisRef{ra[i].name, ra[i].pre_size, small});
    }
    break;
  }
  return out;
}

/// The factor sharding a reshape runs with when its operand or result has overflow axes, or
/// nullopt when neither has any.
std::optional<std::vector<Axes>> reshape_overflow_axes(const AxisMath& math,
                                                       const FactorRule& rule,
                                                       const TensorSharding& in,
                                                       const TensorSharding& out) {
  if (rule.operands.size() != 1 || rule.results.size() != 1) return std::nullopt;
  const auto& in_dims = rule.operands[0];
  const auto& out_dims = rule.results[0];
  std::vector<OverflowFactor> ins = project_with_overflow(math, rule, in_dims, in);
  std::vector<OverflowFactor> outs = project_with_overflow(math, rule, out_dims, out);
  if (!has_overflow(ins) && !has_overflow(outs)) return std::nullopt;
  auto devices = [&](const std::vector<OverflowFactor>& fs) {
    int64_t n = 1;
    for (const OverflowFactor& f : fs) n *= math.product(f.axes) * math.product(f.overflow);
    return n;
  };
  const std::vector<OverflowFactor>& best = devices(ins) >= devices(outs) ? ins : outs;
  Axes all;
  for (const OverflowFactor& f : best) {
    if (!f.present) continue;
    all.insert(all.end(), f.axes.begin(), f.axes.end());
    all.insert(all.end(), f.overflow.begin(), f.overflow.end());
  }
  redistribute(math, rule, in_dims, ins, all);
  redistribute(math, rule, out_dims, outs, all);
  const std::vector<OverflowFactor> legal_in =
      project_with_overflow(math, rule, in_dims, sharding_from(math, rule, in_dims, ins, in.mesh));
  const std::vector<OverflowFactor> legal_out = project_with_overflow(
      math, rule, out_dims, sharding_from(math, rule, out_dims, outs, in.mesh));
  std::vector<Axes> fs(rule.factor_sizes.size());
  for (size_t f = 0; f < fs.size(); ++f) {
    if (legal_in[f].present && legal_out[f].present)
      fs[f] = common_prefix(math, legal_in[f].axes, legal_out[f].axes);
    else if (legal_in[f].present)
      fs[f] = legal_in[f].axes;
    else if (legal_out[f].present)
      fs[f] = legal_out[f].axes;
    for (AxisRef& a : fs[f]) a = canonical(math, a);
    fs[f] = math.normalize(fs[f]);
  }
  return fs;
}

}  // namespace

/// Axes in mesh order, adjacent sub-axes merged.
Axes mesh_order(const AxisMath& math, Axes axes) {
  auto rank = [&](const AxisRef& a) {
    for (size_t i = 0; i < math.mesh.axes.size(); ++i)
      if (math.mesh.axes[i].first == a.name) return std::pair(i, a.pre_size);
    return std::pair(math.mesh.axes.size(), a.pre_size);
  };
  std::sort(axes.begin(), axes.end(),
            [&](const AxisRef& a, const AxisRef& b) { return rank(a) < rank(b); });
  return math.normalize(std::move(axes));
}

/// `from` without the devices of `minus`: an axis partly covered by a sub-axis of `minus`
/// keeps the sub-axes around it (`{"x", "y"}` without `{"x":(1)2}` of "x"=4: `{"x":(2)2, "y"}`).
Axes axes_minus(const AxisMath& math, const Axes& from, const Axes& minus) {
  Axes out;
  for (const AxisRef& whole : from) {
    // Pieces of the axis as ranges [pre-size, pre-size * size) of its device index.
    std::vector<std::pair<int64_t, int64_t>> pieces = {
        {whole.pre_size, whole.pre_size * math.size(whole)}};
    for (const AxisRef& b : minus) {
      if (b.name != whole.name) continue;
      const int64_t b0 = b.pre_size, b1 = b.pre_size * math.size(b);
      std::vector<std::pair<int64_t, int64_t>> left;
      for (auto [p0, p1] : pieces) {
        if (b1 <= p0 || p1 <= b0) {
          left.emplace_back(p0, p1);
          continue;
        }
        if (p0 < b0) left.emplace_back(p0, b0);
        if (b1 < p1) left.emplace_back(b1, p1);
      }
      pieces = std::move(left);
    }
    for (auto [p0, p1] : pieces)
      if (p1 > p0 && p1 % p0 == 0) out.push_back(canonical(math, AxisRef{whole.name, p0, p1 / p0}));
  }
  return out;
}

namespace {


/// A mesh of one device and no axes (`<[], device_ids=[3]>`): Shardy's maximal mesh, which
/// places a whole tensor on that device alone.
bool maximal(const Module& m, const std::string& name) {
  const MeshDecl* d = m.mesh(name);
  return d && d->axes.empty() && d->device_ids.size() == 1;
}

bool is_token(const Module& m, ValueId v) {
  return m.values[v].type.element == kTokenType;
}

bool fully_replicated(const TensorSharding& s) {
  return s.unreduced.empty() && std::all_of(s.dims.begin(), s.dims.end(),
                                            [](const DimSharding& d) { return d.axes.empty(); });
}

}  // namespace

std::string global_mesh_name(const Module& m) {
  for (const MeshDecl& d : m.meshes)
    if (!d.axes.empty() && !maximal(m, d.name)) return d.name;
  return {};
}

Status insert_explicit_reshards(Module& m) {
  return insert_explicit_reshards(m, global_mesh_name(m), false);
}

Status insert_explicit_reshards_on(Module& m, const std::function<bool(OpId)>& only) {
  return insert_explicit_reshards(m, global_mesh_name(m), true, only);
}

Status insert_explicit_reshards(Module& m, const std::string& global, bool shardy_rules,
                                const std::function<bool(OpId)>& only) {
  Func* f = m.entry();
  const MeshDecl* mesh = m.main_mesh();
  if (!f || !mesh || has_manual_computation(m, *f)) return {};
  // A whole function's inputs and outputs live on the mesh, never on one device.
  for (size_t i = 0; i < f->args.size(); ++i)
    if (auto s = m.values[f->args[i].value].sharding; s && maximal(m, s->mesh))
      return fail(ErrorCode::invalid_argument, f->loc.str(), ": function @", f->name, " argument ",
                  i, " cannot have a single-device (maximal) sharding @", s->mesh);
  for (size_t i = 0; i < f->results.size(); ++i)
    if (const auto& s = f->results[i].sharding; s && maximal(m, s->mesh))
      return fail(ErrorCode::invalid_argument, f->loc.str(), ": function @", f->name, " result ", i,
                  " cannot have a single-device (maximal) sharding @", s->mesh);
  AxisMath math{*mesh};
  std::vector<OpId>* out = nullptr;  // the block being rewritten
  std::vector<ValueId> remap(m.values.size());
  for (ValueId v = 0; v < remap.size(); ++v) remap[v] = v;
  // Values already moved off a mesh of another device layout (plans), per block and target.
  std::map<std::tuple<const std::vector<OpId>*, ValueId, std::string>, ValueId> moved;
  // Block arguments of a while's regions have the sharding of the while's result they carry.
  std::map<ValueId, TensorSharding> arg_sharding;
  auto stated = [&](ValueId v) -> std::optional<TensorSharding> {
    if (auto it = arg_sharding.find(v); it != arg_sharding.end()) return it->second;
    return sharding_of(m, v);
  };
  auto current = [&](ValueId v) {
    auto s = stated(v);
    return s ? *s : replicated_sharding(mesh->name, m.values[v].type.shape.size());
  };
  auto reshard = [&](ValueId v, const TensorSharding& to, Location loc) {
    OpId r = m.add_op("sdy.reshard", {v}, {m.values[v].type}, loc);
    m.ops[r].sharding = to;
    out->push_back(r);
    remap.resize(m.values.size());
    remap.back() = static_cast<ValueId>(m.values.size() - 1);
    return m.ops[r].results[0];
  };
  // Partial sums (unreduced axes) are summed before a use that does not keep them unreduced:
  // an sdy.all_reduce over the axes its user (`keep(k)` for operand k) does not keep, the
  // value's dims and the other unreduced axes staying as they are.
  auto reduce_unreduced = [&](OpId o, auto keep) {
    for (size_t k = 0; k < m.ops[o].operands.size(); ++k) {
      ValueId v = m.ops[o].operands[k];
      TensorSharding s = current(v);
      Axes reduce = axes_minus(math, math.without_trivial(s.unreduced), keep(k));
      if (reduce.empty()) continue;
      OpId ar = m.add_op("sdy.all_reduce", {v}, {m.values[v].type}, m.ops[o].loc);
      m.ops[ar].reduce_axes = mesh_order(math, reduce);
      if (!s.unreduced_kind.empty())
        m.ops[ar].set_prop("reduction", Attr::keyword(s.unreduced_kind));
      s.unreduced = axes_minus(math, math.without_trivial(s.unreduced), reduce);
      for (auto& d : s.dims) d.open = false, d.priority = -1;
      m.ops[ar].sharding = s;
      out->push_back(ar);
      remap.resize(m.values.size());
      m.ops[o].operands[k] = remap.back() = m.ops[ar].results[0];
    }
  };
  // Blocks being rewritten, outermost first: their ops so far and their arguments.
  std::vector<std::pair<std::vector<OpId>*, std::vector<ValueId>>> open;
  // Puts reshard `r` right after the op defining `v` (at the start of the block whose argument
  // it is) among the finished regions of data-flow op `host` and the blocks being rewritten.
  auto insert_after = [&](ValueId v, OpId r, OpId host) {
    const OpId def = m.values[v].def;
    auto place = [&](std::vector<OpId>& ops, const std::vector<ValueId>& args) {
      if (def == kNone) {
        if (std::find(args.begin(), args.end(), v) == args.end()) return false;
        ops.insert(ops.begin(), r);
        return true;
      }
      auto at = std::find(ops.begin(), ops.end(), def);
      if (at == ops.end()) return false;
      ops.insert(at + 1, r);
      return true;
    };
    for (Block& b : m.ops[host].regions)
      if (place(b.ops, b.args)) return;
    for (auto it = open.rbegin(); it != open.rend(); ++it)
      if (place(*it->first, it->second)) return;
    out->insert(std::find(out->begin(), out->end(), host), r);
  };
  // Shardy's data-flow edge: the use `k` of `user` (an edge source) gets the sharding of the
  // edge's owner (its fully closed replicated form when the owner states none and the source
  // is sharded), through a reshard placed right after the source.
  auto reshard_source = [&](OpId host, OpId user, size_t k,
                            const std::optional<TensorSharding>& target) {
    const ValueId v = m.ops[user].operands[k];
    if (is_token(m, v)) return;
    const std::optional<TensorSharding> have = stated(v);
    bool same = false;
    if (!target)
      same = !have || fully_replicated(*have);
    else if (!have)
      same = fully_replicated(*target);
    else
      same = have->mesh == target->mesh && same_placement(math, *have, *target);
    if (same) return;
    TensorSharding to = target ? *target : replicated_sharding(have->mesh, have->dims.size());
    const OpId r = m.add_op("sdy.reshard", {v}, {m.values[v].type}, m.ops[user].loc);
    m.ops[r].sharding = to;
    remap.resize(m.values.size());
    remap.back() = m.ops[r].results[0];
    m.ops[user].operands[k] = m.ops[r].results[0];
    insert_after(v, r, host);
  };
  // Rewrites the ops of the function body (owner kNone) or of region `region` of `owner`.
  auto run_block = [&](auto& self, OpId owner, size_t region) -> Status {
    std::vector<OpId> ops = owner == kNone ? f->body.ops : m.ops[owner].regions[region].ops;
    std::vector<ValueId> args;
    if (owner == kNone)
      for (const ArgInfo& a : f->args) args.push_back(a.value);
    else
      args = m.ops[owner].regions[region].args;
    std::vector<OpId> rewritten;
    std::vector<OpId>* outer = out;
    out = &rewritten;
    open.emplace_back(&rewritten, args);
    for (OpId o : ops) {
      for (ValueId& v : m.ops[o].operands) v = remap[v];
      if (only && !only(o)) {  // an op the caller leaves as it is
        out->push_back(o);
        continue;
      }
      if (m.ops[o].name == "stablehlo.return") {  // a region's terminator: see data-flow ops
        out->push_back(o);
        continue;
      }
      const std::string name = m.ops[o].name;
      if (name == "stablehlo.while" || name == "stablehlo.case" || name == "stablehlo.if" ||
          name == "stablehlo.optimization_barrier") {
        // Data-flow ops: each result owns an edge whose sources (the while's operand and the
        // value its body yields, each branch's yield, the barrier's operand) get its sharding;
        // the regions' own ops are rewritten first.
        const Op op = m.ops[o];
        auto owner_sharding = [&](size_t k) -> std::optional<TensorSharding> {
          if (k < op.shardings.size()) return op.shardings[k];
          return std::nullopt;
        };
        if (name == "stablehlo.while")
          for (const Block& b : op.regions)
            for (size_t k = 0; k < b.args.size() && k < op.results.size(); ++k)
              if (auto s = owner_sharding(k)) arg_sharding[b.args[k]] = *s;
        for (size_t i = 0; i < op.regions.size(); ++i) MESHPLAN_TRY(self(self, o, i));
        out->push_back(o);
        auto yield = [&](size_t i) -> OpId {
          if (i >= m.ops[o].regions.size() || m.ops[o].regions[i].ops.empty()) return kNone;
          const OpId t = m.ops[o].regions[i].ops.back();
          return m.ops[t].name == "stablehlo.return" ? t : kNone;
        };
        for (size_t k = 0; k < op.results.size(); ++k) {
          const auto target = owner_sharding(k);
          if (name == "stablehlo.optimization_barrier" || name == "stablehlo.while")
            if (k < m.ops[o].operands.size()) reshard_source(o, o, k, target);
          for (size_t i = name == "stablehlo.while" ? 1 : 0; i < m.ops[o].regions.size(); ++i) {
            if (name == "stablehlo.optimization_barrier") break;
            const OpId t = yield(i);
            if (t != kNone && k < m.ops[t].operands.size()) reshard_source(o, t, k, target);
          }
        }
        continue;
      }
      if (m.ops[o].name == "func.return") {
        // Results keep the partial sums their declared sharding keeps.
        reduce_unreduced(o, [&](size_t k) {
          const auto& want = k < f->results.size() ? f->results[k].sharding : std::nullopt;
          return want ? want->unreduced : Axes{};
        });
      } else if (m.ops[o].name != "stablehlo.constant") {
        // An op keeps the partial sums its (first) result keeps; a reshard what its target keeps.
        const Op& op = m.ops[o];
        Axes keep;
        if (op.sharding)
          keep = op.sharding->unreduced;
        else if (!op.results.empty())
          keep = current(op.results[0]).unreduced;
        reduce_unreduced(o, [&](size_t) { return keep; });
      }
      Op op = m.ops[o];  // a copy: reshard() below grows m.ops
      if (op.name == "func.return") {
        for (size_t k = 0; k < op.operands.size(); ++k) {
          const auto& want = f->results[k].sharding;
          ValueId v = op.operands[k];
          // Shardy: a result on another mesh (other axes or device order) is not where the
          // value is, whatever its dims say (unless both are replicated); a result stating no sharding is replicated, so a
          // sharded value is resharded to the fully closed replicated sharding of its mesh.
          const std::optional<TensorSharding> have = stated(v);
          bool other_mesh = false;
          if (shardy_rules && want && have && want->mesh != have->mesh &&
              !(fully_replicated(*want) && fully_replicated(*have))) {
            const MeshDecl* a = m.mesh(want->mesh);
            const MeshDecl* b = m.mesh(have->mesh);
            other_mesh = a && b && (a->axes != b->axes || a->device_ids != b->device_ids);
          }
          if (want && (other_mesh || !same_placement(math, current(v), *want))) {
            ValueId nv = reshard(v, *want, op.loc);
            m.ops[o].operands[k] = nv;
          } else if (shardy_rules && !want && have && !fully_replicated(*have) && !is_token(m, v)) {
            m.ops[o].operands[k] =
                reshard(v, replicated_sharding(have->mesh, have->dims.size()), op.loc);
          }
        }
        out->push_back(o);
        continue;
      }
      // An op with a result on a maximal mesh runs on that one device: its operands go there
      // through the global mesh replicated, its results come back replicated on the global mesh
      // (then to the result's own sharding when that is not single-device).
      std::string single;
      for (const TensorSharding& s : op.shardings) {
        if (!maximal(m, s.mesh)) continue;
        if (!single.empty() &&
            m.mesh(single)->device_ids.front() != m.mesh(s.mesh)->device_ids.front())
          return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                      " has conflicting single-device result shardings @", single, " and @",
                      s.mesh);
        single = s.mesh;
      }
      // Plans do not place values on one device (the per-device program has no such value).
      if (!single.empty() && !shardy_rules)
        return fail(ErrorCode::unimplemented, op.loc.str(), ": ", op.name,
                    " has a single-device (maximal) sharding on @", single,
                    "; plans do not support maximal meshes (the sdy-insert-explicit-reshards "
                    "stage shows the reshards Shardy inserts for it)");
      if (!single.empty() && !global.empty()) {
        const TensorSharding on_device{single, {}, {}, {}, {}};
        for (size_t k = 0; k < op.operands.size(); ++k) {
          ValueId v = op.operands[k];
          if (is_token(m, v)) continue;
          const auto have = sharding_of(m, v);
          const TensorSharding now =
              have ? *have : replicated_sharding(global, m.values[v].type.shape.size());
          if (now.mesh == single && fully_replicated(now)) continue;
          if (!(fully_replicated(now) && now.mesh == global))
            v = reshard(v, replicated_sharding(global, m.values[v].type.shape.size()), op.loc);
          m.ops[o].operands[k] = reshard(v, on_device, op.loc);
        }
        out->push_back(o);
        m.ops[o].shardings.resize(op.results.size(), on_device);
        for (size_t k = 0; k < op.results.size(); ++k) {
          const ValueId r = op.results[k];
          if (is_token(m, r)) {
            m.ops[o].shardings[k] = TensorSharding{global, {}, {}, {}, {}};
            continue;
          }
          const TensorSharding replicated =
              replicated_sharding(global, m.values[r].type.shape.size());
          const TensorSharding target = k < op.shardings.size() && !maximal(m, op.shardings[k].mesh)
                                            ? op.shardings[k]
                                            : replicated;
          m.ops[o].shardings[k] = on_device;
          ValueId last = reshard(r, replicated, op.loc);
          if (!(target == replicated)) last = reshard(last, target, op.loc);
          remap[r] = last;
        }
        continue;
      }
      // Sharding ops, constants and collectives written in the program keep what they have.
      const bool written_collective =
          op.name == "stablehlo.all_gather" || op.name == "stablehlo.all_reduce" ||
          op.name == "stablehlo.reduce_scatter" || op.name == "stablehlo.all_to_all" ||
          op.name == "stablehlo.collective_permute";
      // (Inside a partial manual computation's body they carry a rule along the free axes.)
      if (op.sharding || op.name == "stablehlo.constant" ||
          (written_collective && !op.attr("sdy.sharding_rule")) || shardy_skips_op(m, op)) {
        out->push_back(o);
        continue;
      }
      // Plans (not Shardy's pass, which leaves them) first bring an operand on a mesh that lays
      // the devices out otherwise to its counterpart on the module's mesh (the same pieces,
      // held by other devices; replicated when none is); the op's factor shardings then apply.
      if (!shardy_rules)
        for (size_t k = 0; k < op.operands.size(); ++k) {
          const ValueId v = m.ops[o].operands[k];
          const TensorSharding now = current(v);
          const MeshDecl* own = m.mesh(now.mesh);
          if (!own || own == mesh || maximal(m, now.mesh) ||
              (own->axes == mesh->axes && own->device_ids == mesh->device_ids))
            continue;
          auto there = mesh_counterpart(*mesh, *own, now, op.loc.str());
          const TensorSharding to = there && now.unreduced.empty()
                                        ? *there
                                        : replicated_sharding(mesh->name, now.dims.size());
          const auto key = std::make_tuple(out, v, sharding_string(to));
          if (auto it = moved.find(key); it != moved.end()) {
            op.operands[k] = it->second;
          } else {
            op.operands[k] = reshard(v, to, op.loc);
            moved[key] = op.operands[k];
          }
          m.ops[o].operands[k] = op.operands[k];
        }
      // Shardy's stage computes the op on one of the meshes its shardings name, and leaves it
      // as it is when they name meshes of other axes (shardy_op_mesh); plans compute it on the
      // module's mesh, where the operands were brought above.
      const MeshDecl* on = mesh;
      if (shardy_rules) {
        std::vector<std::optional<TensorSharding>> named;
        for (ValueId v : op.operands) named.push_back(stated(v));
        for (ValueId r : op.results) named.push_back(stated(r));
        on = shardy_op_mesh(m, named);
        if (!on) {
          out->push_back(o);
          continue;
        }
      }
      const AxisMath math{*on};  // the op's factors are sharded along the axes of `on`
      std::optional<ReshardRule> stage_rule;
      if (shardy_rules) stage_rule = shardy_reshard_rule(m, op);
      const std::vector<bool> perm = stage_rule ? stage_rule->permutation : std::vector<bool>{};
      FactorRule rule = stage_rule ? stage_rule->rule : MESHPLAN_TRY(sharding_rule(m, op));
      const size_t nf = rule.factor_sizes.size();
      // Every operand and result seen through the rule, then one common factor sharding.
      std::vector<FactorTensor> ts;
      auto add_tensor = [&](const std::vector<std::vector<int>>& dims, ValueId v) {
        FactorTensor t;
        t.has.assign(nf, false);
        for (const auto& dim : dims)
          for (int f32 : dim) t.has[static_cast<size_t>(f32)] = true;
        const TensorSharding now = current(v);
        t.axes = project(math, rule, dims, now);
        // A dim of one factor gives it all its axes, also those that do not divide it (Shardy
        // keeps such an uneven split on the factor; `project` drops what does not divide).
        for (size_t d = 0; d < dims.size() && d < now.dims.size(); ++d)
          if (dims[d].size() == 1)
            t.axes[static_cast<size_t>(dims[d][0])] =
                math.normalize(math.without_trivial(now.dims[d].axes));
        for (Axes& a : t.axes)
          for (AxisRef& r : a) r = canonical(math, r);
        t.elements = 1;
        for (int64_t d : m.values[v].type.shape) t.elements *= d;
        ts.push_back(std::move(t));
      };
      for (size_t k = 0; k < op.operands.size(); ++k) add_tensor(rule.operands[k], op.operands[k]);
      for (size_t k = 0; k < op.results.size(); ++k) add_tensor(rule.results[k], op.results[k]);
      std::optional<std::vector<Axes>> overflow;
      if (shardy_rules && op.name == "stablehlo.reshape" && op.operands.size() == 1 &&
          op.results.size() == 1)
        overflow =
            reshape_overflow_axes(math, rule, current(op.operands[0]), current(op.results[0]));
      std::vector<Axes> fs = overflow ? *overflow : common_axes(math, rule, perm, ts);
      // A factor can only be sharded where every factor before it in the same dim is fully
      // sharded (a dim's shards are contiguous ranges): e.g. reshape [8, 8{"x"}] -> [64] cannot
      // keep "x" on the minor factor, so the operand is resharded first.
      for (bool changed = !overflow; changed;) {
        changed = false;
        auto legalize = [&](const std::vector<std::vector<int>>& dims) {
          for (const auto& dim : dims) {
            bool full = true;
            for (int f32 : dim) {
              auto& axes = fs[static_cast<size_t>(f32)];
              if (!full && !math.without_trivial(axes).empty()) {
                axes.clear();
                changed = true;
              }
              full &= math.product(axes) == rule.factor_sizes[static_cast<size_t>(f32)];
            }
          }
        };
        for (const auto& dims : rule.operands) legalize(dims);
        for (const auto& dims : rule.results) legalize(dims);
      }
      // The sharding a tensor gets from the factor shardings; dims stay open or closed as they
      // were, its replicated and unreduced axes stay.
      auto derived = [&](const std::vector<std::vector<int>>& dims, const TensorSharding& was) {
        TensorSharding want = replicated_sharding(on->name, dims.size());
        want.replicated = was.replicated;
        want.unreduced = was.unreduced;
        for (size_t d = 0; d < dims.size(); ++d) {
          for (int f32 : dims[d]) {
            const auto& axes = fs[static_cast<size_t>(f32)];
            want.dims[d].axes.insert(want.dims[d].axes.end(), axes.begin(), axes.end());
            if (math.product(axes) != rule.factor_sizes[static_cast<size_t>(f32)]) break;
          }
          want.dims[d].axes = math.normalize(want.dims[d].axes);
          if (d < was.dims.size()) want.dims[d].open = was.dims[d].open;
        }
        return want;
      };
      // Operands: reshard to what the factor shardings need.
      for (size_t k = 0; k < op.operands.size(); ++k) {
        ValueId v = op.operands[k];
        TensorSharding now = current(v);
        TensorSharding want = derived(rule.operands[k], now);
        want.unreduced.clear();
        // (Shardy also moves a split operand off a mesh ordering the devices otherwise.)
        if (!same_placement(math, now, want) ||
            (shardy_rules && shardy_other_device_order(m, now, *on)))
          m.ops[o].operands[k] = reshard(v, want, op.loc);
      }
      out->push_back(o);
      // Results: partial sums along sharded reduction factors that the result does not keep
      // unreduced become an all_reduce; a result placed otherwise than propagation decided is
      // resharded after the op.
      Axes reduction;
      for (size_t fi = 0; fi < nf; ++fi)
        if (rule.reduction[fi]) {
          auto nontrivial = math.without_trivial(fs[fi]);
          reduction.insert(reduction.end(), nontrivial.begin(), nontrivial.end());
        }
      const Axes result_unreduced = op.results.empty() ? Axes{} : current(op.results[0]).unreduced;
      const Axes reduce = mesh_order(math, axes_minus(math, reduction, result_unreduced));
      std::vector<std::pair<ValueId, TensorSharding>> moves;  // result, where it must be
      auto place_moves = [&] {
        for (auto& [r, to] : moves) remap[r] = reshard(remap[r], to, m.ops[o].loc);
        moves.clear();
      };
      for (size_t k = 0; k < m.ops[o].results.size(); ++k) {
        ValueId r = m.ops[o].results[k];
        const std::optional<TensorSharding> declared = stated(r);
        TensorSharding wanted =
            declared ? *declared : replicated_sharding(on->name, m.values[r].type.shape.size());
        TensorSharding actual = derived(rule.results[k], wanted);
        bool moved = !same_placement(math, wanted, actual) ||
                     (shardy_rules && shardy_other_device_order(m, wanted, *on));
        if (moved) {
          // The op computes its result as the factor shardings place it.
          for (size_t j = m.ops[o].shardings.size(); j < m.ops[o].results.size(); ++j)
            m.ops[o].shardings.push_back(current(m.ops[o].results[j]));
          m.ops[o].shardings[k] = actual;
        }
        ValueId last = r;
        if (!reduce.empty()) {
          OpId ar = m.add_op("sdy.all_reduce", {r}, {m.values[r].type}, m.ops[o].loc);
          m.ops[ar].reduce_axes = reduce;
          m.ops[ar].sharding = actual;
          for (auto& d : m.ops[ar].sharding->dims) d.open = false, d.priority = -1;
          if (rule.reduction_kind != "sum") {
            Attr kind;
            kind.kind = Attr::Kind::string;
            kind.text = rule.reduction_kind;
            m.ops[ar].attrs.emplace_back("meshplan.reduction", kind);
          }
          out->push_back(ar);
          remap.resize(m.values.size());
          last = remap.back() = m.ops[ar].results[0];
        }
        remap[r] = last;
        if (moved) {
          TensorSharding to = wanted;
          for (auto& d : to.dims) d.open = false, d.priority = -1;
          moves.push_back({r, std::move(to)});
          if (!shardy_rules) place_moves();
        }
      }
      // Shardy's stage places every result's all_reduce before the reshards.
      place_moves();
    }
    open.pop_back();
    out = outer;
    if (owner == kNone)
      f->body.ops = std::move(rewritten);
    else
      m.ops[owner].regions[region].ops = std::move(rewritten);
    return {};
  };
  return run_block(run_block, kNone, 0);
}

Status expand_unreduced_reshards(Module& m) {
  Func* f = m.entry();
  const MeshDecl* mesh = m.main_mesh();
  if (!f || !mesh) return {};
  AxisMath math{*mesh};
  std::vector<OpId> out;
  auto add = [&](const char* name, ValueId v, const TensorSharding& s, Location loc) {
    const OpId r = m.add_op(name, {v}, {m.values[v].type}, loc);
    m.ops[r].sharding = s;
    for (auto& d : m.ops[r].sharding->dims) d.open = false, d.priority = -1;
    out.push_back(r);
    return r;
  };
  // `v` (sharded as `have`) to `want`, which keeps every unreduced axis of `have` and adds
  // more: the added axes `have` shards stay in their dims after `want`'s own axes (an
  // sdy.reshard first when that is not `have`'s layout), the other added axes become unreduced
  // through sdy.replicated_to_unreduced, then the sharded ones through sdy.sharded_to_unreduced.
  // Returns kNone (no value) when `v` states no sharding (Shardy leaves it as it is), or
  // `want` adds no unreduced axis or drops one of `have`'s.
  auto expand = [&](ValueId v, const TensorSharding& want, Location loc) -> ValueId {
    const std::optional<TensorSharding> stated = sharding_of(m, v);
    if (!stated) return kNone;
    const TensorSharding& have = *stated;
    if (have.mesh != want.mesh || have.dims.size() != want.dims.size() ||
        m.mesh(have.mesh) != mesh)
      return kNone;
    // The moves put zeros where a value is not kept: partial sums only, not max or min.
    if (!have.unreduced_kind.empty() || !want.unreduced_kind.empty()) return kNone;
    const Axes have_unreduced = math.without_trivial(have.unreduced);
    const Axes added = axes_minus(math, math.without_trivial(want.unreduced), have_unreduced);
    if (added.empty() ||
        !axes_minus(math, have_unreduced, math.without_trivial(want.unreduced)).empty())
      return kNone;
    // A dim keeps its added axes (as sdy.sharded_to_unreduced's) when it is `want`'s dim
    // followed by them; otherwise they are gathered and made unreduced as replicated axes.
    std::vector<Axes> sharded(have.dims.size());
    Axes all_sharded;
    for (size_t d = 0; d < have.dims.size(); ++d) {
      const Axes have_dim = math.without_trivial(have.dims[d].axes);
      Axes pieces;
      for (const AxisRef& a : have_dim)
        for (const AxisRef& piece : axes_minus(math, {a}, axes_minus(math, {a}, added)))
          pieces.push_back(piece);
      Axes kept = math.without_trivial(want.dims[d].axes);
      kept.insert(kept.end(), pieces.begin(), pieces.end());
      if (pieces.empty() || math.normalize(kept) != math.normalize(have_dim)) continue;
      sharded[d] = pieces;
      all_sharded.insert(all_sharded.end(), pieces.begin(), pieces.end());
    }
    const Axes replicated = mesh_order(math, axes_minus(math, added, all_sharded));
    TensorSharding mid = want;
    for (size_t d = 0; d < mid.dims.size(); ++d) {
      for (const AxisRef& a : sharded[d]) mid.dims[d].axes.push_back(a);
      mid.dims[d].axes = math.normalize(mid.dims[d].axes);
    }
    mid.replicated.clear();
    mid.unreduced = have.unreduced;
    TensorSharding layout = have;
    layout.replicated.clear();
    if (!same_placement(math, layout, mid)) v = m.ops[add("sdy.reshard", v, mid, loc)].results[0];
    if (!replicated.empty()) {
      TensorSharding r2u = mid;
      if (all_sharded.empty()) {
        r2u = want;
      } else {
        r2u.replicated = axes_minus(math, math.without_trivial(have.replicated), replicated);
        Axes u = have_unreduced;
        u.insert(u.end(), replicated.begin(), replicated.end());
        r2u.unreduced = mesh_order(math, u);
      }
      const OpId o = add("sdy.replicated_to_unreduced", v, r2u, loc);
      m.ops[o].reduce_axes = replicated;
      v = m.ops[o].results[0];
    }
    if (!all_sharded.empty()) {
      const OpId o = add("sdy.sharded_to_unreduced", v, want, loc);
      for (Axes& a : sharded) a = math.normalize(a);
      m.ops[o].dim_axes = sharded;
      v = m.ops[o].results[0];
    }
    return v;
  };
  std::vector<ValueId> remap(m.values.size());
  for (ValueId v = 0; v < remap.size(); ++v) remap[v] = v;
  auto rename = [&](auto& self, std::vector<OpId>& ops) -> void {
    for (OpId o : ops) {
      for (ValueId& v : m.ops[o].operands)
        if (v < remap.size()) v = remap[v];
      for (Block& b : m.ops[o].regions) self(self, b.ops);
    }
  };
  for (OpId o : f->body.ops) {
    for (ValueId& v : m.ops[o].operands)
      if (v < remap.size()) v = remap[v];
    const Op op = m.ops[o];  // a copy: expand() grows m.ops
    if (op.name == "sdy.reshard" && op.sharding && op.operands.size() == 1) {
      const ValueId nv = expand(op.operands[0], *op.sharding, op.loc);
      if (nv != kNone) {
        remap[op.results[0]] = nv;
        continue;
      }
    } else if (op.name == "func.return") {
      for (size_t k = 0; k < op.operands.size() && k < f->results.size(); ++k)
        if (const auto& want = f->results[k].sharding)
          if (const ValueId nv = expand(op.operands[k], *want, op.loc); nv != kNone)
            m.ops[o].operands[k] = nv;
    }
    out.push_back(o);
  }
  f->body.ops = std::move(out);
  rename(rename, f->body.ops);
  return {};
}

}  // namespace meshplan::planner::shlo
