// A small pool of host threads that runs the emulated cores' work items (internal to device/).
#pragma once

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

 private:
  void work();
  void drain();

  std::mutex mutex_;
  std::condition_variable start_, finished_;
  const std::function<void(size_t)>* job_ = nullptr;
  size_t n_ = 0;
  size_t next_ = 0;    // Guarded by mutex_ (items are coarse: a core's whole block).
  unsigned busy_ = 0;  // Helpers still inside the current job.
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

}  // namespace meshplan::device
