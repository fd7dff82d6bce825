// Sharding propagation: a worklist fixpoint over the entry function, per op through its factor
// rule (collect factor shardings from every tensor, resolve conflicts, project back).
#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <deque>
#include <numeric>
#include <tuple>

#include "mesh/sharding_manual.hpp"
#include "mesh/sharding_op_priority.hpp"
#include "mesh/sharding_rules_shardy.hpp"
#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/sharding_strategies.hpp"

namespace meshplan::planner::shlo {

namespace {

/// One tensor of an op as propagation sees it.
struct Slot {
  std::optional<TensorSharding>* sharding;
  const std::vector<std::vector<int>>* dims;
  size_t rank;
  bool updatable;
  int64_t elements = 1;  ///< The tensor's element count (aggressive conflict resolution).
  bool result = false;   ///< An op result (operands receive only what results hold).
};

/// A dim's user priority; none written is p0 (Shardy's default).
int64_t priority_of(const DimSharding& d) {
  return d.priority < 0 ? 0 : d.priority;
}

bool is_prefix(const std::vector<AxisRef>& p, const std::vector<AxisRef>& of) {
  return p.size() <= of.size() && std::equal(p.begin(), p.end(), of.begin());
}

/// `project` as Shardy's default (non-conservative) propagation sees it: size-1 axes stay, and
/// the minor-most factor of a dim takes the rest of an axis that does not divide it (an uneven
/// split) instead of stopping.
std::vector<std::vector<AxisRef>> project_uneven(const AxisMath& math, const FactorRule& rule,
                                                 const std::vector<std::vector<int>>& dims,
                                                 const TensorSharding& s) {
  std::vector<std::vector<AxisRef>> out(rule.factor_sizes.size());
  for (size_t d = 0; d < dims.size() && d < s.dims.size(); ++d) {
    const auto& factors = dims[d];
    if (factors.empty()) continue;
    size_t fi = 0;
    int64_t cap = rule.factor_sizes[static_cast<size_t>(factors[0])];
    bool stop = false;
    for (AxisRef a : s.dims[d].axes) {
      int64_t rs = math.size(a);
      auto& into = [&]() -> std::vector<AxisRef>& {
        return out[static_cast<size_t>(factors[std::min(fi, factors.size() - 1)])];
      }();
      if (rs == 1) {
        into.push_back(a);
        continue;
      }
      if (a.size == 0) a.size = rs;
      while (rs > 1 && !stop) {
        const bool last = fi + 1 >= factors.size();
        auto& cur = out[static_cast<size_t>(factors[std::min(fi, factors.size() - 1)])];
        if (fi >= factors.size()) {
          stop = true;
        } else if (cap == 1 && !last) {
          cap = rule.factor_sizes[static_cast<size_t>(factors[++fi])];
        } else if (cap % rs == 0) {
          cur.push_back(a);
          cap /= rs;
          rs = 1;
        } else if (last) {
          cur.push_back(a);  // uneven (or overflowing) minor-most factor
          cap = 1;
          rs = 1;
          stop = true;
        } else if (int64_t g = std::gcd(cap, rs); g > 1) {
          cur.push_back(AxisRef{a.name, a.pre_size, g});
          a = AxisRef{a.name, a.pre_size * g, rs / g};
          rs /= g;
          cap /= g;
        } else {
          stop = true;
        }
      }
      if (stop) break;
    }
  }
  for (auto& f : out) f = math.normalize(f);
  return out;
}

class Propagator {
 public:
  Propagator(Module& m, const MeshDecl& mesh, PropagationStrategy strategy, bool fill_all)
      : m_(m), mesh_(mesh), math_{mesh}, strategy_(strategy), fill_all_(fill_all) {}

  /// Basic and aggressive propagation see no user priorities (every dim is p0).
  int64_t priority(const DimSharding& d) const {
    return strategy_ == PropagationStrategy::basic || strategy_ == PropagationStrategy::aggressive
               ? 0
               : priority_of(d);
  }

