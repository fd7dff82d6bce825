// Planning one reshard as a sequence of collectives. The state is the difference between the
// current and the target sharding: per dim, the axes after their common prefix (`in_`, `out_`),
// plus the current axes in full (`cur_`). Each collective shrinks that difference until both
// sides are empty. Axes are kept as explicit (name, pre-size, size) triples, with sub-axes
// split at each other's boundaries, so that overlapping references are equal.
#include "mesh/spmd_reshard.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

namespace {

struct Ax {
  std::string name;
  int64_t pre = 1, size = 1;
  auto operator<=>(const Ax&) const = default;
};
using List = std::vector<Ax>;

bool divisible(int64_t a, int64_t b) {
  return a % b == 0 || b % a == 0;
}

class Planner {
 public:
  Planner(const MeshDecl& mesh, const TensorSharding& in, const TensorSharding& out,
          const std::vector<int64_t>& shape)
      : mesh_(mesh),
        shape_(shape),
        cur_mesh_(in.mesh),
        out_mesh_(out.mesh),
        unreduced_(out.unreduced) {
    const size_t rank = out.dims.size();
    in_.resize(rank), out_.resize(rank), cur_.resize(rank), cap_.assign(rank, 1);
    for (size_t d = 0; d < rank; ++d) {
      if (d < in.dims.size())
        for (const AxisRef& a : in.dims[d].axes)
          if (Ax x = from_ref(a); x.size > 1) in_[d].push_back(x), cur_[d].push_back(x);
      for (const AxisRef& a : out.dims[d].axes)
        if (Ax x = from_ref(a); x.size > 1) out_[d].push_back(x);
    }
    const List in_all = flat(in_), out_all = flat(out_);
    align(in_, out_all);
    align(out_, in_all);
    for (size_t d = 0; d < rank; ++d) {
      size_t k = 0;
      while (k < in_[d].size() && k < out_[d].size() && in_[d][k] == out_[d][k]) ++k;
      in_[d].erase(in_[d].begin(), in_[d].begin() + static_cast<std::ptrdiff_t>(k));
      out_[d].erase(out_[d].begin(), out_[d].begin() + static_cast<std::ptrdiff_t>(k));
    }
    for (const List& l : in_) in_set_.insert(l.begin(), l.end());
    index_out();
  }

  Result<std::vector<ReshardStep>> run() {
    for (int round = 0; round < 2 && !done(); ++round) {
      all_slice();
      collective_permute();
      all_to_alls(false);
      all_to_alls(true);
      all_gather();
    }
    if (!done())
      return fail(ErrorCode::unimplemented, "no collective sequence reaches the target sharding");
    return steps_;
  }

