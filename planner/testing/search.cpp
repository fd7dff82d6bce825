// Exhaustive branch-and-bound over result layouts for small graphs: the optimum the beam search
// is measured against. A plan counts only if its L1 tensors all pack without a spill.
//
// Steps:
//  1. Candidates per op: the legal result layouts of the pool (validated against some operand
//     layouts the op can see), in pool order.
//  2. Lower bound: an op's cost depends only on its operand and result layouts, so the cost of ops
//     o..n-1 given the layouts of the values live across position o is a function of that live
//     state alone. relaxed(o, state) = the least such cost ignoring L1 packing, computed by
//     recursion memoised on (o, state): equal states reached by different prefixes share it.
//  3. Depth-first search in schedule order, children cheapest-bound first; a branch is cut when
//     its cost so far plus relaxed() of its state cannot beat the best packed plan. Leaves are
//     materialized and packed (pack_l1); the relaxation never cuts a plan that could win, so the
//     result is the same optimum the unbounded search finds.
#include <algorithm>
#include <map>
#include <numeric>

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
         LayoutDecision d)
      : g_(g), chip_(chip), q_(g, chip, options.mesh), d_(std::move(d)), base_(d_.configs) {
    n_ = static_cast<OpId>(g.ops.size());
    cands_.resize(n_);
    for (OpId o = 0; o < n_; ++o)
      cands_[o] = layout_candidates(g.values[g.ops[o].results[0]], chip, options.max_legal_layouts);
    // Values live across position o (read by an op at o or later, defined before o), sorted.
    std::vector<int> last(g.values.size(), -1);
    for (OpId o = 0; o < n_; ++o)
      for (ValueId v : g.ops[o].operands) last[v] = std::max(last[v], static_cast<int>(o));
    live_.resize(n_ + 1);
    for (OpId o = 0; o <= n_; ++o)
      for (ValueId v = 0; v < g.values.size(); ++v) {
        OpId producer = g.values[v].producer;
        if (producer != kNoOp && producer < o && last[v] >= static_cast<int>(o))
          live_[o].push_back(v);
      }
    choice_.assign(g.values.size(), 0);
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

  State state_at(OpId o) const {
    State s;
    s.reserve(live_[o].size());
    for (ValueId v : live_[o]) s.push_back(choice_[v]);
    return s;
  }

  // Cost of op o with result candidate k under the current choices; kInfinite if invalid.
  uint64_t op_cost(OpId o, uint16_t k, device::OpConfig* config) {
    const Op& op = g_.ops[o];
    std::vector<const TensorLayout*> in;
    for (ValueId v : op.operands) in.push_back(&d_.tensors[v]);
    const TensorLayout& r = cands_[o][k];
    device::OpConfig c = config_for(base_[o], r, chip_);
    if (!q_.validate(op.kind, op.name, op.operands, in, op.results[0], r, c).ok) return kInfinite;
    if (config) *config = c;
    return q_.cost(op.kind, op.name, op.operands, in, op.results[0], r, c);
  }

  void choose(OpId o, uint16_t k, const device::OpConfig& c) {
    ValueId r = g_.ops[o].results[0];
    d_.tensors[r] = cands_[o][k];
    d_.configs[o] = c;
    choice_[r] = k;
  }
  void unchoose(OpId o) {
    ValueId r = g_.ops[o].results[0];
    d_.tensors[r] = interleaved_layout(g_.values[r], device::BufferType::dram);
    d_.configs[o] = base_[o];
    choice_[r] = 0;
  }

  // Least cost of ops o.. given the current choices of the values live across o, packing ignored.
  uint64_t relaxed(OpId o) {
    if (o == n_) return 0;
    State key = state_at(o);
    auto it = memo_[o].find(key);
    if (it != memo_[o].end()) return it->second;
    uint64_t best = kInfinite;
    for (uint16_t k = 0; k < cands_[o].size(); ++k) {
      device::OpConfig c;
      uint64_t here = op_cost(o, k, &c);
      if (here == kInfinite) continue;
      choose(o, k, c);
      best = std::min(best, saturating_add(here, relaxed(o + 1)));
      unchoose(o);
    }
    memo_[o].emplace(std::move(key), best);
    return best;
  }

  void leaf(uint64_t cost) {
    ++best_.plans_tried;
    auto planned = materialize(g_, d_);
    if (!planned) {
      error_ = std::unexpected(planned.error());
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
      uint16_t k;
      device::OpConfig config;
    };
    std::vector<Child> children;
    for (uint16_t k = 0; k < cands_[o].size(); ++k) {
      device::OpConfig c;
      uint64_t here = op_cost(o, k, &c);
      if (here == kInfinite) continue;
      choose(o, k, c);
      uint64_t total = saturating_add(cost, here);
      uint64_t bound = saturating_add(total, relaxed(o + 1));
      unchoose(o);
      if (bound < best_.estimated_ns) children.push_back(Child{bound, total, k, c});
    }
    // Cheapest bound first (ties: pool order) so a good plan is found early and cuts the rest.
    std::stable_sort(children.begin(), children.end(),
                     [](const Child& a, const Child& b) { return a.bound < b.bound; });
    for (const Child& ch : children) {
      if (ch.bound >= best_.estimated_ns || !error_) break;
      choose(o, ch.k, ch.config);
      visit(o + 1, ch.cost);
      unchoose(o);
    }
  }

  const Graph& g_;
  const device::ChipDesc& chip_;
  OpQuery q_;
  LayoutDecision d_;
  std::vector<device::OpConfig> base_;
  OpId n_ = 0;
  std::vector<std::vector<TensorLayout>> cands_;
  std::vector<std::vector<ValueId>> live_;
  std::vector<uint16_t> choice_;  // candidate index per value (results only)
  std::vector<std::map<State, uint64_t>> memo_;
  SearchResult best_;
  Status error_;
};

}  // namespace

Result<SearchResult> exhaustive_search(const Graph& g, const device::ChipDesc& chip,
                                       const PlannerOptions& options, int max_ops) {
  if (static_cast<int>(g.ops.size()) > max_ops)
    return fail(ErrorCode::invalid_argument, "exhaustive search: graph '", g.name, "' has ",
                g.ops.size(), " ops, more than ", max_ops);
  LayoutDecision d = MESHPLAN_TRY(LayoutDecision::all_dram(g, chip));
  Search search(g, chip, options, std::move(d));
  return search.run();
}

}  // namespace meshplan::planner