  /// One application of `rule` to the tensors; true when a tensor's sharding grew. `dirs`
  /// (op-priority propagation) gives each factor's allowed directions: only the tensors on an
  /// allowed side may extend a factor's axes, the others only limit them.
  bool step(const FactorRule& rule, std::vector<Slot>& slots,
            const std::vector<uint8_t>* dirs = nullptr) {
    // Shardy propagates only between shardings of one mesh: an op (or a return edge) whose
    // tensors' shardings name two different meshes (other axes or device order; two names for
    // one mesh are the same mesh) is left as it is.
    std::string mesh;  // the first sharding's: a value without one gets its sharding there
    if (!fill_all_) {
      for (const Slot& s : slots) {
        if (!*s.sharding) continue;
        const std::string& name = (*s.sharding)->mesh;
        if (mesh.empty()) {
          mesh = name;
        } else if (mesh != name) {
          const MeshDecl* a = m_.mesh(mesh);
          const MeshDecl* b = m_.mesh(name);
          if (!a || !b || a->axes != b->axes || a->device_ids != b->device_ids) return false;
        }
      }
    }
    const size_t nf = rule.factor_sizes.size();
    struct Cand {
      std::vector<AxisRef> axes;
      int64_t priority;
      int64_t elements;  ///< Size of the tensor the axes come from.
      bool closed = false;
      bool result = false;  ///< From an op result.
      size_t slot = 0;      ///< Which tensor of the op (operands first).
    };
    std::vector<std::vector<Cand>> cands(nf);
    // Each sharded tensor's axes per factor (Shardy's projection), for conflicts across factors.
    std::vector<std::vector<std::vector<AxisRef>>> held;
    for (size_t si = 0; si < slots.size(); ++si) {
      const Slot& s = slots[si];
      if (!s.sharding->has_value()) continue;
      const TensorSharding& sh = **s.sharding;
      if (sh.dims.size() != s.rank) continue;
      auto proj =
          fill_all_ ? project(math_, rule, *s.dims, sh) : project_uneven(math_, rule, *s.dims, sh);
      if (!fill_all_) held.push_back(proj);
      for (size_t d = 0; d < s.dims->size(); ++d)
        for (int f : (*s.dims)[d]) {
          if (priority(sh.dims[d]) > level_) continue;
          // Basic propagation also needs agreement with closed dims, empty ones included.
          bool closed = strategy_ == PropagationStrategy::basic && !sh.dims[d].open;
          if (!proj[static_cast<size_t>(f)].empty() || closed)
            cands[static_cast<size_t>(f)].push_back(
                {proj[static_cast<size_t>(f)], priority(sh.dims[d]), s.elements, closed, s.result,
                 si});
        }
    }
    // Per factor: the longest compatible major axes among the candidates of the best priority
    // (a candidate that is not a prefix of the longest cuts it to their common prefix).
    std::vector<std::vector<AxisRef>> chosen(nf);
    std::vector<int64_t> source(nf, 0);
    // Among the largest sources, the first tensor (Shardy's next tie-break, stage only).
    std::vector<size_t> source_slot(nf, SIZE_MAX);
    for (size_t f = 0; f < nf; ++f) {
      if (rule.need_replication[f] || cands[f].empty()) continue;
      const uint8_t dir = dirs ? (*dirs)[f] : kDirBoth;
      if (dir == kDirNone) continue;
      // Shardy's user-priority iteration p sees every dim of priority <= p as a plain
      // sharding; the mesh pipeline lets the best priority among them decide.
      int64_t best = INT64_MAX;
      for (const Cand& c : cands[f]) best = std::min(best, c.priority);
      if (!fill_all_)
        for (Cand& c : cands[f]) c.priority = best;
      const std::vector<AxisRef>* longest = nullptr;
      for (const Cand& c : cands[f]) {
        const bool may_extend = (dir & (c.result ? kDirBackward : kDirForward)) != 0;
        if (c.priority == best && may_extend && (!longest || c.axes.size() > longest->size()))
          longest = &c.axes;
      }
      if (!longest) continue;
      std::vector<AxisRef> pick = *longest;
      for (const Cand& c : cands[f]) {
        if (c.priority != best) continue;
        if (c.closed && pick != c.axes &&
            ((pick.size() > c.axes.size() && is_prefix(c.axes, pick)) ||
             (!fill_all_ && major_prefix(c.axes, pick)))) {
          pick = c.axes;  // a closed dim holds no more than its axes
          continue;
        }
        if (is_prefix(pick, c.axes) || is_prefix(c.axes, pick) ||
            (!fill_all_ && c.axes.size() <= pick.size() && major_prefix(c.axes, pick))) {
          if (c.elements > source[f] || (c.elements == source[f] && c.slot < source_slot[f]))
            source_slot[f] = c.slot;
          source[f] = std::max(source[f], c.elements);
          continue;
        }
        size_t k = 0;
        while (k < pick.size() && k < c.axes.size() && pick[k] == c.axes[k]) ++k;
        // Where they part, one may hold a major sub-axis of the other's axis: that much agrees.
        std::optional<AxisRef> part =
            k < pick.size() && k < c.axes.size() ? major_part(pick[k], c.axes[k]) : std::nullopt;
        if (part) pick[k] = *part;
        pick.resize(k + (part ? 1 : 0));
      }
      // An axis a tensor of this factor explicitly replicates, or holds unreduced (its
      // values there are partial), is incompatible.
      for (const Slot& sl : slots) {
        if (!sl.sharding->has_value()) continue;
        const TensorSharding& ts = **sl.sharding;
        if (ts.replicated.empty() && ts.unreduced.empty()) continue;
        bool has_f = false;
        for (const auto& dfs : *sl.dims)
          has_f |= std::find(dfs.begin(), dfs.end(), static_cast<int>(f)) != dfs.end();
        if (!has_f) continue;
        for (size_t k = 0; k < pick.size(); ++k)
          if (excluded(ts, pick[k])) {
            pick.resize(k);
            break;
          }
      }
      // Shardy's propagation: an axis that a tensor of the op already holds for another factor
      // is cut to its part before that tensor's axis (and what follows it is dropped), for
      // every tensor, whether it holds this factor or not.
      if (!fill_all_ && strategy_ == PropagationStrategy::basic) {
        for (size_t k = 0; k < pick.size(); ++k) {
          std::optional<AxisRef> cut = pick[k];
          for (const auto& proj : held)
            for (size_t g = 0; g < proj.size() && cut; ++g)
              if (g != f)
                for (const AxisRef& u : proj[g])
                  if (cut) cut = prefix_without_overlap(*cut, u);
          if (!cut) {
            pick.resize(k);
            break;
          }
          if (!(*cut == pick[k])) {
            pick[k] = *cut;
            pick.resize(k + 1);
            break;
          }
        }
      }
      // Keep the size divisible by the factor. Shardy's default (non-conservative) propagation
      // lets the last axis of a factor that is minor-most in every dim holding it split
      // unevenly; the mesh pipeline (conservative) takes the dividing sub-axis instead.
      bool minor_most = true;
      for (const Slot& sl : slots)
        for (const auto& dfs : *sl.dims)
          for (size_t k = 0; k + 1 < dfs.size(); ++k)
            if (dfs[k] == static_cast<int>(f)) minor_most = false;
      int64_t cap = rule.factor_sizes[f];
      for (AxisRef a : pick) {
        int64_t sz = math_.size(a);
        if (cap % sz != 0) {
          if (!fill_all_ && minor_most) {
            chosen[f].push_back(a);
            break;
          }
          int64_t g = std::gcd(cap, sz);
          if (g > 1) chosen[f].push_back(AxisRef{a.name, a.pre_size, g});
          break;
        }
        cap /= sz;
        chosen[f].push_back(a);
      }
    }
    // Across factors: an axis two factors want. Basic gives it to neither (it is not
    // compatible); aggressive decides per tensor (below), so a conflict between factors that
    // never meet in one tensor is no conflict.
    if (strategy_ == PropagationStrategy::basic) {
      std::vector<std::vector<AxisRef>> wanted = chosen;
      for (size_t f = 0; f < nf; ++f) {
        std::vector<AxisRef> ok;
        for (const AxisRef& a : wanted[f]) {
          bool clash = false;
          for (size_t g = 0; g < nf && !clash; ++g)
            clash = g != f && std::any_of(wanted[g].begin(), wanted[g].end(),
                                          [&](const AxisRef& u) { return math_.overlaps(u, a); });
          if (clash) break;
          ok.push_back(a);
        }
        chosen[f] = math_.normalize(ok);
      }
    } else {
      for (auto& c : chosen) c = math_.normalize(c);
    }
    bool changed = false;
    auto grow = [&](Slot& s, const std::vector<std::vector<AxisRef>>& chosen) {
      if (!s.updatable) return;
      // A value without a sharding gets one only when some dim gains an axis.
      // (On the mesh of the op's other shardings.)
      TensorSharding fresh = s.sharding->has_value()
                                 ? **s.sharding
                                 : open_sharding(mesh.empty() ? mesh_.name : mesh, s.rank);
      TensorSharding& sh = fresh;
      if (sh.dims.size() != s.rank) return;
      bool grew = false;
      // Dims whose factors come from the largest tensor claim their axes first (aggressive
      // conflict resolution; ties keep dim order).
      std::vector<size_t> dim_order(s.rank);
      std::iota(dim_order.begin(), dim_order.end(), size_t{0});
      // The largest source first; in the stage, then (through an elementwise op) the factor
      // split over more devices, then the first tensor among the sources.
      auto dim_source = [&](size_t d) {
        std::tuple<int64_t, int64_t, int64_t> best{0, 0, 0};
        for (int f32 : (*s.dims)[d]) {
          const auto f = static_cast<size_t>(f32);
          const bool stage = !fill_all_ && source_slot[f] != SIZE_MAX;
          const int64_t split = stage && elementwise_op_ ? math_.product(chosen[f]) : 0;
          const int64_t slot = stage ? -static_cast<int64_t>(source_slot[f]) : 0;
          best = std::max(best, std::tuple<int64_t, int64_t, int64_t>{source[f], split, slot});
        }
        return best;
      };
      if (strategy_ != PropagationStrategy::basic)
        std::stable_sort(dim_order.begin(), dim_order.end(),
                         [&](size_t a, size_t b) { return dim_source(a) > dim_source(b); });
      for (size_t d : dim_order) {
        DimSharding& dim = sh.dims[d];
        // A dim of a later priority is not extended before its own iteration.
        if (!dim.open || priority(dim) > level_) continue;
        std::vector<AxisRef> want;
        for (int f : (*s.dims)[d]) {
          const auto& axes = chosen[static_cast<size_t>(f)];
          want.insert(want.end(), axes.begin(), axes.end());
          if (math_.product(axes) != rule.factor_sizes[static_cast<size_t>(f)]) break;
        }
        // Never use a replicated or unreduced axis, nor an axis another dim of this tensor
        // holds.
        std::vector<AxisRef> keep;
        for (const AxisRef& a : want) {
          bool bad = excluded(sh, a);
          for (size_t e = 0; e < s.rank && !bad; ++e)
            if (e != d)
              bad = std::any_of(sh.dims[e].axes.begin(), sh.dims[e].axes.end(),
                                [&](const AxisRef& r) { return math_.overlaps(r, a); });
          if (bad) break;
          keep.push_back(a);
        }
        keep = math_.normalize(keep);
        const bool longer =
            (keep.size() > dim.axes.size() && is_prefix(dim.axes, keep)) ||
            (!fill_all_ && !keep.empty() && keep.size() >= dim.axes.size() &&
             major_prefix(dim.axes, keep) && math_.product(keep) > math_.product(dim.axes));
        if (longer) {
          dim.axes = keep;
          grew = true;
          ++stats_.updates;
        }
      }
      if (grew) {
        *s.sharding = std::move(fresh);
        changed = true;
      }
    };
    // Results first. Through an elementwise op Shardy propagates sideways (operand to
    // operand) only as far as the results hold the factor (after this step): a result whose
    // axes for it are a strict prefix of the new axes cuts them there. A dim of a later user
    // priority is empty (and closed) until its iteration.
    for (Slot& s : slots)
      if (s.result) grow(s, chosen);
    std::vector<std::vector<AxisRef>> sideways = chosen;
    if (!fill_all_ && elementwise_op_) {
      for (const Slot& s : slots) {
        if (!s.result || !s.sharding->has_value() || (**s.sharding).dims.size() != s.rank) continue;
        TensorSharding now = **s.sharding;
        for (DimSharding& d : now.dims)
          if (priority(d) > level_) d.axes.clear();
        auto proj = project_uneven(math_, rule, *s.dims, now);
        for (const auto& dfs : *s.dims)
          for (int fi : dfs) {
            const auto f = static_cast<size_t>(fi);
            if (proj[f] != sideways[f] && major_prefix(proj[f], sideways[f]))
              sideways[f] = proj[f];
          }
      }
    }
    for (Slot& s : slots)
      if (!s.result) grow(s, sideways);
    return changed;
  }

