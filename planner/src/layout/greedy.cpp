// Applying overrides, and greedy layout propagation (policies `l1-interleaved` and `greedy`).
#include <algorithm>
#include <map>
#include <span>

#include "common/key_memo.hpp"
#include "layout/launch_key.hpp"
#include "meshplan/planner/policies.hpp"

namespace meshplan::planner {

namespace {

// Operand layouts of op `o` after its forced moves (recorded as reshards in `d`), into `in`
// (a buffer the callers reuse across ops).
Status operand_layouts(const Graph& g, const OpQuery& q, const Overrides& ov, OpId o,
                       LayoutDecision& d, std::vector<TensorLayout>& in) {
  const Op& op = g.ops[o];
  in.clear();
  for (ValueId v : op.operands) in.push_back(d.tensors[v]);
  for (const Overrides::Move& m : ov.moves) {
    if (m.op != o) continue;
    ValueId v = op.operands[m.operand];
    TensorLayout to = interleaved_layout(g.values[v], m.to);
    device::OpValidation ok = q.validate_move(v, in[m.operand], to);
    if (!ok.ok)
      return fail(ErrorCode::invalid_argument, "memreconfig for op '", op.name, "' operand ",
                  m.operand, " is illegal: ", q.explain_move(v, in[m.operand], to).reason);
    in[m.operand] = to;
    d.reshards.push_back(LayoutDecision::Reshard{o, m.operand, to});
  }
  return {};
}

device::OpValidation check(const OpQuery& q, const Op& op, const std::vector<TensorLayout>& in,
                           const TensorLayout& result, const device::OpConfig& config) {
  std::vector<const TensorLayout*> ptrs;
  for (const TensorLayout& t : in) ptrs.push_back(&t);
  return q.validate(op.kind, op.name, op.operands, ptrs, op.results[0], result, config);
}

// OpModel's reason, naming this op (the memo's may name another op with the same signature).
std::string why(const OpQuery& q, const Op& op, const std::vector<TensorLayout>& in,
                const TensorLayout& result, const device::OpConfig& config) {
  std::vector<const TensorLayout*> ptrs;
  for (const TensorLayout& t : in) ptrs.push_back(&t);
  return q.explain(op.kind, op.name, op.operands, ptrs, op.results[0], result, config).reason;
}

// Whether config_for(config, result, chip) would leave `config` as it is.
bool grid_fits(const device::OpConfig& config, const TensorLayout& result,
               const device::ChipDesc& chip) {
  if (result.memory != device::MemLayout::interleaved)
    return config.grid_x == result.shard.grid.x1 - result.shard.grid.x0 + 1 &&
           config.grid_y == result.shard.grid.y1 - result.shard.grid.y0 + 1;
  return config.grid_x == chip.grid_x && config.grid_y == chip.grid_y;
}

// config = config_for(config, result, chip) in place: only the grid changes, and copying the
// whole config (440 bytes) per op showed in greedy's profile.
void fit_grid(device::OpConfig& config, const TensorLayout& result, const device::ChipDesc& chip) {
  if (result.memory != device::MemLayout::interleaved) {
    config.grid_x = static_cast<uint16_t>(result.shard.grid.x1 - result.shard.grid.x0 + 1);
    config.grid_y = static_cast<uint16_t>(result.shard.grid.y1 - result.shard.grid.y0 + 1);
  } else {
    config.grid_x = chip.grid_x;
    config.grid_y = chip.grid_y;
  }
}

// A candidate pool's key (shape and dtype) as a view, and the order of the pools' map, which
// compares keys and views alike.
struct PoolKey {
  std::span<const int64_t> shape;
  DType dtype;
};
struct PoolLess {
  using is_transparent = void;
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return less(view(a), view(b));
  }

