// Mesh plans through the command-line tools: meshplan-compile a per-device graph.json with a
// mesh, boundary shards and an all_reduce; meshplan-run runs it on the mesh the plan names, of the
// backend --backend names (default the emulator; --check against the host SPMD reference,
// --trace with one track per chip) and inspects it.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "test_util.hpp"

using namespace meshplan;

namespace {

const std::string kCompile = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
const std::string kRun = std::string(MESHPLAN_BINARY_DIR) + "/runtime/meshplan-run";

}  // namespace

TEST_CASE("meshplan-compile and meshplan-run handle a tensor-parallel MLP on a T3000") {
  test::TempDir dir;
  std::string cache = dir.file("c.mpc"), trace = dir.file("t.json");
  auto compiled =
      test::run_shell(kCompile + " " + test::source_path("examples/models/tp_mlp_t3k.json") +
                      " -o " + cache + " --device n300 --policy greedy 2>&1");
  INFO(compiled.text);
  REQUIRE(compiled.status == 0);
  auto ran =
      test::run_shell(kRun + " " + cache + " --name tp_mlp_t3k --check --trace=" + trace + " 2>&1");
  INFO(ran.text);
  REQUIRE(ran.status == 0);
  CHECK(ran.text.find("on mesh t3k 2x4 of n300 (linear, 2 links)") != std::string::npos);
  CHECK(ran.text.find("chip (1,3):") != std::string::npos);
  CHECK(ran.text.find("PASS") != std::string::npos);
  std::ifstream in(trace);
  std::stringstream s;
  s << in.rdbuf();
  CHECK(s.str().find("\"name\":\"chip (1,3)\"") != std::string::npos);
  CHECK(s.str().find("\"cat\":\"collective\"") != std::string::npos);
  auto inspected = test::run_shell(kRun + " inspect " + cache + " --name tp_mlp_t3k 2>&1");
  INFO(inspected.text);
  REQUIRE(inspected.status == 0);
  CHECK(inspected.text.find("mesh t3k 2x4, linear, 2 links") != std::string::npos);
  CHECK(inspected.text.find("input  w1: host [256x512] -> per chip [256x128], devices "
                            "shard_dims=[-1,1]") != std::string::npos);
  CHECK(inspected.text.find("all_reduce       axis 1") != std::string::npos);
  // A host input of the per-chip shape is refused, naming the input.
  auto bad = test::run_shell(kRun + " " + cache +
                             " --name tp_mlp_t3k --input=@/nonexistent.npy --input=1xf32=[1] "
                             "--input=1xf32=[1] 2>&1");
  CHECK(bad.status != 0);
}

TEST_CASE("meshplan-run opens mesh and single-chip plans on the backend --backend names") {
  test::TempDir dir;
  std::string cache = dir.file("c.mpc");
  auto compiled = test::run_shell(
      kCompile + " " + test::source_path("examples/models/tp_mlp_t3k.json") + " -o " + cache +
      " --device n300 --policy greedy --name tp 2>&1 && " + kCompile + " " +
      test::source_path("examples/models/mlp.json") + " -o " + cache + " --name mlp 2>&1");
  INFO(compiled.text);
  REQUIRE(compiled.status == 0);
  for (const char* name : {"tp", "mlp"}) {
    CAPTURE(name);
    auto ran = test::run_shell(kRun + " " + cache + " --name " + name +
                               " --backend emulator --check 2>&1");
    INFO(ran.text);
    CHECK(ran.status == 0);
    CHECK(ran.text.find("PASS") != std::string::npos);
    // An unregistered backend is not_found, naming it and the registered ones.
    auto bad = test::run_shell(kRun + " " + cache + " --name " + name + " --backend tt-hw 2>&1");
    INFO(bad.text);
    CHECK(bad.status == 1);
    CHECK(bad.text.find("not_found") != std::string::npos);
    CHECK(bad.text.find("no backend 'tt-hw'") != std::string::npos);
    CHECK(bad.text.find("registered: emulator") != std::string::npos);
  }
}
