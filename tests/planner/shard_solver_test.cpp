// ShardSolver on tt-mlir's optimizer-test topology Op0 -> Op1 -> {Op2, Op3} -> Op4 -> Op5 with
// three sharded configs per op and a synthetic compatibility function, checked against brute
// force; reshard edges; and the all-or-nothing failure.
#include "meshplan/planner/shard_solver.hpp"

#include <doctest/doctest.h>

#include <array>

using namespace meshplan;
using namespace meshplan::planner;

namespace {

using Edge = ShardSolver::Edge;
// Edges of the scenario; Op3 feeds Op4's operand 1.
const std::vector<Edge> kEdges = {{0, 1, 0}, {1, 2, 0}, {1, 3, 0}, {2, 4, 0}, {3, 4, 1}, {4, 5, 0}};
// Cores of config c of each op: config 0 is the widest grid.
constexpr std::array<std::array<uint32_t, 3>, 6> kCores = {
    {{64, 32, 16}, {64, 32, 8}, {56, 48, 24}, {64, 40, 16}, {64, 32, 16}, {64, 48, 32}}};

// compat[e][p][c]: may edge e's producer run config p while its consumer runs c?
using Compat = std::array<std::array<std::array<bool, 3>, 3>, 6>;

Compat scenario_compat() {
  Compat m{};
  auto allow = [&](int e, std::initializer_list<std::pair<int, int>> pairs) {
    for (auto [p, c] : pairs) m[e][p][c] = true;
  };
  allow(0, {{0, 1}, {1, 0}, {1, 1}, {2, 2}});  // Op0 at 64 cores forces Op1 down to 32
  allow(1, {{0, 0}, {1, 1}, {1, 0}, {2, 2}});
  allow(2, {{0, 1}, {1, 2}, {2, 2}});  // Op3 can never take Op1's config 0 grid
  allow(3, {{0, 0}, {1, 1}, {2, 2}});
  allow(4, {{1, 0}, {1, 1}, {2, 2}, {0, 2}});
  allow(5, {{0, 0}, {1, 0}, {1, 1}, {2, 2}});
  return m;
}

ShardSolver::Callbacks callbacks(const Compat& m, bool entry_any = true) {
  ShardSolver::Callbacks cb;
  cb.edge_ok = [m](const Edge& e, uint32_t p, uint32_t c) {
    for (size_t i = 0; i < kEdges.size(); ++i)
      if (kEdges[i] == e) return m[i][p][c];
    return false;
  };
  cb.entry_ok = [entry_any](uint32_t, uint32_t c) { return entry_any || c == 2; };
  cb.reshards_for = [](const Edge&, uint32_t) { return std::vector<TensorLayout>{}; };
  cb.cores = [](uint32_t node, uint32_t c) { return kCores[node][c]; };
  return cb;
}

// Best total core usage over all assignments that satisfy every edge (and the entry rule).
uint64_t brute_force(const Compat& m, bool entry_any, std::array<uint32_t, 6>* best_pick) {
  uint64_t best = 0;
  for (int code = 0; code < 729; ++code) {
    std::array<uint32_t, 6> pick;
    for (int i = 0, x = code; i < 6; ++i, x /= 3) pick[i] = static_cast<uint32_t>(x % 3);
    if (!entry_any && pick[0] != 2) continue;
    bool ok = true;
    for (size_t e = 0; e < kEdges.size() && ok; ++e)
      ok = m[e][pick[kEdges[e].producer]][pick[kEdges[e].consumer]];
    if (!ok) continue;
    uint64_t total = 0;
    for (int i = 0; i < 6; ++i) total += kCores[i][pick[i]];
    if (total > best) {
      best = total;
      *best_pick = pick;
    }
  }
  return best;
}

}  // namespace

