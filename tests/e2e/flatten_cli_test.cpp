// flatten_spatial through the CLI: meshplan-compile plans a conv's NHWC input flat by default
// (a reshape input transform: the user still passes NHWC) and as given with
// --no-flatten-spatial; both plans compute the same outputs in the graph's shapes; the flat
// shape itself is refused with both shapes named.
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

TEST_CASE("meshplan-compile flattens conv activations unless --no-flatten-spatial") {
  meshplan::test::TempDir dir;
  std::string graph = dir.file("g.json"), cache = dir.file("c.mpc");
  std::string json =
      R"({ name: "conv", arguments: [{ value: { name: "x", shape: [2, 2, 2, 2], dtype: "bf16" } },
                                    { value: { name: "w", shape: [3, 1, 1, 2], dtype: "bf16" }, kind: "parameter" }],
    ops: [{ kind: "conv2d", operands: ["x", "w"], results: [{ name: "y" }] },
          { kind: "relu", operands: ["y"], results: [{ name: "z" }] }], outputs: ["z"] })";
  meshplan::test::write_bytes(graph, std::vector<uint8_t>(json.begin(), json.end()));
  std::string compile = kBin + "/planner/meshplan-compile " + graph + " -o " + cache;
  auto flat = sh(compile + " --name flat --policy greedy --emit=plan-json");
  INFO(flat.text);
  REQUIRE(flat.status == 0);
  CHECK(has(flat, "\"input_n\": 2"));
  auto nhwc = sh(compile + " --name nhwc --policy greedy --no-flatten-spatial --emit=plan-json");
  INFO(nhwc.text);
  REQUIRE(nhwc.status == 0);
  CHECK_FALSE(has(nhwc, "\"input_n\": 2"));
  CHECK(has(sh(kBin + "/planner/meshplan-compile --help"), "--no-flatten-spatial"));
  std::string x =
      "'--input=2x2x2x2xf32=[[[[1,2],[3,4]],[[5,6],[7,8]]],"
      "[[[-1,-2],[-3,-4]],[[1,0],[0,1]]]]' ";
  std::string w = "'--input=3x1x1x2xf32=[[[[1,0]]],[[[0,1]]],[[[1,-1]]]]' ";
  std::string want =
      "z = 2x2x2x3xf32=[[[[1,2,0],[3,4,0]],[[5,6,0],[7,8,0]]],"
      "[[[0,0,1],[0,0,1]],[[1,0,1],[0,1,0]]]]";
  for (const char* name : {"flat", "nhwc"}) {
    CAPTURE(name);
    auto r = sh(kBin + "/runtime/meshplan-run " + cache + " --name " + name + " " + x + w +
                "--output=- --check");
    INFO(r.text);
    CHECK(r.status == 0);
    CHECK(has(r, want));
  }
  // The flat plan holds x as [1x1x8x2]; passing that shape is refused, naming both shapes.
  auto bad = sh(kBin + "/runtime/meshplan-run " + cache + " --name flat " +
                "'--input=1x1x8x2xf32=[[[[1,2],[3,4],[5,6],[7,8],[1,2],[3,4],[5,6],[7,8]]]]' " + w);
  INFO(bad.text);
  CHECK(bad.status != 0);
  CHECK(has(bad, "'x'"));
  CHECK(has(bad, "[1x1x8x2]"));
  CHECK(has(bad, "[2x2x2x2]"));
  auto ins = sh(kBin + "/runtime/meshplan-run inspect " + cache + " --name flat --json");
  INFO(ins.text);
  CHECK(ins.status == 0);
  CHECK(has(ins, "reshape"));
}
