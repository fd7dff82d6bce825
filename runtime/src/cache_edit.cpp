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

/// PATH.tmp.PID files whose writer process no longer exists. Called with the lock held, so no
/// live add/remove/gc can own one; a live process with that PID keeps its file.
std::vector<std::string> remove_dead_temp_files(const std::string& path) {
  std::vector<std::string> removed;
  std::filesystem::path target(path);
  std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string prefix = target.filename().string() + ".tmp.";
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = f.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() ||
        !std::all_of(pid_text.begin(), pid_text.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    if (std::filesystem::remove(f.path(), rm)) removed.push_back(f.path().string());
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace

Result<CacheEditReport> remove_from_cache(const std::string& path,
                                          const std::vector<std::string>& names) {
  CacheLock lock = MESHPLAN_TRY(CacheLock::acquire(path));
  PlanCache cache = MESHPLAN_TRY(PlanCache::open(path, PlanCacheOptions{VerifyMode::full}));
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
  auto opened = PlanCache::open(path, PlanCacheOptions{VerifyMode::full});
  if (!opened)
    return std::unexpected(
        with_context(opened.error(),
                     str("cannot collect '", path,
                         "': its header or index is unreadable; remove the file and recompile")));
  PlanCache& cache = *opened;
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