  Status run(Func& f) {
    // The ops propagation visits: the function's, and (Shardy's propagation) those in the
    // regions of while / case / if ops, after their op. Region terminators only link values.
    std::vector<OpId> flat;
    if (fill_all_) {
      flat = f.body.ops;
    } else {
      std::vector<std::pair<const Block*, size_t>> stack{{&f.body, 0}};
      while (!stack.empty()) {
        auto& [blk, at] = stack.back();
        if (at == blk->ops.size()) {
          stack.pop_back();
          continue;
        }
        OpId o = blk->ops[at++];
        const Op& op = m_.ops[o];
        if (op.name == "stablehlo.return" || op.name == "sdy.return") continue;
        flat.push_back(o);
        for (auto r = op.regions.rbegin(); r != op.regions.rend(); ++r) stack.push_back({&*r, 0});
      }
    }
    // Slots: one per value, plus one per function result.
    shard_.assign(m_.values.size(), std::nullopt);
    for (const ArgInfo& a : f.args) shard_[a.value] = m_.values[a.value].sharding;
    for (OpId o : flat) {
      const Op& op = m_.ops[o];
      if (fill_all_ && op.name == "sdy.manual_computation") return {};  // solved graph
      for (size_t i = 0; i < op.results.size() && i < op.shardings.size(); ++i)
        shard_[op.results[i]] = op.shardings[i];
      if (op.sharding) shard_[op.results[0]] = op.sharding;
    }
    // Manual computations: edges across the boundary, after the groups (work items).
    const std::vector<ManualEdge> manual =
        fill_all_ ? std::vector<ManualEdge>{} : manual_edges(m_, flat);
    manual_seed(m_, manual, shard_);
    result_shard_.clear();
    for (const ResultInfo& r : f.results) result_shard_.push_back(r.sharding);
    // A sharding on an empty mesh says only which dims are open or closed: it takes the
    // function's mesh (Shardy replaces it when propagating into it).
    // One that nothing propagates into keeps its empty mesh.
    std::vector<std::string> empty_mesh(shard_.size()), empty_result_mesh(result_shard_.size());
    if (!fill_all_) {
      auto adopt = [&](std::optional<TensorSharding>& sh, std::string& was) {
        const MeshDecl* d = sh ? m_.mesh(sh->mesh) : nullptr;
        if (!d || !d->axes.empty() || !d->device_ids.empty()) return;  // a maximal mesh stays
        was = sh->mesh;
        sh->mesh = mesh_.name;
      };
      for (size_t i = 0; i < shard_.size(); ++i) adopt(shard_[i], empty_mesh[i]);
      for (size_t i = 0; i < result_shard_.size(); ++i)
        adopt(result_shard_[i], empty_result_mesh[i]);
    }

    // Rules and users.
    const std::vector<OpId>& body = flat;
    std::vector<FactorRule> rules(body.size());
    std::vector<std::vector<size_t>> users(m_.values.size());
    std::vector<size_t> producer(m_.values.size(), SIZE_MAX);
    // Sharding groups (sdy.sharding_group): every member ends with one sharding; each group
    // is visited like an op whose tensors are its members, one factor per dim.
    std::vector<std::pair<int64_t, std::vector<ValueId>>> groups;
    peer_group_.assign(m_.values.size(), SIZE_MAX);
    peers_.clear();
    for (OpId o : body) {
      const Op& op = m_.ops[o];
      if (op.name != "sdy.sharding_group" || op.props.empty() || op.operands.empty()) continue;
      int64_t id = op.props[0].second.i;
      if (!fill_all_) {  // Shardy's groups: a member's new sharding is every member's
        note_peer(static_cast<size_t>(std::max<int64_t>(id, 0)), op.operands[0]);
        continue;
      }
      auto it =
          std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == id; });
      if (it == groups.end()) it = groups.insert(groups.end(), {id, {}});
      it->second.push_back(op.operands[0]);
    }
    // Data-flow edges (Shardy's sdy.data_flow_edge): a while's operand, block arguments,
    // yielded value and result; a case's / if's yielded values and result; an
    // optimization_barrier's operand and result; each set shares one sharding, like a sharding
    // group.
    int64_t edge_id = INT64_MIN;
    auto terminator = [&](const Block& b) -> const Op* {
      return b.ops.empty() ? nullptr : &m_.ops[b.ops.back()];
    };
    for (OpId o : body) {
      const Op& op = m_.ops[o];
      const bool is_while = op.name == "stablehlo.while" && op.regions.size() == 2;
      const bool is_case = op.name == "stablehlo.case" || op.name == "stablehlo.if";
      const bool is_barrier = op.name == "stablehlo.optimization_barrier";
      if (!is_while && !is_case && !is_barrier) continue;
      for (size_t k = 0; k < op.results.size(); ++k) {
        std::vector<ValueId> members{op.results[k]};
        if ((is_while || is_barrier) && k < op.operands.size()) members.push_back(op.operands[k]);
        for (const Block& r : op.regions) {
          if (is_while && k < r.args.size()) members.push_back(r.args[k]);
          const Op* t = terminator(r);
          if (t && (t->name == "stablehlo.return" || t->name == "sdy.return") &&
              (is_case || &r == &op.regions[1]) && k < t->operands.size())
            members.push_back(t->operands[k]);
        }
        std::erase_if(members, [&](ValueId v) {
          return m_.values[v].type.shape != m_.values[op.results[k]].type.shape;
        });
        if (members.size() > 1) groups.push_back({edge_id++, std::move(members)});
      }
    }
    for (size_t i = 0; i < body.size(); ++i) {
      const Op& op = m_.ops[body[i]];
      if (op.name == "func.return" || op.name == "sdy.sharding_group") continue;
      // A reshape from or to an empty tensor relates no dims (Shardy passes nothing).
      const bool empty_reshape = !fill_all_ && op.name == "stablehlo.reshape" && has_size_zero(op);
      Result<FactorRule> rule = empty_reshape
                                    ? fail(ErrorCode::unimplemented, "reshape of an empty tensor")
                                : fill_all_ ? sharding_rule(m_, op)
                                            : variadic_reduce_rule(op);
      if (!rule && !fill_all_ && rule.error().code == ErrorCode::unimplemented) {
        // Shardy propagates nothing through an op without a sharding rule: one factor of its
        // own per tensor dim.
        FactorRule r;
        auto own = [&](ValueId v) {
          std::vector<std::vector<int>> dims;
          for (int64_t d : m_.values[v].type.shape) {
            dims.push_back({static_cast<int>(r.factor_sizes.size())});
            r.factor_sizes.push_back(d);
            r.reduction.push_back(false);
            r.need_replication.push_back(false);
          }
          return dims;
        };
        for (ValueId v : op.operands) r.operands.push_back(own(v));
        for (ValueId v : op.results) r.results.push_back(own(v));
        rule = std::move(r);
      }
      rules[i] = MESHPLAN_TRY(std::move(rule));
      if (!fill_all_) unblock_stated(op, rules[i]);
      for (ValueId v : op.operands) users[v].push_back(i);
      for (ValueId v : op.results) producer[v] = i;
    }
    std::vector<std::vector<std::vector<int>>> identity_dims;
    const Op& ret = m_.ops[f.body.ops.back()];
    for (ValueId v : ret.operands) {
      std::vector<std::vector<int>> dims;
      for (size_t d = 0; d < m_.values[v].type.shape.size(); ++d)
        dims.push_back({static_cast<int>(d)});
      identity_dims.push_back(dims);
      users[v].push_back(body.size() - 1);
    }

