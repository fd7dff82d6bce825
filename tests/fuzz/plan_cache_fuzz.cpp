// Fuzz target: the plan cache and plan loader. The input is written as a cache file and opened,
// every entry loaded (both verify modes) and, when it verifies, bound; the input is also given
// to verify_plan directly as plan bytes. Nothing may crash or trip a sanitizer.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "meshplan/device/emulator.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan_cache.hpp"

using namespace meshplan;

namespace {

std::string temp_path() {
  static std::string path = "/tmp/meshplan-fuzz-" + std::to_string(::getpid()) + ".mpc";
  return path;
}

void exercise(const runtime::PlanRef& plan) {
  static auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  if (!dev) return;
  auto exe = runtime::Executable::bind(plan, **dev);
  if (!exe) return;
  for (size_t i = 0; i < (*exe)->input_count(); ++i) (void)(*exe)->input_name(i);
  (void)(*exe)->input_index("x");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // As plan bytes: full verification is the defence for bytes of unknown origin.
  if (auto plan = runtime::verify_plan(std::span<const uint8_t>(data, size), "fuzz"))
    exercise(*plan);

  // As a cache file.
  std::string path = temp_path();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  for (runtime::VerifyMode mode : {runtime::VerifyMode::full, runtime::VerifyMode::checksummed}) {
    auto cache = runtime::PlanCache::open(path, runtime::PlanCacheOptions{mode});
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
