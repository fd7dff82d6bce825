// Heap allocations on the load path (open + find + verify + bind), counted with a replacement
// operator new in this test binary: the count must not grow with plan size.
#include <doctest/doctest.h>

#include <cstdlib>
#include <new>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

// The replacement new/delete pair malloc/free on purpose; GCC cannot see that they match.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
// Per thread, so other test threads cannot disturb a measurement.
thread_local bool g_counting = false;
thread_local size_t g_allocations = 0;

void* counted_alloc(size_t size, size_t align) {
  if (g_counting) ++g_allocations;
  if (size == 0) size = 1;
  void* p = align > alignof(std::max_align_t)
                ? std::aligned_alloc(align, (size + align - 1) / align * align)
                : std::malloc(size);
  return p;
}
}  // namespace

void* operator new(size_t n) {
  if (void* p = counted_alloc(n, 0)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  return operator new(n);
}
void* operator new(size_t n, std::align_val_t a) {
  if (void* p = counted_alloc(n, static_cast<size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t a) {
  return operator new(n, a);
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  return counted_alloc(n, 0);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return counted_alloc(n, 0);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}

using namespace meshplan;
using namespace meshplan::runtime;

namespace {

/// A chain of `n` relu ops on [32, 64].
std::vector<uint8_t> chain_plan(int n) {
  std::string json =
      R"({ name: "chain", arguments: [{ value: { name: "v0", shape: [32, 64], dtype: "bf16" } }], ops: [)";
  for (int i = 0; i < n; ++i)
    json += str(i ? ", " : "", R"({ kind: "relu", operands: ["v)", i, R"("], results: [{ name: "v)",
                i + 1, R"(" }] })");
  json += str(R"(], outputs: ["v)", n, R"("] })");
  auto g = planner::import_graph_json(json);
  REQUIRE(g);
  auto p =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE(p);
  return p->bytes;
}

struct LoadCount {
  size_t open = 0, find = 0, bind = 0;
  size_t total() const { return open + find + bind; }
};

LoadCount count_load(const std::string& path, device::Device& dev) {
  LoadCount c;
  g_allocations = 0;
  g_counting = true;
  auto cache = PlanCache::open(path);
  c.open = g_allocations;
  g_allocations = 0;
  auto plan = cache->find("chain");
  c.find = g_allocations;
  g_allocations = 0;
  auto exe = Executable::bind(*plan, dev);
  c.bind = g_allocations;
  g_counting = false;
  REQUIRE(cache);
  REQUIRE(plan);
  REQUIRE(exe);
  return c;
}

}  // namespace

TEST_CASE("the load path allocates a constant number of times, whatever the plan's size") {
  test::TempDir dir;
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  std::vector<LoadCount> counts;
  for (int ops : {3, 300, 3000}) {
    std::string path = dir.file(str("c", ops, ".mpc"));
    // The same number of entries in each cache: only the plan's size changes.
    REQUIRE(write_cache(
        path, {CacheEntryData{"chain", chain_plan(ops)}, CacheEntryData{"other", chain_plan(1)}}));
    counts.push_back(count_load(path, **dev));
    INFO("ops ", ops, ": open ", counts.back().open, ", find+verify ", counts.back().find,
         ", bind ", counts.back().bind);
    CHECK(counts.back().find == 0);  // find + checksum + verify: no heap at all
    CHECK(counts.back().total() <= 8);
  }
  CHECK(counts[0].total() == counts[1].total());
  CHECK(counts[1].total() == counts[2].total());
  // The counter works: building a plan does allocate.
  g_allocations = 0;
  g_counting = true;
  std::vector<int> v(100);
  g_counting = false;
  CHECK(g_allocations == 1);
}
