// End to end: graph.json -> planner -> plan cache -> runtime -> emulated chip -> checked result,
// through the C++ API and through the two command-line tools.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

using namespace meshplan;

namespace {

using Command = test::CommandOutput;
Command run_command(const std::string& cmd) {
  return test::run_shell(cmd);
}

const std::string kCompile = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
const std::string kRun = std::string(MESHPLAN_BINARY_DIR) + "/runtime/meshplan-run";

}  // namespace

TEST_CASE("MLP through the C++ API matches the f32 reference within bf16 tolerance") {
  test::TempDir dir;
  auto graph = planner::load_graph_file(test::source_path("examples/models/mlp.json"));
  REQUIRE(graph);
  auto plan =
      planner::compile(*graph, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE(plan);
  std::string cache_path = dir.file("plans.mpc");
  REQUIRE(runtime::add_to_cache(cache_path, runtime::CacheEntryData{"mlp", plan->bytes}));

  auto cache = runtime::PlanCache::open(cache_path);
  REQUIRE(cache);
  auto ref = cache->find(plan->key);
  REQUIRE(ref);
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto exe = runtime::Executable::bind(*ref, **dev);
  REQUIRE(exe);
  for (uint64_t seed : {1u, 2u, 3u}) {
    auto inputs = runtime::random_inputs(*ref, seed);
    auto views = runtime::views_of(inputs);
    auto result = (*exe)->run(views);
    REQUIRE(result);
    auto expected = runtime::run_reference(*ref, views);
    REQUIRE(expected);
    runtime::CheckReport rep =
        runtime::check_outputs(result->outputs, *expected, runtime::kDefaultTolerance);
    INFO("seed ", seed, " relative error ", rep.relative_error);
    CHECK(rep.ok);
    CHECK(result->outputs[0].shape == std::vector<int64_t>{64, 128});
  }
  // Every DRAM buffer was freed or is an output: the device ends with outputs and arguments only.
  CHECK((*dev)->dram_allocator().live_buffers() >= 1);
}

TEST_CASE("meshplan-compile and meshplan-run: compile, list, run with --check") {
  test::TempDir dir;
  std::string cache = dir.file("plans.mpc");
  Command c = run_command(kCompile + " " + test::source_path("examples/models/mlp.json") + " -o " +
                          cache + " --name mlp");
  INFO(c.text);
  REQUIRE(c.status == 0);
  CHECK(c.text.find("as 'mlp'") != std::string::npos);

  Command ls = run_command(kRun + " " + cache + " ls");
  INFO(ls.text);
  REQUIRE(ls.status == 0);
  CHECK(ls.text.find("mlp") != std::string::npos);
  CHECK(ls.text.find("wormhole_b0") != std::string::npos);

  Command r = run_command(kRun + " " + cache + " --name mlp --check --seed 7");
  INFO(r.text);
  CHECK(r.status == 0);
  CHECK(r.text.find("PASS") != std::string::npos);
  CHECK(r.text.find("simulated device time") != std::string::npos);

  // A tolerance no bf16 run can meet makes --check fail with exit code 2.
  Command strict = run_command(kRun + " " + cache + " --name mlp --check --tolerance 0");
  CHECK(strict.status == 2);
  CHECK(strict.text.find("FAIL") != std::string::npos);
}

TEST_CASE("the tools report bad input clearly and exit non-zero") {
  test::TempDir dir;
  std::string cache = dir.file("plans.mpc");
  Command missing = run_command(kCompile + " " + dir.file("nope.json") + " -o " + cache);
  CHECK(missing.status == 1);
  CHECK(missing.text.find("nope.json") != std::string::npos);

  Command no_cache = run_command(kRun + " " + dir.file("absent.mpc") + " --name mlp");
  CHECK(no_cache.status == 1);
  CHECK(no_cache.text.find("absent.mpc") != std::string::npos);

  Command bad_flag = run_command(kRun + " " + cache + " --name mlp --frobnicate");
  CHECK(bad_flag.status == 1);
  CHECK(bad_flag.text.find("unknown option '--frobnicate'") != std::string::npos);

  REQUIRE(
      run_command(kCompile + " " + test::source_path("examples/models/mlp.json") + " -o " + cache)
          .status == 0);
  Command no_plan = run_command(kRun + " " + cache + " --name other");
  CHECK(no_plan.status == 1);
  CHECK(no_plan.text.find("no plan named 'other'") != std::string::npos);

  Command bad_policy = run_command(kCompile + " " + test::source_path("examples/models/mlp.json") +
                                   " -o " + cache + " --policy nope");
  CHECK(bad_policy.status == 1);
  CHECK(bad_policy.text.find("unknown policy 'nope'") != std::string::npos);
}
