// Sharding propagation: a worklist fixpoint over the entry function, per op through its factor
// rule (collect factor shardings from every tensor, resolve conflicts, project back).
#include <algorithm>
#include <climits>
#include <deque>
#include <numeric>

#include "meshplan/planner/sharding.hpp"

namespace meshplan::planner::shlo {

namespace {

/// One tensor of an op as propagation sees it.
struct Slot {
  std::optional<TensorSharding>* sharding;
  const std::vector<std::vector<int>>* dims;
  size_t rank;
  bool updatable;
};

/// A dim's user priority; none written is p0 (Shardy's default).
int64_t priority_of(const DimSharding& d) {
  return d.priority < 0 ? 0 : d.priority;
}

bool is_prefix(const std::vector<AxisRef>& p, const std::vector<AxisRef>& of) {
  return p.size() <= of.size() && std::equal(p.begin(), p.end(), of.begin());
}

class Propagator {
 public:
  Propagator(Module& m, const MeshDecl& mesh) : m_(m), mesh_(mesh), math_{mesh} {}

  /// One application of `rule` to the tensors; true when a tensor's sharding grew.
  bool step(const FactorRule& rule, std::vector<Slot>& slots) {
    const size_t nf = rule.factor_sizes.size();
    struct Cand {
      std::vector<AxisRef> axes;
      int64_t priority;
    };
    std::vector<std::vector<Cand>> cands(nf);
    for (const Slot& s : slots) {
      if (!s.sharding->has_value()) continue;
      const TensorSharding& sh = **s.sharding;
      if (sh.dims.size() != s.rank) continue;
      auto proj = project(math_, rule, *s.dims, sh);
      for (size_t d = 0; d < s.dims->size(); ++d)
        for (int f : (*s.dims)[d])
          if (!proj[static_cast<size_t>(f)].empty() && priority_of(sh.dims[d]) <= level_)
            cands[static_cast<size_t>(f)].push_back(
                {proj[static_cast<size_t>(f)], priority_of(sh.dims[d])});
    }
    std::vector<std::vector<AxisRef>> chosen(nf);
    std::vector<AxisRef> used;
    for (size_t f = 0; f < nf; ++f) {
      if (rule.need_replication[f] || cands[f].empty()) continue;
      int64_t best = INT64_MAX;
      for (const Cand& c : cands[f]) best = std::min(best, c.priority);
      const std::vector<AxisRef>* longest = nullptr;
      for (const Cand& c : cands[f])
        if (c.priority == best && (!longest || c.axes.size() > longest->size())) longest = &c.axes;
      std::vector<AxisRef> pick = *longest;
      for (const Cand& c : cands[f]) {
        if (c.priority != best || is_prefix(c.axes, pick)) continue;
        // Incompatible candidates: keep their longest common prefix.
        size_t k = 0;
        while (k < pick.size() && k < c.axes.size() && pick[k] == c.axes[k]) ++k;
        pick.resize(k);
      }
      // Drop axes another factor of this op already uses, and keep the size divisible.
      std::vector<AxisRef> ok;
      int64_t cap = rule.factor_sizes[f];
      for (AxisRef a : pick) {
        bool clash = std::any_of(used.begin(), used.end(),
                                 [&](const AxisRef& u) { return math_.overlaps(u, a); });
        if (clash) break;
        int64_t s = math_.size(a);
        if (cap % s != 0) {
          int64_t g = std::gcd(cap, s);
          if (g > 1) ok.push_back(AxisRef{a.name, a.pre_size, g});
          break;
        }
        cap /= s;
        ok.push_back(a);
      }
      chosen[f] = math_.normalize(ok);
      used.insert(used.end(), chosen[f].begin(), chosen[f].end());
    }
    bool changed = false;
    for (Slot& s : slots) {
      if (!s.updatable) continue;
      if (!s.sharding->has_value()) *s.sharding = open_sharding(mesh_.name, s.rank);
      TensorSharding& sh = **s.sharding;
      if (sh.dims.size() != s.rank) continue;
      for (size_t d = 0; d < s.rank; ++d) {
        DimSharding& dim = sh.dims[d];
        // A dim of a later priority is not extended before its own iteration.
        if (!dim.open || priority_of(dim) > level_) continue;
        std::vector<AxisRef> want;
        for (int f : (*s.dims)[d]) {
          const auto& axes = chosen[static_cast<size_t>(f)];
          want.insert(want.end(), axes.begin(), axes.end());
          if (math_.product(axes) != rule.factor_sizes[static_cast<size_t>(f)]) break;
        }
        // Never use a replicated axis, nor an axis another dim of this tensor holds.
        std::vector<AxisRef> keep;
        for (const AxisRef& a : want) {
          bool bad = std::any_of(sh.replicated.begin(), sh.replicated.end(),
                                 [&](const AxisRef& r) { return math_.overlaps(r, a); });
          for (size_t e = 0; e < s.rank && !bad; ++e)
            if (e != d)
              bad = std::any_of(sh.dims[e].axes.begin(), sh.dims[e].axes.end(),
                                [&](const AxisRef& r) { return math_.overlaps(r, a); });
          if (bad) break;
          keep.push_back(a);
        }
        keep = math_.normalize(keep);
        if (keep.size() > dim.axes.size() && is_prefix(dim.axes, keep)) {
          dim.axes = keep;
          changed = true;
          ++stats_.updates;
        }
      }
    }
    return changed;
  }

