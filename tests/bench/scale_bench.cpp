// Planning at scale: compile() of transformer-like graphs of about 1k, 10k, 50k and 100k ops with
// greedy and beam, and graph.json import of the 100k-op graph. Each benchmark also reports the
// growth of the process's peak RSS over its run (`peak_rss_mb`): meaningful when it is the only
// benchmark of its process (--benchmark_filter), as tests/bench/scale_curve.sh runs them.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdio>
#include <map>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"

using namespace meshplan;

namespace {

/// Transformer-like layers (as policy_bench's 10k graph): h = relu(x); q, k, v = h @ W;
/// p = relu(q @ k^T); o = (p @ v) @ Wo; r = o + x; x' = relu(relu(r) @ W1) @ W2 + r. 14 ops per
/// layer.
planner::Graph transformer(int layers) {
  constexpr int64_t seq = 64, d = 256, ffn = 512;
  planner::Graph g;
  g.name = "transformer" + std::to_string(layers);
  int args = 0;
  auto value = [&](std::string name, std::vector<int64_t> shape, bool argument,
                   planner::ArgKind kind) {
    planner::Value v;
    v.name = std::move(name);
    v.shape = std::move(shape);
    v.argument = argument ? args++ : -1;
    v.kind = kind;
    g.values.push_back(std::move(v));
    auto id = static_cast<planner::ValueId>(g.values.size() - 1);
    if (argument) g.arguments.push_back(id);
    return id;
  };
  auto param = [&](std::string n, std::vector<int64_t> s) {
    return value(std::move(n), std::move(s), true, planner::ArgKind::parameter);
  };
  auto op = [&](device::OpKind kind, std::string name, std::vector<planner::ValueId> in,
                bool transpose_b = false) {
    planner::ValueId r = value(name, {}, false, planner::ArgKind::input);
    std::vector<planner::Attribute> attrs;
    if (transpose_b) attrs.push_back(planner::Attribute{"transpose_b", true});
    g.ops.push_back(planner::Op{std::move(name), kind, std::move(in), {r}, attrs});
    return r;
  };
  using device::OpKind;
  planner::ValueId x = value("x", {seq, d}, true, planner::ArgKind::input);
  for (int l = 0; l < layers; ++l) {
    std::string s = "_" + std::to_string(l);
    auto h = op(OpKind::relu, "norm1" + s, {x});
    auto q = op(OpKind::matmul, "q" + s, {h, param("wq" + s, {d, d})});
    auto k = op(OpKind::matmul, "k" + s, {h, param("wk" + s, {d, d})});
    auto v = op(OpKind::matmul, "v" + s, {h, param("wv" + s, {d, d})});
    auto sc = op(OpKind::matmul, "scores" + s, {q, k}, true);
    auto p = op(OpKind::relu, "softmax" + s, {sc});
    auto o = op(OpKind::matmul, "attend" + s, {p, v});
    auto proj = op(OpKind::matmul, "proj" + s, {o, param("wo" + s, {d, d})});
    auto r = op(OpKind::add, "residual1" + s, {proj, x});
    auto h2 = op(OpKind::relu, "norm2" + s, {r});
    auto f1 = op(OpKind::matmul, "ffn1" + s, {h2, param("w1" + s, {d, ffn})});
    auto a = op(OpKind::relu, "gelu" + s, {f1});
    auto f2 = op(OpKind::matmul, "ffn2" + s, {a, param("w2" + s, {ffn, d})});
    x = op(OpKind::add, "residual2" + s, {f2, r});
  }
  g.outputs.push_back(x);
  auto ok = planner::validate(g);
  if (!ok) std::fprintf(stderr, "transformer: %s\n", ok.error().message.c_str());
  return g;
}

/// The graph of about `ops` ops, built once per size.
const planner::Graph& graph_of(int ops) {
  static std::map<int, planner::Graph> graphs;
  auto it = graphs.find(ops);
  if (it == graphs.end()) it = graphs.emplace(ops, transformer((ops + 13) / 14)).first;
  return it->second;
}

double max_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

void BM_PlanScale(benchmark::State& state, const char* policy) {
  const planner::Graph& g = graph_of(static_cast<int>(state.range(0)));
  planner::PlannerOptions o;
  o.policy = policy;
  const double before = max_rss_mb();
  for (auto _ : state) {
    auto plan = planner::compile(g, device::wormhole_b0(), o);
    if (!plan) state.SkipWithError(plan.error().message.c_str());
    benchmark::DoNotOptimize(plan);
  }
  state.counters["ops"] = static_cast<double>(g.ops.size());
  state.counters["peak_rss_mb"] = max_rss_mb() - before;
}
BENCHMARK_CAPTURE(BM_PlanScale, greedy, "greedy")
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(50000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlanScale, beam, "beam")
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(50000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);

void BM_ImportGraphJson(benchmark::State& state) {
  const planner::Graph& g = graph_of(static_cast<int>(state.range(0)));
  auto json = planner::export_graph_json(g);
  if (!json) {
    state.SkipWithError(json.error().message.c_str());
    return;
  }
  const double before = max_rss_mb();
  for (auto _ : state) {
    auto imported = planner::import_graph_json(*json);
    if (!imported) state.SkipWithError(imported.error().message.c_str());
    benchmark::DoNotOptimize(imported);
  }
  state.counters["ops"] = static_cast<double>(g.ops.size());
  state.counters["json_mb"] = static_cast<double>(json->size()) / (1024.0 * 1024.0);
  state.counters["peak_rss_mb"] = max_rss_mb() - before;
}
BENCHMARK(BM_ImportGraphJson)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace
