// Exhaustive branch-and-bound over the layout choices of small graphs: the optimum the policies
// are measured against. A decision is, per op, its result layout, for every operand the layout it
// reads (the value as it is, or a reshard of it to another candidate layout of that value), and
// which of the L1 values live across the op are spilled to DRAM just before it (spill
// management's moves, at any point between a value's producer and its last reader; later readers
// and the graph output read the copy). A plan counts only if every op of it (reshards and spills
// included) is valid and its L1 tensors all pack.
//
// Steps:
//  1. Candidates: per op the legal result layouts of the pool (validated against the operand
//     layouts chosen so far), per read value the same pool of that value's layouts as reshard
//     targets (beam's and greedy's reshard targets come from it; interleaved L1 and DRAM are
//     always in it).
//  2. Lower bound: an op's cost (its reshards' and the spills before it included) depends only on
//     the layouts
//     and spill flags of the values live across its position, so the cost of ops o..n-1 given
//     that live state is a function of the state alone. relaxed(o, state) = the least such cost
//     ignoring L1 packing, memoised on (o, state).
//  3. Depth-first search in schedule order, children cheapest-bound first; a branch is cut when
//     its cost so far plus relaxed() of its state cannot beat the best packed plan. Leaves are
//     materialized, costed again as a plan (the search's sum must equal it: an internal error
//     otherwise) and packed (pack_l1).
#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "meshplan/planner/memory_plan.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/schedule.hpp"
#include "meshplan/planner/testing.hpp"

namespace meshplan::planner {

namespace {

constexpr uint64_t kInfinite = UINT64_MAX;

uint64_t saturating_add(uint64_t a, uint64_t b) {
  return a > kInfinite - b ? kInfinite : a + b;
}

class Search {
 public:
  Search(const Graph& g, const device::ChipDesc& chip, const PlannerOptions& options,
         LayoutDecision d, bool bounded)
      : bounded_(bounded),
        g_(g),
        chip_(chip),
        q_(g, chip, options.mesh),
        d_(std::move(d)),
        base_(d_.configs) {
    n_ = static_cast<OpId>(g.ops.size());
    cands_.resize(n_);
    for (OpId o = 0; o < n_; ++o)
      cands_[o] = layout_candidates(g.values[g.ops[o].results[0]], chip, options.max_legal_layouts);
    const size_t nv = g.values.size();
    targets_.resize(nv);
    dram_.reserve(nv);
    for (ValueId v = 0; v < nv; ++v)
      dram_.push_back(interleaved_layout(g.values[v], device::BufferType::dram));
    // Values live across position o (read by an op at o or later, defined before o), sorted.
    std::vector<int> last(nv, -1);
    for (OpId o = 0; o < n_; ++o)
      for (ValueId v : g.ops[o].operands) {
        last[v] = std::max(last[v], static_cast<int>(o));
        if (targets_[v].empty())
          targets_[v] = layout_candidates(g.values[v], chip, options.max_legal_layouts);
      }
    live_.resize(n_ + 1);
    for (OpId o = 0; o <= n_; ++o)
      for (ValueId v = 0; v < nv; ++v) {
        OpId producer = g.values[v].producer;
        if (producer != kNoOp && producer < o && last[v] >= static_cast<int>(o))
          live_[o].push_back(v);
      }
    choice_.assign(nv, 0);
    spilled_.assign(nv, false);
    spill_at_.assign(nv, -1);
    spillable_at_.resize(n_ + 1);
    reads_.resize(n_);
    for (OpId o = 0; o < n_; ++o) reads_[o].assign(g.ops[o].operands.size(), -1);
    memo_.resize(n_ + 1);
  }

  Result<SearchResult> run() {
    best_.estimated_ns = kInfinite;
    visit(0, 0);
    MESHPLAN_TRY(error_);
    if (best_.estimated_ns == kInfinite)
      return fail(ErrorCode::resource_exhausted, "exhaustive search: no plan of graph '", g_.name,
                  "' fits");
    return best_;
  }

 private:
  using State = std::vector<uint16_t>;

  // One choice for an op: the live values spilled before it (bits of spillable()), its result
  // candidate, and per operand the reshard target read (-1: the value as it is).
  struct Option {
    uint32_t spills = 0;
    uint16_t k = 0;
    std::vector<int16_t> reads;
    uint64_t cost = 0;
    device::OpConfig config;
  };

  State state_at(OpId o) const {
    State s;
    s.reserve(live_[o].size());
    for (ValueId v : live_[o]) s.push_back(static_cast<uint16_t>(choice_[v] * 2 + spilled_[v]));
    return s;
  }

