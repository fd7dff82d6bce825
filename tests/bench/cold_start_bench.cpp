// Cold start in WALL time, both verify modes side by side in one benchmark: open the cache,
// find + verify the 10,002-op plan among 100, bind it (the file is in the page cache: the
// fixture wrote it and every sample reads it). Medians and 90th percentiles of many samples, the
// full/checksummed ratio, and where `full` spends its time (phase by phase, also wall time).
#include <benchmark/benchmark.h>
#include <flatbuffers/flatbuffers.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "bench_util.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan_cache.hpp"

using namespace meshplan;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kLayers = 3334;  // 10,002 ops
constexpr int kCachePlans = 100;

struct ColdFixture {
  std::string path;
  size_t plan_bytes = 0;
  std::unique_ptr<device::EmulatedDevice> dev;
  ColdFixture() {
    std::vector<runtime::CacheEntryData> entries;
    auto big = planner::compile(bench::mlp_chain(kLayers, 32, 64), device::wormhole_b0(),
                                planner::PlannerOptions::with_policy("dram"));
    plan_bytes = big->bytes.size();
    entries.push_back(runtime::CacheEntryData{"chain", std::move(big->bytes)});
    for (int i = 1; i < kCachePlans; ++i) {
      auto small =
          planner::compile(bench::mlp_chain(1 + i % 7, 32, 32 + 32 * (i / 7)),
                           device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
      entries.push_back(
          runtime::CacheEntryData{"model" + std::to_string(i), std::move(small->bytes)});
    }
    path = (std::filesystem::temp_directory_path() / "meshplan-bench-cold.mpc").string();
    if (auto w = runtime::write_cache(path, entries); !w)
      std::fprintf(stderr, "bench: %s\n", w.error().to_string().c_str());
    dev = std::move(*device::EmulatedDevice::create(device::wormhole_b0()));
  }
};

ColdFixture& cold() {
  static ColdFixture f;
  return f;
}

double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

/// This thread's CPU time in microseconds.
double cpu_now_us() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

/// One cold start: open + find (verifies) + bind, wall time in microseconds. The cache is
/// closed (unmapped) outside the timed region.
double cold_start_us(runtime::VerifyMode mode, bool* ok, std::vector<double>* cpu) {
  ColdFixture& f = cold();
  double c0 = cpu_now_us();
  auto t0 = Clock::now();
  auto cache = runtime::PlanCache::open(f.path, runtime::PlanCacheOptions{.verify = mode});
  auto plan = cache ? cache->find("chain") : Result<runtime::PlanRef>(std::unexpected(Error{}));
  auto exe = plan ? runtime::Executable::bind(*plan, *f.dev)
                  : Result<std::unique_ptr<runtime::Executable>>(std::unexpected(Error{}));
  double us = us_since(t0);
  cpu->push_back(cpu_now_us() - c0);
  *ok = exe.has_value();
  benchmark::DoNotOptimize(exe);
  return us;
}

/// Both modes, alternating which goes first, many samples each; wall time.
void BM_ColdStartWallBothModes(benchmark::State& state) {
  std::vector<double> checksummed, full, checksummed_cpu, full_cpu;
  bool ok = true;
  for (auto _ : state) {
    bool a = true, b = true;
    double t_full_first = 0;
    if (checksummed.size() % 2) {
      t_full_first = cold_start_us(runtime::VerifyMode::full, &a, &full_cpu);
      checksummed.push_back(cold_start_us(runtime::VerifyMode::checksummed, &b, &checksummed_cpu));
      full.push_back(t_full_first);
    } else {
      checksummed.push_back(cold_start_us(runtime::VerifyMode::checksummed, &a, &checksummed_cpu));
      full.push_back(cold_start_us(runtime::VerifyMode::full, &b, &full_cpu));
    }
    ok = ok && a && b;
    state.SetIterationTime((checksummed.back() + full.back()) / 1e6);
  }
  if (!ok) state.SkipWithError("cold start failed");
  double mc = percentile(checksummed, 0.5), mf = percentile(full, 0.5);
  state.counters["checksummed_median_us"] = mc;
  state.counters["checksummed_p90_us"] = percentile(checksummed, 0.9);
  state.counters["full_median_us"] = mf;
  state.counters["full_p90_us"] = percentile(full, 0.9);
  state.counters["full_over_checksummed"] = mc > 0 ? mf / mc : 0;
  state.counters["checksummed_cpu_median_us"] = percentile(checksummed_cpu, 0.5);
  state.counters["full_cpu_median_us"] = percentile(full_cpu, 0.5);
  state.counters["plan_bytes"] = static_cast<double>(cold().plan_bytes);
  state.counters["samples"] = static_cast<double>(checksummed.size());
}
BENCHMARK(BM_ColdStartWallBothModes)
    ->UseManualTime()
    ->Iterations(400)
    ->Unit(benchmark::kMicrosecond);

/// Where a `full` cold start goes, phase by phase (medians, wall time): open (map + index
/// checks), find (first verification: checksum + structural verifier + invariants), then the
/// parts of that verification re-timed on the same bytes (the plan's checksum; verify_plan in
/// full mode = the FlatBuffers structural verifier + meshplan's invariants; verify_plan in
/// checksummed mode = the invariants alone; their difference is the structural verifier), bind,
/// and close (unmap). CPU time of the same steps too: on a shared machine wall time includes
/// waiting for a core.
void BM_ColdStartFullPhases(benchmark::State& state) {
  ColdFixture& f = cold();
  std::vector<double> open_us, find_us, checksum_us, structure_us, invariants_us, bind_us, close_us;
  std::vector<double> structure_cpu, invariants_cpu;
  rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  for (auto _ : state) {
    auto t = Clock::now();
    auto cache = runtime::PlanCache::open(
        f.path, runtime::PlanCacheOptions{.verify = runtime::VerifyMode::full});
    open_us.push_back(us_since(t));
    t = Clock::now();
    auto found = cache->find("chain");  // checksum + structural verifier + invariants, first touch
    find_us.push_back(us_since(t));
    if (!found) {
      state.SkipWithError("find failed");
      break;
    }
    // The same three steps again, one by one, on the same mapped bytes (now in CPU caches).
    std::span<const uint8_t> bytes = found->bytes();
    t = Clock::now();
    benchmark::DoNotOptimize(xxh3_128(bytes.data(), bytes.size()));
    checksum_us.push_back(us_since(t));
    t = Clock::now();
    double c = cpu_now_us();
    bool structure_ok = runtime::verify_plan(bytes, "chain", runtime::VerifyMode::full).has_value();
    structure_us.push_back(us_since(t));
    structure_cpu.push_back(cpu_now_us() - c);
    t = Clock::now();
    c = cpu_now_us();
    auto plan = runtime::verify_plan(bytes, "chain", runtime::VerifyMode::checksummed);
    invariants_us.push_back(us_since(t));
    invariants_cpu.push_back(cpu_now_us() - c);
    t = Clock::now();
    auto exe = runtime::Executable::bind(*plan, *f.dev);
    bind_us.push_back(us_since(t));
    if (!structure_ok || !exe) state.SkipWithError("phase failed");
    t = Clock::now();
    { auto gone = std::move(*cache); }
    close_us.push_back(us_since(t));
    state.SetIterationTime((open_us.back() + find_us.back() + bind_us.back()) / 1e6);
  }
  getrusage(RUSAGE_SELF, &r1);
  state.counters["open_us"] = percentile(open_us, 0.5);
  state.counters["find_verify_us"] = percentile(find_us, 0.5);
  state.counters["checksum_us"] = percentile(checksum_us, 0.5);
  state.counters["verify_full_us"] = percentile(structure_us, 0.5);
  // verify_plan(full) = structural verifier + invariants; verify_plan(checksummed) = invariants.
  state.counters["fb_verifier_us"] = percentile(structure_us, 0.5) - percentile(invariants_us, 0.5);
  state.counters["invariants_us"] = percentile(invariants_us, 0.5);
  state.counters["verify_full_cpu_us"] = percentile(structure_cpu, 0.5);
  state.counters["invariants_cpu_us"] = percentile(invariants_cpu, 0.5);
  state.counters["bind_us"] = percentile(bind_us, 0.5);
  state.counters["close_us"] = percentile(close_us, 0.5);
  state.counters["minor_faults_per_iter"] =
      static_cast<double>(r1.ru_minflt - r0.ru_minflt) / static_cast<double>(open_us.size());
}
BENCHMARK(BM_ColdStartFullPhases)->UseManualTime()->Iterations(200)->Unit(benchmark::kMicrosecond);

}  // namespace

