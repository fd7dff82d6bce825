// DP spill selection (seed 002 §5.8.2) against brute force: on small schedules under L1
// pressure, every choice of the spill space is applied and checked for fit by a walk written
// here; the DP must reach the least simulated time among the choices that fit, and never do
// worse than farthest-next-use (Belady) eviction. Plans chosen by the DP also run end to end.
#include "meshplan/planner/spill_dp.hpp"

#include <doctest/doctest.h>

#include "graphs.hpp"
#include "meshplan/planner/policies.hpp"

using namespace meshplan;
using namespace meshplan::planner;
using namespace meshplan::test;

namespace {

// Greedy's layouts before spill management: what both spill selections start from.
LayoutResult unspilled(const Graph& g, const device::ChipDesc& chip) {
  PlannerOptions o;
  o.policy = "greedy";
  auto ov = parse_overrides(g, o);
  REQUIRE(ov);
  auto d = greedy_propagation(g, chip, o, *ov, /*sharded=*/true);
  REQUIRE_MESSAGE(d, (d ? std::string() : d.error().message));
  auto r = materialize(g, *d);
  REQUIRE(r);
  return *r;
}

// Does every op of the graph (spill moves aside, as spill management treats them) fit its
// circular buffers and all live L1 tensors, its result included, in the usable L1?
bool fits(const LayoutResult& r, const device::ChipDesc& chip) {
  const Graph& g = r.graph;
  Schedule s = Schedule::build(g);
  OpQuery q(g, chip);
  const uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  std::vector<bool> live(g.values.size(), false);
  uint64_t live_bytes = 0;
  auto bytes = [&](ValueId v) { return l1_bytes_per_core(g.values[v], r.layout.tensors[v], chip); };
  for (ValueId a : g.arguments)
    if (r.layout.tensors[a].in_l1()) {
      live[a] = true;
      live_bytes += bytes(a);
    }
  for (OpId p = 0; p < g.ops.size(); ++p) {
    const Op& op = g.ops[p];
    ValueId res = op.results[0];
    if (r.layout.tensors[res].in_l1()) {
      live[res] = true;
      live_bytes += bytes(res);
    }
    std::vector<const TensorLayout*> in;
    for (ValueId v : op.operands) in.push_back(&r.layout.tensors[v]);
    auto val = q.validate(op.kind, op.name, op.operands, in, res, r.layout.tensors[res],
                          r.layout.configs[p]);
    if (!val.ok) return false;
    if (r.origin[p] != OpOrigin::spill && val.cb_bytes_per_core + live_bytes > usable) return false;
    for (ValueId v : s.dying_at(static_cast<int>(p)))
      if (live[v]) {
        live[v] = false;
        live_bytes -= bytes(v);
      }
  }
  return true;
}

struct Brute {
  uint64_t best_ns = UINT64_MAX;
  uint64_t choices = 0, fitting = 0;
};

// Every choice: per result tensor -1 (demote), 1..reads-1 (move after that read) or reads (keep);
// per argument 0..reads.
Brute brute_force(const LayoutResult& in, const device::ChipDesc& chip) {
  Brute b;
  SpillChoice c = spill_choice_space(in);
  std::vector<int32_t> lo(c.tensors.size());
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    bool argument = in.graph.values[c.tensors[i]].producer == kNoOp;
    lo[i] = argument ? 0 : -1;
    c.l1_reads[i] = lo[i];
  }
  for (;;) {
    bool in_space = true;
    for (size_t i = 0; i < c.tensors.size(); ++i)
      if (lo[i] == -1 && c.l1_reads[i] == 0 && c.reads[i] > 0) in_space = false;
    if (in_space) {
      ++b.choices;
      auto r = apply_spill_choice(in, c, chip);
      REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
      if (fits(*r, chip)) {
        ++b.fitting;
        b.best_ns = std::min(b.best_ns, r->estimated_ns(chip));
      }
    }
    size_t i = 0;
    for (; i < c.tensors.size(); ++i) {
      if (c.l1_reads[i] < static_cast<int32_t>(c.reads[i])) {
        ++c.l1_reads[i];
        break;
      }
      c.l1_reads[i] = lo[i];
    }
    if (i == c.tensors.size()) break;
  }
  return b;
}

}  // namespace

