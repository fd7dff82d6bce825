// The plan cache (.mpc): one file holding many plans, mapped read-only and searched in place.
//
// File layout: a 64-byte header (magic "MPCACHE\0", format major/minor, entry count, file size,
// index offset and size, XXH3-128 of the index), the index (size-prefixed CacheIndex FlatBuffer,
// entries sorted by key, names sorted through by_name), then the plans, each 64-byte aligned.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "meshplan/runtime/plan.hpp"
#include "meshplan/runtime/plan_query.hpp"

namespace meshplan::runtime {

/// What the index says about one entry.
struct CacheEntryInfo {
  Hash128 key;
  std::string_view name;
  std::string_view device;
  std::string_view policy;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct PlanCacheOptions {
  /// How entries are verified on first use, after their checksum matched. `checksummed`
  /// trusts the structure the writer verified (the default, for caches this host wrote);
  /// `full` re-runs the FlatBuffers verifier too (caches from untrusted sources).
  VerifyMode verify = VerifyMode::checksummed;
  /// Read the file into private memory instead of mapping it. A mapping shares the file's
  /// pages, so a process whose cache file is rewritten in place (`cp new.mpc plans.mpc`, which
  /// truncates it) faults on the next read; a private copy costs one read of the file at open
  /// and survives any change to it. meshplan's writers replace the file by rename, which is
  /// safe for mappings too.
  bool private_copy = false;
};

/// A read-only, memory-mapped plan cache. Immutable after open(); find() may be called from many
/// threads at once. Plans are verified (checksum, FlatBuffers verifier, invariants) on first use.
/// Move-only; PlanRefs it returns stay valid while it lives.
class PlanCache {
 public:
  /// Maps `path` and checks its header and index. Errors: not_found (no file), corrupt
  /// (truncated, bad magic, index checksum), incompatible (other format major version).
  static Result<PlanCache> open(const std::string& path, PlanCacheOptions options = {});

  PlanCache(PlanCache&&) noexcept;
  PlanCache& operator=(PlanCache&&) noexcept;
  ~PlanCache();

  size_t size() const;
  CacheEntryInfo entry(size_t i) const;
  /// The verified plan with this key (binary search).
  Result<PlanRef> find(const Hash128& key) const;
  /// The verified plan with this name (binary search over the name index).
  Result<PlanRef> find(std::string_view name) const;
  /// The verified plan with this name, checked field by field against `query`: a plan made by
  /// another planner version, for another device or with other options is an `incompatible`
  /// error that says which fields differ ("stale: planner 0.0.9 ≠ 0.1.0").
  Result<PlanRef> find(std::string_view name, const PlanQuery& query) const;
  /// Verifies entry i (idempotent; cheap after the first success).
  Result<PlanRef> load(size_t i) const;
  const std::string& path() const;

 private:
  struct Impl;
  explicit PlanCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// One plan to store in a cache.
struct CacheEntryData {
  std::string name;
  std::vector<uint8_t> plan;  ///< Verified plan bytes (key, device and policy are read from it).
};

/// Writes a whole cache atomically: temp file in the same folder, fsync, rename, fsync folder.
/// Readers that mapped the old file keep it. Entry names and keys must be unique.
Status write_cache(const std::string& path, std::vector<CacheEntryData> entries);

/// Longest plan name, in bytes.
inline constexpr size_t kMaxPlanNameBytes = 256;

/// invalid_argument unless `name` is a plan name: 1 to kMaxPlanNameBytes printable ASCII
/// characters other than space (0x21-0x7E), so that every tool and protocol can print it on
/// one line and a client can ask for it as one word. The message names the offending byte.
Status check_plan_name(std::string_view name);

/// Adds `entry` to the cache at `path` (created if missing), replacing any entry with the same
/// name or key. Writers are serialised with a lock file (`path`.lock). A corrupt existing
/// cache is not overwritten: the error says so and nothing is lost. The name must pass
/// check_plan_name().
Status add_to_cache(const std::string& path, CacheEntryData entry);

}  // namespace meshplan::runtime