  Status run(Func& f) {
    // Slots: one per value, plus one per function result.
    shard_.assign(m_.values.size(), std::nullopt);
    for (const ArgInfo& a : f.args) shard_[a.value] = m_.values[a.value].sharding;
    for (OpId o : f.body.ops) {
      const Op& op = m_.ops[o];
      if (op.name == "sdy.manual_computation") return {};  // solved graph
      for (size_t i = 0; i < op.results.size() && i < op.shardings.size(); ++i)
        shard_[op.results[i]] = op.shardings[i];
      if (op.sharding) shard_[op.results[0]] = op.sharding;
    }
    result_shard_.clear();
    for (const ResultInfo& r : f.results) result_shard_.push_back(r.sharding);

    // Rules and users.
    const std::vector<OpId>& body = f.body.ops;
    std::vector<FactorRule> rules(body.size());
    std::vector<std::vector<size_t>> users(m_.values.size());
    std::vector<size_t> producer(m_.values.size(), SIZE_MAX);
    for (size_t i = 0; i < body.size(); ++i) {
      const Op& op = m_.ops[body[i]];
      if (op.name == "func.return") continue;
      rules[i] = MESHPLAN_TRY(sharding_rule(m_, op));
      for (ValueId v : op.operands) users[v].push_back(i);
      for (ValueId v : op.results) producer[v] = i;
    }
    std::vector<std::vector<std::vector<int>>> identity_dims;
    const Op& ret = m_.ops[body.back()];
    for (ValueId v : ret.operands) {
      std::vector<std::vector<int>> dims;
      for (size_t d = 0; d < m_.values[v].type.shape.size(); ++d)
        dims.push_back({static_cast<int>(d)});
      identity_dims.push_back(dims);
      users[v].push_back(body.size() - 1);
    }

    auto visit = [&](size_t i) -> bool {
      ++stats_.op_visits;
      const Op& op = m_.ops[body[i]];
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
          std::vector<Slot> slots{
              {&shard_[op.operands[k]], &identity_dims[k], rank, !fixed(op.operands[k])},
              {&result_shard_[k], &identity_dims[k], rank, true}};
          changed |= step(r, slots);
        }
        return changed;
      }
      const FactorRule& rule = rules[i];
      std::vector<Slot> slots;
      for (size_t k = 0; k < op.operands.size(); ++k)
        slots.push_back({&shard_[op.operands[k]], &rule.operands[k],
                         m_.values[op.operands[k]].type.shape.size(), !fixed(op.operands[k])});
      for (size_t k = 0; k < op.results.size(); ++k)
        slots.push_back({&shard_[op.results[k]], &rule.results[k],
                         m_.values[op.results[k]].type.shape.size(), !fixed(op.results[k])});
      return step(rule, slots);
    };

    // User priorities: iteration p propagates the dims of priority <= p to the whole program
    // (each iteration a full op-priority propagation), so a p0 sharding reaches every tensor it
    // can before any p1 sharding meets it.
    std::vector<int64_t> levels = {0};
    auto note_levels = [&](const std::optional<TensorSharding>& sh) {
      if (sh)
        for (const DimSharding& d : sh->dims) levels.push_back(priority_of(d));
    };
    for (const auto& sh : shard_) note_levels(sh);
    for (const auto& sh : result_shard_) note_levels(sh);
    std::sort(levels.begin(), levels.end());
    levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
    for (int64_t level : levels)
      for (int round = 0; round < 2; ++round) {
        level_ = level;
        std::deque<size_t> work;
        std::vector<bool> queued(body.size(), false);
        auto eligible = [&](size_t i) {
          return round == 1 || m_.ops[body[i]].name == "func.return" || rules[i].pass_through;
        };
        for (size_t i = 0; i < body.size(); ++i)
          if (eligible(i)) {
            work.push_back(i);
            queued[i] = true;
          }
        while (!work.empty()) {
          size_t i = work.front();
          work.pop_front();
          queued[i] = false;
          if (!visit(i)) continue;
          const Op& op = m_.ops[body[i]];
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
          for (ValueId v : op.operands) wake(v);
          for (ValueId v : op.results) wake(v);
        }
      }

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
      if (op.name == "func.return" || op.sharding) continue;
      op.shardings.clear();
      for (ValueId v : op.results)
        op.shardings.push_back(
            shard_[v] ? *shard_[v] : open_sharding(mesh_.name, m_.values[v].type.shape.size()));
    }
    for (size_t k = 0; k < f.results.size(); ++k)
      f.results[k].sharding = result_shard_[k]
                                  ? *result_shard_[k]
                                  : open_sharding(mesh_.name, f.results[k].type.shape.size());
    return {};
  }

  PropagationStats stats_;

 private:
  /// Values whose sharding an op fixes (constraint, reshard and collective results, constants).
  bool fixed(ValueId v) const {
    OpId d = m_.values[v].def;
    // Constants stay replicated: their literal is the whole tensor on every device.
    return d != kNone && (m_.ops[d].sharding.has_value() || m_.ops[d].name == "stablehlo.constant");
  }

  Module& m_;
  const MeshDecl& mesh_;
  AxisMath math_;
  std::vector<std::optional<TensorSharding>> shard_;
  std::vector<std::optional<TensorSharding>> result_shard_;
  int64_t level_ = INT64_MAX;  ///< The user-priority iteration being run.
};

}  // namespace

Result<PropagationStats> propagate(Module& m) {
  Func* f = m.entry();
  const MeshDecl* mesh = m.main_mesh();
  if (!f || !mesh) return PropagationStats{};
  Propagator p(m, *mesh);
  MESHPLAN_TRY(p.run(*f));
  return p.stats_;
}

}  // namespace meshplan::planner::shlo
