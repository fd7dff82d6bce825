// Start-up cost: the plan of a 10,002-op model from a cache of 100 plans (open + find + verify +
// bind, with the file in the page cache) against loading the same model from JSON (import +
// plan) and the same plan from its JSON form (parse + verify + bind); where verification's time
// goes; and plan-key throughput.
#include <benchmark/benchmark.h>
#include <flatbuffers/idl.h>

#include <filesystem>

#include "bench_util.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan_cache.hpp"

using namespace meshplan;

namespace {

constexpr int kLayers = 3334;  // 10,002 ops
constexpr int kCachePlans = 100;

struct Fixture {
  std::string json;       // the model's graph.json
  std::string plan_json;  // the plan as JSON (flatc's schema route)
  std::string cache_path;
  std::vector<uint8_t> plan_bytes;
  std::unique_ptr<device::EmulatedDevice> dev;
  Fixture() {
    planner::Graph g = bench::mlp_chain(kLayers, 32, 64);
    json = *planner::export_graph_json(g);
    auto plan =
        planner::compile(g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
    plan_bytes = plan->bytes;
    std::vector<runtime::CacheEntryData> entries;
    entries.push_back(runtime::CacheEntryData{"chain", std::move(plan->bytes)});
    for (int i = 1; i < kCachePlans; ++i) {
      auto small =
          planner::compile(bench::mlp_chain(1 + i % 7, 32, 32 + 32 * (i / 7)),
                           device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
      entries.push_back(
          runtime::CacheEntryData{"model" + std::to_string(i), std::move(small->bytes)});
    }
    cache_path = (std::filesystem::temp_directory_path() / "meshplan-bench.mpc").string();
    if (auto w = runtime::write_cache(cache_path, entries); !w)
      std::fprintf(stderr, "bench: %s\n", w.error().to_string().c_str());
    flatbuffers::IDLOptions opts;
    flatbuffers::Parser parser(opts);
    parser.Parse(std::string(schemas::kPlanSchemaText).c_str(), nullptr, "plan.fbs");
    flatbuffers::GenerateText(parser, plan_bytes.data() + sizeof(flatbuffers::uoffset_t),
                              &plan_json);
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
    if (!exe) state.SkipWithError("cold start failed");
    benchmark::DoNotOptimize(exe);
  }
  state.counters["ops"] = kLayers * 3;
}
BENCHMARK(BM_ColdStartFromCache)->Unit(benchmark::kMicrosecond);

/// Cache already open and the entry verified once: what a server pays per lookup afterwards.
void BM_WarmFind(benchmark::State& state) {
  Fixture& f = fixture();
  auto cache = runtime::PlanCache::open(f.cache_path);
  (void)cache->find("chain");
  for (auto _ : state) benchmark::DoNotOptimize(cache->find("chain"));
}
BENCHMARK(BM_WarmFind)->Unit(benchmark::kMicrosecond);

void BM_ChecksumOnly(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) benchmark::DoNotOptimize(xxh3_128(f.plan_bytes.data(), f.plan_bytes.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(f.plan_bytes.size()));
}
BENCHMARK(BM_ChecksumOnly)->Unit(benchmark::kMicrosecond);

void BM_VerifyPlanOnly(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) benchmark::DoNotOptimize(runtime::verify_plan(f.plan_bytes, "chain"));
}
BENCHMARK(BM_VerifyPlanOnly)->Unit(benchmark::kMicrosecond);

void BM_LoadPlanFromJson(benchmark::State& state) {
  Fixture& f = fixture();
  std::string schema(schemas::kPlanSchemaText);
  for (auto _ : state) {
    flatbuffers::IDLOptions opts;
    opts.size_prefixed = true;
    flatbuffers::Parser parser(opts);
    parser.Parse(schema.c_str(), nullptr, "plan.fbs");
    if (!parser.Parse(f.plan_json.c_str(), nullptr, "plan.json"))
      state.SkipWithError("plan JSON does not parse");
    std::span<const uint8_t> bytes(parser.builder_.GetBufferPointer(), parser.builder_.GetSize());
    auto plan = runtime::verify_plan(bytes, "chain.json");
    auto exe = runtime::Executable::bind(*plan, *f.dev);
    benchmark::DoNotOptimize(exe);
  }
}
BENCHMARK(BM_LoadPlanFromJson)->Unit(benchmark::kMillisecond);

void BM_LoadFromJson(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    auto g = planner::import_graph_json(f.json, "chain.json");
    auto plan =
        planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(BM_LoadFromJson)->Unit(benchmark::kMillisecond);

void BM_GraphKey(benchmark::State& state) {
  planner::Graph g = bench::mlp_chain(static_cast<int>(state.range(0)) / 3, 32, 64);
  for (auto _ : state) benchmark::DoNotOptimize(planner::graph_key(g));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(g.ops.size()));
}
BENCHMARK(BM_GraphKey)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace

namespace {

/// The same cold start with the FlatBuffers structural verifier re-run (untrusted caches).
void BM_ColdStartFullVerify(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) {
    auto cache = runtime::PlanCache::open(
        f.cache_path, runtime::PlanCacheOptions{.verify = runtime::VerifyMode::full});
    auto plan = cache->find("chain");
    auto exe = runtime::Executable::bind(*plan, *f.dev);
    if (!exe) state.SkipWithError("cold start failed");
    benchmark::DoNotOptimize(exe);
  }
}
BENCHMARK(BM_ColdStartFullVerify)->Unit(benchmark::kMicrosecond);

}  // namespace

namespace {

void BM_VerifyPlanChecksummedOnly(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state)
    benchmark::DoNotOptimize(
        runtime::verify_plan(f.plan_bytes, "chain", runtime::VerifyMode::checksummed));
}
BENCHMARK(BM_VerifyPlanChecksummedOnly)->Unit(benchmark::kMicrosecond);

}  // namespace