  // The layout readers of v see: its DRAM copy when spilled.
  const TensorLayout& seen(ValueId v) const { return spilled_[v] ? dram_[v] : d_.tensors[v]; }

  // A to_memory_config as materialize() builds it: the grid of its L1 side, or for interleaved
  // L1 (or DRAM to DRAM) the grid of `grid`.
  std::optional<uint64_t> move_cost(ValueId v, const TensorLayout& from, const TensorLayout& to,
                                    const device::OpConfig& grid) const {
    const TensorLayout& l1 = to.in_l1() ? to : from;
    device::OpConfig c = config_for(device::OpConfig{}, l1, device::ChipDesc{});
    if (l1.memory == device::MemLayout::interleaved) {
      c.grid_x = grid.grid_x;
      c.grid_y = grid.grid_y;
    }
    const TensorLayout* in[1] = {&from};
    ValueId ops[1] = {v};
    return q_.cost_if_valid(device::OpKind::to_memory_config, "to_memory_config", ops, in, v, to,
                            c);
  }

  // Every valid option of op o under the current choices, each passed to f.
  template <typename F>
  void for_each_op_option(OpId o, uint32_t spills, F&& f) const {
    const Op& op = g_.ops[o];
    const size_t m = op.operands.size();
    std::vector<const TensorLayout*> seen_by(m), in(m);
    for (size_t i = 0; i < m; ++i) seen_by[i] = &seen(op.operands[i]);
    const ValueId result = op.results[0];
    Option opt;
    opt.reads.assign(m, -1);
    opt.spills = spills;
    opt.cost = 0;
    for (uint16_t k = 0; k < cands_[o].size(); ++k) {
      const TensorLayout& r = cands_[o][k];
      device::OpConfig c = config_for(base_[o], r, chip_);
      std::fill(opt.reads.begin(), opt.reads.end(), -1);
      while (true) {
        bool same = false;
        for (size_t i = 0; i < m && !same; ++i) {
          if (opt.reads[i] < 0) {
            in[i] = seen_by[i];
          } else {
            in[i] = &targets_[op.operands[i]][opt.reads[i]];
            same = *in[i] == *seen_by[i];  // a reshard to the layout it has: not a choice
          }
        }
        if (!same) {
          std::optional<uint64_t> here =
              q_.cost_if_valid(op.kind, op.name, op.operands, in, result, r, c);
          for (size_t i = 0; i < m && here; ++i)
            if (opt.reads[i] >= 0) {
              std::optional<uint64_t> mv = move_cost(op.operands[i], *seen_by[i], *in[i], c);
              here = mv ? std::optional<uint64_t>(saturating_add(*here, *mv)) : std::nullopt;
            }
          if (here) {
            opt.k = k;
            opt.config = c;
            opt.cost = *here;
            f(opt);
          }
        }
        size_t i = 0;
        for (; i < m; ++i) {
          if (++opt.reads[i] < static_cast<int>(targets_[op.operands[i]].size())) break;
          opt.reads[i] = -1;
        }
        if (i == m) break;
      }
    }
  }

  // The live values that may be spilled before op o: in L1, not spilled yet.
  std::vector<ValueId> spillable(OpId o) const {
    std::vector<ValueId> out;
    for (ValueId v : live_[o])
      if (!spilled_[v] && d_.tensors[v].in_l1()) out.push_back(v);
    return out;
  }

  // A spill as spill management inserts it: DRAM interleaved, on the grid of the L1 side.
  std::optional<uint64_t> spill_cost(ValueId v) const {
    const TensorLayout* in[1] = {&d_.tensors[v]};
    ValueId ops[1] = {v};
    return q_.cost_if_valid(device::OpKind::to_memory_config, "to_memory_config", ops, in, v,
                            dram_[v], config_for(device::OpConfig{}, d_.tensors[v], chip_));
  }

  void set_spills(OpId o, uint32_t bits, bool on) {
    std::vector<ValueId> may = spillable_at_[o];
    for (size_t i = 0; i < may.size(); ++i)
      if (bits >> i & 1) {
        spilled_[may[i]] = on;
        spill_at_[may[i]] = on ? static_cast<int>(o) : -1;
      }
  }