namespace {

/// The FlatBuffers structural verifier as GCC compiles it by default (helpers out of line) and
/// flattened as runtime/src/plan.cpp now calls it, side by side on the same mapped plan.
bool plain_structure(const uint8_t* data, size_t size) {
  flatbuffers::Verifier v(data, size, 16, 16u << 20);
  return fb::VerifySizePrefixedPlanBuffer(v);
}
[[gnu::flatten]] bool flat_structure(const uint8_t* data, size_t size) {
  flatbuffers::Verifier v(data, size, 16, 16u << 20);
  return fb::VerifySizePrefixedPlanBuffer(v);
}

template <bool kFlat>
void structural_verifier(benchmark::State& state) {
  auto cache = runtime::PlanCache::open(cold().path);
  auto plan = cache->find("chain");
  std::span<const uint8_t> b = plan->bytes();
  size_t size = flatbuffers::GetPrefixedSize(b.data()) + sizeof(flatbuffers::uoffset_t);
  for (auto _ : state) {
    bool ok = kFlat ? flat_structure(b.data(), size) : plain_structure(b.data(), size);
    if (!ok) state.SkipWithError("verifier rejected the plan");
    benchmark::DoNotOptimize(ok);
  }
}
void BM_StructuralVerifierPlain(benchmark::State& state) {
  structural_verifier<false>(state);
}
void BM_StructuralVerifierFlattened(benchmark::State& state) {
  structural_verifier<true>(state);
}
BENCHMARK(BM_StructuralVerifierPlain)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StructuralVerifierFlattened)->Unit(benchmark::kMicrosecond);

}  // namespace
