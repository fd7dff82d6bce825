// Adding many plans to a cache in one locked, atomic rewrite (meshplan-compile A B C -o cache).
#include "meshplan/runtime/cache_edit.hpp"

#include "cache_lock.hpp"

namespace meshplan::runtime {

Result<CacheEditReport> add_all_to_cache(const std::string& path,
                                         std::vector<CacheEntryData> entries) {
  CacheEditReport report;
  // Later entries win over earlier ones with the same name. Entries with the same key under
  // other names stay, as aliases of one plan: all of them get the last such entry's bytes.
  std::vector<Hash128> keys;
  for (const CacheEntryData& e : entries) {
    MESHPLAN_TRY(check_plan_name(e.name));
    auto ref = verify_plan(e.plan, str("'", e.name, "'"));
    if (!ref) return std::unexpected(ref.error());
    keys.push_back(ref->key());
  }
  std::vector<bool> replaced(entries.size(), false);
  for (size_t i = 0; i < entries.size(); ++i)
    for (size_t j = i + 1; j < entries.size() && !replaced[i]; ++j)
      if (entries[j].name == entries[i].name) {
        replaced[i] = true;
        report.dropped.push_back(
            {entries[i].name, str("replaced by '", entries[j].name, "' (same name)")});
      }
  // The bytes each key is stored with: its last entry's.
  auto latest_bytes = [&](const Hash128& key) -> const std::vector<uint8_t>* {
    for (size_t j = entries.size(); j-- > 0;)
      if (!replaced[j] && keys[j] == key) return &entries[j].plan;
    return nullptr;
  };
  for (size_t i = 0; i < entries.size(); ++i)
    if (!replaced[i])
      if (const std::vector<uint8_t>* bytes = latest_bytes(keys[i]); bytes != &entries[i].plan)
        entries[i].plan = *bytes;

  CacheLock lock = MESHPLAN_TRY(CacheLock::acquire(path));
  remove_dead_temp_files(path);  // left by killed writers
  std::vector<CacheEntryData> out;
  auto existing = PlanCache::open(path, PlanCacheOptions{.verify = VerifyMode::full});
  if (existing) {
    for (size_t i = 0; i < existing->size(); ++i) {
      CacheEntryInfo info = existing->entry(i);
      bool superseded = false;
      for (size_t j = 0; j < entries.size() && !superseded; ++j)
        superseded = !replaced[j] && info.name == entries[j].name;
      if (superseded) continue;
      if (const std::vector<uint8_t>* bytes = latest_bytes(info.key)) {  // an alias of a new plan
        out.push_back(CacheEntryData{std::string(info.name), *bytes});
        report.kept.push_back(std::string(info.name));
        continue;
      }
      auto ref = existing->load(i);
      if (!ref)
        return std::unexpected(with_context(
            ref.error(), str("not rewriting '", path, "': an existing entry does not verify")));
      out.push_back(CacheEntryData{std::string(info.name),
                                   std::vector<uint8_t>(ref->bytes().begin(), ref->bytes().end())});
      report.kept.push_back(std::string(info.name));
    }
  } else if (existing.error().code != ErrorCode::not_found) {
    return std::unexpected(with_context(
        existing.error(), str("not overwriting '", path, "'; remove it to start a new cache")));
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    if (replaced[i]) continue;
    report.kept.push_back(entries[i].name);
    out.push_back(std::move(entries[i]));
  }
  MESHPLAN_TRY(write_cache(path, std::move(out)));
  return report;
}

}  // namespace meshplan::runtime