  // Every valid option of op o (spills before it included) under the current choices.
  template <typename F>
  void for_each_option(OpId o, F&& f) {
    spillable_at_[o] = spillable(o);
    const std::vector<ValueId> may = spillable_at_[o];
    if (may.size() > 16) {
      error_ = fail(ErrorCode::invalid_argument, "exhaustive search: graph '", g_.name, "' has ",
                    may.size(), " L1 values live across op '", g_.ops[o].name,
                    "', more than the 16 its spill subsets are enumerated for");
      return;
    }
    for (uint32_t bits = 0; bits < (1u << may.size()); ++bits) {
      uint64_t moves = 0;
      bool ok = true;
      for (size_t i = 0; i < may.size() && ok; ++i)
        if (bits >> i & 1) {
          std::optional<uint64_t> c = spill_cost(may[i]);
          ok = c.has_value();
          if (ok) moves = saturating_add(moves, *c);
        }
      if (!ok) continue;
      set_spills(o, bits, true);
      for_each_op_option(o, bits, [&](Option& opt) {
        opt.cost = saturating_add(opt.cost, moves);
        f(opt);
      });
      set_spills(o, bits, false);
    }
  }

  void choose(OpId o, const Option& opt) {
    set_spills(o, opt.spills, true);
    ValueId r = g_.ops[o].results[0];
    d_.tensors[r] = cands_[o][opt.k];
    d_.configs[o] = opt.config;
    choice_[r] = opt.k;
    reads_[o] = opt.reads;
  }
  void unchoose(OpId o, const Option& opt) {
    ValueId r = g_.ops[o].results[0];
    d_.tensors[r] = dram_[r];
    d_.configs[o] = base_[o];
    choice_[r] = 0;
    std::fill(reads_[o].begin(), reads_[o].end(), -1);
    set_spills(o, opt.spills, false);
  }

  // Least cost of ops o.. given the current choices of the values live across o, packing ignored.
  uint64_t relaxed(OpId o) {
    if (o == n_) return 0;
    State key = state_at(o);
    auto it = memo_[o].find(key);
    if (it != memo_[o].end()) return it->second;
    uint64_t best = kInfinite;
    std::vector<Option> options;
    for_each_option(o, [&](const Option& opt) { options.push_back(opt); });
    for (const Option& opt : options) {
      if (opt.cost >= best) continue;
      choose(o, opt);
      best = std::min(best, saturating_add(opt.cost, relaxed(o + 1)));
      unchoose(o, opt);
    }
    memo_[o].emplace(std::move(key), best);
    return best;
  }

  // The plan of the current choices: materialize() of the result layouts and reshards, then each
  // spill inserted before the first op (a reshard or the op itself) of the op it precedes, and
  // every later read of the value (the graph output's too) redirected to the copy.
  Result<LayoutResult> plan() {
    d_.reshards.clear();
    d_.spills.clear();
    std::vector<std::vector<ValueId>> before(n_);
    for (OpId o = 0; o < n_; ++o) {
      const Op& op = g_.ops[o];
      for (uint32_t i = 0; i < op.operands.size(); ++i)
        if (reads_[o][i] >= 0)
          d_.reshards.push_back(
              LayoutDecision::Reshard{o, i, targets_[op.operands[i]][reads_[o][i]]});
    }
    for (ValueId v = 0; v < g_.values.size(); ++v)
      if (spill_at_[v] >= 0) before[spill_at_[v]].push_back(v);
    LayoutResult p = MESHPLAN_TRY(materialize(g_, d_));
    LayoutResult out = p;
    out.graph.ops.clear();
    out.layout.configs.clear();
    out.origin.clear();
    std::vector<ValueId> current(p.graph.values.size());
    std::iota(current.begin(), current.end(), ValueId{0});
    std::set<std::string> taken;
    for (const Value& v : p.graph.values) taken.insert(v.name);
    for (const Op& op : p.graph.ops) taken.insert(op.name);
    auto unique = [&](std::string name) {
      std::string want = name;
      for (int k = 2; taken.count(name); ++k) name = want + std::to_string(k);
      taken.insert(name);
      return name;
    };
    OpId owner = 0;  // the original op the next ops of p belong to
    bool spilled_before_owner = false;
    for (OpId i = 0; i < p.graph.ops.size(); ++i) {
      if (!spilled_before_owner) {
        for (ValueId v : before[owner]) {
          Value copy;
          copy.name = unique(g_.values[v].name + ".spill");
          copy.shape = g_.values[v].shape;
          copy.dtype = g_.values[v].dtype;
          out.graph.values.push_back(std::move(copy));
          ValueId c = static_cast<ValueId>(out.graph.values.size() - 1);
          out.layout.tensors.push_back(dram_[v]);
          Op move;
          move.name = unique(g_.values[v].name + ".spill");
          move.kind = device::OpKind::to_memory_config;
          move.operands = {current[v]};
          move.results = {c};
          out.graph.ops.push_back(std::move(move));
          out.layout.configs.push_back(
              config_for(device::OpConfig{}, out.layout.tensors[current[v]], chip_));
          out.origin.push_back(OpOrigin::spill);
          ++out.spills;
          current.push_back(c);
          current[v] = c;
        }
        spilled_before_owner = true;
      }
      Op op = p.graph.ops[i];
      for (ValueId& v : op.operands) v = current[v];
      out.graph.ops.push_back(std::move(op));
      out.layout.configs.push_back(p.layout.configs[i]);
      out.origin.push_back(p.origin[i]);
      if (p.origin[i] == OpOrigin::graph) {
        ++owner;
        spilled_before_owner = false;
      }
    }
    for (ValueId& v : out.graph.outputs) v = current[v];
    return out;
  }

