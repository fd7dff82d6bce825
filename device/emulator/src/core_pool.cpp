// CorePool: persistent helpers woken per job; work items handed out and counted under one mutex.
#include "core_pool.hpp"

#include <algorithm>

#include "meshplan/device/placement.hpp"
#include "tile_io.hpp"

namespace meshplan::device {

CorePool::CorePool(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

CorePool::~CorePool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void CorePool::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (next_ < n_) {
    size_t i = next_++;
    const std::function<void(size_t)>* job = job_;  // Valid until item i is counted done.
    lock.unlock();
    (*job)(i);
    lock.lock();
    if (++done_ == n_) finished_.notify_one();
  }
}

void CorePool::work() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain();
  }
}

void CorePool::run(size_t n, const std::function<void(size_t)>& fn) {
  if (workers_.empty() || n <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    n_ = n;
    next_ = 0;
    done_ = 0;
    ++generation_;
  }
  start_.notify_all();
  drain();
  // Waits for the items helpers took, not for every helper to wake: on a busy host a helper may
  // be scheduled only after the caller has done all the work, and then finds nothing to do (or
  // joins a later job).
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return done_ == n_; });
  job_ = nullptr;
  n_ = 0;
  next_ = 0;
}

void back_for_writes(ChipMemory& memory, const ChipDesc& chip, const TensorPlacement& t) {
  AddressMap map(t, chip);
  uint64_t bytes = map.bytes_per_bank();
  uint32_t banks =
      t.buffer == BufferType::dram ? chip.dram_banks : static_cast<uint32_t>(chip.cores());
  for (uint32_t b = 0; b < banks; ++b)
    if (t.buffer == BufferType::dram || map.holds(b))
      memory.bank(t.buffer, b).back(t.address, bytes);
}

Status run_on_cores(ChipMemory& memory, size_t n, bool parallel,
                    const std::function<Status(size_t)>& fn) {
  if (!parallel || n <= 1 || memory.pool == nullptr || memory.pool->threads() <= 1) {
    for (size_t i = 0; i < n; ++i) MESHPLAN_TRY(fn(i));
    return {};
  }
  std::vector<Status> status(n);
  memory.pool->run(n, [&](size_t i) { status[i] = fn(i); });
  for (Status& s : status)
    if (!s) return s;
  return {};
}

Status TileIO::read_all_blocks(std::vector<float>& blocks) const {
  int64_t pages = grid_.pages();
  blocks.assign(static_cast<size_t>(pages * kTileElems), 0.0f);
  // Reads in contiguous page ranges, one per pool thread at most (each range fills its own blocks).
  size_t parts = use_pool(memory_, pages * kTileCopyNs) ? memory_.pool->threads() : 1;
  int64_t per_part = (pages + static_cast<int64_t>(parts) - 1) / static_cast<int64_t>(parts);
  return run_on_cores(memory_, parts, parts > 1, [&](size_t part) -> Status {
    float tile[kTileElems];
    int64_t end = std::min(pages, static_cast<int64_t>(part + 1) * per_part);
    for (int64_t p = static_cast<int64_t>(part) * per_part; p < end; ++p) {
      MESHPLAN_TRY(read(p, tile));
      float* block = blocks.data() + p * kTileElems;
      for (int r = 0; r < kTileH; ++r)
        for (int c = 0; c < kTileW; ++c) block[r * kTileW + c] = tile[tile_offset(r, c)];
    }
    return {};
  });
}

}  // namespace meshplan::device
