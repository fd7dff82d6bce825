// meshplan-run cache ls | verify | gc: list, verify and collect the entries of a plan cache.
#include "cache_commands.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "meshplan/runtime/cache_edit.hpp"
#include "meshplan/runtime/plan_cache.hpp"

namespace meshplan::tools {

namespace {

using namespace meshplan::runtime;

constexpr const char* kCacheUsage =
    "usage: meshplan-run cache ls CACHE.mpc\n"
    "       meshplan-run cache verify CACHE.mpc\n"
    "       meshplan-run cache gc CACHE.mpc [--keep NAME,NAME...] [--planner-version "
    "V|--any-version] [--dry-run]\n"
    "  ls lists every entry (name, key, device, policy, size, ops, L1 high water, estimated "
    "time).\n"
    "  verify checks every entry (checksum, format, invariants); exit code 2 if any fails.\n"
    "  gc drops entries that fail verification, were made by another planner version than this\n"
    "  build's (or V), or are not in --keep; and deletes temp files of writers that died.\n";

int print_error(const Error& e) {
  std::fprintf(stderr, "meshplan-run: error: %s\n", e.to_string().c_str());
  return 1;
}

std::string cut(std::string_view s, size_t width) {
  return s.size() <= width ? std::string(s) : std::string(s.substr(0, width - 1)) + "~";
}

int list(const PlanCache& cache) {
  std::printf("%-20s %-32s %-12s %-8s %9s %7s %10s %12s  %s\n", "name", "key", "device", "policy",
              "bytes", "ops", "L1 high", "est. us", "status");
  for (size_t i = 0; i < cache.size(); ++i) {
    CacheEntryInfo e = cache.entry(i);
    auto plan = cache.load(i);
    std::string ops = "-", l1 = "-", est = "-", status = "ok";
    if (plan) {
      const fb::PlanMetrics* m = plan->plan().header()->metrics();
      ops = std::to_string(plan->plan().ops()->size());
      if (m) {
        l1 = std::to_string(m->l1_high_water());
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3f", m->estimated_ns() / 1000.0);
        est = buf;
      }
    } else {
      status = plan.error().to_string();
    }
    std::printf("%-20s %-32s %-12s %-8s %9llu %7s %10s %12s  %s\n", cut(e.name, 20).c_str(),
                e.key.hex().c_str(), cut(e.device, 12).c_str(), cut(e.policy, 8).c_str(),
                static_cast<unsigned long long>(e.size), ops.c_str(), l1.c_str(), est.c_str(),
                status.c_str());
  }
  std::printf("%zu entries in %s\n", cache.size(), cache.path().c_str());
  return 0;
}

int verify(const PlanCache& cache) {
  size_t bad = 0;
  for (size_t i = 0; i < cache.size(); ++i) {
    CacheEntryInfo e = cache.entry(i);
    auto plan = cache.load(i);
    if (plan) {
      std::printf("ok      %.*s\n", static_cast<int>(e.name.size()), e.name.data());
    } else {
      ++bad;
      std::printf("FAILED  %.*s: %s\n", static_cast<int>(e.name.size()), e.name.data(),
                  plan.error().to_string().c_str());
    }
  }
  std::printf("%zu of %zu entries verified\n", cache.size() - bad, cache.size());
  return bad ? 2 : 0;
}

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

int cache_command(int argc, char** argv) {
  if (argc < 3) {
    std::fputs(kCacheUsage, argc >= 2 && std::string(argv[1]) == "--help" ? stdout : stderr);
    return argc >= 2 && std::string(argv[1]) == "--help" ? 0 : 1;
  }
  std::string verb = argv[1], path = argv[2];
  if (verb == "ls" || verb == "verify") {
    if (argc != 3)
      return print_error(
          Error{ErrorCode::invalid_argument, str("cache ", verb, " takes only CACHE.mpc")});
    auto cache = PlanCache::open(path, PlanCacheOptions{VerifyMode::full});
    if (!cache) return print_error(cache.error());
    return verb == "ls" ? list(*cache) : verify(*cache);
  }
  if (verb != "gc") {
    std::fputs(kCacheUsage, stderr);
    return print_error(
        Error{ErrorCode::invalid_argument, str("unknown cache command '", verb, "'")});
  }
  GcOptions options;
  for (int i = 3; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (s.rfind(flag + "=", 0) == 0) return s.substr(flag.size() + 1);
      return i + 1 < argc ? std::string(argv[++i]) : std::string();
    };
    if (s == "--dry-run")
      options.dry_run = true;
    else if (s == "--any-version")
      options.planner_version.clear();
    else if (s == "--keep" || s.rfind("--keep=", 0) == 0)
      options.keep = split_names(value("--keep"));
    else if (s == "--planner-version" || s.rfind("--planner-version=", 0) == 0) {
      options.planner_version = value("--planner-version");
      if (options.planner_version.empty())
        return print_error(Error{ErrorCode::invalid_argument,
                                 "--planner-version needs a value (or use --any-version)"});
    } else
      return print_error(Error{ErrorCode::invalid_argument, str("unknown gc option '", s, "'")});
  }
  auto report = gc_cache(path, options);
  if (!report) return print_error(report.error());
  for (const auto& d : report->dropped)
    std::printf("%s %s: %s\n", options.dry_run ? "would drop" : "dropped", d.name.c_str(),
                d.reason.c_str());
  for (const auto& f : report->removed_temp_files) std::printf("deleted temp file %s\n", f.c_str());
  std::printf("%zu kept, %zu %s\n", report->kept.size(), report->dropped.size(),
              options.dry_run ? "would be dropped" : "dropped");
  return 0;
}

}  // namespace meshplan::tools