    // Group g is work item body.size() + g; its members wake it.
    for (size_t g = 0; g < groups.size(); ++g)
      for (ValueId v : groups[g].second) users[v].push_back(body.size() + g);
    // Manual edge e is work item body.size() + groups.size() + e.
    std::vector<std::vector<ValueId>> item_values;
    for (const auto& g : groups) item_values.push_back(g.second);
    for (size_t e = 0; e < manual.size(); ++e) {
      item_values.push_back({manual[e].global, manual[e].local});
      for (ValueId v : item_values.back()) users[v].push_back(body.size() + groups.size() + e);
    }
    auto identity_rule = [&](ValueId v) {
      FactorRule r;
      for (int64_t d : m_.values[v].type.shape) {
        r.factor_sizes.push_back(d);
        r.reduction.push_back(false);
        r.need_replication.push_back(false);
      }
      return r;
    };
    std::vector<std::vector<std::vector<int>>> group_dims;
    for (const auto& g : groups) {
      std::vector<std::vector<int>> dims;
      for (size_t d = 0; d < m_.values[g.second[0]].type.shape.size(); ++d)
        dims.push_back({static_cast<int>(d)});
      group_dims.push_back(dims);
    }
    // Op-priority propagation: the round being run (-1: no schedule) and what the schedule
    // needs per op. Uses count operand slots (`add %x, %x` uses %x twice), the function's
    // return and the terminators of nested regions included.
    int op_round = -1;
    std::vector<OpPriorityInfo> op_info(body.size());
    if (!fill_all_) {
      std::vector<int> uses(m_.values.size(), 0);
      auto count = [&](auto& self, const Block& b) -> void {
        for (OpId o : b.ops) {
          for (ValueId v : m_.ops[o].operands) ++uses[v];
          for (const Block& r : m_.ops[o].regions) self(self, r);
        }
      };
      count(count, f.body);
      for (size_t i = 0; i < body.size(); ++i)
        op_info[i] = op_priority_info(m_, m_.ops[body[i]], uses);
    }
    auto visit_item = [&](size_t i) -> bool {
      ++stats_.op_visits;
      elementwise_op_ = false;
      if (i >= body.size() + groups.size()) {
        const ManualEdge& e = manual[i - body.size() - groups.size()];
        const size_t rank = m_.values[e.local].type.shape.size();
        std::optional<TensorSharding> local = manual_view(m_, e, shard_[e.global]);
        std::vector<std::vector<int>> dims;
        for (size_t d = 0; d < rank; ++d) dims.push_back({static_cast<int>(d)});
        std::vector<Slot> slots{
            {&local, &dims, rank, !fixed(e.global), elements(e.global)},
            {&shard_[e.local], &dims, rank, !fixed(e.local), elements(e.local)}};
        bool changed = step(identity_rule(e.local), slots);
        if (local && !fixed(e.global)) changed |= manual_lift(m_, e, *local, shard_[e.global]);
        return changed;
      }
      if (i >= body.size()) {
        size_t g = i - body.size();
        FactorRule r = identity_rule(groups[g].second[0]);
        std::vector<Slot> slots;
        for (ValueId v : groups[g].second)
          slots.push_back(
              {&shard_[v], &group_dims[g], m_.values[v].type.shape.size(), !fixed(v), elements(v)});
        return step(r, slots);
      }
      const Op& op = m_.ops[body[i]];
      if (op.name == "sdy.sharding_group") return false;
      if (op.name == "func.return") {
        bool changed = false;
        for (size_t k = 0; k < op.operands.size(); ++k) {
          FactorRule r;
          for (int64_t d : m_.values[op.operands[k]].type.shape) {
            r.factor_sizes.push_back(d);
            r.reduction.push_back(false);
            r.need_replication.push_back(false);
          }
          size_t rank = m_.values[op.operands[k]].type.shape.size();
          int64_t n = elements(op.operands[k]);
          std::vector<Slot> slots{
              {&shard_[op.operands[k]], &identity_dims[k], rank, !fixed(op.operands[k]), n},
              {&result_shard_[k], &identity_dims[k], rank, true, n}};
          changed |= step(r, slots);
        }
        return changed;
      }
      const FactorRule& rule = rules[i];
      // A propagation barrier lets shardings through in its allowed direction only.
      std::string_view dir = "BOTH";
      if (op.name == "sdy.propagation_barrier" && !op.props.empty()) dir = op.props[0].second.text;
      if (dir == "NONE") return false;
      std::vector<Slot> slots;
      for (size_t k = 0; k < op.operands.size(); ++k)
        slots.push_back({&shard_[op.operands[k]], &rule.operands[k],
                         m_.values[op.operands[k]].type.shape.size(),
                         !fixed(op.operands[k]) && dir != "FORWARD", elements(op.operands[k])});
      for (size_t k = 0; k < op.results.size(); ++k)
        slots.push_back(
            {&shard_[op.results[k]], &rule.results[k], m_.values[op.results[k]].type.shape.size(),
             !fixed(op.results[k]) && dir != "BACKWARD", elements(op.results[k]), true});
      elementwise_op_ = op_info[i].elementwise;
      if (op_round < 0) return step(rule, slots);
      std::vector<uint8_t> dirs = op_priority_directions(op_info[i], rule, op_round);
      return step(rule, slots, &dirs);
    };
    // A group member whose sharding the item changed gives it to the other members (woken
    // with the item's own values).
    std::vector<ValueId> synced;
    auto visit = [&](size_t i) -> bool {
      synced.clear();
      std::vector<std::pair<ValueId, std::optional<TensorSharding>>> before;
      auto note = [&](ValueId v) {
        if (peer_group_[v] != SIZE_MAX) before.emplace_back(v, shard_[v]);
      };
      if (i >= body.size()) {
        for (ValueId v : item_values[i - body.size()]) note(v);
      } else {
        for (ValueId v : m_.ops[body[i]].operands) note(v);
        for (ValueId v : m_.ops[body[i]].results) note(v);
      }
      bool changed = visit_item(i);
      for (const auto& [v, was] : before)
        if (shard_[v] != was)
          for (ValueId p : peers_[peer_group_[v]])
            if (p != v) {
              shard_[p] = shard_[v];
              synced.push_back(p);
            }
      return changed;
    };

