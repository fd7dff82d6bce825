// meshplan-run cache ls | verify | gc: list, verify and collect the entries of a plan cache.
#include "cache_commands.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "cli.hpp"
#include "meshplan/runtime/cache_edit.hpp"
#include "meshplan/runtime/plan_cache.hpp"

namespace meshplan::tools {

namespace {

using namespace meshplan::runtime;

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

}  // namespace

int cache_command(int argc, char** argv) {
  Cli cli("meshplan-run cache",
          "meshplan-run cache ls|verify|gc CACHE.mpc [options]\n\n"
          "Lists, verifies or collects the entries of a plan cache.");
  cli.app().footer(
      "  ls lists every entry (name, key, device, policy, size, ops, L1 high water, estimated\n"
      "  time). verify checks every entry (checksum, format, invariants); exit code 2 if any\n"
      "  fails. gc drops entries that fail verification, were made by another planner version\n"
      "  than this build's (or V), or are not in --keep; and deletes temp files of writers that\n"
      "  died.\n");
  std::string verb, path, keep, version;
  GcOptions options;
  bool any_version = false;
  cli.app().add_option("command", verb, "ls, verify or gc")->required()->type_name("");
  cli.app().add_option("cache", path, "The plan cache")->required()->type_name("CACHE.mpc");
  cli.app().add_option("--keep", keep, "gc: keep only these entries")->type_name("NAME,NAME...");
  cli.app()
      .add_option("--planner-version", version, "gc: keep plans of this planner version")
      ->type_name("V");
  cli.app().add_flag("--any-version", any_version, "gc: keep plans of every planner version");
  cli.app().add_flag("--dry-run", options.dry_run, "gc: say what would be dropped, drop nothing");
  if (auto exit = cli.parse(argc, argv)) return *exit;
  if (verb == "ls" || verb == "verify") {
    if (!keep.empty() || !version.empty() || any_version || options.dry_run)
      return cli.usage_error(str("cache ", verb, " takes only CACHE.mpc"));
    auto cache = PlanCache::open(path, PlanCacheOptions{.verify = VerifyMode::full});
    if (!cache) return print_error(cache.error());
    return verb == "ls" ? list(*cache) : verify(*cache);
  }
  if (verb != "gc") return cli.usage_error(str("unknown cache command '", verb, "'"));
  if (any_version && !version.empty())
    return cli.usage_error("give --planner-version V or --any-version, not both");
  if (any_version) options.planner_version.clear();
  if (!version.empty()) options.planner_version = version;
  if (!keep.empty()) options.keep = split_commas(keep);
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