 private:
  int64_t full(const std::string& name) const { return mesh_.axis_size(name); }
  Ax from_ref(const AxisRef& a) const {
    return a.size == 0 ? Ax{a.name, 1, full(a.name)} : Ax{a.name, a.pre_size, a.size};
  }
  AxisRef to_ref(const Ax& a) const {
    return a.pre == 1 && a.size == full(a.name) ? AxisRef{a.name, 1, 0}
                                                : AxisRef{a.name, a.pre, a.size};
  }
  static List flat(const std::vector<List>& per_dim) {
    List all;
    for (const List& l : per_dim) all.insert(all.end(), l.begin(), l.end());
    return all;
  }
  static int64_t product(const List& l) {
    int64_t p = 1;
    for (const Ax& a : l) p *= a.size;
    return p;
  }
  /// Splits every axis of `lists` at the boundaries of the same-named axes in `others`.
  static void align(std::vector<List>& lists, const List& others) {
    for (List& l : lists) {
      List split;
      for (const Ax& a : l) {
        std::set<int64_t> cuts;
        const int64_t end = a.pre * a.size;
        for (const Ax& o : others)
          if (o.name == a.name)
            for (int64_t b : {o.pre, o.pre * o.size})
              if (b > a.pre && b < end && b % a.pre == 0 && end % b == 0) cuts.insert(b);
        int64_t at = a.pre;
        for (int64_t b : cuts)
          if (b % at == 0) split.push_back({a.name, at, b / at}), at = b;
        split.push_back({a.name, at, end / at});
      }
      l = std::move(split);
    }
  }
  static void add_or_merge(List& l, const Ax& a) {
    if (!l.empty() && l.back().name == a.name && l.back().pre * l.back().size == a.pre)
      l.back().size *= a.size;
    else
      l.push_back(a);
  }
  /// Removes `in[start..]` (axes at the minor end of `cur`, possibly merged there) from `cur`.
  static void pop_back_current(List& cur, const List& in, size_t start) {
    for (size_t k = in.size(); k-- > start;) {
      if (cur.empty()) return;
      Ax& back = cur.back();
      if (back.name == in[k].name && back.pre < in[k].pre)
        back.size = in[k].pre / back.pre;
      else
        cur.pop_back();
    }
  }
  /// The part of `a` that fits in `capacity` (dividing it) and the rest, when their sizes divide.
  static std::pair<std::optional<Ax>, std::optional<Ax>> within(const Ax& a, int64_t& capacity) {
    if (capacity <= 1 || !divisible(a.size, capacity)) return {};
    if (capacity >= a.size) {
      capacity /= a.size;
      return {a, std::nullopt};
    }
    Ax in{a.name, a.pre, capacity}, rest{a.name, a.pre * capacity, a.size / capacity};
    capacity = 1;
    return {in, rest};
  }
  void index_out() {
    out_at_.clear();
    for (size_t d = 0; d < out_.size(); ++d)
      for (size_t k = 0; k < out_[d].size(); ++k) out_at_.try_emplace(out_[d][k], d, k);
  }
  bool done() const {
    return cur_mesh_ == out_mesh_ &&
           std::all_of(in_.begin(), in_.end(), std::mem_fn(&List::empty)) &&
           std::all_of(out_.begin(), out_.end(), std::mem_fn(&List::empty));
  }
  TensorSharding current() const {
    TensorSharding s;
    s.mesh = cur_mesh_;
    s.unreduced = unreduced_;
    for (const List& l : cur_) {
      DimSharding d;
      for (const Ax& a : l) d.axes.push_back(to_ref(a));
      s.dims.push_back(std::move(d));
    }
    return s;
  }
  std::vector<std::vector<AxisRef>> refs(const std::vector<List>& per_dim) const {
    std::vector<std::vector<AxisRef>> out;
    for (const List& l : per_dim) {
      out.emplace_back();
      for (const Ax& a : l) out.back().push_back(to_ref(a));
    }
    return out;
  }
  void emit(std::string kind, const std::vector<List>& per_dim = {}, Op::AllToAllParam a2a = {}) {
    steps_.push_back({std::move(kind), refs(per_dim), std::move(a2a), current()});
  }

  /// Moves axes from `available(d)` into `in_[d]` (at its front or back) while dim d has
  /// capacity, splitting an axis larger than the capacity left; `take(axis, d)` sees each.
  void distribute(bool front, const std::function<List&(size_t)>& available,
                  const std::function<void(const Ax&, size_t)>& take) {
    List split_added;
    for (size_t d = 0; d < in_.size(); ++d) {
      size_t pos = front ? 0 : in_[d].size();
      List& avail = available(d);
      size_t k = 0;
      while (k < avail.size() && cap_[d] > 1) {
        auto [in, rest] = within(avail[k], cap_[d]);
        if (!in) {
          ++k;
          continue;
        }
        avail.erase(avail.begin() + static_cast<std::ptrdiff_t>(k));
        in_[d].insert(in_[d].begin() + static_cast<std::ptrdiff_t>(pos++), *in);
        in_set_.insert(*in);
        take(*in, d);
        if (rest) {
          split_added.push_back(*in);
          avail.insert(avail.begin(), *rest);
          ++k;
        }
      }
    }
    std::sort(split_added.begin(), split_added.end());
    if (!split_added.empty()) align(out_, split_added);
  }

  /// Axes of the target dim of a later all_to_all out of `src` that can be sliced on `src`
  /// itself (so that no permute is needed afterwards): (target dim, the axes).
  std::optional<std::pair<size_t, List>> slice_for_all_to_all(size_t src) {
    List& from = in_[src];
    if (from.empty() || !out_[src].empty()) return std::nullopt;
    auto hit = out_at_.find(from.back());
    if (hit == out_at_.end()) return std::nullopt;
    const size_t tgt = hit->second.first;
    if (!in_[tgt].empty()) return std::nullopt;
    const List& want = out_[tgt];
    auto at = std::find(want.begin(), want.end(), from.back());
    if (at == want.end()) return std::nullopt;
    size_t start = static_cast<size_t>(at - want.begin()) + 1;
    if (start == want.size() || in_set_.count(want[start])) return std::nullopt;
    int64_t common = 1;
    size_t i = from.size(), j = start;
    while (i > 0 && j > 0 && from[i - 1] == want[j - 1]) common *= from[--i].size, --j;
    for (; i > 0; --i)
      if (auto o = out_at_.find(from[i - 1]); o != out_at_.end() && o->second.first == tgt)
        return std::nullopt;
    size_t end = start;
    int64_t added = 1;
    while (end < want.size() && !in_set_.count(want[end])) added *= want[end++].size;
    if (src < shape_.size() && shape_[src] % (product(cur_[src]) * added) != 0) return std::nullopt;
    cap_[tgt] /= common * added;
    return std::pair{tgt, List(want.begin() + static_cast<std::ptrdiff_t>(start),
                               want.begin() + static_cast<std::ptrdiff_t>(end))};
  }

