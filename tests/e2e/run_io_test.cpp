// meshplan-run's inputs and outputs: IREE-style --input text and .npy files, --output to .npy
// and stdout, --trace as Chrome trace JSON, and inspect as a table and as JSON.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "meshplan/schemas/hash.hpp"
#include "test_util.hpp"

namespace {

using Output = meshplan::test::CommandOutput;
Output sh(const std::string& cmd) {
  return meshplan::test::run_shell(cmd);
}

const std::string kBin = MESHPLAN_BINARY_DIR;
bool has(const Output& o, const std::string& s) {
  return o.text.find(s) != std::string::npos;
}

}  // namespace

TEST_CASE("meshplan-run --input, --output, --trace and inspect") {
  meshplan::test::TempDir dir;
  std::string graph = dir.file("g.json"), cache = dir.file("c.mpc");
  std::string json =
      R"({ name: "tiny", arguments: [{ value: { name: "x", shape: [2, 3], dtype: "bf16" } }, { value: { name: "y", shape: [2, 3], dtype: "bf16" } }],
    ops: [{ kind: "add", operands: ["x", "y"], results: [{ name: "s" }] },
          { kind: "relu", operands: ["s"], results: [{ name: "r" }] }], outputs: ["r"] })";
  meshplan::test::write_bytes(graph, std::vector<uint8_t>(json.begin(), json.end()));
  REQUIRE(sh(kBin + "/planner/meshplan-compile " + graph + " -o " + cache +
             " --name tiny --policy dram")
              .status == 0);
  std::string run = kBin + "/runtime/meshplan-run " + cache + " --name tiny ";

  // relu(x + y) with exact small integers: bf16 holds them exactly.
  Output a =
      sh(run +
         "'--input=2x3xf32=[[1,2,3],[4,5,6]]' '--input=2x3xf32=[[-2,0,-4],[0,-9,1]]' --output=@" +
         dir.file("r.npy") + " --trace=" + dir.file("t.json") + " --check");
  INFO(a.text);
  REQUIRE(a.status == 0);
  CHECK(has(a, "PASS"));
  std::vector<uint8_t> npy = meshplan::test::read_bytes(dir.file("r.npy"));
  REQUIRE(npy.size() > 6 * 4);
  size_t header = npy.size() - 6 * 4;  // magic + header, padded to a multiple of 64, then 6 floats
  CHECK(header % 64 == 0);
  CHECK(std::string(npy.begin() + 1, npy.begin() + 6) == "NUMPY");
  CHECK(std::string(npy.begin() + 10, npy.begin() + static_cast<std::ptrdiff_t>(header))
            .find("'shape': (2,3)") != std::string::npos);

  // The .npy written above read back as an input; a scalar fills a tensor; output to stdout.
  Output b = sh(run + "--input=@" + dir.file("r.npy") + " --input=2x3xf32=-1 --output=-");
  INFO(b.text);
  CHECK(b.status == 0);
  CHECK(has(b, "r = 2x3xf32=[[0,1,0],[3,0,6]]"));

  std::vector<uint8_t> trace = meshplan::test::read_bytes(dir.file("t.json"));
  std::string t(trace.begin(), trace.end());
  CHECK(t.find("\"traceEvents\"") != std::string::npos);
  CHECK(t.find("\"name\":\"chip 0 wormhole_b0\"") != std::string::npos);
  CHECK(t.find("\"ph\":\"X\"") != std::string::npos);
  CHECK(t.find("\"kind\":\"relu\"") != std::string::npos);

  Output bad = sh(run + "--input=2x3xf32=[1,2] --input=2x3xf32=1");
  CHECK(bad.status == 1);
  CHECK(has(bad, "2 values given, 6 expected (or one value to fill the tensor)"));
  Output wrong_shape = sh(run + "--input=3x2xf32=1 --input=2x3xf32=1");
  CHECK(wrong_shape.status == 1);
  CHECK(has(wrong_shape, "input 0 'x': shape [3x2] does not match the plan's [2x3]"));
  Output bad_type = sh(run + "--input=2x3xi8=1 --input=2x3xf32=1");
  CHECK(has(bad_type, "element type 'i8' is not f32"));

  Output table = sh(kBin + "/runtime/meshplan-run inspect " + cache + " --name tiny");
  INFO(table.text);
  CHECK(table.status == 0);
  CHECK(has(table, "add_0"));
  CHECK(has(table, "dram/interleav"));
  CHECK(has(table, "metrics: 2 ops"));
  Output js = sh(kBin + "/runtime/meshplan-run inspect " + cache + " --name tiny --json");
  CHECK(js.status == 0);
  CHECK(has(js, "\"format_major\": 1"));
  CHECK(has(js, "\"planner_version\": \"" + std::string(meshplan::kPlannerVersion) + "\""));
}
