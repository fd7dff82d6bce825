// --mesh forms through the tools: meshplan-compile plans a per-device T3000 program for a ring
// (t3k:ring, RxC:ring, a mesh JSON file) with its own key; meshplan-run runs each on the mesh its
// plan records and refuses another topology with the reason; bad texts and files name the field.
#include <doctest/doctest.h>

#include <fstream>
#include <regex>

#include "test_util.hpp"

using namespace meshplan;

namespace {

const std::string kCompile = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
const std::string kRun = std::string(MESHPLAN_BINARY_DIR) + "/runtime/meshplan-run";
const std::string kModel = test::source_path("examples/models/tp_mlp_t3k.json");

/// Compiles the T3000 MLP with `flags` into the cache `dir`/NAME.mpc (one cache per variant, so
/// that each holds exactly one plan); returns the plan key printed.
std::string compile(const test::TempDir& dir, const std::string& name, const std::string& flags,
                    std::string* out = nullptr) {
  auto r =
      test::run_shell(kCompile + " " + kModel + " -o " + dir.file(name + ".mpc") + " " + flags);
  INFO(r.text);
  REQUIRE(r.status == 0);
  if (out) *out = r.text;
  std::smatch m;
  REQUIRE(std::regex_search(r.text, m, std::regex("key ([0-9a-f]{32})")));
  return m[1].str();
}

/// Runs `args`, which must fail; returns what it printed.
std::string failure(const std::string& args) {
  auto r = test::run_shell(args);
  CHECK_MESSAGE(r.status != 0, r.text);
  return r.text;
}

}  // namespace

TEST_CASE("meshplan-compile --mesh t3k:ring plans a ring; meshplan-run runs it as one") {
  test::TempDir dir;
  std::string said;
  std::string plain = compile(dir, "plain", "");
  std::string named = compile(dir, "named", "--mesh t3k");
  std::string linear = compile(dir, "linear", "--mesh 2x4:linear");
  std::string ring = compile(dir, "ring", "--mesh t3k:ring", &said);
  std::string rxc = compile(dir, "rxc", "--mesh 2x4:ring");
  CHECK(said.find("mesh t3k 2x4 ring, 2 links") != std::string::npos);
  // The default descriptor is the default however it is written; the ring is another plan.
  CHECK(named == plain);
  CHECK(linear == plain);
  CHECK(rxc == ring);
  CHECK(ring != plain);

  const std::string run_ring = kRun + " " + dir.file("ring.mpc") + " --name tp_mlp_t3k";
  const std::string run_plain = kRun + " " + dir.file("plain.mpc") + " --name tp_mlp_t3k";
  auto ran = test::run_shell(run_ring + " --check");
  INFO(ran.text);
  CHECK(ran.status == 0);
  CHECK(ran.text.find("on mesh t3k 2x4 of wormhole_b0 (ring, 2 links)") != std::string::npos);
  CHECK(ran.text.find("PASS") != std::string::npos);
  auto inspected =
      test::run_shell(kRun + " inspect " + dir.file("ring.mpc") + " --name tp_mlp_t3k");
  CHECK(inspected.text.find("mesh t3k 2x4, ring, 2 links") != std::string::npos);
  auto lin = test::run_shell(run_plain + " --check --mesh t3k:linear");
  INFO(lin.text);
  CHECK(lin.status == 0);
  CHECK(lin.text.find("(linear, 2 links)") != std::string::npos);
  // Running the ring plan on a linear T3000 (or a ring on a linear plan) is refused, named.
  CHECK(failure(run_ring + " --mesh t3k")
            .find("mesh t3k 2×4 descriptor differs ( topology ring ≠ linear )") !=
        std::string::npos);
  CHECK(failure(run_plain + " --mesh t3k:ring").find("topology linear ≠ ring") !=
        std::string::npos);
  CHECK(failure(run_plain + " --mesh n300").find("mesh t3k 2×4 ≠ n300 1×2") != std::string::npos);
  CHECK(failure(run_plain + " --mesh 2x4:torus")
            .find("--mesh: mesh '2x4:torus': topology 'torus' is not ring or linear") !=
        std::string::npos);
}

TEST_CASE("meshplan-compile --mesh FILE.json plans for the file's mesh and chip") {
  test::TempDir dir;
  auto write = [&](const std::string& name, const std::string& text) {
    std::string path = dir.file(name);
    std::ofstream(path) << text;
    return path;
  };
  std::string said;
  std::string ring_file =
      write("t3k_ring.json", R"({"mesh": {"base": "t3k", "topology": "ring"}})");
  std::string from_file = compile(dir, "file", "--mesh " + ring_file, &said);
  CHECK(said.find("device n300, mesh t3k 2x4 ring, 2 links") != std::string::npos);
  // The same mesh written as text on the same chip is the same plan.
  CHECK(compile(dir, "text", "--mesh t3k:ring --device n300") == from_file);
  CHECK(compile(dir, "agree", "--mesh " + ring_file + " --device n300") == from_file);
  auto ran = test::run_shell(kRun + " " + dir.file("file.mpc") +
                             " --name tp_mlp_t3k --check --mesh " + ring_file);
  INFO(ran.text);
  CHECK(ran.status == 0);
  CHECK(ran.text.find("(ring, 2 links)") != std::string::npos);

  const std::string base = kCompile + " " + kModel + " -o " + dir.file("bad.mpc") + " --mesh ";
  CHECK(failure(base + write("row.json", R"({"mesh": {"base": "t3k", "rows": 1, "cols": 8}})"))
            .find("runs on a 2x4 mesh, the mesh it was to be planned for (t3k) is 1x8") !=
        std::string::npos);
  CHECK(failure(base + write("torus.json", R"({"mesh": {"base": "t3k", "topology": "torus"}})"))
            .find("topology") != std::string::npos);
  CHECK(failure(base + write("links.json", R"({"mesh": {"base": "t3k", "links": 17}})"))
            .find("field 'links' = 17 exceeds the chip's ethernet_links (16)") !=
        std::string::npos);
  CHECK(failure(base + ring_file + " --device blackhole_p150")
            .find("--device blackhole_p150 (chip blackhole_p150) is not the chip of --mesh") !=
        std::string::npos);
  CHECK(failure(base + "t3k:star").find("--mesh: mesh 't3k:star': topology 'star'") !=
        std::string::npos);
  CHECK(failure(base + "2x0").find("--mesh: mesh '2x0': cols '0'") != std::string::npos);
  CHECK(failure(base + "n300").find("per-device program for a 2x4 mesh but --mesh n300 has 2") !=
        std::string::npos);
}

TEST_CASE("meshplan-compile MODEL.mlir --mesh 1x8:ring takes the module's mesh shape") {
  test::TempDir dir;
  std::string cache = dir.file("c.mpc");
  auto r = test::run_shell(kCompile + " " + test::source_path("examples/models/tp_mlp.mlir") +
                           " --mesh 1x8:ring -o " + cache);
  INFO(r.text);
  REQUIRE(r.status == 0);
  CHECK(r.text.find("mesh 1x8 1x8 ring, 1 link") != std::string::npos);
  auto ran = test::run_shell(kRun + " " + cache + " --name tp_mlp --check");
  INFO(ran.text);
  CHECK(ran.status == 0);
  CHECK(ran.text.find("(ring, 1 links)") != std::string::npos);
}