    // User priorities: iteration p propagates the dims of priority <= p to the whole program
    // (each iteration a full op-priority propagation), so a p0 sharding reaches every tensor it
    // can before any p1 sharding meets it.
    std::vector<int64_t> levels = {0};
    const bool by_user = strategy_ == PropagationStrategy::user_priority ||
                         strategy_ == PropagationStrategy::pipeline;
    const bool by_op = by_user || strategy_ == PropagationStrategy::op_priority;
    auto note_levels = [&](const std::optional<TensorSharding>& sh) {
      if (sh)
        for (const DimSharding& d : sh->dims) levels.push_back(priority_of(d));
    };
    for (const auto& sh : shard_) note_levels(sh);
    for (const auto& sh : result_shard_) note_levels(sh);
    std::sort(levels.begin(), levels.end());
    levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
    if (!by_user) levels = {INT64_MAX};
    // Op priorities (Shardy's op-based schedule, sharding_op_priority.hpp): each round
    // propagates to a fixpoint, letting more ops, factors and directions through. The mesh
    // pipeline runs pass-through ops first, then every op.
    const int rounds = !by_op ? 1 : fill_all_ ? 2 : kOpPriorityRounds;
    for (int64_t level : levels)
      for (int round = 0; round < rounds; ++round) {
        level_ = level;
        op_round = by_op && !fill_all_ ? round : -1;
        std::deque<size_t> work;
        const size_t items = body.size() + item_values.size();
        std::vector<bool> queued(items, false);
        auto eligible = [&](size_t i) {
          if (fill_all_ && by_op && round == 0 && i < body.size())
            return rules[i].pass_through || m_.ops[body[i]].name == "func.return";
          if (op_round < 0 || op_round >= 2 || i >= body.size()) return true;
          if (m_.ops[body[i]].name == "func.return") return true;
          return op_info[i].kind == OpPriorityInfo::pass_through ||
                 op_info[i].kind == OpPriorityInfo::forward_only;
        };
        // As Shardy, the function's result shardings reach the returned values first (its
        // func-results step precedes the op worklist), then ops go in program order.
        for (size_t i = 0; i < body.size(); ++i)
          if (m_.ops[body[i]].name == "func.return" && eligible(i)) {
            work.push_back(i);
            queued[i] = true;
          }
        for (size_t i = 0; i < items; ++i)
          if (!queued[i] && eligible(i)) {
            work.push_back(i);
            queued[i] = true;
          }
        while (!work.empty()) {
          size_t i = work.front();
          work.pop_front();
          queued[i] = false;
          if (!visit(i)) continue;
          auto wake = [&](ValueId v) {
            auto push = [&](size_t j) {
              if (j != SIZE_MAX && !queued[j] && eligible(j)) {
                queued[j] = true;
                work.push_back(j);
              }
            };
            push(producer[v]);
            for (size_t u : users[v]) push(u);
          };
          for (ValueId v : synced) wake(v);
          if (i >= body.size()) {
            for (ValueId v : item_values[i - body.size()]) wake(v);
            continue;
          }
          const Op& op = m_.ops[body[i]];
          for (ValueId v : op.operands) wake(v);
          for (ValueId v : op.results) wake(v);
        }
      }

