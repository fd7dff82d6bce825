// The inference server example: start-up report, a bounded number of requests served by several
// threads, errors answered per request, damaged entries skipped at start-up.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

namespace {

std::string run(const std::string& cmd, int* status) {
  FILE* pipe = ::popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  int rc = ::pclose(pipe);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const std::string kBin = MESHPLAN_BINARY_DIR;

}  // namespace

TEST_CASE("meshplan-server serves a bounded stream of requests from several threads") {
  meshplan::test::TempDir dir;
  std::string cache = dir.file("plans.mpc");
  std::string tiny = dir.file("tiny.json");
  std::string json = R"({ name: "tiny", arguments: [{ value: { name: "x", shape: [2, 3] } }],
    ops: [{ kind: "relu", operands: ["x"], results: [{ name: "r" }] }], outputs: ["r"] })";
  meshplan::test::write_bytes(tiny, std::vector<uint8_t>(json.begin(), json.end()));
  int st = 0;
  run(kBin + "/planner/meshplan-compile " +
          meshplan::test::source_path("examples/models/mlp.json") + " -o " + cache + " --name mlp",
      &st);
  REQUIRE(st == 0);
  run(kBin + "/planner/meshplan-compile " + tiny + " -o " + cache + " --name tiny", &st);
  REQUIRE(st == 0);

  std::string requests = dir.file("requests.txt");
  std::string text = "list\n";
  for (int i = 0; i < 30; ++i)
    text += (i % 3 ? "run mlp " : "run tiny ") + std::to_string(i) + "\n";
  text += "run tiny --input=2x3xf32=[[1,-2,3],[-4,5,-6]]\n";
  text +=
      "run nope\nrun tiny --input=3x3xf32=1\nfrobnicate\nquit\nrun mlp\n";  // after quit: ignored
  meshplan::test::write_bytes(requests, std::vector<uint8_t>(text.begin(), text.end()));
  std::string out =
      run(kBin + "/examples/meshplan-server " + cache + " --threads 4 < " + requests, &st);
  INFO(out);
  CHECK(st == 0);
  CHECK(out.find("ready: 2 of 2 plans from") != std::string::npos);
  CHECK(out.find("4 worker threads") != std::string::npos);
  CHECK(out.find("plan mlp") != std::string::npos);
  CHECK(count(out, "\nok #") == 31);
  CHECK(out.find("tiny device_us=") != std::string::npos);
  CHECK(out.find("out=2x3 sum=9 ") == std::string::npos);   // no trailing fields
  CHECK(out.find("out=2x3 sum=9\n") != std::string::npos);  // relu of the given input: 1 + 3 + 5
  CHECK(count(out, "\nerror #") == 3);
  CHECK(out.find("no plan named 'nope'") != std::string::npos);
  CHECK(out.find("shape [3x3] does not match the plan's [2x3]") != std::string::npos);
  CHECK(out.find("done: 31 served, 3 failed") != std::string::npos);
}
