// Maintenance of plan cache files: removing entries and garbage-collecting those no longer wanted.
// Every edit is a locked read-modify-write followed by an atomic replace (see write_cache).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "meshplan/runtime/plan_cache.hpp"

namespace meshplan::runtime {

/// What an edit did: entries kept, and entries dropped each with the reason.
struct CacheEditReport {
  std::vector<std::string> kept;
  struct Dropped {
    std::string name;
    std::string reason;
  };
  std::vector<Dropped> dropped;
  /// Temp files of writers that died mid-write (PATH.tmp.PID with PID gone), deleted.
  std::vector<std::string> removed_temp_files;
};

/// Removes the entries named in `names` from the cache at `path`, under the writers' lock.
/// not_found if a name is not in the cache (nothing is written then). Entries that fail
/// verification are not rewritten silently: the error says to run gc.
Result<CacheEditReport> remove_from_cache(const std::string& path,
                                          const std::vector<std::string>& names);

struct GcOptions {
  /// Drop plans whose planner version differs from this (empty: keep every version).
  std::string planner_version = std::string(kPlannerVersion);
  /// If not empty, keep only these names (others are dropped as "not in the keep list"); a name
  /// here that the cache does not hold is a not_found error and nothing is removed.
  std::vector<std::string> keep;
  /// Report what would be dropped without writing anything.
  bool dry_run = false;
};

/// Rewrites the cache at `path` without entries that fail verification (checksum, format,
/// invariants), that are stale (other planner version), or that are not in `keep`; also deletes
/// temp files left by writers that were killed mid-write. The file is rewritten only if
/// something is dropped. A cache whose header or index is damaged cannot be collected: that is
/// a `corrupt` error and the file is left as it is.
Result<CacheEditReport> gc_cache(const std::string& path, const GcOptions& options);

}  // namespace meshplan::runtime

namespace meshplan::runtime {

/// Adds every entry of `entries` to the cache at `path` (created if missing) in one atomic
/// write under the writers' lock, replacing existing entries with the same name or key. Each
/// new plan is verified first (an invalid one is an error and nothing is written). Among the
/// new entries, a later one with the same name or key as an earlier one replaces it; the
/// replaced entry is reported in `dropped`. A damaged existing cache is not overwritten.
Result<CacheEditReport> add_all_to_cache(const std::string& path,
                                         std::vector<CacheEntryData> entries);

}  // namespace meshplan::runtime