  void all_slice() {
    const size_t rank = in_.size();
    std::vector<List> slicing(rank);
    bool any = false;
    for (size_t d = 0; d < rank; ++d) {
      int64_t have = product(in_[d]), want = product(out_[d]);
      cap_[d] = want / std::gcd(have, want);
    }
    for (size_t src = 0; src < rank; ++src)
      if (auto s = slice_for_all_to_all(src)) {
        any = true;
        for (const Ax& a : s->second) {
          in_[src].push_back(a);
          in_set_.insert(a);
          add_or_merge(slicing[src], a);
          add_or_merge(cur_[src], a);
        }
      }
    List available;
    for (size_t d = 0; d < rank; ++d) {
      List& want = out_[d];
      size_t k = 0;
      while (k < want.size()) {
        if (in_set_.count(want[k])) {
          ++k;
          continue;
        }
        auto [in, rest] = within(want[k], cap_[d]);
        if (!in) {
          available.push_back(want[k++]);
          continue;
        }
        any = true;
        add_or_merge(slicing[d], *in);
        add_or_merge(cur_[d], *in);
        if (in_[d].empty() && k == 0) {
          want.erase(want.begin());
        } else {
          in_set_.insert(*in);
          in_[d].push_back(*in);
          want[k++] = *in;
        }
        if (rest) {
          want.insert(want.begin() + static_cast<std::ptrdiff_t>(k++), *rest);
          available.push_back(*rest);
        }
      }
    }
    distribute(
        false, [&](size_t) -> List& { return available; },
        [&](const Ax& a, size_t d) {
          any = true;
          add_or_merge(slicing[d], a);
          add_or_merge(cur_[d], a);
        });
    index_out();
    if (any) emit("all_slice", slicing);
  }

  bool should_permute() const {
    std::optional<Ax> free_in, free_out;
    for (size_t d = 0; d < in_.size(); ++d) {
      const List &have = in_[d], &want = out_[d];
      if (!have.empty() && !want.empty() && divisible(have.front().size, want.front().size))
        return true;  // the dim's leading axes can be replaced
      for (const Ax& a : want)
        if (!in_set_.count(a)) free_out = a;
      std::optional<size_t> last_dim;
      size_t last_index = 0;
      std::vector<bool> seen(in_.size());
      for (const Ax& a : have) {
        std::optional<size_t> dim;
        if (auto o = out_at_.find(a); o != out_at_.end()) {
          dim = o->second.first;
          size_t index = o->second.second;
          if ((*dim == d || seen[*dim]) && (last_dim != dim || index != last_index + 1))
            return true;  // out of order or not contiguous for the dim that wants them
          seen[*dim] = true;
          last_index = index;
        } else if (last_dim && want.empty()) {
          return true;  // an axis to gather sits behind one to move
        } else {
          free_in = a;
        }
        last_dim = dim;
      }
    }
    return free_in && free_out && divisible(free_in->size, free_out->size);
  }

  void perform_permute() {
    const size_t rank = in_.size();
    List available_out;
    std::vector<List> available_in(rank);
    in_set_.clear();
    for (size_t d = 0; d < rank; ++d) {
      cap_[d] = product(in_[d]);
      int64_t used = cap_[d];
      pop_back_current(cur_[d], in_[d], 0);
      while (cap_[d] > 1 && !out_[d].empty()) {
        auto [in, rest] = within(out_[d].front(), cap_[d]);
        if (!in) break;
        out_[d].erase(out_[d].begin());
        add_or_merge(cur_[d], *in);
        if (rest) out_[d].insert(out_[d].begin(), *rest);
      }
      available_out.insert(available_out.end(), out_[d].begin(), out_[d].end());
      used /= cap_[d];
      std::erase_if(in_[d], [&](const Ax& a) { return out_at_.count(a) > 0; });
      while (used > 1 && !in_[d].empty()) {
        auto [in, rest] = within(in_[d].front(), used);
        if (!in) break;
        in_[d].erase(in_[d].begin());
        available_in[d].push_back(*in);
        if (rest) in_[d].insert(in_[d].begin(), *rest);
      }
      available_in[d].insert(available_in[d].begin(), in_[d].begin(), in_[d].end());
      in_[d].clear();
    }
    auto none = [](const Ax&, size_t) {};
    distribute(
        false, [&](size_t) -> List& { return available_out; }, none);
    distribute(
        true, [&](size_t d) -> List& { return available_in[d]; }, none);
    List rest = flat(available_in);
    distribute(
        true, [&](size_t) -> List& { return rest; }, none);
    index_out();
    for (size_t d = 0; d < rank; ++d)
      for (const Ax& a : in_[d]) add_or_merge(cur_[d], a);
  }