    // Empty-mesh shardings that received no axis go back to their own mesh.
    auto restore = [](std::optional<TensorSharding>& sh, const std::string& was) {
      if (was.empty() || !sh || !sh->replicated.empty() || !sh->unreduced.empty()) return;
      if (std::all_of(sh->dims.begin(), sh->dims.end(),
                      [](const DimSharding& d) { return d.axes.empty(); }))
        sh->mesh = was;
    };
    for (size_t i = 0; i < shard_.size(); ++i) restore(shard_[i], empty_mesh[i]);
    for (size_t i = 0; i < result_shard_.size(); ++i)
      restore(result_shard_[i], empty_result_mesh[i]);

    // Write back: every op result and function result carries a sharding.
    for (const ArgInfo& a : f.args) {
      Value& v = m_.values[a.value];
      bool sharded =
          shard_[a.value] && std::any_of(shard_[a.value]->dims.begin(), shard_[a.value]->dims.end(),
                                         [](const DimSharding& d) { return !d.axes.empty(); });
      if (v.sharding || sharded) v.sharding = shard_[a.value];
    }
    for (OpId o : body) {
      Op& op = m_.ops[o];
      if (!fill_all_ && op.name == "sdy.sharding_constraint" && shard_[op.results[0]])
        op.sharding = shard_[op.results[0]];
      if (op.name == "func.return" || op.sharding) continue;
      bool any = std::any_of(op.results.begin(), op.results.end(),
                             [&](ValueId v) { return shard_[v].has_value(); });
      if (!fill_all_ && !any) continue;
      op.shardings.clear();
      for (ValueId v : op.results)
        op.shardings.push_back(
            shard_[v] ? *shard_[v] : open_sharding(mesh_.name, m_.values[v].type.shape.size()));
    }
    // A value that flows only into an sdy.data_flow_edge is owned by the edge: the sharding
    // is printed there (Shardy), not on the value.
    if (!fill_all_) {
      std::vector<int> uses(m_.values.size(), 0), edge_uses(m_.values.size(), 0);
      for (OpId o : body)
        for (ValueId v : m_.ops[o].operands) {
          ++uses[v];
          if (m_.ops[o].name == "sdy.data_flow_edge") ++edge_uses[v];
        }
      for (ValueId v : ret.operands) ++uses[v];
      for (OpId o : body) {
        Op& op = m_.ops[o];
        if (op.name == "sdy.data_flow_edge" || op.shardings.size() != op.results.size()) continue;
        bool owned = std::all_of(op.results.begin(), op.results.end(), [&](ValueId v) {
          return uses[v] == 0 || uses[v] == edge_uses[v] ||
                 m_.values[v].type.element == kTokenType;  // tokens have no edge
        });
        bool any_edge = std::any_of(op.results.begin(), op.results.end(),
                                    [&](ValueId v) { return edge_uses[v] > 0; });
        if (owned && any_edge) op.shardings.clear();
      }
    }
    manual_write_back(m_, manual, shard_);
    for (size_t k = 0; k < f.results.size(); ++k) {
      if (!fill_all_ && !result_shard_[k]) continue;
      f.results[k].sharding = result_shard_[k]
                                  ? *result_shard_[k]
                                  : open_sharding(mesh_.name, f.results[k].type.shape.size());
    }
    return {};
  }

