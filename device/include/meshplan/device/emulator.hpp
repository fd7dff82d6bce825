// The emulated Tenstorrent chip: real bytes in per-core L1 and DRAM banks at the planned
// addresses, allocators that check every placement, kernels, and a simulated clock.
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "meshplan/device/allocator.hpp"
#include "meshplan/device/device.hpp"
#include "meshplan/device/memory.hpp"
#include "meshplan/device/op_model.hpp"

namespace meshplan::device {

/// Memories of one emulated chip: DRAM banks and each core's L1.
struct ChipMemory {
  std::vector<SparseMemory> dram;  ///< One per DRAM bank.
  std::vector<SparseMemory> l1;    ///< One per Tensix core, row-major over the grid.
  SparseMemory& bank(BufferType buffer, uint32_t index) { return buffer == BufferType::dram ? dram[index] : l1[index]; }
};

/// An emulated chip. Not thread-safe (see Device).
class EmulatedDevice final : public Device {
 public:
  /// Fails if the descriptor does not verify.
  static Result<std::unique_ptr<EmulatedDevice>> create(ChipDesc chip);

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
  /// Live buffers: (buffer type, address) -> bytes per bank.
  std::map<std::pair<BufferType, uint64_t>, uint64_t> live_;
  uint64_t clock_ns_ = 0;
};

}  // namespace meshplan::device
