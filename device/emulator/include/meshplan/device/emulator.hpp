// The emulated Tenstorrent chip: real bytes in per-core L1 and DRAM banks at the planned
// addresses, allocators that check every placement, kernels, and a simulated clock.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "meshplan/device/allocator.hpp"
#include "meshplan/device/device.hpp"
#include "meshplan/device/memory.hpp"
#include "meshplan/device/op_model.hpp"

namespace meshplan::device {

class CorePool;

/// Memories of one emulated chip: DRAM banks and each core's L1.
struct ChipMemory {
  std::vector<SparseMemory> dram;  ///< One per DRAM bank.
  std::vector<SparseMemory> l1;    ///< One per Tensix core, row-major over the grid.
  SparseMemory& bank(BufferType buffer, uint32_t index) {
    return buffer == BufferType::dram ? dram[index] : l1[index];
  }
  /// Threads the kernels may spread cores over (null: run serially).
  class CorePool* pool = nullptr;
  /// Estimated serial host work (ns) from which a kernel's cores run on `pool`; below it they run
  /// inline on the caller. -1: the measured default (kPoolMinWorkNs in core_pool.hpp).
  int64_t pool_min_work_ns = -1;
};

/// An emulated chip. Not thread-safe (see Device).
class EmulatedDevice final : public Device {
 public:
  /// Fails if the descriptor does not verify.
  static Result<std::unique_ptr<EmulatedDevice>> create(ChipDesc chip);
  ~EmulatedDevice() override;

  const ChipDesc& descriptor() const override { return chip_; }
  Status allocate(const TensorPlacement& t) override;
  Status deallocate(const TensorPlacement& t) override;
  void reset() override;
  Status write(const TensorPlacement& t, std::span<const float> host) override;
  Status read(const TensorPlacement& t, std::span<float> host) override;
  Result<OpTiming> launch(const OpLaunch& op) override;
  uint64_t now_ns() const override { return clock_ns_; }

  const BankAllocator& dram_allocator() const { return dram_alloc_; }
  const BankAllocator& l1_allocator() const { return l1_alloc_; }
  /// Bytes of emulated memory actually backed by host memory.
  uint64_t resident_bytes() const;

  /// Copies raw bytes out of DRAM bank or L1 core `bank` (for tests and debugging tools).
  Status peek(BufferType buffer, uint32_t bank, uint64_t offset, std::span<std::byte> out) const;

  /// Host threads that run emulated cores of big ops (1 = serial). Default: min(4, hardware).
  void set_core_threads(unsigned threads);
  unsigned core_threads() const;
  /// Overrides the work threshold from which kernels use the pool (-1: the measured default);
  /// for benchmarks that measure the crossover and tests that force either path.
  void set_pool_min_work_ns(int64_t ns) { memory_.pool_min_work_ns = ns; }
  /// Kernel loops (per-core loops and operand reads) that ran on the core pool's threads since
  /// set_core_threads(), rather than inline; tests use it to see which path an op took.
  uint64_t pooled_jobs() const;

  /// L1 use of one core (index y * grid_x + x): interleaved L1 buffers count on every core,
  /// sharded ones on the cores of their grid.
  struct L1CoreStats {
    uint64_t used_bytes = 0;        ///< Live tensor bytes on this core now.
    uint64_t high_water_bytes = 0;  ///< Most live tensor bytes this core held since reset().
    uint64_t free_bytes = 0;        ///< Free bytes in [unreserved base, usable top) on this core.
    uint64_t largest_free = 0;      ///< Largest free block on this core.
    double fragmentation =
        0.0;             ///< 1 - largest_free / free_bytes (0 when free space is one block).
    size_t buffers = 0;  ///< Live buffers on this core.
  };
  /// Precondition: core < descriptor().cores().
  L1CoreStats l1_core_stats(uint32_t core) const;

 private:
  explicit EmulatedDevice(ChipDesc chip);
  /// Checks that `t` is a live buffer of the size its placement needs.
  Status check_live(const TensorPlacement& t, std::string_view role) const;
  Status check_supported(const TensorPlacement& t) const;

  ChipDesc chip_;
  OpModel op_model_;
  ChipMemory memory_;
  BankAllocator dram_alloc_;
  BankAllocator l1_alloc_;
  /// A live buffer: bytes per bank (or per core of its shard grid) and which cores hold it.
  struct LiveBuffer {
    uint64_t bytes = 0;
    bool sharded = false;
    ShardSpec shard;  ///< Which cores hold it (sharded only).
    std::string name;
  };
  /// Whether a live L1 buffer reserves bytes on `core`.
  bool holds(const LiveBuffer& live, uint32_t core) const;
  /// Live buffers by (buffer type, address).
  std::map<std::pair<BufferType, uint64_t>, LiveBuffer> live_;
  std::vector<uint64_t> l1_used_;  ///< Per core: live L1 tensor bytes.
  std::vector<uint64_t> l1_high_;  ///< Per core: high-water mark of l1_used_.
  uint64_t clock_ns_ = 0;
  std::unique_ptr<CorePool> pool_;
};

}  // namespace meshplan::device
