// One command-line convention for every tool: --help and --version exit 0, an unknown option
// exits 1 naming it, -v/-q route the libraries' log messages, and meshplan-run takes inputs by
// name (--input NAME=VALUE) as well as in plan order.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

using Output = meshplan::test::CommandOutput;
const std::string kBin = MESHPLAN_BINARY_DIR;

Output sh(const std::string& cmd) {
  return meshplan::test::run_shell("timeout 60 " + cmd);
}
bool has(const Output& o, const std::string& s) {
  return o.text.find(s) != std::string::npos;
}

/// Every tool, as a user types it (meshplan-run's cache commands parse on their own).
const std::vector<std::string> kTools = {"planner/meshplan-compile",   "runtime/meshplan-run",
                                         "runtime/meshplan-run cache", "examples/meshplan-server",
                                         "examples/meshplan-zoo",      "examples/meshplan-demo",
                                         "examples/meshplan-c-example"};

/// tiny: r = x - y, two inputs whose order matters.
std::string make_cache(meshplan::test::TempDir& dir) {
  std::string graph = dir.file("g.json"), cache = dir.file("c.mpc");
  std::string json =
      R"({ name: "tiny", arguments: [{ value: { name: "x", shape: [2, 3], dtype: "bf16" } },
        { value: { name: "y", shape: [2, 3], dtype: "bf16" } }],
      ops: [{ kind: "subtract", operands: ["x", "y"], results: [{ name: "r" }] }],
      outputs: ["r"] })";
  meshplan::test::write_bytes(graph, std::vector<uint8_t>(json.begin(), json.end()));
  Output c = sh(kBin + "/planner/meshplan-compile " + graph + " -o " + cache + " --name tiny");
  INFO(c.text);
  REQUIRE(c.status == 0);
  return cache;
}

}  // namespace

TEST_CASE("every tool: --help and --version exit 0, an unknown option exits 1 naming it") {
  for (const std::string& tool : kTools) {
    CAPTURE(tool);
    Output help = sh(kBin + "/" + tool + " --help");
    INFO(help.text);
    CHECK(help.status == 0);
    CHECK(has(help, "--version"));
    CHECK(has(help, "-q"));
    Output version = sh(kBin + "/" + tool + " --version");
    INFO(version.text);
    CHECK(version.status == 0);
    CHECK(has(version, " 0.1.0"));
    Output bad = sh(kBin + "/" + tool + " --frobnicate=3");
    INFO(bad.text);
    CHECK(bad.status == 1);
    CHECK(has(bad, "error: invalid_argument: unknown option '--frobnicate"));
  }
}

TEST_CASE("the same option is spelled the same in every tool") {
  // --device and --mesh as meshplan-compile spells them; -o/--output, --input, --name.
  Output compile = sh(kBin + "/planner/meshplan-compile --help");
  Output run = sh(kBin + "/runtime/meshplan-run --help");
  Output server = sh(kBin + "/examples/meshplan-server --help");
  for (const Output* o : {&compile, &run})
    for (const char* opt : {"--device", "--mesh", "--name", "--output"}) {
      CAPTURE(opt);
      CHECK(has(*o, opt));
    }
  CHECK(has(run, "--input"));
  CHECK(has(server, "--device"));
  CHECK(has(compile, "-o,--output"));
}

TEST_CASE("meshplan-run: inputs by name in any order, or in plan order; -v and -q") {
  meshplan::test::TempDir dir;
  std::string cache = make_cache(dir);
  std::string run = kBin + "/runtime/meshplan-run " + cache + " --name tiny --output=- ";
  const std::string x = "2x3xf32=[[1,2,3],[4,5,6]]", y = "2x3xf32=[[10,20,30],[40,50,60]]";
  // x - y, worked out by hand: small integers are exact in bf16.
  const std::string want = "r = 2x3xf32=[[-9,-18,-27],[-36,-45,-54]]";

  Output ordered = sh(run + "'--input=" + x + "' '--input=" + y + "'");
  INFO(ordered.text);
  CHECK(ordered.status == 0);
  CHECK(has(ordered, want));
  // Named, given in the other order, with a space instead of '=' after --input.
  Output named = sh(run + "--input 'y=" + y + "' --input 'x=" + x + "'");
  INFO(named.text);
  CHECK(named.status == 0);
  CHECK(has(named, want));
  // A .npy file by name.
  Output saved = sh(kBin + "/runtime/meshplan-run " + cache + " --name tiny '--input=" + x +
                    "' '--input=" + x + "' --output=@" + dir.file("zero.npy"));
  REQUIRE(saved.status == 0);
  Output from_file =
      sh(run + "--input y=@" + dir.file("zero.npy") + " '--input=x=" + x + "'");  // y = 0
  INFO(from_file.text);
  CHECK(from_file.status == 0);
  CHECK(has(from_file, "r = 2x3xf32=[[1,2,3],[4,5,6]]"));

  Output unknown = sh(run + "'--input=z=" + x + "' '--input=y=" + y + "'");
  CHECK(unknown.status == 1);
  CHECK(has(unknown, "plan 'tiny' has no input named 'z' (its inputs: x, y)"));
  Output missing = sh(run + "'--input=x=" + x + "'");
  CHECK(missing.status == 1);
  CHECK(has(missing, "no --input for input 'y'"));
  Output twice = sh(run + "'--input=x=" + x + "' '--input=x=" + y + "'");
  CHECK(twice.status == 1);
  CHECK(has(twice, "input 'x' is given twice"));
  Output mixed = sh(run + "'--input=x=" + x + "' '--input=" + y + "'");
  CHECK(mixed.status == 1);
  CHECK(has(mixed, "give every --input by name"));

  // -v shows the runtime's info messages (the cache it opened), -q and the default do not.
  Output verbose = sh(kBin + "/runtime/meshplan-run -v " + cache + " ls");
  INFO(verbose.text);
  CHECK(verbose.status == 0);
  CHECK(has(verbose, "meshplan-run: info: opened plan cache"));
  Output plain = sh(kBin + "/runtime/meshplan-run " + cache + " ls");
  CHECK(plain.status == 0);
  CHECK(!has(plain, "info:"));
  Output quiet = sh(kBin + "/runtime/meshplan-run -q " + cache + " ls");
  CHECK(quiet.status == 0);
  CHECK(!has(quiet, "info:"));
  CHECK(has(quiet, "tiny"));
}

TEST_CASE("meshplan-compile -q prints no summary; a bad value names its option") {
  meshplan::test::TempDir dir;
  std::string model = meshplan::test::source_path("examples/models/mlp.json");
  Output loud = sh(kBin + "/planner/meshplan-compile " + model + " -o " + dir.file("a.mpc"));
  CHECK(loud.status == 0);
  CHECK(has(loud, "meshplan-compile: "));
  Output quiet = sh(kBin + "/planner/meshplan-compile -q " + model + " -o " + dir.file("b.mpc"));
  CHECK(quiet.status == 0);
  CHECK(quiet.text.empty());
  Output bad = sh(kBin + "/planner/meshplan-compile " + model + " -o " + dir.file("c.mpc") +
                  " --beam-width=0");
  CHECK(bad.status == 1);
  CHECK(has(bad, "--beam-width takes a positive integer, not '0'"));
  Output no_value = sh(kBin + "/planner/meshplan-compile " + model + " --name");
  CHECK(no_value.status == 1);
  CHECK(has(no_value, "--name"));
}