  PropagationStats stats_;

 private:
  void note_peer(size_t group, ValueId v) {
    if (peers_.size() <= group) peers_.resize(group + 1);
    if (peer_group_[v] != SIZE_MAX) return;  // in one group only (import merged them)
    peer_group_[v] = group;
    peers_[group].push_back(v);
  }

  /// Values whose sharding an op fixes (constraint, reshard and collective results, constants).
  bool fixed(ValueId v) const {
    OpId d = m_.values[v].def;
    if (d == kNone) return false;
    const Op& op = m_.ops[d];
    // A sharding constraint's open dims grow like any value's (Shardy); the mesh pipeline
    // keeps constraints as written.
    if (!fill_all_ && op.name == "sdy.sharding_constraint") return false;
    // Constants stay replicated: their literal is the whole tensor on every device.
    return op.sharding.has_value() || (fill_all_ && op.name == "stablehlo.constant");
  }

  /// Shardy's rule for a reduce of N inputs (argmax-like): every input shares one factor
  /// per dim, reduced dims are reduction factors, the N results keep the others. The mesh
  /// pipeline, which must lower it, keeps such a reduce replicated instead. Other ops: their
  /// sharding_rule.
  Result<FactorRule> variadic_reduce_rule(const Op& op) const {
    const Attr* dims = op.prop("dimensions");
    const size_t n = op.results.size();
    if (op.name != "stablehlo.reduce" || n < 2 || op.operands.size() != 2 * n || !dims ||
        dims->ints.empty()) {
      if (auto r = shardy_stage_rule(m_, op)) return *r;
      // Shardy's (non-conservative) propagation goes through sliced, padded and concatenated
      // dims: one factor of operand and result, which blocks nothing.
      if (op.name == "stablehlo.slice" || op.name == "stablehlo.pad" ||
          op.name == "stablehlo.concatenate")
        if (auto r = shardy_reshard_rule(m_, op)) {
          r->rule.need_replication.assign(r->rule.factor_sizes.size(), false);
          return r->rule;
        }
      return sharding_rule(m_, op);
    }
    FactorRule r;
    const auto& shape = m_.values[op.operands[0]].type.shape;
    std::vector<std::vector<int>> in(shape.size()), out;
    for (size_t d = 0; d < shape.size(); ++d) {
      bool reduced = std::find(dims->ints.begin(), dims->ints.end(), static_cast<int64_t>(d)) !=
                     dims->ints.end();
      in[d] = {static_cast<int>(r.factor_sizes.size())};
      r.factor_sizes.push_back(shape[d]);
      r.reduction.push_back(reduced);
      r.need_replication.push_back(false);
      if (!reduced) out.push_back(in[d]);
    }
    for (size_t k = 0; k < n; ++k) r.operands.push_back(in);
    for (size_t k = 0; k < n; ++k) r.operands.push_back({});
    for (size_t k = 0; k < n; ++k) r.results.push_back(out);
    return r;
  }

  /// True when `s` states `a` (or an axis overlapping it) replicated or unreduced: no dim of
  /// `s` may take it.
  bool excluded(const TensorSharding& s, const AxisRef& a) const {
    auto hit = [&](const AxisRef& r) { return math_.overlaps(r, a); };
    return std::any_of(s.replicated.begin(), s.replicated.end(), hit) ||
           std::any_of(s.unreduced.begin(), s.unreduced.end(), hit);
  }

  /// Shardy's propagation stops only at the factors a rule blocks: of a rule the op states
  /// (`sdy.sharding_rule`), the need_replication and permutation factors propagate, those
  /// listed in blocked_propagation do not.
  static void unblock_stated(const Op& op, FactorRule& rule) {
    const Attr* a = op.attr("sdy.sharding_rule");
    if (!a) return;
    const std::string t =
        a->kind == Attr::Kind::opaque || a->kind == Attr::Kind::string ? a->text : attr_string(*a);
    // Factor names in index order: the `{i=8, j=4}` after the mappings.
    const size_t arrow = t.find("->");
    const size_t sizes = arrow == std::string::npos ? arrow : t.find('{', arrow);
    const size_t sizes_end = sizes == std::string::npos ? sizes : t.find('}', sizes);
    if (sizes_end == std::string::npos) return;
    auto names_in = [&](size_t from, size_t to, bool before_eq) {
      std::vector<std::string> names;
      std::string cur;
      bool in_value = false;
      for (size_t k = from; k <= to; ++k) {
        const char c = k < to ? t[k] : ',';
        if (c == ',') {
          if (!cur.empty()) names.push_back(cur);
          cur.clear();
          in_value = false;
        } else if (before_eq && c == '=') {
          in_value = true;
        } else if (!in_value && (std::isalnum(static_cast<unsigned char>(c)) || c == '_')) {
          cur += c;
        }
      }
      return names;
    };
    const std::vector<std::string> names = names_in(sizes + 1, sizes_end, true);
    if (names.size() != rule.factor_sizes.size()) return;
    std::vector<bool> blocked(names.size(), false);
    const size_t at = t.find("blocked_propagation={", sizes_end);
    if (at != std::string::npos) {
      const size_t open = t.find('{', at), close = t.find('}', open);
      if (close == std::string::npos) return;
      for (const std::string& n : names_in(open + 1, close, false)) {
        auto it = std::find(names.begin(), names.end(), n);
        if (it != names.end()) blocked[static_cast<size_t>(it - names.begin())] = true;
      }
    }
    for (size_t f = 0; f < blocked.size(); ++f) rule.need_replication[f] = blocked[f];
  }

