// The logging hook: messages reach the C++ sink and the C handler at or above their level,
// nothing is sent below it or after the sink is removed.
#include <doctest/doctest.h>

#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/meshplan.h"
#include "meshplan/runtime/plan_cache.hpp"
#include "meshplan/schemas/log.hpp"
#include "test_util.hpp"

using namespace meshplan;

namespace {

struct Captured {
  std::mutex mutex;
  std::vector<std::pair<int, std::string>> messages;
  bool any(int level, const std::string& part) {
    std::lock_guard lock(mutex);
    for (const auto& [l, m] : messages)
      if (l == level && m.find(part) != std::string::npos) return true;
    return false;
  }
  size_t size() {
    std::lock_guard lock(mutex);
    return messages.size();
  }
};

void cpp_sink(LogLevel level, std::string_view message, void* user) {
  auto* c = static_cast<Captured*>(user);
  std::lock_guard lock(c->mutex);
  c->messages.emplace_back(static_cast<int>(level), std::string(message));
}

void c_handler(mp_log_level level, const char* message, void* user) {
  auto* c = static_cast<Captured*>(user);
  std::lock_guard lock(c->mutex);
  c->messages.emplace_back(static_cast<int>(level), message);
}

/// A one-plan cache of the MLP example at `path`.
void write_cache(const std::string& path) {
  auto graph = planner::load_graph_file(test::source_path("examples/models/mlp.json"));
  REQUIRE(graph);
  planner::PlannerOptions options;
  options.policy = "greedy";
  auto plan = planner::compile(*graph, device::wormhole_b0(), options);
  REQUIRE(plan);
  REQUIRE(runtime::add_to_cache(path, runtime::CacheEntryData{"mlp", plan->bytes}));
}

}  // namespace

TEST_CASE("logging hook: C++ sink levels, damaged entry warning, C handler") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  write_cache(path);

  Captured got;
  set_log_sink(&cpp_sink, &got, LogLevel::info);
  CHECK(log_enabled(LogLevel::warning));
  CHECK_FALSE(log_enabled(LogLevel::debug));
  {
    auto cache = runtime::PlanCache::open(path);
    REQUIRE(cache);
  }
  CHECK(got.any(static_cast<int>(LogLevel::info), "opened plan cache '" + path + "': 1 plan(s)"));

  // Above the message's level: nothing.
  set_log_sink(&cpp_sink, &got, LogLevel::warning);
  size_t before = got.size();
  REQUIRE(runtime::PlanCache::open(path));
  CHECK(got.size() == before);

  // A damaged plan (one byte flipped in its last 64 bytes, inside the plan) is a warning.
  std::vector<uint8_t> bytes = test::read_bytes(path);
  bytes[bytes.size() - 40] ^= 0xff;
  std::string damaged = dir.file("damaged.mpc");
  test::write_bytes(damaged, bytes);
  auto cache = runtime::PlanCache::open(damaged);
  REQUIRE(cache);
  CHECK_FALSE(cache->find("mlp"));
  CHECK(got.any(static_cast<int>(LogLevel::warning), "plan 'mlp' in '" + damaged + "'"));

  // No sink: nothing, and nothing enabled.
  set_log_sink(nullptr, nullptr);
  CHECK_FALSE(log_enabled(LogLevel::error));
  before = got.size();
  REQUIRE(runtime::PlanCache::open(path));
  CHECK(got.size() == before);

  // The C API: debug messages include the bind.
  Captured c;
  mp_set_log_handler(&c_handler, &c, MP_LOG_DEBUG);
  mp_cache* mc = nullptr;
  REQUIRE(mp_cache_open(path.c_str(), &mc) == MP_OK);
  mp_executable* exe = nullptr;
  REQUIRE(mp_executable_create(mc, "mlp", &exe) == MP_OK);
  CHECK(c.any(MP_LOG_INFO, "opened plan cache '" + path + "'"));
  CHECK(c.any(MP_LOG_DEBUG, "bound plan 'mlp'"));
  mp_set_log_handler(nullptr, nullptr, MP_LOG_OFF);
  before = c.size();
  mp_executable_destroy(exe);
  mp_cache_close(mc);
  REQUIRE(mp_cache_open(path.c_str(), &mc) == MP_OK);
  CHECK(c.size() == before);
  mp_cache_close(mc);
}