TEST_CASE("ShardSolver maximizes core usage on Op0->Op1->{Op2,Op3}->Op4->Op5") {
  Compat m = scenario_compat();
  ShardSolver solver({3, 3, 3, 3, 3, 3}, kEdges, callbacks(m));
  REQUIRE(solver.resolve());
  for (uint32_t i = 0; i < 6; ++i) CHECK(solver.bitset(i).any());
  REQUIRE(solver.pick_max_core_usage());
  ShardSolver::Solution s = solver.finish();
  REQUIRE(s.config.size() == 6);
  uint64_t total = 0;
  for (uint32_t i = 0; i < 6; ++i) total += kCores[i][s.config[i]];
  for (size_t e = 0; e < kEdges.size(); ++e)
    CHECK(m[e][s.config[kEdges[e].producer]][s.config[kEdges[e].consumer]]);
  std::array<uint32_t, 6> best_pick{};
  uint64_t best = brute_force(m, true, &best_pick);
  CHECK(total == best);
  MESSAGE(solver.print());
  CHECK(s.reshards.empty());
  for (uint32_t i = 0; i < 6; ++i) CHECK(solver.bitset(i).count() == 1);
}

TEST_CASE("ShardSolver's first-op preprocessing narrows the chain to what the entry accepts") {
  Compat m = scenario_compat();
  ShardSolver solver({3, 3, 3, 3, 3, 3}, kEdges, callbacks(m, /*entry_any=*/false));
  REQUIRE(solver.resolve());
  CHECK(solver.bitset(0).count() == 1);
  CHECK(solver.bitset(0)[2]);
  // Op0 config 2 only reaches Op1 config 2, and so on down the graph.
  for (uint32_t i = 1; i < 6; ++i) CHECK(solver.bitset(i) == ShardSolver::Bitset(4));
  REQUIRE(solver.pick_max_core_usage());
  std::array<uint32_t, 6> best_pick{};
  brute_force(m, false, &best_pick);
  ShardSolver::Solution s = solver.finish();
  for (uint32_t i = 0; i < 6; ++i) CHECK(s.config[i] == best_pick[i]);
}

TEST_CASE("an edge with no valid path takes a reshard, or fails the whole chain") {
  Compat m = scenario_compat();
  m[5] = {};  // Op4 -> Op5: nothing compatible
  {
    ShardSolver solver({3, 3, 3, 3, 3, 3}, kEdges, callbacks(m));
    CHECK_FALSE(solver.resolve());  // all-or-nothing: one bad edge fails the chain
  }
  ShardSolver::Callbacks cb = callbacks(m);
  TensorLayout bridge;
  bridge.buffer = device::BufferType::l1;
  bridge.memory = device::MemLayout::height_sharded;
  bridge.shard.grid = device::CoreRange{0, 0, 7, 3};
  cb.reshards_for = [bridge](const Edge& e, uint32_t c) {
    if (e.consumer == 5 && c != 1) return std::vector<TensorLayout>{bridge};
    return std::vector<TensorLayout>{};
  };
  ShardSolver solver({3, 3, 3, 3, 3, 3}, kEdges, cb);
  REQUIRE(solver.resolve());
  CHECK_FALSE(solver.bitset(5)[1]);  // no reshard reaches Op5 config 1
  REQUIRE(solver.pick_max_core_usage());
  ShardSolver::Solution s = solver.finish();
  CHECK(s.config[5] == 0);  // 64 cores, reachable through the reshard
  REQUIRE(s.reshards.size() == 1);
  CHECK(s.reshards[0].first == Edge{4, 5, 0});
  CHECK(s.reshards[0].second == bridge);
}

TEST_CASE("PathSet::update narrows both ends and reports change") {
  std::vector<ShardSolver::Bitset> bits = {ShardSolver::Bitset(0b1111),
                                           ShardSolver::Bitset(0b1111)};
  ShardSolver::PathSet ps{0, 1, {{0, 0}, {0, 1}, {1, 2}, {2, 3}}};
  CHECK(ps.update(bits));  // producer 3 has no path
  CHECK(bits[0] == ShardSolver::Bitset(0b0111));
  bits[0].reset(1);
  CHECK(ps.update(bits));  // consumer 2 loses its only path
  CHECK(bits[1] == ShardSolver::Bitset(0b1011));
  CHECK(ps.paths.size() == 3);
  CHECK_FALSE(ps.update(bits));
}