TEST_CASE(
    "DP spill selection is optimal on small schedules (brute force) and never worse than "
    "Belady") {
  std::vector<std::pair<Graph, device::ChipDesc>> cases = {
      {farthest_graph(), one_core_chip()},
      {farthest_graph(false), one_core_chip()},
      {join_graph(), one_core_chip()},
      {residual_graph(), one_core_chip()},
      {qkv_graph(), one_core_chip()},
      {operand1_graph(), one_core_chip()},
      {residual_graph(), device::wormhole_b0()},
  };
  int pressured = 0;
  for (const auto& [g, chip] : cases) {
    CAPTURE(g.name);
    CAPTURE(chip.name);
    LayoutResult in = unspilled(g, chip);
    SpillDpStats stats;
    auto dp = manage_spills_dp(in, chip, &stats);
    REQUIRE_MESSAGE(dp, (dp ? std::string() : dp.error().message));
    CHECK(stats.exact());
    CHECK(fits(*dp, chip));
    CHECK(stats.cost_ns == dp->estimated_ns(chip));
    Brute b = brute_force(in, chip);
    REQUIRE(b.fitting > 0);
    CHECK(stats.cost_ns == b.best_ns);
    auto belady = manage_spills(in, chip);
    REQUIRE(belady);
    uint64_t belady_ns = belady->estimated_ns(chip);
    if (fits(*belady, chip)) CHECK(stats.cost_ns <= belady_ns);
    if (b.fitting < b.choices) ++pressured;
    MESSAGE(g.name, " on ", chip.name, ": ", b.choices, " choices, ", b.fitting, " fit; dp ",
            stats.cost_ns, " ns (", dp->spills, " spills, ", stats.max_states,
            " states max), belady ", belady_ns, " ns (", belady->spills, " spills)");
  }
  CHECK(pressured >= 3);  // the cases do exercise memory pressure
}

TEST_CASE("spill=dp plans run end to end; unknown spill modes and bad choices are rejected") {
  for (const Graph& g : {farthest_graph(), join_graph(), qkv_graph()}) {
    CAPTURE(g.name);
    for (std::string policy : {"greedy", "beam", "l1-interleaved"}) {
      CAPTURE(policy);
      PlannerOptions o;
      o.policy = policy;
      o.spill = "dp";
      run_e2e(g, one_core_chip(), o);
    }
  }
  PlannerOptions o;
  o.policy = "greedy";
  o.spill = "optimal";
  auto r = plan_layout(qkv_graph(), device::wormhole_b0(), o);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("unknown spill selection 'optimal'") != std::string::npos);
  // The key tells the two selections apart (and keeps Belady's keys as they were).
  PlannerOptions a, b;
  a.policy = b.policy = "greedy";
  b.spill = "dp";
  Hash128 k = graph_key(qkv_graph());
  CHECK_FALSE(plan_key(k, device::wormhole_b0(), a) == plan_key(k, device::wormhole_b0(), b));
  // A choice outside a tensor's reads names the tensor.
  LayoutResult in = unspilled(farthest_graph(), one_core_chip());
  SpillChoice c = spill_choice_space(in);
  REQUIRE_FALSE(c.tensors.empty());
  c.l1_reads[0] = static_cast<int32_t>(c.reads[0]) + 1;
  auto bad = apply_spill_choice(in, c, one_core_chip());
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find(in.graph.values[c.tensors[0]].name) != std::string::npos);
}

TEST_CASE("DP spill selection falls back to Belady, and says so, past its live-tensor limit") {
  LayoutResult in = unspilled(qkv_graph(), one_core_chip());
  SpillDpStats stats;
  SpillDpOptions limits;
  limits.max_live = 1;
  auto dp = manage_spills_dp(in, one_core_chip(), &stats, limits);
  REQUIRE(dp);
  CHECK_FALSE(stats.exact());
  auto belady = manage_spills(in, one_core_chip());
  REQUIRE(belady);
  CHECK(dp->print() == belady->print());
}
