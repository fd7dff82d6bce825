// The tools on hostile input: shapes past the limits, FIFOs and directories where a cache is
// expected, a kept name that is a typo, names that are not words, and out-of-range StableHLO
// attributes each end in a clean error (exit 1, a message naming what and where), never a hang
// or a signal. Every command runs under `timeout` so that a regression fails instead of hanging.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <string>

#include "test_util.hpp"

namespace {

const std::string kCompile =
    "timeout 60 " + std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
const std::string kRun = "timeout 60 " + std::string(MESHPLAN_BINARY_DIR) + "/runtime/meshplan-run";
const std::string kServer =
    "timeout 60 " + std::string(MESHPLAN_BINARY_DIR) + "/examples/meshplan-server";

bool has(const meshplan::test::CommandOutput& o, const std::string& s) {
  return o.text.find(s) != std::string::npos;
}

void write_text(const std::string& path, const std::string& text) {
  meshplan::test::write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace

TEST_CASE("meshplan-compile refuses shapes past the limits, naming size and limit") {
  meshplan::test::TempDir dir;
  std::string model = dir.file("big.json"), cache = dir.file("plans.mpc");
  write_text(model, R"({ name: "big", arguments: [{ value: { name: "x",
      shape: [9223372036854775807], dtype: "bf16" } }], ops: [{ kind: "relu", operands: ["x"],
      results: [{ name: "y" }] }], outputs: ["y"] })");
  auto out = meshplan::test::run_shell(kCompile + " " + model + " -o " + cache);
  INFO(out.text);
  CHECK(out.status == 1);
  CHECK(has(out,
            "value 'x' (argument): shape [9223372036854775807] has dimension "
            "9223372036854775807, outside [1, 2147483647]"));
  struct stat st;
  CHECK(::stat(cache.c_str(), &st) != 0);  // nothing written
}

TEST_CASE("FIFOs and directories are refused where a cache file is expected") {
  meshplan::test::TempDir dir;
  std::string fifo = dir.file("fifo.mpc"),
              model = meshplan::test::source_path("examples/models/mlp.json");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  for (const char* verb : {"ls", "verify"}) {
    auto out = meshplan::test::run_shell(kRun + " cache " + verb + " " + fifo);
    INFO(out.text);
    CHECK(out.status == 1);
    CHECK(has(out, "is a FIFO, not a regular file"));
  }
  auto compile = meshplan::test::run_shell(kCompile + " " + model + " -o " + fifo);
  INFO(compile.text);
  CHECK(compile.status == 1);
  CHECK(has(compile, "is a FIFO"));
  auto server = meshplan::test::run_shell(kServer + " " + fifo + " < /dev/null");
  CHECK(server.status == 1);
  CHECK(has(server, "is a FIFO"));
  auto directory = meshplan::test::run_shell(kRun + " cache ls " + dir.path().string());
  CHECK(directory.status == 1);
  CHECK(has(directory, "is a directory"));
}

TEST_CASE("cache gc --keep with a typo and a name with a space are errors") {
  meshplan::test::TempDir dir;
  std::string cache = dir.file("plans.mpc"),
              model = meshplan::test::source_path("examples/models/mlp.json");
  REQUIRE(
      meshplan::test::run_shell(kCompile + " " + model + " -o " + cache + " --name mlp").status ==
      0);
  auto gc = meshplan::test::run_shell(kRun + " cache gc " + cache + " --keep mpl");
  INFO(gc.text);
  CHECK(gc.status == 1);
  CHECK(has(gc, "gc --keep names 'mpl', which is not in"));
  auto ls = meshplan::test::run_shell(kRun + " cache ls " + cache);
  CHECK(has(ls, "mlp"));
  auto spaced =
      meshplan::test::run_shell(kCompile + " " + model + " -o " + cache + " --name 'my mlp'");
  CHECK(spaced.status == 1);
  CHECK(has(spaced, "plan name 'my?mlp' has byte 0x20 (a space) at offset 2"));
}

TEST_CASE("meshplan-run --input with a dimension past the limit says so") {
  meshplan::test::TempDir dir;
  std::string cache = dir.file("plans.mpc"), model = dir.file("tiny.json");
  write_text(model,
             R"({ name: "tiny", arguments: [{ value: { name: "x", shape: [2, 3], dtype: "bf16" } }],
      ops: [{ kind: "relu", operands: ["x"], results: [{ name: "y" }] }], outputs: ["y"] })");
  REQUIRE(meshplan::test::run_shell(kCompile + " " + model + " -o " + cache).status == 0);
  auto out =
      meshplan::test::run_shell(kRun + " " + cache + " --name tiny --input=4294967296xf32=1");
  INFO(out.text);
  CHECK(out.status == 1);
  CHECK(has(out, "dimension '4294967296' is larger than 2147483647"));
}

TEST_CASE("out-of-range StableHLO attributes are located errors of meshplan-compile") {
  meshplan::test::TempDir dir;
  std::string model = dir.file("bad.mlir");
  write_text(model,
             "sdy.mesh @mesh = <[\"x\"=2]>\n"
             "func.func @main(%a: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, "
             "{}]>}) -> tensor<4xf32> {\n"
             "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
             "  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [5] "
             ": (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>\n"
             "  return %0 : tensor<4xf32>\n}\n");
  auto out = meshplan::test::run_shell(kCompile + " " + model + " -o " + dir.file("p.mpc"));
  INFO(out.text);
  CHECK(out.status == 1);
  CHECK(has(out, model + ":4:"));
  CHECK(has(out, "dimensions names dimension 5, outside [0, 2)"));
}