TEST_CASE("ShardSolver: a forced reshard edge (memreconfig) ignores direct paths") {
  // Two ops, three configs each; every (p, c) pair is directly compatible, and the entry accepts
  // every config. Edge 0->1 is forced: only the consumer configs a reshard enables stay (here
  // c = 2, whose layout has 7 shard rows), any producer config pairs with them, and core usage
  // then picks the producer's widest config 0 (kCores[0][0] = 64).
  ShardSolver::Callbacks cb;
  cb.edge_ok = [](const Edge&, uint32_t, uint32_t) { return true; };
  cb.entry_ok = [](uint32_t, uint32_t) { return true; };
  TensorLayout moved;
  moved.shard.shape[0] = 7;
  cb.reshards_for = [&](const Edge& e, uint32_t c) {
    if (e.producer == e.consumer || c != 2) return std::vector<TensorLayout>{};
    return std::vector<TensorLayout>{moved};
  };
  cb.cores = [](uint32_t node, uint32_t c) { return kCores[node][c]; };
  cb.forced_reshard = [](const Edge& e) { return e.producer == 0 && e.consumer == 1; };
  ShardSolver s({3, 3}, {{0, 1, 0}}, cb);
  REQUIRE(s.resolve());
  CHECK(s.print() == "node 0: 0 1 2\nnode 1: 2\nedge 0->1.0: (0,2) (1,2) (2,2) [reshard]\n");
  REQUIRE(s.pick_max_core_usage());
  ShardSolver::Solution sol = s.finish();
  CHECK(sol.config == std::vector<uint32_t>{0, 2});
  REQUIRE(sol.reshards.size() == 1);
  CHECK(sol.reshards[0].first == Edge{0, 1, 0});
  CHECK(sol.reshards[0].second.shard.shape[0] == 7);

  // A forced entry whose reshard enables nothing fails at the entry, naming the memreconfig.
  cb.forced_reshard = [](const Edge& e) { return e.producer == 0 && e.consumer == 0; };
  ShardSolver entry({3, 3}, {{0, 1, 0}}, cb);
  CHECK_FALSE(entry.resolve());
  REQUIRE(entry.failure());
  CHECK(entry.failure()->at == ShardSolver::Failure::At::entry);
  CHECK(entry.failure()->why ==
        "the forced reshard (memreconfig) at the chain's input enables no config");
}

namespace {
TensorLayout rows(uint32_t shard_rows) {
  TensorLayout t;
  t.buffer = device::BufferType::l1;
  t.memory = device::MemLayout::height_sharded;
  t.shard.shape[0] = shard_rows;
  return t;
}
}  // namespace

TEST_CASE("ShardSolver: the reshard map keeps every valid alternative with the selected index") {
  // Two ops of three configs; no direct path on 0->1. Reshards: config 0 of Op1 by layout A
  // only, config 1 by A or B, config 2 by A, B or C. Op1's cores {8, 32, 16}: core usage picks
  // Op1 config 1 (Op0 config 0, 64 cores, pairs with any). The map keeps 1, 2 and 3 alternatives,
  // selects index 1, and the plan takes its first alternative, A.
  const TensorLayout a = rows(32), b = rows(64), c = rows(96);
  ShardSolver::Callbacks cb;
  cb.edge_ok = [](const Edge&, uint32_t, uint32_t) { return false; };
  cb.entry_ok = [](uint32_t, uint32_t) { return true; };
  cb.reshards_for = [&](const Edge& e, uint32_t k) {
    if (e.producer == e.consumer) return std::vector<TensorLayout>{};
    std::vector<TensorLayout> all = {a, b, c};
    return std::vector<TensorLayout>(all.begin(), all.begin() + k + 1);
  };
  constexpr std::array<std::array<uint32_t, 3>, 2> kOps = {{{64, 32, 16}, {8, 32, 16}}};
  cb.cores = [&](uint32_t node, uint32_t k) { return kOps[node][k]; };
  ShardSolver s({3, 3}, {{0, 1, 0}}, cb);
  REQUIRE(s.resolve());
  const ShardSolver::ReshardEntry& map = s.reshard_entry(0);
  REQUIRE(map.alternatives.size() == 3);
  CHECK(map.alternatives[0] == std::vector<TensorLayout>{a});
  CHECK(map.alternatives[1] == std::vector<TensorLayout>{a, b});
  CHECK(map.alternatives[2] == std::vector<TensorLayout>{a, b, c});
  CHECK_FALSE(map.selected);  // nothing locked yet
  CHECK(s.entry_reshard().alternatives.empty());  // every config took the input as it is
  REQUIRE(s.pick_max_core_usage());
  REQUIRE(s.reshard_entry(0).selected);
  CHECK(*s.reshard_entry(0).selected == 1);
  ShardSolver::Solution sol = s.finish();
  CHECK(sol.config == std::vector<uint32_t>{0, 1});
  REQUIRE(sol.reshards.size() == 1);
  CHECK(sol.reshards[0].first == Edge{0, 1, 0});
  CHECK(sol.reshards[0].second == a);
}

