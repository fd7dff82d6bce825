// Plan cache maintenance: remove and gc, each a locked read-modify-write with an atomic replace.
#include "meshplan/runtime/cache_edit.hpp"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "cache_lock.hpp"

namespace meshplan::runtime {

namespace {

CacheEntryData copy_entry(const CacheEntryInfo& info, const PlanRef& plan) {
  return CacheEntryData{std::string(info.name),
                        std::vector<uint8_t>(plan.bytes().begin(), plan.bytes().end())};
}

}  // namespace

Result<CacheEditReport> remove_from_cache(const std::string& path,
                                          const std::vector<std::string>& names) {
  CacheLock lock = MESHPLAN_TRY(CacheLock::acquire(path));
  PlanCache cache =
      MESHPLAN_TRY(PlanCache::open(path, PlanCacheOptions{.verify = VerifyMode::full}));
  CacheEditReport report;
  for (const std::string& n : names) {
    bool present = false;
    for (size_t i = 0; i < cache.size() && !present; ++i) present = cache.entry(i).name == n;
    if (!present)
      return fail(ErrorCode::not_found, "no plan named '", n, "' in '", path, "' (", cache.size(),
                  " entries); nothing removed");
  }
  std::vector<CacheEntryData> entries;
  for (size_t i = 0; i < cache.size(); ++i) {
    CacheEntryInfo info = cache.entry(i);
    if (std::find(names.begin(), names.end(), info.name) != names.end()) {
      report.dropped.push_back({std::string(info.name), "removed"});
      continue;
    }
    auto plan = cache.load(i);
    if (!plan)
      return std::unexpected(
          with_context(plan.error(), str("not rewriting '", path, "': entry '", info.name,
                                         "' does not verify (run `meshplan-run ", path, " gc`)")));
    entries.push_back(copy_entry(info, *plan));
    report.kept.push_back(std::string(info.name));
  }
  MESHPLAN_TRY(write_cache(path, std::move(entries)));
  return report;
}

Result<CacheEditReport> gc_cache(const std::string& path, const GcOptions& options) {
  CacheLock lock = MESHPLAN_TRY(CacheLock::acquire(path));
  CacheEditReport report;
  if (!options.dry_run) report.removed_temp_files = remove_dead_temp_files(path);
  auto opened = PlanCache::open(path, PlanCacheOptions{.verify = VerifyMode::full});
  if (!opened)
    return std::unexpected(
        with_context(opened.error(),
                     str("cannot collect '", path,
                         "': its header or index is unreadable; remove the file and recompile")));
  PlanCache& cache = *opened;
  // A kept name that is not in the cache is a typo, not a wish to drop everything else.
  for (const std::string& k : options.keep) {
    bool present = false;
    for (size_t i = 0; i < cache.size() && !present; ++i) present = cache.entry(i).name == k;
    if (!present) {
      std::vector<std::string> held;
      for (size_t i = 0; i < cache.size(); ++i) held.emplace_back(cache.entry(i).name);
      std::sort(held.begin(), held.end());
      std::string names;
      for (const std::string& h : held) names += str(names.empty() ? "'" : ", '", h, "'");
      return fail(ErrorCode::not_found, "gc --keep names '", k, "', which is not in '", path,
                  "' (its entries: ", names.empty() ? "none" : names, "); nothing removed");
    }
  }
  std::vector<CacheEntryData> entries;
  for (size_t i = 0; i < cache.size(); ++i) {
    CacheEntryInfo info = cache.entry(i);
    std::string name(info.name);
    if (!options.keep.empty() &&
        std::find(options.keep.begin(), options.keep.end(), name) == options.keep.end()) {
      report.dropped.push_back({name, "not in the keep list"});
      continue;
    }
    auto plan = cache.load(i);
    if (!plan) {
      report.dropped.push_back({name, plan.error().to_string()});
      continue;
    }
    PlanQuery query;
    query.planner_version = options.planner_version;
    if (auto match = check_plan_matches(*plan, query); !match) {
      report.dropped.push_back({name, match.error().message});
      continue;
    }
    entries.push_back(copy_entry(info, *plan));
    report.kept.push_back(name);
  }
  if (!report.dropped.empty() && !options.dry_run)
    MESHPLAN_TRY(write_cache(path, std::move(entries)));
  return report;
}

}  // namespace meshplan::runtime
