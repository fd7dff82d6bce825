// DP spill selection (seed 002 §5.8.2) against brute force: on small schedules under L1
// pressure, every choice of the spill space is applied and checked for fit by a walk written
// here (spill moves' circular buffers included); the DP must reach the least simulated time among
// the choices that fit, and never do worse than farthest-next-use (Belady) eviction. Also: a case
// where counting the moves' circular buffers changes the choice, 22 live L1 tensors solved
// exactly, DP <= Belady over the example models, and the selection reported in the plan and CLI.
#include "meshplan/planner/spill_dp.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <functional>

#include "graphs.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/schemas/schemas.hpp"

using namespace meshplan;
using namespace meshplan::planner;
using namespace meshplan::test;

namespace {

// Greedy's layouts before spill management: what both spill selections start from.
LayoutResult unspilled(const Graph& g, const device::ChipDesc& chip) {
  PlannerOptions o;
  o.policy = "greedy";
  auto ov = parse_overrides(g, chip, o);
  REQUIRE(ov);
  auto d = greedy_propagation(g, chip, o, *ov, /*sharded=*/true);
  REQUIRE_MESSAGE(d, (d ? std::string() : d.error().message));
  auto r = materialize(g, *d);
  REQUIRE(r);
  return *r;
}

// Does every op of the graph fit its circular buffers and all live L1 tensors, its result
// included, in the usable L1? With `count_moves` false, spill moves are exempt (the rule of the
// first DP, and of manage_spills()).
bool fits(const LayoutResult& r, const device::ChipDesc& chip, bool count_moves = true) {
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
    bool exempt = !count_moves && r.origin[p] == OpOrigin::spill;
    if (!exempt && val.cb_bytes_per_core + live_bytes > usable) return false;
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
  SpillChoice best;
  uint64_t leaves = 0, fitting = 0, cut = 0;
};

// Every choice of the space: per result tensor -1 (demote), 1..reads-1 (move after that read) or
// reads (keep); per argument 0..reads. Depth first over the tensors; a partial choice whose kept
// tensors alone (circular buffers aside) overflow the usable L1 at some op is cut, since every
// completion of it does too. Each leaf is applied and checked by fits() above.
Brute brute_force(const LayoutResult& in, const device::ChipDesc& chip, bool count_moves = true) {
  Brute b;
  SpillChoice c = spill_choice_space(in);
  const Graph& g = in.graph;
  const int n = static_cast<int>(g.ops.size());
  const uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  std::vector<std::vector<int>> reads(g.values.size());
  for (int p = 0; p < n; ++p)
    for (ValueId v : g.ops[p].operands)
      if (reads[v].empty() || reads[v].back() != p) reads[v].push_back(p);
  for (ValueId v : g.outputs) reads[v].push_back(n - 1);
  std::vector<uint64_t> usage(std::max(n, 1), 0);
  // Ops at which tensor i is in L1 under choice k: [first, last], empty when last < first.
  auto span = [&](size_t i, int32_t k) {
    ValueId v = c.tensors[i];
    OpId producer = g.values[v].producer;
    int first = producer == kNoOp ? 0 : static_cast<int>(producer);
    if (k == -1 || (k == 0 && producer == kNoOp)) return std::pair(0, -1);
    if (k == 0) return std::pair(first, first);
    const auto& rv = reads[v];
    return std::pair(first, rv.empty() ? first : rv[k - 1]);
  };
  std::function<void(size_t)> walk = [&](size_t i) {
    if (i == c.tensors.size()) {
      ++b.leaves;
      auto r = apply_spill_choice(in, c, chip);
      REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
      if (!fits(*r, chip, count_moves)) return;
      ++b.fitting;
      uint64_t ns = r->estimated_ns(chip);
      if (ns < b.best_ns) {
        b.best_ns = ns;
        b.best = c;
      }
      return;
    }
    bool argument = g.values[c.tensors[i]].producer == kNoOp;
    for (int32_t k = argument ? 0 : -1; k <= static_cast<int32_t>(c.reads[i]); ++k) {
      if (!argument && k == 0 && c.reads[i] > 0) continue;  // not in the DP's space
      auto [first, last] = span(i, k);
      uint64_t size =
          l1_bytes_per_core(g.values[c.tensors[i]], in.layout.tensors[c.tensors[i]], chip);
      bool over = false;
      for (int p = first; p <= last; ++p) over |= (usage[p] += size) > usable;
      c.l1_reads[i] = k;
      if (over)
        ++b.cut;
      else
        walk(i + 1);
      for (int p = first; p <= last; ++p) usage[p] -= size;
    }
    c.l1_reads[i] = static_cast<int32_t>(c.reads[i]);
  };
  walk(0);
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
    if (b.fitting < b.leaves || b.cut > 0) ++pressured;
    MESSAGE(g.name, " on ", chip.name, ": ", b.leaves, " choices (", b.cut, " cut), ", b.fitting,
            " fit; dp ", stats.cost_ns, " ns (", dp->spills, " spills, ", stats.max_states,
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

namespace {

// A chip whose usable L1 per core is exactly `usable` bytes (one core, as one_core_chip()).
device::ChipDesc squeezed_chip(uint64_t usable) {
  device::ChipDesc c = one_core_chip();
  c.name = "wormhole_b0_1x1_small_l1";
  c.l1_size = c.l1_unreserved_base + static_cast<uint64_t>(usable / c.l1_usable_fraction);
  while (c.l1_usable_top() - c.l1_unreserved_base < usable) c.l1_size += c.l1_alignment;
  while (c.l1_usable_top() - c.l1_unreserved_base > usable) c.l1_size -= 1;
  REQUIRE(c.l1_usable_top() - c.l1_unreserved_base + c.l1_alignment > usable);
  return c;
}

// f32 `a` is read by a typecast to bf16 (whose circular buffers hold 2 f32 and 2 bf16 tiles) and
// again at the end, with a softmax in between whose row statistics (circular buffers of a whole
// f32 tile row) leave no room for `a`: `a` is demoted or moved to DRAM after the typecast, and
// that move needs 4 f32 tiles of circular buffers, 4 KiB more than the typecast itself.
//   a = relu(x); t = typecast(a, bf16); s = softmax(y); w = typecast(t, f32); out = a + w
Graph dtype_graph(int64_t tiles, int64_t row_tiles) {
  GraphBuilder b("dtype_moves");
  auto x = b.input("x", {32, 32 * tiles});
  auto y = b.input("y", {32, 32 * row_tiles});
  auto a = b.relu("a", x);
  auto c1 = b.add("c1", a, a);
  auto c2 = b.add("c2", c1, a);
  auto t = b.op(device::OpKind::typecast, "t", {a}, {Attribute{"dtype", std::string("bf16")}});
  b.output(b.op(device::OpKind::softmax, "s", {y}, {Attribute{"dim", int64_t{-1}}}));
  auto w = b.op(device::OpKind::typecast, "w", {t}, {Attribute{"dtype", std::string("bf16")}});
  b.output(b.add("out", a, b.add("v", c2, w)));
  Graph g = b.finish();  // all bf16 first (GraphBuilder makes bf16 inputs), then f32 where said
  g.values[x].dtype = DType::f32;
  g.ops[5].attributes[0].value = std::string("f32");
  auto ok = validate(g);  // re-infers the dtypes from the f32 input
  REQUIRE_MESSAGE(ok, (ok ? std::string() : ok.error().message));
  return g;
}

}  // namespace

TEST_CASE("counting the spill moves' circular buffers changes the DP's choice") {
  // 64 f32 tiles: a is 256 KiB, t 128 KiB; 14 KiB left beside them after the typecast: its own
  // 12 KiB of circular buffers fit, a move's 16 KiB do not.
  Graph g = dtype_graph(64, 64);
  device::ChipDesc chip = squeezed_chip(6144 * 64 + 14336);
  LayoutResult in = unspilled(g, chip);
  Brute old_rule = brute_force(in, chip, /*count_moves=*/false);
  Brute new_rule = brute_force(in, chip, /*count_moves=*/true);
  REQUIRE(old_rule.fitting > 0);
  REQUIRE(new_rule.fitting > 0);
  // The optimum with moves exempt moves `a` right after the typecast, and that move does not fit.
  auto old_plan = apply_spill_choice(in, old_rule.best, chip);
  REQUIRE(old_plan);
  Status fit = check_spill_fit(*old_plan, chip);
  REQUIRE_FALSE(fit);
  CHECK(fit.error().message.find("'a.spill'") != std::string::npos);
  MESSAGE(fit.error().message);
  // The DP pays for it: the optimum under the full rule, dearer than the one that did not fit.
  SpillDpStats stats;
  auto dp = manage_spills_dp(in, chip, &stats);
  REQUIRE_MESSAGE(dp, (dp ? std::string() : dp.error().message));
  CHECK(stats.selection == SpillSelection::dp_exact);
  CHECK(stats.cost_ns == new_rule.best_ns);
  CHECK(stats.cost_ns == dp->estimated_ns(chip));
  CHECK(stats.cost_ns > old_rule.best_ns);
  CHECK(check_spill_fit(*dp, chip));
  CHECK(fits(*dp, chip));
  CHECK(spill_choice_space(in).tensors == new_rule.best.tensors);
  MESSAGE("without the move's circular buffers ", old_rule.best_ns, " ns (does not fit), with ",
          stats.cost_ns, " ns; ", new_rule.leaves, " choices enumerated");
  // And the plan runs: every L1 allocation and circular buffer at its planned place.
  PlannerOptions o;
  o.policy = "greedy";
  o.spill = "dp";
  run_e2e(g, chip, o);
}

TEST_CASE("more than 20 live L1 tensors are solved exactly (brute force), past the old limit") {
  // 22 tensors of 400 KiB (at most three fit one core's L1) produced one after the other, then
  // summed in a chain; r1 and r2 are also read right after they are produced, so moving them
  // to DRAM after that read is a choice too. The chain and the peeks write DRAM (not choices).
  GraphBuilder b("wide22");
  auto x = b.input("x", {32, 32 * 200});
  std::vector<ValueId> r, other;
  for (int i = 0; i < 22; ++i) {
    r.push_back(b.relu("r" + std::to_string(i), x));
    if (i == 1 || i == 2) {
      other.push_back(b.relu("peek" + std::to_string(i), r.back()));
      b.output(other.back());
    }
  }
  ValueId sum = r[0];
  for (int i = 1; i < 22; ++i) {
    sum = b.add("s" + std::to_string(i), sum, r[i]);
    other.push_back(sum);
  }
  b.output(sum);
  Graph g = b.finish();
  device::ChipDesc chip = one_core_chip();
  LayoutResult in = unspilled(g, chip);
  for (ValueId v : other)
    in.layout.tensors[v] = interleaved_layout(g.values[v], device::BufferType::dram);
  for (ValueId v : r) REQUIRE(in.layout.tensors[v].in_l1());
  REQUIRE(spill_choice_space(in).tensors.size() == 22);

  SpillDpStats stats;
  auto dp = manage_spills_dp(in, chip, &stats);
  REQUIRE_MESSAGE(dp, (dp ? std::string() : dp.error().message));
  CHECK(stats.exact());
  CHECK(fits(*dp, chip));
  CHECK(stats.cost_ns == dp->estimated_ns(chip));
  Brute brute = brute_force(in, chip);
  REQUIRE(brute.fitting > 0);
  CHECK(stats.cost_ns == brute.best_ns);
  auto belady = manage_spills(in, chip);
  REQUIRE(belady);
  CHECK(stats.cost_ns <= belady->estimated_ns(chip));
  MESSAGE("22 live: dp ", stats.cost_ns, " ns (", dp->spills, " spills, ", stats.states,
          " states, ", stats.max_states, " at most at one op, ", stats.pruned,
          " pruned), brute force ", brute.best_ns, " ns over ", brute.leaves, " choices (",
          brute.cut, " cut), belady ", belady->estimated_ns(chip), " ns");
  // The first DP's limit of 20 live tensors now falls back, and says why.
  SpillDpOptions twenty;
  twenty.max_live = 20;
  SpillDpStats limited;
  REQUIRE(manage_spills_dp(in, chip, &limited, twenty));
  CHECK(limited.selection == SpillSelection::dp_fallback);
  CHECK(limited.reason.find("more than 20 L1 tensors live") != std::string::npos);
  // So does a state budget too small for this instance.
  SpillDpOptions tight;
  tight.max_states = 100;
  REQUIRE(manage_spills_dp(in, chip, &limited, tight));
  CHECK(limited.selection == SpillSelection::dp_fallback);
  CHECK(limited.reason.find("more than 100 DP states") != std::string::npos);
}

TEST_CASE("spill=dp is never slower than Belady: the example models and the test graphs") {
  std::vector<Graph> graphs = {farthest_graph(),   farthest_graph(false), join_graph(),
                               residual_graph(),   qkv_graph(),           operand1_graph(),
                               big_output_graph(), dtype_graph(64, 64)};
  for (const char* m : {"mlp", "transformer_block", "small_cnn", "bert_base_layer",
                        "llama3_8b_decode", "llama3_8b_prefill", "resnet50_b1"}) {
    auto g = load_graph_file(source_path(std::string("examples/models/") + m + ".json"));
    REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
    graphs.push_back(*g);
  }
  int exact = 0, runs = 0, better = 0;
  for (const Graph& g : graphs)
    for (const device::ChipDesc& chip : {device::wormhole_b0(), one_core_chip()})
      for (const char* policy : {"greedy", "beam", "l1-interleaved"}) {
        CAPTURE(g.name);
        CAPTURE(chip.name);
        CAPTURE(policy);
        PlannerOptions o;
        o.policy = policy;
        auto belady = plan_layout(g, chip, o);
        o.spill = "dp";
        auto dp = plan_layout(g, chip, o);
        REQUIRE_MESSAGE(belady, (belady ? std::string() : belady.error().message));
        REQUIRE_MESSAGE(dp, (dp ? std::string() : dp.error().message));
        CHECK(dp->spill_selection != SpillSelection::belady);
        uint64_t b = belady->estimated_ns(chip), d = dp->estimated_ns(chip);
        CHECK(d <= b);
        ++runs;
        exact += dp->spill_selection != SpillSelection::dp_fallback;
        better += d < b;
      }
  MESSAGE(runs, " plans: dp exact on ", exact, ", strictly faster than Belady on ", better);
  CHECK(exact == runs);
}

TEST_CASE("the plan's metrics and meshplan-compile say which spill selection made the plan") {
  auto metrics_of = [](const CompiledPlan& p) {
    const fb::PlanMetrics* m = fb::GetSizePrefixedPlan(p.bytes.data())->header()->metrics();
    REQUIRE(m != nullptr);
    return std::pair(m->spill_selection(), m->spill_dp_states());
  };
  PlannerOptions o;
  o.policy = "greedy";
  auto belady = compile(join_graph(), one_core_chip(), o);
  REQUIRE(belady);
  CHECK(metrics_of(*belady) == std::pair(fb::SpillSelection::belady, uint64_t{0}));
  o.spill = "dp";
  auto dp = compile(join_graph(), one_core_chip(), o);
  REQUIRE(dp);
  auto [how, states] = metrics_of(*dp);
  CHECK((how == fb::SpillSelection::dp_exact || how == fb::SpillSelection::dp_kept_belady));
  CHECK(states > 0);
  // The tool's summary line names it.
  TempDir dir;
  std::string tool = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
  REQUIRE_MESSAGE(std::filesystem::exists(tool), "build meshplan-compile first: ", tool);
  std::string model = source_path("examples/models/mlp.json");
  auto out =
      run_shell(tool + " " + model + " -o " + dir.file("c.mpc") + " --policy greedy --spill=dp");
  CHECK(out.status == 0);
  CHECK_MESSAGE(out.text.find("spill selection dp_") != std::string::npos, out.text);
  out = run_shell(tool + " " + model + " -o " + dir.file("c.mpc") + " --policy greedy");
  CHECK(out.status == 0);
  CHECK(out.text.find("spill selection") == std::string::npos);
}