 private:
  static PoolKey view(const PoolKey& k) { return k; }
  static PoolKey view(const std::pair<std::vector<int64_t>, DType>& k) {
    return {k.first, k.second};
  }
  static bool less(const PoolKey& a, const PoolKey& b) {
    if (std::lexicographical_compare(a.shape.begin(), a.shape.end(), b.shape.begin(),
                                     b.shape.end()))
      return true;
    if (!std::equal(a.shape.begin(), a.shape.end(), b.shape.begin(), b.shape.end())) return false;
    return a.dtype < b.dtype;
  }
};

// The ops reading each value (each op once, in op order), in one buffer: readers of v are
// ops_[start_[v], start_[v + 1]) (a vector per value was most of this pass's allocations).
class ReaderLists {
 public:
  explicit ReaderLists(const Graph& g) : start_(g.values.size() + 1, 0) {
    std::vector<OpId> last(g.values.size(), kNoOp);  // the last op counted for each value
    for (OpId o = 0; o < g.ops.size(); ++o)
      for (ValueId v : g.ops[o].operands)
        if (last[v] != o) {
          last[v] = o;
          ++start_[v + 1];
        }
    for (size_t v = 0; v < g.values.size(); ++v) start_[v + 1] += start_[v];
    ops_.resize(start_.back());
    std::vector<uint32_t> next(start_.begin(), start_.end() - 1);
    std::fill(last.begin(), last.end(), kNoOp);
    for (OpId o = 0; o < g.ops.size(); ++o)
      for (ValueId v : g.ops[o].operands)
        if (last[v] != o) {
          last[v] = o;
          ops_[next[v]++] = o;
        }
  }
  std::span<const OpId> operator[](ValueId v) const {
    return {ops_.data() + start_[v], start_[v + 1] - start_[v]};
  }