  /// `p` is a prefix of `of` as Shardy reads it: the same leading axes, the last one of `p`
  /// possibly a major sub-axis of the matching axis of `of` ("x":(1)2 before "x").
  bool major_prefix(const std::vector<AxisRef>& p, const std::vector<AxisRef>& of) const {
    if (p.size() > of.size()) return false;
    for (size_t i = 0; i < p.size(); ++i) {
      if (p[i] == of[i] || math_.size(p[i]) == 1) continue;
      if (i + 1 != p.size()) return false;
      const auto part = major_part(p[i], of[i]);
      return part && math_.size(*part) == math_.size(p[i]);
    }
    return true;
  }

  /// The part of `a` before `b` where they share devices (nullopt when `b` starts no later
  /// than `a`, or when the two cannot coexist in one sharding), else `a` itself.
  std::optional<AxisRef> prefix_without_overlap(const AxisRef& a, const AxisRef& b) const {
    if (!math_.overlaps(a, b)) return a;
    const int64_t pa = a.size > 0 ? a.pre_size : 1, pb = b.size > 0 ? b.pre_size : 1;
    const int64_t ea = pa * math_.size(a), eb = pb * math_.size(b);
    // Sub-axes coexist when their bounds divide each other in order (a whole axis always).
    std::array<int64_t, 4> bounds = {pa, ea, pb, eb};
    std::sort(bounds.begin(), bounds.end());
    for (size_t i = 0; i + 1 < bounds.size(); ++i)
      if (bounds[i + 1] % bounds[i] != 0) return std::nullopt;
    const bool share = std::max(pa, pb) < std::min(ea, eb);
    if (!share || pb <= pa) return std::nullopt;
    return AxisRef{a.name, pa, pb / pa};
  }

  /// When one of `a`, `b` is a major sub-axis of the other (same axis, same start, sizes that
  /// divide), the smaller one: the part both agree on.
  std::optional<AxisRef> major_part(const AxisRef& a, const AxisRef& b) const {
    if (a.name != b.name) return std::nullopt;
    int64_t sa = math_.size(a), sb = math_.size(b);
    int64_t pa = a.size > 0 ? a.pre_size : 1, pb = b.size > 0 ? b.pre_size : 1;
    if (pa != pb || sa == sb || std::max(sa, sb) % std::min(sa, sb) != 0) return std::nullopt;
    return AxisRef{a.name, pa, std::min(sa, sb)};
  }

  bool has_size_zero(const Op& op) const {
    auto zero = [&](ValueId v) {
      const auto& sh = m_.values[v].type.shape;
      return std::find(sh.begin(), sh.end(), int64_t{0}) != sh.end();
    };
    return std::any_of(op.operands.begin(), op.operands.end(), zero) ||
           std::any_of(op.results.begin(), op.results.end(), zero);
  }

  int64_t elements(ValueId v) const {
    int64_t n = 1;
    for (int64_t d : m_.values[v].type.shape) n *= d;
    return n;
  }

  Module& m_;
  const MeshDecl& mesh_;
  AxisMath math_;
  PropagationStrategy strategy_;
  bool fill_all_;  ///< Every op result gets a sharding (the mesh pipeline's convention).
  std::vector<std::optional<TensorSharding>> shard_;
  std::vector<std::optional<TensorSharding>> result_shard_;
  int64_t level_ = INT64_MAX;                ///< The user-priority iteration being run.
  bool elementwise_op_ = false;              ///< step() runs an elementwise op (sideways limit).
  std::vector<size_t> peer_group_;           ///< Per value: its sharding group, or SIZE_MAX.
  std::vector<std::vector<ValueId>> peers_;  ///< Per sharding group: its values.
};

}  // namespace

Result<PropagationStats> propagate(Module& m) {
  Func* f = m.entry();
  const MeshDecl* mesh = m.main_mesh();
  if (!f || !mesh) return PropagationStats{};
  Propagator p(m, *mesh, PropagationStrategy::pipeline, true);
  MESHPLAN_TRY(p.run(*f));
  return p.stats_;
}

/// The mesh the entry function's shardings name first (a module may declare several).
const MeshDecl* function_mesh(const Module& m, const Func& f) {
  auto real = [&](const std::string& name) -> const MeshDecl* {
    const MeshDecl* d = m.mesh(name);
    return d && !d->axes.empty() ? d : nullptr;
  };
  auto named = [&](const std::optional<TensorSharding>& s) -> const MeshDecl* {
    return s ? real(s->mesh) : nullptr;
  };
  for (const ArgInfo& a : f.args)
    if (const MeshDecl* d = named(m.values[a.value].sharding)) return d;
  for (OpId o : f.body.ops) {
    const Op& op = m.ops[o];
    if (const MeshDecl* d = named(op.sharding)) return d;
    for (const TensorSharding& s : op.shardings)
      if (const MeshDecl* d = real(s.mesh)) return d;
  }
  for (const ResultInfo& r : f.results)
    if (const MeshDecl* d = named(r.sharding)) return d;
  return m.main_mesh();
}

Result<PropagationStats> propagate(Module& m, PropagationStrategy strategy) {
  Func* f = m.entry();
  const MeshDecl* mesh = f ? function_mesh(m, *f) : nullptr;
  if (!f || !mesh) return PropagationStats{};
  Propagator p(m, *mesh, strategy, false);
  MESHPLAN_TRY(p.run(*f));
  return p.stats_;
}

}  // namespace meshplan::planner::shlo
