// The plans meshplan-server serves, as one unit loaded at start-up and again by `reload`: the
// mapped plan cache, its verified entries and one Worker per worker thread, each with its own
// chips and every plan bound and (after warm_up) run once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/emulator_backend.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "protocol.hpp"

namespace meshplan::server {

/// What to load and how.
struct LoadOptions {
  std::string path;  ///< The plan cache file.
  runtime::VerifyMode verify = runtime::VerifyMode::checksummed;
  int threads = 1;                                             ///< Workers (one per worker thread).
  unsigned core_threads = 1;                                   ///< Host threads per chip.
  std::map<std::string, device::ChipDesc, std::less<>> chips;  ///< Devices plans may target.
  /// The registered backends chips and meshes open on (the program registers them).
  Backends backends{std::string(device::kEmulatorBackend), std::string(device::kEmulatorBackend)};
  bool mesh_only = false;  ///< Bind the mesh plans alone (an MPI rank other than 0).
  bool warm_up = true;     ///< Whether the plans are warmed up before serving (--no-warm-up).
  /// An entry that fails verification fails the load (reload), instead of being skipped and
  /// answered `corrupt` (start-up).
  bool strict = false;
};

/// One generation of served plans. Immutable after load_plans() and warm_up(), except that
/// workers[i] is used by worker thread i alone. Held by shared_ptr: a request keeps the
/// generation it was accepted under alive until it is answered, so a reload never pulls plans
/// from under a running request.
struct Plans {
  runtime::PlanCache cache;        ///< Every PlanRef points into its mapping: destroyed last.
  size_t entries = 0;              ///< Entries in the cache file.
  std::vector<std::string> names;  ///< Verified entries, sorted (what `list` answers).
  std::map<std::string, std::string, std::less<>> damaged;  ///< name -> why it fails to verify
  std::vector<std::string> unbound;  ///< Why verified plans are not served (device, mesh).
  std::vector<std::unique_ptr<Worker>> workers;
  double open_ms = 0, verify_ms = 0, bind_ms = 0, warm_up_ms = 0;

  explicit Plans(runtime::PlanCache c) : cache(std::move(c)) {}
  /// Plans bound and served (verified and not unbound).
  size_t bound() const { return names.size() - unbound.size(); }
};

/// Maps the cache, verifies every entry and binds every verified plan on every worker's chips.
/// Errors name the file (and, when `strict`, the damaged entry).
Result<std::shared_ptr<Plans>> load_plans(const LoadOptions& options);

/// Runs every bound plan once on every worker, the workers in parallel (one thread each), so
/// that a plan's first request costs what its second does. Records warm_up_ms.
Status warm_up(Plans& plans);

}  // namespace meshplan::server