TEST_CASE("ShardSolver: first-op input search keeps the configs a reshard of the input enables") {
  // Op0's configs have 64, 32 and 16 cores; only config 2 (16 cores) takes the chain's input as
  // it is. A reshard of the input to X or Y enables config 0; nothing enables config 1. Every
  // pair on 0->1 is valid; Op1's cores {8, 8, 8}.
  const TensorLayout x = rows(32), y = rows(64);
  ShardSolver::Callbacks cb;
  cb.edge_ok = [](const Edge&, uint32_t, uint32_t) { return true; };
  cb.entry_ok = [](uint32_t, uint32_t k) { return k == 2; };
  cb.reshards_for = [&](const Edge& e, uint32_t k) {
    if (e.producer == e.consumer && k == 0) return std::vector<TensorLayout>{x, y};
    return std::vector<TensorLayout>{};
  };
  std::array<std::array<uint32_t, 3>, 2> ops = {{{64, 32, 16}, {8, 8, 8}}};
  cb.cores = [&](uint32_t node, uint32_t k) { return ops[node][k]; };
  {
    // Off (the seed's path for an input that is not free): the input as it is, 16 cores.
    ShardSolver s({3, 3}, {{0, 1, 0}}, cb);
    REQUIRE(s.resolve());
    CHECK(s.print() == "node 0: 2\nnode 1: 0 1 2\nedge 0->1.0: (2,0) (2,1) (2,2)\n");
    REQUIRE(s.pick_max_core_usage());
    CHECK(s.finish().config[0] == 2);
    CHECK(s.finish().reshards.empty());
  }
  cb.search_first_input = true;
  {
    // On: configs 0 (through X or Y) and 2 (as it is); 64 + 8 cores beat 16 + 8: config 0, the
    // input resharded to X, the first alternative.
    ShardSolver s({3, 3}, {{0, 1, 0}}, cb);
    REQUIRE(s.resolve());
    CHECK(s.bitset(0) == ShardSolver::Bitset(0b101));
    CHECK(s.entry_direct() == ShardSolver::Bitset(0b100));
    REQUIRE(s.entry_reshard().alternatives.size() == 3);
    CHECK(s.entry_reshard().alternatives[0] == std::vector<TensorLayout>{x, y});
    REQUIRE(s.pick_max_core_usage());
    CHECK(s.entry_reshard().selected == std::optional<uint32_t>(0));
    ShardSolver::Solution sol = s.finish();
    CHECK(sol.config[0] == 0);
    REQUIRE(sol.reshards.size() == 1);
    CHECK(sol.reshards[0].first == Edge{0, 0, 0});
    CHECK(sol.reshards[0].second == x);
  }
  {
    // A tie (config 0 at 16 cores too) goes to the config that takes the input as it is.
    ops[0][0] = 16;
    ShardSolver s({3, 3}, {{0, 1, 0}}, cb);
    REQUIRE(s.resolve());
    REQUIRE(s.pick_max_core_usage());
    CHECK(s.finish().config[0] == 2);
    CHECK(s.finish().reshards.empty());
  }
}