  void collective_permute() {
    if (should_permute())
      perform_permute();
    else if (cur_mesh_ == out_mesh_)
      return;
    cur_mesh_ = out_mesh_;  // a different device order is a permute even for the same axes
    emit("collective_permute");
  }

  /// The all_to_all out of `src`: its minor axes that one other dim wants (in that dim's
  /// order at its front unless `any_order`).
  std::optional<Op::AllToAllParam> all_to_all(size_t src, bool any_order) {
    List& from = in_[src];
    size_t start = from.size();
    std::optional<size_t> tgt;
    while (start > 0) {
      auto o = out_at_.find(from[start - 1]);
      if (o == out_at_.end() || o->second.first == src || (tgt && o->second.first != *tgt)) break;
      tgt = o->second.first;
      --start;
    }
    if (!tgt) return std::nullopt;
    List& want = out_[*tgt];
    const size_t n = from.size() - start;
    if (!any_order &&
        (want.size() < n ||
         !std::equal(from.begin() + static_cast<std::ptrdiff_t>(start), from.end(), want.begin())))
      return std::nullopt;
    Op::AllToAllParam p;
    p.src = static_cast<int64_t>(src);
    p.tgt = static_cast<int64_t>(*tgt);
    pop_back_current(cur_[src], from, start);
    List moved(from.begin() + static_cast<std::ptrdiff_t>(start), from.end());
    from.resize(start);
    List axes;
    for (const Ax& a : moved) {
      add_or_merge(axes, a);
      add_or_merge(cur_[*tgt], a);
      in_set_.erase(a);
      if (in_[*tgt].empty() && !want.empty() && want.front() == a) {
        want.erase(want.begin());
      } else {
        in_[*tgt].push_back(a);
        in_set_.insert(a);
      }
    }
    for (const Ax& a : axes) p.axes.push_back(to_ref(a));
    return p;
  }

  void all_to_alls(bool any_order) {
    for (size_t src = 0; src < in_.size(); ++src)
      while (auto p = all_to_all(src, any_order)) {
        steps_.push_back({"all_to_all", {}, *p, current()});
      }
  }

  void all_gather() {
    const size_t rank = in_.size();
    std::vector<List> gather(rank);
    bool any = false;
    for (size_t d = 0; d < rank; ++d) {
      List& have = in_[d];
      // When the minor-most axis is one the target drops, the whole remaining difference of
      // the dim is gathered (axes the target wants elsewhere are sliced again later).
      if (have.empty() || out_at_.count(have.back())) continue;
      in_set_.erase(have.back());
      pop_back_current(cur_[d], have, 0);
      for (const Ax& a : have) add_or_merge(gather[d], a);
      have.clear();
      any = true;
    }
    if (any) emit("all_gather", gather);
  }

  const MeshDecl& mesh_;
  std::vector<int64_t> shape_;
  std::string cur_mesh_, out_mesh_;
  std::vector<AxisRef> unreduced_;
  std::vector<List> in_, out_, cur_;
  std::vector<int64_t> cap_;
  std::set<Ax> in_set_;
  std::map<Ax, std::pair<size_t, size_t>> out_at_;
  std::vector<ReshardStep> steps_;
};

}  // namespace

Result<std::vector<ReshardStep>> plan_reshard(const MeshDecl& mesh, const TensorSharding& in,
                                              const TensorSharding& out,
                                              const std::vector<int64_t>& shape) {
  if (in.dims.size() != out.dims.size())
    return fail(ErrorCode::invalid_argument, "reshard from rank ", in.dims.size(), " to rank ",
                out.dims.size());
  return Planner(mesh, in, out, shape).run();
}

}  // namespace meshplan::planner::shlo