 private:
  std::vector<uint32_t> start_;
  std::vector<OpId> ops_;
};

/// Greedy picks each result's layout for its producer alone, so a sharded result can make its
/// readers slow (BERT: a width-sharded FFN activation made the next matmul 2.5x slower than with
/// interleaved operands). One pass in schedule order over the sharded L1 results that no
/// override fixed and no reshard reads tries: the result L1 interleaved; the result laid out like
/// a same-shape reader's result; and the result and one reader's result both L1 interleaved. A
/// result that greedy itself resharded for a reader (the reader refused it: tt-metal's matmul,
/// permute and concat shard rules) tries instead to be written as that reshard's target, which
/// drops the reshards to it. A change is kept when the ops it touches (producers and readers of
/// the changed values, and the reshards of the value) cost less in OpModel's simulated time,
/// every one still valid.
void repair(const Graph& g, const device::ChipDesc& chip, const OpQuery& q,
            const Overrides& ov, LayoutDecision& d) {
  ReaderLists readers(g);
  std::vector<bool> fixed(g.values.size(), false);
  for (const Overrides::Move& m : ov.moves) fixed[g.ops[m.op].operands[m.operand]] = true;
  for (const auto& [o, w] : ov.output) fixed[g.ops[o].results[0]] = true;
  // Greedy's own reshards (the forced moves' values are fixed), by value, and the reshard each
  // (op, operand) reads through (index into d.reshards; -1: none, or dropped).
  std::vector<uint32_t> first_operand(g.ops.size() + 1, 0);
  for (OpId o = 0; o < g.ops.size(); ++o)
    first_operand[o + 1] = first_operand[o] + static_cast<uint32_t>(g.ops[o].operands.size());
  std::vector<int32_t> through(first_operand.back(), -1);
  std::vector<std::vector<uint32_t>> resharded(g.values.size());
  std::vector<bool> dropped(d.reshards.size(), false);
  for (uint32_t k = 0; k < d.reshards.size(); ++k) {
    const LayoutDecision::Reshard& r = d.reshards[k];
    through[first_operand[r.before] + r.operand] = static_cast<int32_t>(k);
    ValueId v = g.ops[r.before].operands[r.operand];
    if (!fixed[v]) resharded[v].push_back(k);
  }
  using Change = std::pair<ValueId, TensorLayout>;
  // A try changes one value, or a value and one reader's result.
  struct Try {
    Change c[2];
    size_t n = 1;
    std::span<const Change> changes() const { return {c, n}; }
  };
  std::vector<std::optional<uint64_t>> known(g.ops.size());  // cost of each op as decided
  // Buffers reused across tries: this pass runs on every sharded result, and their allocations
  // were a quarter of its time.
  std::vector<OpId> ops;
  std::vector<const TensorLayout*> in;
  std::vector<Try> tries;
  device::OpConfig scratch;
  // The tries of one sharded result cost the same ops under the same changed layouts again (its
  // producer and readers under "result interleaved" recur in every pair try): each op's cost
  // under the changes that touch it is kept until a change is applied. A change touches op `o`
  // when it names one of o's operands or its result.
  struct Seen {
    OpId op;
    Try touching;
    std::optional<uint64_t> ns;
  };
  std::vector<Seen> seen;
  // Simulated time of the ops that produce or read a changed value, with the changes applied
  // (nullopt when OpModel rejects one of them). `as_decided`: the changes are the decision's own
  // layouts, whose per-op costs are cached until a change touches the op.
  auto cost = [&](std::span<const Change> changes, bool as_decided) -> std::optional<uint64_t> {
    auto layout = [&](ValueId v) -> const TensorLayout& {
      for (const Change& c : changes)
        if (c.first == v) return c.second;
      return d.tensors[v];
    };
    ops.clear();
    for (const Change& c : changes) {
      ops.push_back(g.values[c.first].producer);
      ops.insert(ops.end(), readers[c.first].begin(), readers[c.first].end());
    }
    std::sort(ops.begin(), ops.end());
    ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
    uint64_t sum = 0;
    for (OpId o : ops) {
      if (as_decided && known[o]) {
        sum += *known[o];
        continue;
      }
      const Op& op = g.ops[o];
      Try touching{{}, 0};
      if (!as_decided) {
        for (const Change& c : changes)
          if (c.first == op.results[0] ||
              std::find(op.operands.begin(), op.operands.end(), c.first) != op.operands.end())
            touching.c[touching.n++] = c;
        auto same = [&](const Seen& x) {
          if (x.op != o || x.touching.n != touching.n) return false;
          for (size_t i = 0; i < touching.n; ++i)
            if (x.touching.c[i].first != touching.c[i].first ||
                !(x.touching.c[i].second == touching.c[i].second))
              return false;
          return true;
        };
        if (auto it = std::find_if(seen.begin(), seen.end(), same); it != seen.end()) {
          if (!it->ns) return std::nullopt;
          sum += *it->ns;
          continue;
        }
      }
      in.clear();
      for (uint32_t j = 0; j < op.operands.size(); ++j) {
        const int32_t k = through[first_operand[o] + j];
        in.push_back(k >= 0 ? &d.reshards[k].to : &layout(op.operands[j]));
      }
      const TensorLayout& result = layout(op.results[0]);
      // config_for(d.configs[o], result), without copying the config when its grid already fits.
      const device::OpConfig* config = &d.configs[o];
      if (!grid_fits(*config, result, chip)) {
        scratch = *config;
        fit_grid(scratch, result, chip);
        config = &scratch;
      }
      std::optional<uint64_t> ns =
          q.cost_if_valid(op.kind, op.name, op.operands, in, op.results[0], result, *config);
      if (!as_decided) seen.push_back(Seen{o, touching, ns});
      if (!ns) return std::nullopt;
      if (as_decided) known[o] = ns;
      sum += *ns;
    }
    return sum;
  };
  auto movable = [&](ValueId v) {
    return !fixed[v] && resharded[v].empty() && d.tensors[v].in_l1() &&
           g.values[v].producer != kNoOp;
  };
  // The moves of v's live reshards from layout `from`, summed (nullopt: one is invalid); those
  // to `from` itself are dropped by the change and cost nothing.
  auto moves = [&](ValueId v, const TensorLayout& from) -> std::optional<uint64_t> {
    uint64_t sum = 0;
    for (uint32_t k : resharded[v]) {
      if (dropped[k] || d.reshards[k].to == from) continue;
      if (!q.validate_move(v, from, d.reshards[k].to).ok) return std::nullopt;
      sum += q.move_cost(v, from, d.reshards[k].to);
    }
    return sum;
  };
  for (OpId o = 0; o < g.ops.size(); ++o) {
    ValueId v = g.ops[o].results[0];
    if (!resharded[v].empty() && g.values[v].producer != kNoOp) {
      for (uint32_t k : resharded[v]) {
        if (dropped[k]) continue;
        const TensorLayout target = d.reshards[k].to;
        seen.clear();
        Change now{v, d.tensors[v]}, to{v, target};
        std::optional<uint64_t> before = cost({&now, 1}, true), after = cost({&to, 1}, false);
        std::optional<uint64_t> moved_before = moves(v, d.tensors[v]), moved_after = moves(v, target);
        if (!before || !after || !moved_before || !moved_after ||
            *after + *moved_after >= *before + *moved_before)
          continue;
        d.tensors[v] = target;
        fit_grid(d.configs[o], target, chip);
        known[o].reset();
        for (OpId r : readers[v]) known[r].reset();
        for (uint32_t j : resharded[v])
          if (!dropped[j] && d.reshards[j].to == target) {
            dropped[j] = true;
            const LayoutDecision::Reshard& r = d.reshards[j];
            through[first_operand[r.before] + r.operand] = -1;
          }
      }
      continue;
    }
    if (!movable(v) || readers[v].empty() || d.tensors[v].memory == device::MemLayout::interleaved)
      continue;
    TensorLayout interleaved = interleaved_layout(g.values[v], device::BufferType::l1);
    tries.clear();
    seen.clear();
    tries.push_back(Try{{{v, interleaved}, {}}, 1});
    for (OpId r : readers[v]) {
      ValueId w = g.ops[r].results[0];
      if (!movable(w)) continue;
      if (g.values[w].shape == g.values[v].shape && d.tensors[w].dtype == d.tensors[v].dtype &&
          !(d.tensors[w] == d.tensors[v]))
        tries.push_back(Try{{{v, d.tensors[w]}, {}}, 1});
      TensorLayout w_interleaved = interleaved_layout(g.values[w], device::BufferType::l1);
      if (!(d.tensors[w] == w_interleaved))
        tries.push_back(Try{{{v, interleaved}, {w, w_interleaved}}, 2});
    }
    for (const Try& t : tries) {
      Try now = t;
      for (size_t i = 0; i < now.n; ++i) now.c[i].second = d.tensors[now.c[i].first];
      std::optional<uint64_t> before = cost(now.changes(), true), after = cost(t.changes(), false);
      if (!before || !after || *after >= *before) continue;
      seen.clear();
      for (const Change& c : t.changes()) {
        d.tensors[c.first] = c.second;
        OpId p = g.values[c.first].producer;
        fit_grid(d.configs[p], c.second, chip);
        known[p].reset();
        for (OpId r : readers[c.first]) known[r].reset();
      }
    }
  }
  size_t kept = 0;
  for (size_t k = 0; k < d.reshards.size(); ++k)
    if (!dropped[k]) d.reshards[kept++] = d.reshards[k];
  d.reshards.resize(kept);
}

}  // namespace

