// Crash safety: a writer killed with SIGKILL at arbitrary points of add_to_cache never leaves a
// cache that fails to open or loses an entry; its lock dies with it and gc removes its temp file.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/cache_edit.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::runtime;

namespace {

std::vector<uint8_t> relu_plan(int width) {
  std::string json =
      R"({ name: "g", arguments: [{ value: { name: "x", shape: [4, )" + std::to_string(width) +
      R"(], dtype: "bf16" } }], ops: [{ kind: "relu", operands: ["x"], results: [{ name: "y" }] }], outputs: ["y"] })";
  auto g = planner::import_graph_json(json);
  REQUIRE(g);
  auto p =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE(p);
  return p->bytes;
}

bool has_temp_file(const std::string& path) {
  std::filesystem::path p(path);
  for (const auto& f : std::filesystem::directory_iterator(p.parent_path()))
    if (f.path().filename().string().rfind(p.filename().string() + ".tmp.", 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("kill -9 during writes leaves the old cache intact") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  // A cache big enough that each rewrite takes a while (every add rewrites every entry).
  constexpr int kEntries = 150;
  std::vector<CacheEntryData> base;
  for (int i = 0; i < kEntries; ++i)
    base.push_back(CacheEntryData{"p" + std::to_string(i), relu_plan(8 + 8 * i)});
  REQUIRE(write_cache(path, base));
  std::vector<uint8_t> flip_a = relu_plan(4000), flip_b = relu_plan(4008);

  int killed_mid_write = 0;
  for (int attempt = 0; attempt < 60 && killed_mid_write < 3; ++attempt) {
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // The writer: replaces entry "flip" forever, alternating two plans.
      for (int n = 0;; ++n)
        (void)add_to_cache(path, CacheEntryData{"flip", n % 2 ? flip_a : flip_b});
    }
    std::this_thread::sleep_for(std::chrono::microseconds(1500 + 737 * (attempt % 11)));
    REQUIRE(::kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    if (has_temp_file(path)) ++killed_mid_write;

    // Whatever the moment of death, the cache opens and every entry verifies.
    auto cache = PlanCache::open(path);
    REQUIRE(cache);
    CHECK((cache->size() == kEntries || cache->size() == kEntries + 1));
    for (size_t i = 0; i < cache->size(); ++i) CHECK(cache->load(i));
    CHECK(cache->find("p0"));
    CHECK(cache->find(str("p", kEntries - 1)));
  }
  // The writer died holding the lock: the kernel released it, so a new writer proceeds, and gc
  // cleans up the temp file it left.
  INFO("kills that landed mid-write: ", killed_mid_write);
  CHECK(killed_mid_write > 0);
  auto gc = gc_cache(path, GcOptions{});
  REQUIRE(gc);
  CHECK_FALSE(has_temp_file(path));
  auto after = add_to_cache(path, CacheEntryData{"after", relu_plan(12)});
  INFO((after ? std::string("ok") : after.error().to_string()));
  REQUIRE(after);
  auto cache = PlanCache::open(path);
  REQUIRE(cache);
  CHECK(cache->find("after"));
}
