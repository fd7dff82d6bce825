// meshplan-compile's per-chip views on the mlp example: --stop-after=STAGE --emit=plan-json prints
// each stage's JSON (the emit stage the plan), --explain and --dump-solver print their reports,
// and misuse (a per-chip stage without --emit=plan-json, an unknown op) is refused by name.
#include <doctest/doctest.h>

#include "test_util.hpp"

namespace meshplan {
namespace {

std::string compile_tool() {
  return std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
}

}  // namespace

TEST_CASE("meshplan-compile --stop-after, --explain and --dump-solver on the mlp example") {
  const std::string tool = compile_tool() + " " + test::source_path("examples/models/mlp.json");
  for (std::string stage : {"candidates", "layout", "spills", "memory"}) {
    CAPTURE(stage);
    auto r = test::run_shell(tool + " --emit=plan-json --stop-after=" + stage);
    CHECK(r.status == 0);
    CHECK(r.text.find("\"stage\": \"" + stage + "\"") != std::string::npos);
  }
  // The emit stage is the plan (its header), as plain --emit=plan-json prints it.
  auto plan = test::run_shell(tool + " --emit=plan-json --stop-after=emit");
  auto plain = test::run_shell(tool + " --emit=plan-json");
  CHECK(plan.status == 0);
  CHECK(plan.text == plain.text);
  CHECK(plan.text.find("\"header\"") != std::string::npos);
  auto explain = test::run_shell(tool + " --explain act1 --policy df-sharding");
  CHECK(explain.status == 0);
  CHECK(explain.text.find("op act1 (relu)") == 0);
  // The bias adds broadcast a row, which tt-metal's binary_ng runs with nothing sharded: each
  // chain ends before one, act1's runs from act1 to the next matmul.
  CHECK(explain.text.find("  chain: [act1 fc2] completed") != std::string::npos);
  auto solver = test::run_shell(tool + " --dump-solver");
  CHECK(solver.status == 0);
  CHECK(solver.text.find("solver [act1 fc2]\n") != std::string::npos);
  auto bad_stage = test::run_shell(tool + " --stop-after=layout");
  CHECK(bad_stage.status != 0);
  CHECK(bad_stage.text.find("--stop-after=layout") != std::string::npos);
  CHECK(bad_stage.text.find("needs --emit=plan-json") != std::string::npos);
  auto missing = test::run_shell(tool + " --explain nope");
  CHECK(missing.status != 0);
  CHECK(missing.text.find("no op named 'nope'") != std::string::npos);
}

}  // namespace meshplan
