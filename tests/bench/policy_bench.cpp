// Layout policies: plan quality per policy over the example models (simulated device time,
// fraction of op outputs in L1, spills, reshards) printed side by side; spill selection Belady vs
// DP under L1 pressure; beam's gap to the exhaustive optimum on small graphs; and planning time of
// a synthetic 10,000-op transformer-like graph per policy (and with DP spill selection).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "bench_util.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/prepare_weights.hpp"
#include "meshplan/planner/spill_dp.hpp"

using namespace meshplan;

namespace {

const char* const kPolicies[] = {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"};

struct Builder {
  planner::Graph g;
  int args = 0;
  planner::ValueId value(const std::string& name, std::vector<int64_t> shape, bool argument,
                         planner::ArgKind kind) {
    planner::Value v;
    v.name = name;
    v.shape = std::move(shape);
    v.argument = argument ? args++ : -1;
    v.kind = kind;
    g.values.push_back(std::move(v));
    auto id = static_cast<planner::ValueId>(g.values.size() - 1);
    if (argument) g.arguments.push_back(id);
    return id;
  }
  planner::ValueId param(const std::string& n, std::vector<int64_t> s) {
    return value(n, std::move(s), true, planner::ArgKind::parameter);
  }
  planner::ValueId op(device::OpKind kind, const std::string& name,
                      std::vector<planner::ValueId> in, bool transpose_b = false) {
    planner::ValueId r = value(name, {}, false, planner::ArgKind::input);
    std::vector<planner::Attribute> attrs;
    if (transpose_b) attrs.push_back(planner::Attribute{"transpose_b", true});
    g.ops.push_back(planner::Op{name, kind, std::move(in), {r}, attrs});
    return r;
  }
};

/// Transformer-like blocks from the ops that exist (relu stands in for norms and softmax):
/// h = relu(x); q, k, v = h @ W; p = relu(q @ k^T); o = (p @ v) @ Wo; r = o + x;
/// x' = relu(relu(r) @ W1) @ W2 + r. 14 ops per layer.
planner::Graph transformer(int layers, int64_t seq, int64_t d, int64_t ffn) {
  Builder b;
  b.g.name = "transformer" + std::to_string(layers);
  planner::ValueId x = b.value("x", {seq, d}, true, planner::ArgKind::input);
  using device::OpKind;
  for (int l = 0; l < layers; ++l) {
    std::string s = "_" + std::to_string(l);
    auto h = b.op(OpKind::relu, "norm1" + s, {x});
    auto q = b.op(OpKind::matmul, "q" + s, {h, b.param("wq" + s, {d, d})});
    auto k = b.op(OpKind::matmul, "k" + s, {h, b.param("wk" + s, {d, d})});
    auto v = b.op(OpKind::matmul, "v" + s, {h, b.param("wv" + s, {d, d})});
    auto sc = b.op(OpKind::matmul, "scores" + s, {q, k}, true);
    auto p = b.op(OpKind::relu, "softmax" + s, {sc});
    auto o = b.op(OpKind::matmul, "attend" + s, {p, v});
    auto proj = b.op(OpKind::matmul, "proj" + s, {o, b.param("wo" + s, {d, d})});
    auto r = b.op(OpKind::add, "residual1" + s, {proj, x});
    auto h2 = b.op(OpKind::relu, "norm2" + s, {r});
    auto f1 = b.op(OpKind::matmul, "ffn1" + s, {h2, b.param("w1" + s, {d, ffn})});
    auto a = b.op(OpKind::relu, "gelu" + s, {f1});
    auto f2 = b.op(OpKind::matmul, "ffn2" + s, {a, b.param("w2" + s, {ffn, d})});
    x = b.op(OpKind::add, "residual2" + s, {f2, r});
  }
  b.g.outputs.push_back(x);
  auto ok = planner::validate(b.g);
  if (!ok) std::fprintf(stderr, "transformer: %s\n", ok.error().message.c_str());
  return b.g;
}

std::vector<std::pair<planner::Graph, device::ChipDesc>> models() {
  std::vector<std::pair<planner::Graph, device::ChipDesc>> out;
  auto mlp =
      planner::load_graph_file(std::string(MESHPLAN_SOURCE_DIR) + "/examples/models/mlp.json");
  if (mlp) out.emplace_back(*mlp, device::wormhole_b0());
  out.emplace_back(bench::mlp_chain(8, 64, 512), device::wormhole_b0());
  out.emplace_back(transformer(2, 128, 256, 1024), device::wormhole_b0());
  // Under L1 pressure: the same transformer with long sequences on a one-core cut of the chip
  // (its NoC given the grid's bandwidth, so L1 stays cheaper than DRAM as on the full chip).
  device::ChipDesc one = device::wormhole_b0();
  one.name = "wormhole_b0_1x1";
  one.grid_x = one.grid_y = 1;
  one.noc_bytes_per_cycle = 64 * 32;
  one.dram_read_bytes_per_cycle *= 64;
  one.mcast_bytes_per_cycle *= 64;
  one.l1_bytes_per_cycle *= 64;
  planner::Graph big = transformer(2, 512, 512, 1024);
  big.name = "transformer2_1core";
  out.emplace_back(big, one);
  return out;
}

/// Prints the quality table once (not timed): one row per model and policy.
void BM_PlanQuality(benchmark::State& state) {
  static bool printed = false;
  for (auto _ : state) {
    if (printed) continue;
    printed = true;
    std::printf(
        "\nplan quality (simulated device time from OpModel::cost, as the emulator's clock):\n");
    std::printf("  %-22s %-15s %12s %9s %7s %9s\n", "model", "policy", "device_ns", "L1 outs",
                "spills", "reshards");
    double log_beam_over_df = 0, log_greedy_over_df = 0;
    int count = 0;
    bool greedy_le_df = true;
    for (const auto& [original, chip] : models()) {
      // As compile() plans them: conv2d weights in their prepared form.
      planner::Graph g = original;
      if (auto prepared = planner::prepare_conv_weights(g); !prepared) {
        std::printf("  %-22s error: %s\n", g.name.c_str(), prepared.error().message.c_str());
        continue;
      }
      uint64_t ns[5] = {};
      for (int p = 0; p < 5; ++p) {
        planner::PlannerOptions o;
        o.policy = kPolicies[p];
        auto r = planner::plan_layout(g, chip, o);
        if (!r) {
          std::printf("  %-22s %-15s error: %s\n", g.name.c_str(), kPolicies[p],
                      r.error().message.c_str());
          continue;
        }
        ns[p] = r->estimated_ns(chip);
        std::printf("  %-22s %-15s %12llu %8.1f%% %7u %9u\n", g.name.c_str(), kPolicies[p],
                    static_cast<unsigned long long>(ns[p]),
                    100.0 * r->l1_outputs() / static_cast<double>(g.ops.size()), r->spills,
                    r->reshards);
      }
      if (ns[4] && ns[3] && ns[2]) {
        log_beam_over_df += std::log(static_cast<double>(ns[3]) / ns[4]);
        log_greedy_over_df += std::log(static_cast<double>(ns[2]) / ns[4]);
        greedy_le_df = greedy_le_df && ns[2] <= ns[4];
        ++count;
      }
    }
    if (count)
      std::printf(
          "  geomean beam/df-sharding %.3f, greedy/df-sharding %.3f; greedy <= df-sharding on "
          "every model: %s\n\n",
          std::exp(log_beam_over_df / count), std::exp(log_greedy_over_df / count),
          greedy_le_df ? "yes" : "NO");
  }
}
BENCHMARK(BM_PlanQuality)->Iterations(1);

const planner::Graph& big_graph() {
  static planner::Graph g = transformer(715, 64, 256, 512);  // 14 ops per layer: 10,010 ops
  return g;
}

/// One core of a Wormhole with the whole grid's NoC and eltwise throughput: L1 pressure at the
/// same relative speeds as on the full chip (the spill benches).
device::ChipDesc one_core_chip() {
  device::ChipDesc one = device::wormhole_b0();
  one.name = "wormhole_b0_1x1";
  one.grid_x = one.grid_y = 1;
  one.noc_bytes_per_cycle = 64 * 32;
  one.dram_read_bytes_per_cycle *= 64;
  one.mcast_bytes_per_cycle *= 64;
  one.l1_bytes_per_cycle *= 64;
  one.eltwise_elems_per_cycle = 64 * 32;
  return one;
}

/// Spill selection side by side (not timed): Belady vs DP after greedy and beam on the example
/// models (full chip and a one-core cut), the bench models on a one-core cut, and a squeezed
/// transformer (one core, and the full grid with 160 KiB of usable L1 per core).
void BM_SpillSelection(benchmark::State& state) {
  static bool printed = false;
  for (auto _ : state) {
    if (printed) continue;
    printed = true;
    device::ChipDesc one = one_core_chip();
    device::ChipDesc small = device::wormhole_b0();
    small.name = "wormhole_b0_160k";
    small.l1_size = small.l1_unreserved_base + 160 * 1024 * 100 / 95;
    std::vector<std::pair<planner::Graph, device::ChipDesc>> cases;
    for (const char* m : {"mlp", "transformer_block", "small_cnn", "bert_base_layer",
                          "llama3_8b_decode", "llama3_8b_prefill", "resnet50_b1"}) {
      auto g = planner::load_graph_file(std::string(MESHPLAN_SOURCE_DIR) + "/examples/models/" + m +
                                        ".json");
      if (!g) continue;
      cases.emplace_back(*g, device::wormhole_b0());
      cases.emplace_back(*g, one);
    }
    for (auto& model : models()) cases.emplace_back(model.first, one);
    planner::Graph squeezed = transformer(2, 2048, 512, 2048);
    squeezed.name = "transformer2_squeezed";
    cases.emplace_back(squeezed, small);
    std::printf(
        "\nspill selection (simulated device time of the fitted plans; DP exact over the spill "
        "space):\n");
    std::printf("  %-22s %-16s %-7s %11s %6s %11s %6s %7s %-15s %8s\n", "model", "chip", "policy",
                "belady_ns", "spills", "dp_ns", "spills", "dp/bel", "selection", "states");
    double log_ratio = 0;
    int count = 0, faster = 0, slower = 0, exact = 0;
    for (const auto& [g, chip] : cases)
      for (const char* policy : {"greedy", "beam"}) {
        planner::PlannerOptions o;
        o.policy = policy;
        auto belady = planner::plan_layout(g, chip, o);
        o.spill = "dp";
        auto dp = planner::plan_layout(g, chip, o);
        if (!belady || !dp) {
          std::printf("  %-22s %-16s %-7s error: %s\n", g.name.c_str(), chip.name.c_str(), policy,
                      (!belady ? belady.error() : dp.error()).message.c_str());
          continue;
        }
        constexpr const char* kSelection[] = {"belady", "dp_exact", "dp_kept_belady",
                                              "dp_fallback"};
        uint64_t b = belady->estimated_ns(chip), p = dp->estimated_ns(chip);
        std::printf("  %-22s %-16s %-7s %11llu %6u %11llu %6u %7.4f %-15s %8llu\n", g.name.c_str(),
                    chip.name.c_str(), policy, static_cast<unsigned long long>(b), belady->spills,
                    static_cast<unsigned long long>(p), dp->spills, static_cast<double>(p) / b,
                    kSelection[static_cast<int>(dp->spill_selection)],
                    static_cast<unsigned long long>(dp->spill_dp_states));
        log_ratio += std::log(static_cast<double>(p) / b);
        ++count;
        faster += p < b;
        slower += p > b;
        exact += dp->spill_selection != planner::SpillSelection::dp_fallback;
      }
    if (count)
      std::printf(
          "  %d plans: geomean dp/belady %.4f; dp faster on %d, slower on %d; exact on %d\n\n",
          count, std::exp(log_ratio / count), faster, slower, exact);
  }
}
BENCHMARK(BM_SpillSelection)->Iterations(1);

/// How far the exact DP scales (not a timing assertion): `width` tensors of 400 KiB produced one
/// after the other on one core (three fit) and summed in a chain, planned by greedy with Belady
/// and with the DP; planning time of each, the DP's states and selection.
void BM_SpillDpWide(benchmark::State& state) {
  static bool printed = false;
  for (auto _ : state) {
    if (printed) continue;
    printed = true;
    device::ChipDesc one = one_core_chip();
    std::printf("\nspill DP on a wide fan-in (one core, 400 KiB tensors, three fit):\n");
    std::printf("  %6s %10s %10s %8s %-15s %10s\n", "width", "belady_ms", "dp_ms", "dp/bel",
                "selection", "states");
    for (int width : {8, 16, 22, 32, 48, 64}) {
      Builder b;
      b.g.name = "wide" + std::to_string(width);
      planner::ValueId x = b.value("x", {32, 32 * 200}, true, planner::ArgKind::input);
      std::vector<planner::ValueId> r;
      for (int i = 0; i < width; ++i)
        r.push_back(b.op(device::OpKind::relu, "r" + std::to_string(i), {x}));
      planner::ValueId sum = r[0];
      for (int i = 1; i < width; ++i)
        sum = b.op(device::OpKind::add, "s" + std::to_string(i), {sum, r[i]});
      b.g.outputs.push_back(sum);
      if (!planner::validate(b.g)) continue;
      planner::PlannerOptions o;
      o.policy = "greedy";
      auto t0 = std::chrono::steady_clock::now();
      auto belady = planner::plan_layout(b.g, one, o);
      auto t1 = std::chrono::steady_clock::now();
      o.spill = "dp";
      auto dp = planner::plan_layout(b.g, one, o);
      auto t2 = std::chrono::steady_clock::now();
      if (!belady || !dp) continue;
      constexpr const char* kSelection[] = {"belady", "dp_exact", "dp_kept_belady", "dp_fallback"};
      std::printf("  %6d %10.2f %10.2f %8.4f %-15s %10llu\n", width,
                  std::chrono::duration<double, std::milli>(t1 - t0).count(),
                  std::chrono::duration<double, std::milli>(t2 - t1).count(),
                  static_cast<double>(dp->estimated_ns(one)) / belady->estimated_ns(one),
                  kSelection[static_cast<int>(dp->spill_selection)],
                  static_cast<unsigned long long>(dp->spill_dp_states));
    }
    std::printf("\n");
  }
}
BENCHMARK(BM_SpillDpWide)->Iterations(1);

void BM_PlanTransformer10k(benchmark::State& state, const char* policy) {
  const planner::Graph& g = big_graph();
  planner::PlannerOptions o;
  std::string name = policy;
  if (name.ends_with("+dp")) {
    o.spill = "dp";
    name.resize(name.size() - 3);
  }
  o.policy = name;
  for (auto _ : state) {
    auto plan = planner::compile(g, device::wormhole_b0(), o);
    if (!plan) state.SkipWithError(plan.error().message.c_str());
    benchmark::DoNotOptimize(plan);
  }
  state.counters["ops"] = static_cast<double>(g.ops.size());
}
BENCHMARK_CAPTURE(BM_PlanTransformer10k, dram, "dram")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlanTransformer10k, l1_interleaved, "l1-interleaved")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlanTransformer10k, greedy, "greedy")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlanTransformer10k, beam, "beam")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlanTransformer10k, df_sharding, "df-sharding")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_PlanTransformer10k, greedy_dp, "greedy+dp")->Unit(benchmark::kMillisecond);

}  // namespace
