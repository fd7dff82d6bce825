// meshplan-compile with several models: plans them on N threads, shows progress on stderr, and
// writes every plan into the cache in one atomic write at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "meshplan/runtime/plan_cache.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::tools {

/// One planned model: the cache entry and what to say about it.
struct PlannedModel {
  runtime::CacheEntryData entry;
  std::string summary;  ///< "policy dram, device wormhole_b0, 3 ops, ..." for the log line.
  double planning_ms = 0;
};

using PlanResult = Result<PlannedModel>;

struct BatchOptions {
  std::string cache;       ///< Cache file to add the plans to.
  uint32_t jobs = 1;       ///< Planning threads (capped at the number of models).
  bool fail_fast = false;  ///< Stop at the first failure and write nothing.
};

/// "mlp" for "path/to/mlp.json" (the file name without folder and last extension).
std::string name_from_path(const std::string& path);

/// Plans every model with `plan` (called from up to `jobs` threads at once; it must be
/// thread-safe) and adds the successful plans to the cache in one atomic write. Progress goes to
/// stderr: a redrawn bar when stderr is a terminal, one line per model otherwise. Errors name
/// the model. Without fail_fast the plans that succeeded are written even if others failed,
/// and the result is an error listing the failures; with fail_fast nothing is written.
/// Two models whose file names give the same entry name are refused before planning.
Status compile_batch(const std::vector<std::string>& models, const BatchOptions& options,
                     const std::function<PlanResult(const std::string& model)>& plan);

}  // namespace meshplan::tools
