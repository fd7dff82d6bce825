// A prepared conv2d weight through the CLI: meshplan-run takes the weight in its host shape
// [O, KH, KW, I] (--input), prepares it before upload and computes exactly; the prepared shape
// itself is refused with both shapes named; --no-prepare-weights plans the weight as given.
#include <doctest/doctest.h>

#include <string>

#include "test_util.hpp"

namespace {

meshplan::test::CommandOutput sh(const std::string& cmd) {
  return meshplan::test::run_shell(cmd);
}
bool has(const meshplan::test::CommandOutput& o, const std::string& s) {
  return o.text.find(s) != std::string::npos;
}
const std::string kBin = MESHPLAN_BINARY_DIR;

}  // namespace

TEST_CASE("meshplan-run feeds a prepared conv2d weight in its host shape") {
  meshplan::test::TempDir dir;
  std::string graph = dir.file("g.json"), cache = dir.file("c.mpc");
  std::string json =
      R"({ name: "conv", arguments: [{ value: { name: "x", shape: [1, 1, 2, 2], dtype: "bf16" } },
                                    { value: { name: "w", shape: [3, 1, 1, 2], dtype: "bf16" }, kind: "parameter" }],
    ops: [{ kind: "conv2d", operands: ["x", "w"], results: [{ name: "y" }] }], outputs: ["y"] })";
  meshplan::test::write_bytes(graph, std::vector<uint8_t>(json.begin(), json.end()));
  std::string compile = kBin + "/planner/meshplan-compile " + graph + " -o " + cache;
  REQUIRE(sh(compile + " --name conv --policy greedy").status == 0);
  REQUIRE(sh(compile + " --name raw --policy greedy --no-prepare-weights").status == 0);
  std::string x = "'--input=1x1x2x2xf32=[[[[1,2],[3,4]]]]' ";
  std::string w = "'--input=3x1x1x2xf32=[[[[1,0]]],[[[0,1]]],[[[1,1]]]]' ";
  for (const char* name : {"conv", "raw"}) {
    CAPTURE(name);
    auto r = sh(kBin + "/runtime/meshplan-run " + cache + " --name " + name + " " + x + w +
                "--output=- --check");
    INFO(r.text);
    CHECK(r.status == 0);
    CHECK(has(r, "y = 1x1x2x3xf32=[[[[1,2,3],[3,4,7]]]]"));
  }
  // The plan holds w as [2x3] (KH*KW*I x O); passing that shape names the input and both shapes.
  auto bad = sh(kBin + "/runtime/meshplan-run " + cache + " --name conv " + x +
                "'--input=2x3xf32=[[1,0,1],[0,1,1]]'");
  INFO(bad.text);
  CHECK(bad.status != 0);
  CHECK(has(bad, "'w'"));
  CHECK(has(bad, "[2x3]"));
  CHECK(has(bad, "[3x1x1x2]"));
  // inspect shows the transform.
  auto ins = sh(kBin + "/runtime/meshplan-run inspect " + cache + " --name conv --json");
  INFO(ins.text);
  CHECK(ins.status == 0);
  CHECK(has(ins, "conv_weight"));
}
