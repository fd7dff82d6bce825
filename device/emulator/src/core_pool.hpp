// A small pool of host threads that runs the emulated cores' work items, and the one dispatch
// helper every kernel's per-core loop goes through (internal to device/).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// Persistent worker threads; the calling thread works too. One run() at a time (the device is
/// not thread-safe, so its launches are serialised by the caller).
class CorePool {
 public:
  /// `threads` counts the caller: threads - 1 helpers are started (none for 0 or 1).
  explicit CorePool(unsigned threads);
  ~CorePool();
  CorePool(const CorePool&) = delete;
  CorePool& operator=(const CorePool&) = delete;

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }
  /// Runs fn(i) for every i in [0, n) across the pool and returns when all have finished.
  void run(size_t n, const std::function<void(size_t)>& fn);
  /// Jobs run() spread over the helpers so far (not those it ran inline).
  uint64_t jobs() const { return generation_; }

 private:
  void work();
  void drain();

  std::mutex mutex_;
  std::condition_variable start_, finished_;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t n_ = 0;
  size_t next_ = 0;  // Guarded by mutex_ (items are coarse: a core's whole block).
  size_t done_ = 0;  // Items of the current job finished, by anyone.
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

/// Makes sure every byte `t` may hold is backed, so parallel writers of disjoint pages never
/// race on a chunk's first allocation.
void back_for_writes(ChipMemory& memory, const ChipDesc& chip, const TensorPlacement& t);

/// Runs fn(i) -> Status for i in [0, n): on memory.pool when `parallel` and there is more than
/// one item, else in order on the caller. Returns the error of the lowest failing i (so the
/// result does not depend on scheduling).
Status run_on_cores(ChipMemory& memory, size_t n, bool parallel,
                    const std::function<Status(size_t)>& fn);

/// Estimated serial host time (ns) of a kernel below which its emulated cores run inline on the
/// caller rather than on the pool. Measured with tests/bench/kernels_bench.cpp on the 2-core
/// host: waking the helper and handing out items costs ~3-5 us (BM_TinyLaunchForcedPool vs
/// BM_TinyLaunchInline64x32), so an ideal 2-way split pays off from ~10 us of work. The threshold
/// sits ~20x above that overhead because the other core is often busy (load average 6-9 while
/// this was measured): pooled and serial wall times then match at every size (BM_PoolCrossover*,
/// 0.8-1.1x) while the calling thread's CPU time halves, and pooling small ops would only add
/// the overhead. Tiny ops (~2 us launches) never touch the pool.
inline constexpr int64_t kPoolMinWorkNs = 100'000;

/// Host cost estimates per output tile or value, measured as CPU time of the serial kernels in
/// kernels_bench.cpp (bf16, this host); only their order of magnitude matters.
inline constexpr int64_t kTileCopyNs = 2'000;     ///< Unpack, one cheap op per value, pack.
inline constexpr int64_t kTileGatherNs = 10'000;  ///< 1024 values gathered by logical index.
inline constexpr int64_t kTileMacNs = 8'000;      ///< One 32x32x32 tile multiply-accumulate.
inline constexpr int64_t kElementVisitNs = 7;     ///< One operand value read by logical index.

/// Whether a kernel whose serial host work is `work_ns` runs its cores on memory.pool.
inline bool use_pool(const ChipMemory& memory, int64_t work_ns) {
  int64_t min_ns = memory.pool_min_work_ns >= 0 ? memory.pool_min_work_ns : kPoolMinWorkNs;
  return work_ns >= min_ns && memory.pool != nullptr && memory.pool->threads() > 1;
}

/// The per-core loop of every tiled kernel: splits `tiles` output tiles of `result` over `cores`
/// emulated cores in contiguous ranges (core k gets [k * per_core, (k + 1) * per_core)) and calls
/// fn(core, begin, end) -> Status for each. The cores run on the pool when tiles * ns_per_tile
/// reaches kPoolMinWorkNs, inline otherwise. Each core writes only the result tiles of its own
/// range (fn must not write anything shared), so the result does not depend on scheduling; the
/// error returned is the lowest failing core's.
template <class Fn>
Status for_each_core(ChipMemory& memory, const ChipDesc& chip, const TensorPlacement& result,
                     int64_t tiles, uint32_t cores, int64_t ns_per_tile, Fn&& fn) {
  if (tiles <= 0) return {};
  cores = std::max<uint32_t>(cores, 1);
  int64_t per_core = (tiles + cores - 1) / cores;
  size_t used = static_cast<size_t>((tiles + per_core - 1) / per_core);
  bool parallel = used > 1 && use_pool(memory, tiles * ns_per_tile);
  if (parallel) back_for_writes(memory, chip, result);
  return run_on_cores(memory, used, parallel, [&](size_t core) -> Status {
    int64_t begin = static_cast<int64_t>(core) * per_core;
    return fn(static_cast<uint32_t>(core), begin, std::min(tiles, begin + per_core));
  });
}

}  // namespace meshplan::device
