// Start-up cost: a plan from the cache (open + find + verify + bind) against importing and
// planning the same graph from JSON; and plan-key throughput.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "bench_util.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan_cache.hpp"

using namespace meshplan;

namespace {

constexpr int kLayers = 1000;  // 3,000 ops

struct Fixture {
  std::string json;
  std::string cache_path;
  std::unique_ptr<device::EmulatedDevice> dev;
  Fixture() {
    planner::Graph g = bench::mlp_chain(kLayers, 32, 64);
    json = *planner::export_graph_json(g);
    auto plan = planner::compile(g, device::wormhole_b0(), planner::PlannerOptions{});
    cache_path = (std::filesystem::temp_directory_path() / "meshplan-bench.mpc").string();
    std::filesystem::remove(cache_path);
    (void)runtime::add_to_cache(cache_path, runtime::CacheEntryData{"chain", std::move(plan->bytes)});
    dev = std::move(*device::EmulatedDevice::create(device::wormhole_b0()));
  }
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

void BM_ColdStartFromCache(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    auto cache = runtime::PlanCache::open(f.cache_path);
    auto plan = cache->find("chain");
    auto exe = runtime::Executable::bind(*plan, *f.dev);
    benchmark::DoNotOptimize(exe);
  }
}
BENCHMARK(BM_ColdStartFromCache)->Unit(benchmark::kMicrosecond);

void BM_LoadFromJson(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    auto g = planner::import_graph_json(f.json, "chain.json");
    auto plan = planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions{});
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(BM_LoadFromJson)->Unit(benchmark::kMicrosecond);

void BM_GraphKey(benchmark::State& state) {
  planner::Graph g = bench::mlp_chain(static_cast<int>(state.range(0)) / 3, 32, 64);
  for (auto _ : state) benchmark::DoNotOptimize(planner::graph_key(g));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(g.ops.size()));
}
BENCHMARK(BM_GraphKey)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace
