// Fuzz target: the plan cache and plan loader, to the end of their path. The input is opened as
// a cache file (an anonymous memory file: nothing is left on disk), every entry loaded (both
// verify modes) and, when it verifies, bound to an emulated chip and run with seeded inputs when
// its tensors are small (a size cap keeps runs fast); the input is also given to verify_plan
// directly as plan bytes. Every plan that verifies must bind and run or fail with an error
// value. Nothing may crash or trip a sanitizer.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "meshplan/device/emulator.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan_cache.hpp"

using namespace meshplan;

namespace {

/// A memfd reachable by path (/proc/self/fd/N), rewritten for each input.
int memory_file() {
  static int fd = ::memfd_create("meshplan-fuzz-cache", MFD_CLOEXEC);
  return fd;
}

/// Runs are capped: at most 2^16 elements per tensor and 64 ops.
bool small_enough(const runtime::PlanRef& plan) {
  if (plan.plan().ops()->size() > 64) return false;
  for (const fb::TensorPlan* t : *plan.plan().tensors()) {
    int64_t n = 1;
    for (int64_t d : *t->shape()) {
      n *= d;  // verify_plan bounds every dim and the volume: no overflow
      if (n > (1 << 16)) return false;
    }
  }
  return true;
}

void exercise(const runtime::PlanRef& plan) {
  static auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  if (!dev) return;
  auto exe = runtime::Executable::bind(plan, **dev);
  if (!exe) return;
  for (size_t i = 0; i < (*exe)->input_count(); ++i) (void)(*exe)->input_name(i);
  (void)(*exe)->input_index("x");
  if (!small_enough(plan)) return;
  auto inputs = runtime::random_inputs(plan, 1);
  auto views = runtime::views_of(inputs);
  (void)(*exe)->run(views);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // As plan bytes: full verification is the defence for bytes of unknown origin.
  if (auto plan = runtime::verify_plan(std::span<const uint8_t>(data, size), "fuzz"))
    exercise(*plan);

  // As a cache file.
  int fd = memory_file();
  if (fd < 0 || ::ftruncate(fd, 0) != 0) return 0;
  for (size_t at = 0; at < size;) {
    ssize_t n = ::pwrite(fd, data + at, size - at, static_cast<off_t>(at));
    if (n <= 0) return 0;
    at += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  for (runtime::VerifyMode mode : {runtime::VerifyMode::full, runtime::VerifyMode::checksummed}) {
    auto cache = runtime::PlanCache::open(path, runtime::PlanCacheOptions{.verify = mode});
    if (!cache) continue;
    for (size_t i = 0; i < cache->size(); ++i) {
      runtime::CacheEntryInfo e = cache->entry(i);
      (void)cache->find(e.name);
      (void)cache->find(e.key);
      if (auto plan = cache->load(i)) exercise(*plan);
    }
  }
  return 0;
}