void repair_readers(const Graph& g, const device::ChipDesc& chip, const PlannerOptions& options,
                    const Overrides& ov, LayoutDecision& d) {
  OpQuery q(g, chip, options.mesh);
  repair(g, chip, q, ov, d);
}

Status apply_overrides(const Graph& g, const device::ChipDesc& chip, const Overrides& ov,
                       LayoutDecision& d, bool sharded_policy) {
  if (ov.empty()) return {};
  OpQuery q(g, chip);
  std::vector<TensorLayout> in;
  for (OpId o = 0; o < g.ops.size(); ++o) {
    MESHPLAN_TRY(operand_layouts(g, q, ov, o, d, in));
    const OutputOverride* w = ov.output_for(o);
    if (!w) continue;
    const Op& op = g.ops[o];
    std::vector<const TensorLayout*> ptrs;
    for (const TensorLayout& t : in) ptrs.push_back(&t);
    // The cheapest allowed layout OpModel accepts with the operands as decided.
    std::vector<TensorLayout> allowed = w->allowed(sharded_policy);
    std::optional<TensorLayout> best;
    uint64_t best_ns = 0;
    for (const TensorLayout& t : allowed) {
      std::optional<uint64_t> ns = q.cost_if_valid(
          op.kind, op.name, op.operands, ptrs, op.results[0], t, config_for(d.configs[o], t, chip));
      if (ns && (!best || *ns < best_ns)) {
        best = t;
        best_ns = *ns;
      }
    }
    if (!best)
      return fail(ErrorCode::invalid_argument, "output override for op '", op.name,
                  "' is illegal: ",
                  why(q, op, in, allowed.back(), config_for(d.configs[o], allowed.back(), chip)),
                  " (override '", w->entry, "')");
    d.tensors[op.results[0]] = *best;
    d.configs[o] = config_for(d.configs[o], *best, chip);
  }
  return {};
}

