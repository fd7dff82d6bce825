// The spill selection a plan was made with travels in its metrics: meshplan-compile --spill=dp
// names it in its summary, meshplan-run inspect prints it (as a line and in the JSON), and the
// plan runs and matches the reference.
#include <doctest/doctest.h>

#include <string>

#include "test_util.hpp"

namespace {

const std::string kBin = MESHPLAN_BINARY_DIR;
bool has(const meshplan::test::CommandOutput& o, const std::string& s) {
  return o.text.find(s) != std::string::npos;
}

}  // namespace

TEST_CASE("meshplan-compile --spill=dp and meshplan-run inspect report the spill selection") {
  meshplan::test::TempDir dir;
  std::string cache = dir.file("c.mpc");
  std::string model = meshplan::test::source_path("examples/models/transformer_block.json");
  auto compile = [&](const std::string& name, const std::string& flags) {
    return meshplan::test::run_shell(kBin + "/planner/meshplan-compile " + model + " -o " + cache +
                                     " --policy greedy --name " + name + " " + flags);
  };
  auto dp = compile("dp", "--spill=dp");
  INFO(dp.text);
  REQUIRE(dp.status == 0);
  CHECK(has(dp, "spill selection dp_exact ("));
  auto belady = compile("belady", "");
  REQUIRE(belady.status == 0);
  CHECK_FALSE(has(belady, "spill selection"));

  std::string inspect = kBin + "/runtime/meshplan-run inspect " + cache + " --name ";
  auto table = meshplan::test::run_shell(inspect + "dp");
  INFO(table.text);
  CHECK(table.status == 0);
  CHECK(has(table, "spill selection: dp_exact, "));
  CHECK(has(table, " DP states"));
  auto json = meshplan::test::run_shell(inspect + "dp --json");
  CHECK(has(json, "\"spill_selection\": \"dp_exact\""));
  auto plain = meshplan::test::run_shell(inspect + "belady");
  CHECK(plain.status == 0);
  CHECK_FALSE(has(plain, "spill selection"));

  auto run =
      meshplan::test::run_shell(kBin + "/runtime/meshplan-run " + cache + " --name dp --check");
  INFO(run.text);
  CHECK(run.status == 0);
  CHECK(has(run, "PASS"));
}
