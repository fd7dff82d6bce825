// The cache tools end to end: meshplan-compile adds and removes entries; meshplan-run cache
// ls | verify | gc list, verify and collect them.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

using namespace meshplan;

namespace {

using Output = test::CommandOutput;
Output sh(const std::string& cmd) {
  return test::run_shell(cmd);
}

const std::string kCompile = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
const std::string kRun = std::string(MESHPLAN_BINARY_DIR) + "/runtime/meshplan-run";

bool has(const Output& o, const std::string& s) {
  return o.text.find(s) != std::string::npos;
}

}  // namespace

TEST_CASE("meshplan-run cache ls, verify, gc and meshplan-compile --remove") {
  test::TempDir dir;
  std::string cache = dir.file("plans.mpc");
  std::string model = test::source_path("examples/models/mlp.json");
  REQUIRE(sh(kCompile + " " + model + " -o " + cache + " --name mlp --policy dram").status == 0);
  REQUIRE(sh(kCompile + " " + model + " -o " + cache + " --name mlp2 --device n150 --policy dram")
              .status == 0);  // same key: an alias
  auto c = runtime::PlanCache::open(cache);
  REQUIRE(c);
  // Same graph, device and options: one key, so mlp2 is a second name of mlp's plan.
  REQUIRE(c->size() == 2);
  CHECK(c->entry(0).offset == c->entry(1).offset);
  CHECK(c->find("mlp")->key() == c->find("mlp2")->key());

  Output ls = sh(kRun + " cache ls " + cache);
  INFO(ls.text);
  CHECK(ls.status == 0);
  CHECK(has(ls, "mlp "));
  CHECK(has(ls, "mlp2"));
  CHECK(has(ls, "wormhole_b0"));
  CHECK(has(ls, "dram"));
  CHECK(has(ls, " ok"));
  CHECK(has(ls, "2 entries"));

  Output ok = sh(kRun + " cache verify " + cache);
  CHECK(ok.status == 0);
  CHECK(has(ok, "2 of 2 entries verified"));
  for (const char* name : {"mlp", "mlp2"}) {
    Output run = sh(kRun + " " + cache + " --name " + name);
    INFO(run.text);
    CHECK(run.status == 0);
  }

  // Damage the plan: verify reports it and fails; gc drops it; the cache is usable again.
  std::vector<uint8_t> bytes = test::read_bytes(cache);
  runtime::CacheEntryInfo e = c->entry(0);
  bytes[e.offset + e.size - 8] ^= 0x20;
  test::write_bytes(cache, bytes);
  Output bad = sh(kRun + " cache verify " + cache);
  INFO(bad.text);
  CHECK(bad.status == 2);
  CHECK(has(bad, "FAILED  mlp2: corrupt"));
  CHECK(has(bad, "FAILED  mlp: corrupt"));
  Output dry = sh(kRun + " cache gc " + cache + " --dry-run");
  CHECK(has(dry, "would drop mlp2"));
  CHECK(test::read_bytes(cache) == bytes);
  Output gc = sh(kRun + " cache gc " + cache);
  INFO(gc.text);
  CHECK(gc.status == 0);
  CHECK(has(gc, "dropped mlp2"));
  CHECK(has(gc, "dropped mlp:"));
  CHECK(runtime::PlanCache::open(cache)->size() == 0);

  REQUIRE(sh(kCompile + " " + model + " -o " + cache + " --name a").status == 0);
  Output rm_missing = sh(kCompile + " -o " + cache + " --remove nope");
  CHECK(rm_missing.status == 1);
  CHECK(has(rm_missing, "no plan named 'nope'"));
  Output rm = sh(kCompile + " -o " + cache + " --remove a");
  INFO(rm.text);
  CHECK(rm.status == 0);
  CHECK(has(rm, "removed 'a'"));
  CHECK(runtime::PlanCache::open(cache)->size() == 0);

  Output unknown = sh(kRun + " cache frob " + cache);
  CHECK(unknown.status == 1);
  CHECK(has(unknown, "unknown cache command 'frob'"));
}
