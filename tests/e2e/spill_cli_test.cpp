// meshplan-compile --spill: DP spill selection from the command line keys its plan apart from
// Belady's, and an unknown mode is rejected with the modes named.
#include <doctest/doctest.h>

#include <string>

#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

using namespace meshplan;

namespace {

const std::string kCompile = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";

}  // namespace

TEST_CASE("meshplan-compile --spill=belady|dp") {
  test::TempDir dir;
  std::string cache = dir.file("plans.mpc");
  std::string model = test::source_path("examples/models/mlp.json");
  auto dp = test::run_shell(kCompile + " " + model + " -o " + cache +
                            " --policy greedy --spill=dp --name mlp_dp");
  INFO(dp.text);
  REQUIRE(dp.status == 0);
  auto belady = test::run_shell(kCompile + " " + model + " -o " + cache +
                                " --policy greedy --spill belady --name mlp_belady");
  INFO(belady.text);
  REQUIRE(belady.status == 0);
  auto c = runtime::PlanCache::open(cache);
  REQUIRE(c);
  CHECK(c->size() == 2);  // different keys: both kept
  auto bad = test::run_shell(kCompile + " " + model + " -o " + cache + " --spill=lru");
  CHECK(bad.status != 0);
  CHECK(bad.text.find("--spill takes belady or dp, not 'lru'") != std::string::npos);
}