Result<LayoutDecision> greedy_propagation(const Graph& g, const device::ChipDesc& chip,
                                          const PlannerOptions& options, const Overrides& ov,
                                          bool sharded) {
  LayoutDecision d = MESHPLAN_TRY(LayoutDecision::all_dram(g, chip));
  OpQuery q(g, chip, options.mesh);
  // Candidate pools depend on the value's shape and dtype only (layout_candidates): transformer
  // layers repeat a handful of shapes, so each pool is built once (a tenth of greedy's time on
  // 10,000 ops went to rebuilding them).
  // Looked up by the value's own shape (PoolLess is transparent): no key is built per op.
  std::map<std::pair<std::vector<int64_t>, DType>, std::vector<TensorLayout>, PoolLess> pools;
  auto candidates = [&](const Value& v) -> const std::vector<TensorLayout>& {
    if (auto found = pools.find(PoolKey{v.shape, v.dtype}); found != pools.end())
      return found->second;
    auto it = pools.try_emplace({v.shape, v.dtype}).first;
    std::vector<TensorLayout> c = layout_candidates(v, chip, options.max_legal_layouts);
    if (!sharded)
      c.erase(std::remove_if(
                  c.begin(), c.end(),
                  [](const TensorLayout& t) { return t.memory != device::MemLayout::interleaved; }),
              c.end());
    it->second = std::move(c);
    return it->second;
  };
  // A pick depends only on the launch (kind, base config, shapes and operand layouts; names
  // aside) and the candidate pool: transformer layers repeat a few launches, so each is scored
  // once and later ops reuse its choice (index into the pool, or kNoPick when none is valid; the
  // reason of a failure is asked afresh, naming the op). Two thirds of greedy's OpModel lookups
  // were such repeats, and ops that refuse their operands as given repeat their failed picks.
  constexpr uint32_t kNoPick = UINT32_MAX;
  KeyMemo<uint32_t> picks;
  std::string pick_key;
  // Outcomes of the operand-move search (below) by launch and pools; failures end planning.
  struct Search {
    TensorLayout chosen;
    std::vector<std::pair<uint32_t, TensorLayout>> reshards;  // (operand, target)
  };
  KeyMemo<Search> searches;
  std::string search_key;
  // Buffers reused across ops.
  std::vector<TensorLayout> in;
  std::vector<const TensorLayout*> ptrs;
  device::OpConfig config;  // config_for(d.configs[o], candidate), set in place per candidate
  for (OpId o = 0; o < g.ops.size(); ++o) {
    const Op& op = g.ops[o];
    const Value& result = g.values[op.results[0]];
    MESHPLAN_TRY(operand_layouts(g, q, ov, o, d, in));
    const OutputOverride* w = ov.output_for(o);
    std::vector<TensorLayout> fixed;
    if (w) fixed = w->allowed(sharded);
    const std::vector<TensorLayout>& cands = w ? fixed : candidates(result);
    bool config_loaded = false;  // `config` holds d.configs[o] with some candidate's grid
    auto pick = [&](const std::vector<TensorLayout>& operands) -> std::optional<TensorLayout> {
      // The cheapest valid L1 layout by OpModel's cost (ties: the pool's order), else the first
      // valid fallback (DRAM).
      const TensorLayout* best = nullptr;
      uint64_t best_ns = 0;
      ptrs.clear();
      for (const TensorLayout& t : operands) ptrs.push_back(&t);
      uint64_t h = 0;
      if (!w) {  // pools live as long as `picks` (std::map nodes do not move)
        launch_key(pick_key, g, op.kind, op.operands, ptrs, op.results[0], TensorLayout{},
                   d.configs[o]);
        const std::vector<TensorLayout>* pool = &cands;
        pick_key.append(reinterpret_cast<const char*>(&pool), sizeof(pool));
        h = key_hash(pick_key);
        if (const uint32_t* i = picks.find(h, pick_key)) {
          if (*i == kNoPick) return std::nullopt;
          return cands[*i];
        }
      }
      auto chosen = [&](const TensorLayout* c) -> std::optional<TensorLayout> {
        if (!w) picks.insert(h, pick_key, c ? static_cast<uint32_t>(c - cands.data()) : kNoPick);
        if (!c) return std::nullopt;
        return *c;
      };
      if (!config_loaded) {  // one copy of the op's config per op, not per candidate
        config = d.configs[o];
        config_loaded = true;
      }
      for (const TensorLayout& c : cands) {
        fit_grid(config, c, chip);
        if (!c.in_l1()) {
          if (best) continue;
          if (check(q, op, operands, c, config).ok) return chosen(&c);
          continue;
        }
        std::optional<uint64_t> ns =
            q.cost_if_valid(op.kind, op.name, op.operands, ptrs, op.results[0], c, config);
        if (ns && (!best || *ns < best_ns)) {
          best = &c;
          best_ns = *ns;
        }
      }
      return chosen(best);
    };
    std::optional<TensorLayout> chosen = pick(in);
    // The operand moves below, when the operands as they are admit no layout, depend only on the
    // launch and the pools (the result's and the operands'): an op that repeats a launch repeats
    // their outcome, kept from its first search (its layout and reshards), since each target
    // costs a move check and a pick.
    const size_t reshards_before = d.reshards.size();
    bool searching = false;  // the search below runs and its outcome is kept
    uint64_t search_h = 0;
    if (!chosen && !w) {
      search_key.assign(pick_key);  // `in`'s pick key (pick() built it), then the operands' pools
      for (ValueId v : op.operands) {
        const std::vector<TensorLayout>* pool = &candidates(g.values[v]);
        search_key.append(reinterpret_cast<const char*>(&pool), sizeof(pool));
      }
      search_h = key_hash(search_key);
      if (const Search* found = searches.find(search_h, search_key)) {
        chosen = found->chosen;
        for (const auto& [i, t] : found->reshards)
          d.reshards.push_back(LayoutDecision::Reshard{o, i, t});
      } else {
        searching = true;
      }
    }
    // No valid result with the operands as they are: reshard one operand (bounded exploration).
    // The pool's last eight targets end with L1 and DRAM interleaved (layout_candidates), so an
    // op that refuses every layout its producer offers still reads the operand interleaved.
    for (uint32_t i = 0; !chosen && i < op.operands.size(); ++i) {
      std::vector<TensorLayout> targets = candidates(g.values[op.operands[i]]);  // a copy
      if (targets.size() > 8) targets.erase(targets.begin(), targets.end() - 8);
      for (const TensorLayout& t : targets) {
        if (t == in[i] || !q.validate_move(op.operands[i], in[i], t).ok) continue;
        std::vector<TensorLayout> moved = in;
        moved[i] = t;
        if ((chosen = pick(moved))) {
          d.reshards.push_back(LayoutDecision::Reshard{o, i, t});
          break;
        }
      }
    }
    // Still none: read every sharded operand interleaved (in L1, else in DRAM), as beam does,
    // for rules over all operands at once (binary_ng broadcasts only with no sharded operand).
    for (bool l1 : {true, false}) {
      if (chosen || op.operands.size() < 2) break;
      std::vector<TensorLayout> moved = in;
      bool ok = true;
      for (uint32_t i = 0; ok && i < op.operands.size(); ++i) {
        if (in[i].memory == device::MemLayout::interleaved) continue;
        std::vector<TensorLayout> targets = candidates(g.values[op.operands[i]]);
        auto t = std::find_if(targets.rbegin(), targets.rend(), [&](const TensorLayout& c) {
          return c.memory == device::MemLayout::interleaved && c.in_l1() == l1;
        });
        ok = t != targets.rend() && q.validate_move(op.operands[i], in[i], *t).ok;
        if (ok) moved[i] = *t;
      }
      if (!ok || !(chosen = pick(moved))) continue;
      for (uint32_t i = 0; i < op.operands.size(); ++i)
        if (!(moved[i] == in[i])) d.reshards.push_back(LayoutDecision::Reshard{o, i, moved[i]});
    }
    if (searching && chosen) {
      Search kept{*chosen, {}};
      for (size_t k = reshards_before; k < d.reshards.size(); ++k)
        kept.reshards.emplace_back(d.reshards[k].operand, d.reshards[k].to);
      searches.insert(search_h, search_key, std::move(kept));
    }
    // OpModel's words for the last fallback (DRAM) with the operands as they are.
    std::string reason;
    if (!chosen && !cands.empty())
      reason = why(q, op, in, cands.back(), config_for(d.configs[o], cands.back(), chip));
    if (!chosen && w)
      return fail(ErrorCode::invalid_argument, "output override for op '", op.name,
                  "' is illegal: ", reason, " (override '", w->entry, "')");
    if (!chosen)
      return fail(ErrorCode::invalid_argument, "no legal layout for op '", op.name, "': ", reason);
    d.tensors[op.results[0]] = *chosen;
    fit_grid(d.configs[o], *chosen, chip);
  }
  if (sharded) repair(g, chip, q, ov, d);
  return d;
}

}  // namespace meshplan::planner
