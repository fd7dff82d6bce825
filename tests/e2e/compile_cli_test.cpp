// meshplan-compile end to end: a custom device descriptor file (meshplan-run refuses another
// device and says why), --emit=dot, and several models in one call with --jobs, progress lines,
// a failing model that does not lose the others' plans, and --fail-fast.
#include <doctest/doctest.h>

#include <string>

#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

using namespace meshplan;

namespace {

const std::string kCompile = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
const std::string kRun = std::string(MESHPLAN_BINARY_DIR) + "/runtime/meshplan-run";

bool has(const test::CommandOutput& o, const std::string& s) {
  return o.text.find(s) != std::string::npos;
}

void write_text(const std::string& path, const std::string& text) {
  test::write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

std::string model(const char* name) {
  return test::source_path(std::string("examples/models/") + name);
}

}  // namespace

TEST_CASE("--device FILE.json: plan for a custom chip; meshplan-run refuses another device") {
  test::TempDir dir;
  std::string dev = dir.file("wh4x4.json"), cache = dir.file("plans.mpc");
  write_text(dev,
             R"({"chip": {"base": "wormhole_b0", "name": "wh4x4", "grid_x": 4, "grid_y": 4}})");
  auto made = test::run_shell(kCompile + " " + model("mlp.json") + " -o " + cache +
                              " --policy greedy --device " + dev);
  INFO(made.text);
  REQUIRE(made.status == 0);
  CHECK(has(made, "device wh4x4"));

  auto ls = test::run_shell(kRun + " cache ls " + cache);
  CHECK(has(ls, "wh4x4"));
  // The plan uses at most the 4x4 grid the descriptor gives.
  auto table = test::run_shell(kRun + " inspect " + cache + " --name mlp --device " + dev);
  INFO(table.text);
  CHECK(table.status == 0);

  auto ok = test::run_shell(kRun + " " + cache + " --name mlp --device " + dev + " --check");
  INFO(ok.text);
  CHECK(ok.status == 0);

  auto other = test::run_shell(kRun + " " + cache + " --name mlp --device wormhole_b0");
  INFO(other.text);
  CHECK(other.status == 1);
  CHECK(has(other, "plan 'mlp': device wh4x4 4×4 ≠ wormhole_b0 8×8"));

  auto none = test::run_shell(kRun + " " + cache + " --name mlp");
  CHECK(none.status == 1);
  CHECK(has(none,
            "was made for device 'wh4x4', which is not built in: give its descriptor with "
            "--device FILE.json"));

  // Same name and grid, other L1 size: refused with the differing fact.
  std::string dev2 = dir.file("wh4x4_small_l1.json");
  write_text(dev2, R"({"chip": {"base": "wormhole_b0", "name": "wh4x4", "grid_x": 4,
                                "grid_y": 4, "l1_size": 1048576}})");
  auto l1 = test::run_shell(kRun + " " + cache + " --name mlp --device " + dev2);
  INFO(l1.text);
  CHECK(l1.status == 1);
  CHECK(has(l1, "descriptor differs"));
  CHECK(has(l1, "L1 1499136 ≠ 1048576"));

  auto bad = test::run_shell(kCompile + " " + model("mlp.json") + " -o " + cache + " --device " +
                             dir.file("missing.json"));
  CHECK(bad.status == 1);
  CHECK(has(bad, "missing.json"));
}

TEST_CASE("--emit=dot prints a digraph of the planned ops") {
  auto dot = test::run_shell(kCompile + " " + model("mlp.json") + " --policy greedy --emit=dot");
  INFO(dot.text);
  REQUIRE(dot.status == 0);
  CHECK(dot.text.rfind("digraph \"mlp\" {", 0) == 0);
  CHECK(has(dot, "  op0 [label="));
  CHECK(has(dot, " -> out0 "));
  CHECK(dot.text.ends_with("}\n"));
}

TEST_CASE("several models in one call: --jobs, progress, per-model errors, --fail-fast") {
  test::TempDir dir;
  std::string cache = dir.file("zoo.mpc"), broken = dir.file("broken.json");
  write_text(
      broken,
      R"({ name: "broken", arguments: [{ value: { name: "x", shape: [2, 3], dtype: "bf16" } }],
      ops: [{ kind: "relu", operands: ["nope"], results: [{ name: "r" }] }], outputs: ["r"] })");
  std::string models =
      model("mlp.json") + " " + model("small_cnn.json") + " " + model("transformer_block.json");

  auto all = test::run_shell(kCompile + " " + models + " " + broken + " -o " + cache +
                             " --jobs 2 --policy greedy");
  INFO(all.text);
  CHECK(all.status == 1);  // one model failed...
  CHECK(has(all, "broken.json: error:"));
  CHECK(has(all, "'nope'"));
  CHECK(has(all, "[4/4] "));  // plain progress lines: stderr is not a terminal here
  CHECK(has(all, "3 of 4 models planned"));
  CHECK(has(all, "3 written to"));
  auto c = runtime::PlanCache::open(cache);  // ...and the others' plans were written, once
  REQUIRE(c);
  CHECK(c->size() == 3);
  for (const char* name : {"mlp", "small_cnn", "transformer_block"}) {
    CAPTURE(name);
    auto p = c->find(name);
    REQUIRE(p);
    // Planned in parallel, byte-identical to planning the model alone.
    test::TempDir one;
    REQUIRE(test::run_shell(kCompile + " " + model((std::string(name) + ".json").c_str()) + " -o " +
                            one.file("one.mpc") + " --policy greedy")
                .status == 0);
    auto single = runtime::PlanCache::open(one.file("one.mpc"));
    REQUIRE(single);
    auto q = single->load(0);
    REQUIRE(q);
    CHECK(std::equal(p->bytes().begin(), p->bytes().end(), q->bytes().begin(), q->bytes().end()));
  }

  std::string fresh = dir.file("fresh.mpc");
  auto ff = test::run_shell(kCompile + " " + broken + " " + models + " -o " + fresh +
                            " --fail-fast --jobs 1");
  INFO(ff.text);
  CHECK(ff.status == 1);
  CHECK(has(ff, "--fail-fast: nothing written"));
  CHECK(!runtime::PlanCache::open(fresh));

  auto same = test::run_shell(kCompile + " " + model("mlp.json") + " " + dir.file("x/mlp.json") +
                              " -o " + fresh);
  CHECK(same.status == 1);
  CHECK(has(same, "would both be named 'mlp'"));
  auto with_name = test::run_shell(kCompile + " " + models + " -o " + fresh + " --name x");
  CHECK(with_name.status == 1);
  CHECK(has(with_name, "names come from the file names"));
}

TEST_CASE("several models: a redrawn progress bar when stderr is a terminal") {
  if (test::run_shell("command -v script").status != 0) {
    MESSAGE("*** 'script' (util-linux) is not on PATH: the terminal progress bar was NOT tested");
    return;
  }
  test::TempDir dir;
  // script(1) gives the command a pseudo-terminal.
  auto tty = test::run_shell("script -qec \"" + kCompile + " " + model("mlp.json") + " " +
                             model("small_cnn.json") + " -o " + dir.file("c.mpc") + "\" /dev/null");
  INFO(tty.text);
  CHECK(tty.status == 0);
  CHECK(has(tty, "\r\033[K"));
  CHECK(has(tty, "] 2/2"));
  CHECK(has(tty, "[##############################] 2/2"));
}
