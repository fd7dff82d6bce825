// Beam search over layouts (seed 002 §5.8.1). Forward: per op in schedule order, candidates
// from the combinations of the operands' kept candidates plus a bounded number of reshards of
// the best one (K x K for binary ops; an op with more operands gets as many combinations as a
// binary op, not K^n), times the op's result layouts OpModel accepts; keep the K best with
// back-pointers. An op whose work would pass the evaluation cap is planned greedily, with a note.
// Backward: from the last op to the first, each op takes the candidate its consumers' requests cost
// least to satisfy (fork resolution), inserting reshards for the consumers whose wanted layout
// differs.
//
// Speed: every (operand options, result layout) candidate is first a small Scored record; only
// the K kept become entries, which refer to their operands' producer entries and reshard targets
// by index (Pick) instead of copying layouts; layout candidates are computed once per value. The
// order of candidates and the stable sort are those of the first version, so plans are
// byte-identical to it (tests/planner/beam_identity_test.cpp).
#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <map>
#include <optional>

#include "common/key_memo.hpp"
#include "layout/launch_key.hpp"
#include "layout/row_broadcast.hpp"
#include "meshplan/planner/policies.hpp"

namespace meshplan::planner {

namespace {

constexpr uint32_t kReshardsPerOperand = 2;  // reshard targets explored per operand per op
constexpr uint64_t kInf = std::numeric_limits<uint64_t>::max() / 4;

/// How one kept entry reads one operand, by index: the producer's entry `parent` (in its level;
/// -1 for an argument), through a reshard to candidate `reshard` of the operand's layout
/// candidates (-1: none), or through the user's forced move.
struct Pick {
  int32_t parent = -1;
  int16_t reshard = -1;
  bool forced = false;
};

/// One way an op can read one operand, while the op is being expanded (not kept).
struct Option {
  TensorLayout reads;
  Pick pick;
  uint64_t score = 0;
  uint32_t min_cores = UINT32_MAX;
  uint32_t reshards = 0;
};

/// A kept beam entry: the result layout, and its per-operand picks at Level::picks[picks ...].
/// Its config is config_for(the op's attribute config, layout), rebuilt at trace-back: keeping
/// it made each entry 4x larger (beam's memory on large graphs is K entries per op).
struct Cand {
  TensorLayout layout;
  uint64_t score = 0;
  uint32_t min_cores = UINT32_MAX;
  uint32_t reshards = 0;
  uint32_t picks = 0;
};

/// What beam keeps of one op: its K entries and their picks.
struct Level {
  std::vector<Cand> cands;
  std::vector<Pick> picks;
};

/// A scored candidate before the beam cut. Small, so that all of them are sorted cheaply; only
/// the K kept become Cands. `combo` indexes the operand-option combination (its option indices
/// at combo * operands in the combination table), `result` the result layout (the op's
/// candidates, then the extra layouts tried).
struct Scored {
  uint64_t score;
  uint32_t min_cores, reshards;
  uint32_t combo, result;
};

}  // namespace

Result<LayoutDecision> beam_search(const Graph& g, const device::ChipDesc& chip,
                                   const PlannerOptions& options, const Overrides& ov,
                                   BeamStats* stats) {
  LayoutDecision d = MESHPLAN_TRY(LayoutDecision::all_dram(g, chip));
  OpQuery q(g, chip, options.mesh);
  const size_t k_width = std::max<uint32_t>(1, options.beam_width);
  const bool cost_mode = options.beam_cost_mode;
  auto better = [&](const Scored& a, const Scored& b) {
    if (cost_mode) return a.score < b.score;
    if (a.min_cores != b.min_cores) return a.min_cores > b.min_cores;
    if (a.reshards != b.reshards) return a.reshards < b.reshards;
    return a.score < b.score;
  };
  // Layout candidates per value (an op's results, and its consumers' reshards), computed once
  // per shape and dtype, which are all layout_candidates() reads: values of one shape share a
  // pool (a pool per value was most of beam's memory on large graphs).
  std::map<std::pair<std::vector<int64_t>, DType>, int32_t> pool_index;
  std::deque<std::vector<TensorLayout>> pools;
  std::vector<int32_t> pool_of(g.values.size(), -1);
  auto candidates_of = [&](ValueId v) -> const std::vector<TensorLayout>& {
    if (pool_of[v] < 0) {
      auto [it, fresh] = pool_index.try_emplace({g.values[v].shape, g.values[v].dtype},
                                                static_cast<int32_t>(pools.size()));
      if (fresh) pools.push_back(layout_candidates(g.values[v], chip, options.max_legal_layouts));
      pool_of[v] = it->second;
    }
    return pools[static_cast<size_t>(pool_of[v])];
  };
  auto forced_move = [&](OpId o, uint32_t i) {
    return std::find_if(ov.moves.begin(), ov.moves.end(),
                        [&](const auto& m) { return m.op == o && m.operand == i; });
  };
  std::vector<Level> beam(g.ops.size());
  // Scratch reused across ops.
  std::vector<std::vector<Option>> opts;
  std::vector<Scored> next;
  std::vector<uint16_t> combos;
  std::vector<TensorLayout> extra;
  std::vector<const TensorLayout*> reads;
  std::vector<TensorLayout> override_result;
  std::vector<uint32_t> cap;
  std::vector<uint16_t> pick;
  // OpModel's answers for every pool layout of a result, per launch (kind, base config, shapes and
  // operand reads; names aside) and pool: transformer layers repeat a few launches, and scoring a
  // combination asked OpModel's memo once per result layout (most of beam's time). An entry
  // locates its timings: one per pool layout in the pool's order, then the in-place layouts.
  struct Timed {
    uint64_t ns;
    uint32_t cores;
    bool valid;
  };
  struct Timings {
    uint32_t first, in_place_first, in_place_count;
  };
  KeyMemo<Timings> timed_memo;
  std::vector<Timed> timings;
  std::vector<std::pair<TensorLayout, Timed>> in_place;  // the in-place layouts below, timed
  std::string timed_key;
  // Moves of a value, per pool (its shape and dtype), source and target layouts: whether OpModel
  // takes the move and what it costs (the move's launch depends on nothing else).
  struct Move {
    bool valid;
    uint64_t ns;
  };
  KeyMemo<Move> move_memo;
  std::string move_key;
  auto move = [&](ValueId v, const TensorLayout& from, const TensorLayout& to) -> Move {
    candidates_of(v);  // sets pool_of[v]
    move_key.clear();
    auto put = [&](auto x) { move_key.append(reinterpret_cast<const char*>(&x), sizeof(x)); };
    auto layout = [&](const TensorLayout& t) {  // as launch_key() writes a layout
      put(t.dtype);
      put(t.layout);
      put(t.buffer);
      put(t.memory);
      if (t.memory != device::MemLayout::interleaved) {
        put(t.shard.grid);
        put(t.shard.shape[0]);
        put(t.shard.shape[1]);
        put(t.shard.orientation);
      }
    };
    put(pool_of[v]);
    layout(from);
    layout(to);
    const uint64_t h = key_hash(move_key);
    if (const Move* m = move_memo.find(h, move_key)) return *m;
    Move m{q.validate_move(v, from, to).ok, 0};
    if (m.valid) m.ns = q.move_cost(v, from, to);
    return move_memo.insert(h, move_key, m);
  };
  BeamStats st;
  const uint64_t max_combinations =
      options.beam_max_combinations != 0
          ? uint64_t{options.beam_max_combinations}
          : (uint64_t{k_width} + kReshardsPerOperand) * (k_width + kReshardsPerOperand);
  for (OpId o = 0; o < g.ops.size(); ++o) {
    const Op& op = g.ops[o];
    const Value& result = g.values[op.results[0]];
    const uint32_t arity = static_cast<uint32_t>(op.operands.size());
    // Options per operand.
    if (opts.size() < arity) opts.resize(arity);
    const bool row_broadcast = broadcasts_across_rows(g, op);
    for (uint32_t i = 0; i < arity; ++i) {
      ValueId v = op.operands[i];
      OpId p = g.values[v].producer;
      std::vector<Option>& list = opts[i];
      list.clear();
      if (p == kNoOp) {
        list.push_back(Option{d.tensors[v], Pick{}, 0, UINT32_MAX, 0});
      } else {
        const std::vector<Cand>& from = beam[p].cands;
        for (int32_t k = 0; k < static_cast<int32_t>(from.size()); ++k) {
          const Cand& c = from[k];
          if (std::any_of(list.begin(), list.end(),
                          [&](const Option& x) { return x.reads == c.layout; }))
            continue;
          list.push_back(Option{c.layout, Pick{k, -1, false}, c.score, c.min_cores, c.reshards});
        }
      }
      const Option base = list.front();
      if (auto forced = forced_move(o, i); forced != ov.moves.end()) {
        TensorLayout to = interleaved_layout(g.values[v], forced->to);
        device::OpValidation ok = q.validate_move(v, base.reads, to);
        if (!ok.ok)
          return fail(ErrorCode::invalid_argument, "memreconfig for op '", op.name, "' operand ", i,
                      " is illegal: ", q.explain_move(v, base.reads, to).reason);
        list = {Option{to, Pick{base.pick.parent, -1, true},
                       base.score + q.move_cost(v, base.reads, to), base.min_cores,
                       base.reshards + 1}};
        continue;
      }
      if (p == kNoOp) continue;
      uint32_t explored = 0;
      const std::vector<TensorLayout>& targets = candidates_of(v);
      for (size_t t = 0; t < targets.size(); ++t) {
        if (explored >= kReshardsPerOperand) break;
        if (std::any_of(list.begin(), list.end(),
                        [&](const Option& x) { return x.reads == targets[t]; }))
          continue;
        const Move m = move(v, base.reads, targets[t]);
        if (!m.valid) continue;
        ++explored;
        list.push_back(Option{targets[t], Pick{base.pick.parent, static_cast<int16_t>(t), false},
                              base.score + m.ns, base.min_cores, base.reshards + 1});
      }
      // binary_ng broadcasts across rows with nothing sharded: the producer's sharded entries may
      // still win through a move to L1 interleaved (the cheapest such move joins the options,
      // when cheaper than the producer writing L1 interleaved itself).
      if (!row_broadcast) continue;
      auto l1 = std::find_if(targets.begin(), targets.end(), [](const TensorLayout& t) {
        return t.memory == device::MemLayout::interleaved && t.in_l1();
      });
      if (l1 == targets.end()) continue;
      std::optional<Option> via;
      bool moved = false;
      for (const Option& x : list)
        if (x.reads == *l1 && (!via || x.score < via->score)) via = x;
      for (const Option& x : list) {
        if (x.reads.memory == device::MemLayout::interleaved || x.pick.reshard >= 0) continue;
        const Move m = move(v, x.reads, *l1);
        if (!m.valid || (via && x.score + m.ns >= via->score)) continue;
        via = Option{*l1, Pick{x.pick.parent, static_cast<int16_t>(l1 - targets.begin()), false},
                     x.score + m.ns, x.min_cores, x.reshards + 1};
        moved = true;
      }
      if (moved) list.push_back(*via);
    }
    // An override narrows the result layouts to the ones it allows (tt-mlir's legal layouts).
    const OutputOverride* overridden = ov.output_for(o);
    const std::vector<TensorLayout>* results_ptr = &override_result;
    if (overridden)
      override_result = overridden->allowed(true);
    else
      results_ptr = &candidates_of(op.results[0]);
    const std::vector<TensorLayout>& results = *results_ptr;
    auto result_layout = [&](uint32_t r) -> const TensorLayout& {
      return r < results.size() ? results[r] : extra[r - results.size()];
    };
    // Operand-option combinations (odometer order), each times every valid result layout. Past
    // the bound each operand keeps only its first cap[i] options (its producer's best entries
    // first, reshards last), the operand with the most losing one at a time (ties: the later),
    // until the product fits: an n-ary op is searched as widely as a binary op, not K^n times.
    cap.resize(arity);
    for (uint32_t i = 0; i < arity; ++i) cap[i] = static_cast<uint32_t>(opts[i].size());
    auto product = [&] {
      uint64_t n = 1;
      for (uint32_t c : cap) n = n > kInf / c ? kInf : n * c;
      return n;
    };
    uint64_t combinations = product();
    if (combinations > max_combinations) {
      ++st.ops_bounded;
      while (combinations > max_combinations) {
        uint32_t widest = 0;
        for (uint32_t i = 0; i < arity; ++i)
          if (cap[i] >= cap[widest]) widest = i;
        --cap[widest];
        combinations = product();
      }
    }
    // The work cap: an op whose combinations times result layouts (and the in-place layouts
    // tried per combination) pass it is planned greedily: its operands' best entries, else one
    // operand resharded, and the single best result.
    const uint64_t per_combination =
        std::max<uint64_t>(1, results.size() + (overridden ? 0 : arity));
    const uint64_t work =
        combinations > kInf / per_combination ? kInf : combinations * per_combination;
    const bool degraded = options.beam_max_evaluations != 0 && work > options.beam_max_evaluations;
    next.clear();
    combos.clear();
    extra.clear();
    uint64_t op_evaluations = 0, op_combinations = 0;
    // Scores one combination: every result layout OpModel accepts with these operand reads.
    auto score_combination = [&](const std::vector<uint16_t>& pick) {
      ++op_combinations;
      reads.clear();
      uint64_t score = 0;
      uint32_t min_cores = UINT32_MAX, reshards = 0;
      for (uint32_t i = 0; i < arity; ++i) {
        const Option& x = opts[i][pick[i]];
        reads.push_back(&x.reads);
        score += x.score;
        min_cores = std::min(min_cores, x.min_cores);
        reshards += x.reshards;
      }
      const uint32_t combo = static_cast<uint32_t>(combos.size() / std::max<uint32_t>(arity, 1));
      combos.insert(combos.end(), pick.begin(), pick.end());
      auto timed = [&](uint32_t r) -> Timed {
        const TensorLayout& layout = result_layout(r);
        device::OpConfig config = config_for(d.configs[o], layout, chip);
        std::optional<device::OpTiming> t =
            q.timing_if_valid(op.kind, op.name, op.operands, reads, op.results[0], layout, config);
        return t ? Timed{t->duration_ns, t->cores_used, true} : Timed{0, 0, false};
      };
      auto consider_timed = [&](uint32_t r, const Timed& t) {
        ++op_evaluations;
        if (!t.valid) return false;
        next.push_back(Scored{score + t.ns, std::min(min_cores, t.cores), reshards, combo, r});
        return true;
      };
      auto consider = [&](uint32_t r) { return consider_timed(r, timed(r)); };
      if (overridden) {
        for (uint32_t r = 0; r < results.size(); ++r) consider(r);
        return;
      }
      // Pools live as long as this search (a deque's elements do not move).
      launch_key(timed_key, g, op.kind, op.operands, reads, op.results[0], TensorLayout{},
                 d.configs[o]);
      timed_key.append(reinterpret_cast<const char*>(&results_ptr), sizeof(results_ptr));
      const uint64_t h = key_hash(timed_key);
      const Timings* e = timed_memo.find(h, timed_key);
      if (!e) {
        Timings n{static_cast<uint32_t>(timings.size()), static_cast<uint32_t>(in_place.size()), 0};
        for (uint32_t r = 0; r < results.size(); ++r) timings.push_back(timed(r));
        // A layout OpModel accepts that the pool may not hold (seed 002 §5.4.5): the result
        // sharded exactly like an operand of its shape, as an elementwise op writes it in place.
        for (uint32_t i = 0; i < reads.size(); ++i) {
          TensorLayout same = *reads[i];
          same.dtype = results.back().dtype;
          if (!same.in_l1() || same.memory == device::MemLayout::interleaved ||
              g.values[op.operands[i]].shape != result.shape ||
              std::find(results.begin(), results.end(), same) != results.end() ||
              std::any_of(reads.begin(), reads.begin() + i,
                          [&](const TensorLayout* x) { return *x == *reads[i]; }))
            continue;
          extra.push_back(same);
          in_place.emplace_back(same,
                                timed(static_cast<uint32_t>(results.size() + extra.size() - 1)));
          extra.pop_back();
        }
        n.in_place_count = static_cast<uint32_t>(in_place.size()) - n.in_place_first;
        e = &timed_memo.insert(h, timed_key, n);
      }
      for (uint32_t r = 0; r < results.size(); ++r) consider_timed(r, timings[e->first + r]);
      for (uint32_t j = e->in_place_first; j < e->in_place_first + e->in_place_count; ++j) {
        extra.push_back(in_place[j].first);
        if (!consider_timed(static_cast<uint32_t>(results.size() + extra.size() - 1),
                            in_place[j].second))
          extra.pop_back();
      }
    };
    pick.assign(arity, 0);
    if (!degraded) {
      for (bool more = true; more;) {
        score_combination(pick);
        more = false;
        for (size_t i = 0; i < pick.size(); ++i) {
          if (++pick[i] < cap[i]) {
            more = true;
            break;
          }
          pick[i] = 0;
        }
      }
    } else {
      score_combination(pick);
      for (uint32_t i = 0; next.empty() && i < arity; ++i)
        for (uint16_t j = 1; next.empty() && j < opts[i].size(); ++j) {
          if (opts[i][j].pick.reshard < 0) continue;
          pick.assign(arity, 0);
          pick[i] = j;
          score_combination(pick);
        }
      ++st.ops_degraded;
      d.notes.push_back(str("beam: op '", op.name, "' (", device::op_name(op.kind), ", ", arity,
                            " operands) would need ", work, " OpModel evaluations (", combinations,
                            " operand combinations x ", per_combination,
                            " layouts), more than beam_max_evaluations ",
                            options.beam_max_evaluations, ": planned greedily"));
    }
    // No operand option gave a layout the op accepts (the explored reshards are the pool's
    // first, sharded, targets): read an operand through a reshard to an interleaved layout, L1
    // then DRAM, one operand at a time, then all of them, as tt-metal's interleaved programs
    // take any producer's data once it is moved (to_memory_config).
    if (next.empty()) {
      std::vector<std::array<int32_t, 2>> moved(arity, {-1, -1});
      for (uint32_t i = 0; i < arity; ++i) {
        ValueId v = op.operands[i];
        if (g.values[v].producer == kNoOp || forced_move(o, i) != ov.moves.end()) continue;
        const Option base = opts[i].front();
        const std::vector<TensorLayout>& targets = candidates_of(v);
        for (size_t t = 0; t < targets.size(); ++t) {
          const TensorLayout& to = targets[t];
          if (to.memory != device::MemLayout::interleaved || to == base.reads ||
              !q.validate_move(v, base.reads, to).ok)
            continue;
          auto same = std::find_if(opts[i].begin(), opts[i].end(),
                                   [&](const Option& x) { return x.reads == to; });
          if (same == opts[i].end()) {
            opts[i].push_back(Option{to, Pick{base.pick.parent, static_cast<int16_t>(t), false},
                                     base.score + q.move_cost(v, base.reads, to), base.min_cores,
                                     base.reshards + 1});
            same = opts[i].end() - 1;
          }
          moved[i][to.in_l1() ? 0 : 1] = static_cast<int32_t>(same - opts[i].begin());
        }
      }
      for (int b = 0; b < 2; ++b)
        for (uint32_t i = 0; i < arity; ++i) {
          if (moved[i][b] < 0) continue;
          pick.assign(arity, 0);
          pick[i] = static_cast<uint16_t>(moved[i][b]);
          score_combination(pick);
        }
      for (int b = 0; next.empty() && b < 2; ++b) {
        pick.assign(arity, 0);
        uint32_t n = 0;
        for (uint32_t i = 0; i < arity; ++i)
          if (moved[i][b] >= 0) {
            pick[i] = static_cast<uint16_t>(moved[i][b]);
            ++n;
          }
        if (n > 1) score_combination(pick);
      }
    }
    st.evaluations += op_evaluations;
    st.combinations += op_combinations;
    st.max_op_evaluations = std::max(st.max_op_evaluations, op_evaluations);
    st.max_op_combinations = std::max(st.max_op_combinations, op_combinations);
    if (next.empty()) {
      // OpModel's words (naming this op) for the first operand options and the last fallback.
      reads.clear();
      for (uint32_t i = 0; i < arity; ++i) reads.push_back(&opts[i][0].reads);
      std::string reason = q.explain(op.kind, op.name, op.operands, reads, op.results[0],
                                     results.back(), config_for(d.configs[o], results.back(), chip))
                               .reason;
      if (overridden)
        return fail(ErrorCode::invalid_argument, "output override for op '", op.name,
                    "' is illegal: ", reason, " (override '", overridden->entry, "')");
      return fail(ErrorCode::invalid_argument, "no legal layout for op '", op.name, "': ", reason);
    }
    // The K best in the order a stable sort gives: candidates were scored in (combination,
    // result) order, so that pair breaks ties; only the kept ones are sorted.
    const size_t keep = std::min(next.size(), degraded ? size_t{1} : k_width);
    std::partial_sort(next.begin(), next.begin() + static_cast<std::ptrdiff_t>(keep), next.end(),
                      [&](const Scored& a, const Scored& b) {
                        if (better(a, b)) return true;
                        if (better(b, a)) return false;
                        return a.combo != b.combo ? a.combo < b.combo : a.result < b.result;
                      });
    next.resize(keep);
    Level& level = beam[o];
    level.cands.reserve(next.size());
    level.picks.reserve(next.size() * arity);
    for (const Scored& sc : next) {
      const TensorLayout& layout = result_layout(sc.result);
      level.cands.push_back(Cand{layout, sc.score, sc.min_cores, sc.reshards,
                                 static_cast<uint32_t>(level.picks.size())});
      for (uint32_t i = 0; i < arity; ++i)
        level.picks.push_back(opts[i][combos[size_t{sc.combo} * arity + i]].pick);
    }
  }
  // What a kept entry reads for operand i of op o (and, for a forced move, the layout the
  // producer is asked for), rebuilt from its pick.
  auto reads_of = [&](OpId o, uint32_t i, const Pick& pk) -> TensorLayout {
    ValueId v = g.ops[o].operands[i];
    OpId p = g.values[v].producer;
    if (pk.forced) return interleaved_layout(g.values[v], forced_move(o, i)->to);
    if (pk.reshard >= 0) return candidates_of(v)[pk.reshard];
    return p == kNoOp ? d.tensors[v] : beam[p].cands[pk.parent].layout;
  };
  auto forced_from = [&](OpId o, uint32_t i) -> TensorLayout {
    ValueId v = g.ops[o].operands[i];
    OpId p = g.values[v].producer;
    return p == kNoOp ? d.tensors[v] : beam[p].cands[0].layout;
  };
  // Trace-back with fork resolution.
  struct Request {
    OpId consumer;
    uint32_t operand;
    TensorLayout wants;
  };
  std::vector<std::vector<Request>> requests(g.ops.size());
  for (OpId o = static_cast<OpId>(g.ops.size()); o-- > 0;) {
    const Op& op = g.ops[o];
    ValueId v = op.results[0];
    size_t chosen = 0;
    if (!requests[o].empty()) {
      uint64_t best = kInf;
      const std::vector<Cand>& kept = beam[o].cands;
      for (size_t k = 0; k < kept.size(); ++k) {
        uint64_t total = 0;
        for (const Request& r : requests[o]) {
          if (r.wants == kept[k].layout) continue;
          const Move m = move(v, kept[k].layout, r.wants);
          total += m.valid ? m.ns : kInf;
        }
        if (total < best) {
          best = total;
          chosen = k;
        }
      }
      if (best >= kInf)
        return fail(ErrorCode::internal, "beam: no candidate of op '", op.name,
                    "' satisfies its consumers");
    }
    const Cand& c = beam[o].cands[chosen];
    d.tensors[v] = c.layout;
    // d.configs[o] is still the attribute config all_dram() gave it (the forward pass reads it
    // and the trace-back sets each op once), as when the entry was scored.
    d.configs[o] = config_for(d.configs[o], c.layout, chip);
    for (const Request& r : requests[o])
      if (!(r.wants == c.layout))
        d.reshards.push_back(LayoutDecision::Reshard{r.consumer, r.operand, r.wants});
    for (uint32_t i = 0; i < op.operands.size(); ++i) {
      ValueId in = op.operands[i];
      OpId p = g.values[in].producer;
      const Pick& pk = beam[o].picks[c.picks + i];
      TensorLayout reads_i = reads_of(o, i, pk);
      if (pk.forced) {
        d.reshards.push_back(LayoutDecision::Reshard{o, i, reads_i});
        if (p != kNoOp) requests[p].push_back(Request{o, i, forced_from(o, i)});
      } else if (p != kNoOp)
        requests[p].push_back(Request{o, i, reads_i});
      else if (!(reads_i == d.tensors[in]))
        d.reshards.push_back(LayoutDecision::Reshard{o, i, reads_i});
    }
  }
  std::stable_sort(d.reshards.begin(), d.reshards.end(), [](const auto& a, const auto& b) {
    return a.before != b.before ? a.before < b.before : a.operand < b.operand;
  });
  if (stats) *stats = st;
  return d;
}

}  // namespace meshplan::planner
