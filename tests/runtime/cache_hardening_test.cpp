// Plan cache paths that used to hang or misbehave: non-regular files are refused before open(),
// a held writer lock costs a bounded wait and names its holder, gc refuses a kept name that
// does not exist, plan names are printable words, and temp files of killed writers go away on
// the next write.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/cache_edit.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "relu_plan.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::runtime;

namespace {

using testing::relu_plan;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a directory or a FIFO is refused as a plan cache, without blocking") {
  test::TempDir dir;
  auto d = PlanCache::open(dir.path().string());
  REQUIRE_FALSE(d);
  CHECK(d.error().code == ErrorCode::invalid_argument);
  CHECK(has(d.error().message, "is a directory"));
  std::string fifo = dir.file("fifo.mpc");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  auto f = PlanCache::open(fifo);
  REQUIRE_FALSE(f);
  CHECK(has(f.error().message, "'" + fifo + "' is a FIFO, not a regular file"));
  auto add = add_to_cache(fifo, CacheEntryData{"g", relu_plan(8)});
  REQUIRE_FALSE(add);
  CHECK(has(add.error().message, "is a FIFO"));
  auto gc = gc_cache(fifo, GcOptions{});
  REQUIRE_FALSE(gc);
  CHECK(has(gc.error().message, "is a FIFO"));
}

TEST_CASE("a held writer lock gives up after the configured timeout, naming the holder") {
  test::TempDir dir;
  std::string cache = dir.file("plans.mpc");
  int fd = ::open((cache + ".lock").c_str(), O_RDWR | O_CREAT, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::flock(fd, LOCK_EX) == 0);
  std::string holder = "pid 4242\n";  // a stale record: that pid does not hold the lock
  REQUIRE(::write(fd, holder.data(), holder.size()) == static_cast<ssize_t>(holder.size()));
  ::setenv("MESHPLAN_CACHE_LOCK_TIMEOUT", "0.2", 1);
  auto t0 = std::chrono::steady_clock::now();
  auto add = add_to_cache(cache, CacheEntryData{"g", relu_plan(8)});
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::unsetenv("MESHPLAN_CACHE_LOCK_TIMEOUT");
  REQUIRE_FALSE(add);
  CHECK(add.error().code == ErrorCode::resource_exhausted);
  // Linux lists the flock's owner in /proc/locks: this process, not the pid in the file.
  CHECK(has(add.error().message, "is locked by another writer (pid " + std::to_string(::getpid()) +
                                     "); gave up after 0.2 s"));
  CHECK(has(add.error().message, "MESHPLAN_CACHE_LOCK_TIMEOUT"));
  CHECK(waited >= 0.2);
  CHECK(waited < 5);
  ::close(fd);  // released: the next writer gets in and records itself
  REQUIRE(add_to_cache(cache, CacheEntryData{"g", relu_plan(8)}));
  std::vector<uint8_t> lock_bytes = test::read_bytes(cache + ".lock");
  std::string recorded(lock_bytes.begin(), lock_bytes.end());
  CHECK(recorded == "pid " + std::to_string(::getpid()) + "\n");
}

TEST_CASE("gc --keep with a name the cache does not hold removes nothing") {
  test::TempDir dir;
  std::string cache = dir.file("plans.mpc");
  REQUIRE(add_to_cache(cache, CacheEntryData{"one", relu_plan(8)}));
  REQUIRE(add_to_cache(cache, CacheEntryData{"two", relu_plan(16)}));
  GcOptions options;
  options.keep = {"one", "tow"};
  auto gc = gc_cache(cache, options);
  REQUIRE_FALSE(gc);
  CHECK(gc.error().code == ErrorCode::not_found);
  CHECK(has(gc.error().message, "gc --keep names 'tow', which is not in"));
  CHECK(has(gc.error().message, "'one', 'two'"));
  auto opened = PlanCache::open(cache);
  REQUIRE(opened);
  CHECK(opened->size() == 2);
}

TEST_CASE("plan names are printable ASCII words") {
  CHECK(check_plan_name("mlp"));
  CHECK(check_plan_name("llama3_8b-decode.t3k:ring"));
  for (std::string bad :
       {std::string("a b"), std::string("a\nb"), std::string("a\0b", 3), std::string("tab\there"),
        std::string(), std::string("caf\xc3\xa9"), std::string(300, 'x')})
    CHECK_FALSE(check_plan_name(bad));
  auto space = check_plan_name("my model");
  REQUIRE_FALSE(space);
  CHECK(has(space.error().message, "has byte 0x20 (a space) at offset 2"));
  auto nul = check_plan_name(std::string("ab\0c", 4));
  REQUIRE_FALSE(nul);
  CHECK(has(nul.error().message, "has byte 0x00 at offset 2"));
  test::TempDir dir;
  auto add = add_to_cache(dir.file("plans.mpc"), CacheEntryData{"two\nlines", relu_plan(8)});
  REQUIRE_FALSE(add);
  CHECK(has(add.error().message, "has byte 0x0a at offset 3"));
  CHECK_FALSE(std::filesystem::exists(dir.file("plans.mpc")));
}

TEST_CASE("temp files of killed writers are removed by the next write") {
  test::TempDir dir;
  std::string cache = dir.file("plans.mpc");
  // pid_max is at most 2^22 on Linux: no process has pid 4194305.
  std::string stale = cache + ".tmp.4194305";
  test::write_bytes(stale, {1, 2, 3});
  REQUIRE(add_to_cache(cache, CacheEntryData{"g", relu_plan(8)}));
  CHECK_FALSE(std::filesystem::exists(stale));
}
