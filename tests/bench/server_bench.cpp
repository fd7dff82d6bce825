// A server's first and second request on a plan, as meshplan-server loads and serves it: each
// iteration loads a fresh plan cache the server's way (map, verify, bind on a new emulated
// chip; examples/server/plans.hpp), warms it up or not, then answers the same request line
// twice through the server's own request handler (Worker::run) and times each answer: the
// benchmark time is the answering thread's CPU time (the chip runs on that thread; on a shared
// machine wall time mostly measures waiting for a core), with wall-time medians as counters. The
// first/second ratios (bench_main.cpp) say whether a client's first request pays for work left to
// first use: with the server's start-up warm-up it should be about 1.
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/emulator_backend.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "plans.hpp"

using namespace meshplan;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kModel = "transformer_block";

/// A one-plan cache of the example model, planned with the default policy.
struct ServerFixture {
  std::string path;
  bool ok = false;
  ServerFixture() {
    auto made = make();
    if (!made) std::fprintf(stderr, "bench: %s\n", made.error().to_string().c_str());
    ok = made.has_value();
  }
  Status make() {
    planner::Graph g = MESHPLAN_TRY(planner::load_graph_file(
        std::string(MESHPLAN_SOURCE_DIR) + "/examples/models/" + kModel + ".json"));
    auto compiled =
        MESHPLAN_TRY(planner::compile(g, device::wormhole_b0(), planner::PlannerOptions{}));
    path = (std::filesystem::temp_directory_path() / "meshplan-bench-server.mpc").string();
    std::vector<runtime::CacheEntryData> entries;
    entries.push_back({kModel, std::move(compiled.bytes)});
    return runtime::write_cache(path, std::move(entries));
  }
};

ServerFixture& fixture() {
  static ServerFixture f;
  return f;
}

/// This thread's CPU time in seconds.
double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// One iteration per fresh load; the manual time is request `which` (1 or 2).
void request(benchmark::State& state, int which, bool warm) {
  ServerFixture& f = fixture();
  if (!f.ok) return state.SkipWithError("the model did not plan");
  if (!device::register_emulator_backend()) return state.SkipWithError("no emulator backend");
  server::LoadOptions load;
  load.path = f.path;
  load.chips.emplace("wormhole_b0", device::wormhole_b0());
  const std::string line = std::string("run ") + kModel + " random 7";
  std::vector<double> wall_ms, cpu_ms;
  for (auto _ : state) {
    auto plans = server::load_plans(load);
    if (!plans) return state.SkipWithError(plans.error().to_string().c_str());
    if (warm && !server::warm_up(**plans)) return state.SkipWithError("warm-up failed");
    server::Worker& worker = *(*plans)->workers[0];
    double wall = 0, cpu = 0;
    for (int r = 1; r <= which; ++r) {
      auto t0 = Clock::now();
      double c0 = cpu_now();
      auto reply = worker.run(line);
      cpu = cpu_now() - c0;
      wall = std::chrono::duration<double>(Clock::now() - t0).count();
      if (!reply) return state.SkipWithError(reply.error().to_string().c_str());
    }
    state.SetIterationTime(cpu);
    wall_ms.push_back(wall * 1e3);
    cpu_ms.push_back(cpu * 1e3);
  }
  state.counters["cpu_median_ms"] = median(cpu_ms);
  state.counters["wall_median_ms"] = median(wall_ms);
}

void BM_ServerFirstRequest(benchmark::State& s) {
  request(s, 1, true);
}
void BM_ServerSecondRequest(benchmark::State& s) {
  request(s, 2, true);
}
void BM_ServerFirstRequestNoWarmUp(benchmark::State& s) {
  request(s, 1, false);
}
void BM_ServerSecondRequestNoWarmUp(benchmark::State& s) {
  request(s, 2, false);
}
BENCHMARK(BM_ServerFirstRequest)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ServerSecondRequest)->UseManualTime()->Iterations(20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ServerFirstRequestNoWarmUp)
    ->UseManualTime()
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ServerSecondRequestNoWarmUp)
    ->UseManualTime()
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond);

}  // namespace
