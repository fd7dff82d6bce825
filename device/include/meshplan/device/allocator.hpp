// Bank allocator, as tt-metal's bank manager does it: one address range shared by every bank of a
// memory type, first-fit free list with coalescing, DRAM bottom-up and L1 top-down.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// Allocates address ranges in [base, limit). Not thread-safe. The planner uses it to assign
/// addresses ahead of time and the emulator uses the same code to check them at run time.
class BankAllocator {
 public:
  enum class Direction { bottom_up, top_down };

  /// `what` names the memory in error messages ("DRAM", "L1").
  BankAllocator(std::string what, uint64_t base, uint64_t limit, uint64_t alignment,
                Direction direction);

  /// First-fit allocation of `size` bytes (rounded up to the alignment); `owner` names the
  /// buffer in errors. Fails with resource_exhausted naming the largest free block.
  Result<uint64_t> allocate(uint64_t size, std::string_view owner);
  /// Reserves [address, address + size) chosen in advance; fails if misaligned, out of range or
  /// overlapping a live buffer (naming it).
  Status allocate_at(uint64_t address, uint64_t size, std::string_view owner);
  /// Frees the buffer that starts at `address`.
  Status free(uint64_t address);
  void clear();

  uint64_t base() const { return base_; }
  uint64_t limit() const { return limit_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t allocated_bytes() const { return allocated_; }
  uint64_t high_water() const { return high_water_; }
  uint64_t largest_free() const;
  /// Lowest address of any live buffer, or limit() when empty.
  uint64_t lowest_allocated() const;
  /// 1 - largest_free / total_free (0 when free space is one block).
  double fragmentation() const;
  size_t live_buffers() const { return used_.size(); }

  /// Deterministic dump: one line per free and used block, by address.
  std::string print() const;
  /// Free and used blocks tile [base, limit) exactly, none overlaps, free blocks are coalesced.
  Status verify() const;

 private:
  struct Used {
    uint64_t size;
    std::string owner;
  };
  void take(std::map<uint64_t, uint64_t>::iterator block, uint64_t address, uint64_t size);
  uint64_t align_up(uint64_t v) const { return (v + alignment_ - 1) / alignment_ * alignment_; }

  std::string what_;
  uint64_t base_, limit_, alignment_;
  Direction direction_;
  std::map<uint64_t, uint64_t> free_;  // address -> size
  std::map<uint64_t, Used> used_;      // address -> buffer
  uint64_t allocated_ = 0;
  uint64_t high_water_ = 0;
};

}  // namespace meshplan::device