  void leaf(uint64_t cost) {
    ++best_.plans_tried;
    auto planned = plan();
    if (!planned) {
      error_ = std::unexpected(planned.error());
      return;
    }
    uint64_t as_plan = planned->estimated_ns(chip_);
    if (as_plan != cost) {
      error_ =
          fail(ErrorCode::internal, "exhaustive search: graph '", g_.name,
               "': the search costed a plan at ", cost, " ns, the plan costs ", as_plan, " ns");
      return;
    }
    Schedule s = Schedule::build(planned->graph);
    auto packing = pack_l1(planned->graph, s, planned->layout, chip_);
    if (!packing) {
      error_ = std::unexpected(packing.error());
      return;
    }
    if (packing->unplaced.empty()) {
      best_.estimated_ns = cost;
      best_.decision = d_;
      best_.plan = std::move(*planned);
    }
  }

  void visit(OpId o, uint64_t cost) {
    if (!error_) return;
    if (o == n_) {
      if (cost < best_.estimated_ns) leaf(cost);
      return;
    }
    struct Child {
      uint64_t bound, cost;
      Option option;
    };
    std::vector<Option> options;
    for_each_option(o, [&](const Option& opt) { options.push_back(opt); });
    std::vector<Child> children;
    for (Option& opt : options) {
      uint64_t total = saturating_add(cost, opt.cost);
      if (total >= best_.estimated_ns) continue;
      uint64_t bound = total;
      if (bounded_) {
        choose(o, opt);
        bound = saturating_add(total, relaxed(o + 1));
        unchoose(o, opt);
      }
      if (bound < best_.estimated_ns) children.push_back(Child{bound, total, std::move(opt)});
    }
    // Cheapest bound first (ties: enumeration order) so a good plan is found early and cuts the
    // rest.
    std::stable_sort(children.begin(), children.end(),
                     [](const Child& a, const Child& b) { return a.bound < b.bound; });
    for (const Child& ch : children) {
      if (ch.bound >= best_.estimated_ns || !error_) break;
      choose(o, ch.option);
      visit(o + 1, ch.cost);
      unchoose(o, ch.option);
    }
  }

  bool bounded_;
  const Graph& g_;
  const device::ChipDesc& chip_;
  OpQuery q_;
  LayoutDecision d_;
  std::vector<device::OpConfig> base_;
  OpId n_ = 0;
  std::vector<std::vector<TensorLayout>> cands_;    // result layouts per op
  std::vector<std::vector<TensorLayout>> targets_;  // reshard targets per read value
  std::vector<TensorLayout> dram_;                  // DRAM interleaved, per value
  std::vector<std::vector<ValueId>> live_;
  std::vector<uint16_t> choice_;  // candidate index per value (results only)
  std::vector<bool> spilled_;     // per value (results only): spilled before the current op
  std::vector<int> spill_at_;     // per value: the op its spill precedes, -1 none
  std::vector<std::vector<ValueId>> spillable_at_;  // spillable(o) when o's options were listed
  std::vector<std::vector<int16_t>> reads_;         // per op and operand: reshard target, -1 none
  std::vector<std::map<State, uint64_t>> memo_;
  SearchResult best_;
  Status error_;
};

}  // namespace

Result<SearchResult> exhaustive_search(const Graph& g, const device::ChipDesc& chip,
                                       const PlannerOptions& options, int max_ops, bool bounded) {
  if (static_cast<int>(g.ops.size()) > max_ops)
    return fail(ErrorCode::invalid_argument, "exhaustive search: graph '", g.name, "' has ",
                g.ops.size(), " ops, more than ", max_ops);
  LayoutDecision d = MESHPLAN_TRY(LayoutDecision::all_dram(g, chip));
  Search search(g, chip, options, std::move(d), bounded);
  return search.run();
}

}  // namespace meshplan::planner
