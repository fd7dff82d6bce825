// The example models that use the op set (a transformer block, a small CNN) plan, cache, load
// and run on the emulator within tolerance of the host reference.
#include <doctest/doctest.h>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

using namespace meshplan;

TEST_CASE("example models plan into one cache and run within tolerance") {
  const char* models[] = {"mlp", "transformer_block", "small_cnn"};
  std::vector<runtime::CacheEntryData> entries;
  for (const char* m : models) {
    auto g =
        planner::load_graph_file(test::source_path(std::string("examples/models/") + m + ".json"));
    REQUIRE_MESSAGE(g, g.error().message);
    auto plan =
        planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
    REQUIRE_MESSAGE(plan, plan.error().message);
    entries.push_back(runtime::CacheEntryData{m, std::move(plan->bytes)});
  }
  test::TempDir dir;
  std::string path = dir.file("models.mpc");
  // Three entries: the index's first pass (zero offsets) must size the same as the second.
  auto written = runtime::write_cache(path, entries);
  REQUIRE_MESSAGE(written, written.error().message);
  auto cache = runtime::PlanCache::open(path);
  REQUIRE_MESSAGE(cache, cache.error().message);
  CHECK(cache->size() == 3);
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  for (const char* m : models) {
    CAPTURE(m);
    auto ref = cache->find(std::string_view(m));
    REQUIRE_MESSAGE(ref, ref.error().message);
    auto exe = runtime::Executable::bind(*ref, **dev);
    REQUIRE(exe);
    auto inputs = runtime::random_inputs(*ref, 7);
    auto run = (*exe)->run(runtime::views_of(inputs));
    REQUIRE_MESSAGE(run, run.error().message);
    auto want = runtime::run_reference(*ref, runtime::views_of(inputs));
    REQUIRE(want);
    runtime::CheckReport report =
        runtime::check_outputs(run->outputs, *want, runtime::kDefaultTolerance);
    CAPTURE(report.relative_error);
    CHECK(report.ok);
    CHECK(report.scale > 0.0);
  }
}
