// Chip descriptors: the hardware facts the planner plans for and the emulator enforces.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "meshplan/device/types.hpp"
#include "meshplan/schemas/error.hpp"
#include "meshplan/schemas/hash.hpp"

namespace meshplan::device {

/// One chip's facts (shared/DEVICE-FACTS.md). Plain data; copy freely.
struct ChipDesc {
  std::string name;
  uint16_t grid_x = 8;               ///< Tensix columns usable for compute.
  uint16_t grid_y = 8;               ///< Tensix rows usable for compute.
  uint64_t l1_size = 0;              ///< Bytes of L1 per Tensix core.
  uint64_t l1_unreserved_base = 0;   ///< First byte of L1 not used by firmware.
  double l1_usable_fraction = 0.95;  ///< Cap on tensors + circular buffers (tt-mlir's 0.95).
  uint16_t dram_banks = 0;
  uint64_t dram_bank_size = 0;
  uint32_t l1_alignment = 16;
  uint32_t dram_alignment = 32;
  double clock_ghz = 1.0;
  uint32_t matmul_flops_per_cycle = 4096;  ///< Per core at LoFi; HiFi2 /2, HiFi3 /3, HiFi4 /4.
  uint32_t eltwise_elems_per_cycle = 32;   ///< Per core, SFPU/FPU elementwise throughput.
  uint32_t noc_bytes_per_cycle = 32;
  /// Achievable DRAM bandwidth over all banks, GB/s: the measured figure, not the peak
  /// (Wormhole 267 of 288 peak, Blackhole 500 of 512; docs/hardware-rules.md names the sources).
  double dram_gbps = 267.0;
  uint32_t ethernet_links = 16;
  double ethernet_gbps = 12.5;  ///< Per link, per direction.
  uint64_t dispatch_ns = 1000;  ///< Fixed per-op host/dispatch overhead on the real chip.
  /// Achievable host-to-device PCIe bandwidth (tensor writes into DRAM), GB/s.
  double pcie_h2d_gbps = 15.0;
  /// Achievable device-to-host PCIe bandwidth (tensor reads from DRAM), GB/s.
  double pcie_d2h_gbps = 1.9;
  /// Achieved share of the FPU's peak on a tile-matmul at the fidelity its weight dtype is run
  /// with (tt-metal's GEMM_FLOPS tech report; docs/hardware-rules.md). In (0, 1].
  double matmul_utilization = 0.89;
  /// One core's achievable DRAM read rate, bytes per cycle (tt-metal's measured data-movement
  /// primitives: "DRAM Read"). At most noc_bytes_per_cycle: the reads enter through the NoC port.
  uint32_t dram_read_bytes_per_cycle = 22;
  /// One sender's achievable multicast rate to a core range, bytes per cycle (the same
  /// measurements: "One To All (Multicast + Linked)"). At most noc_bytes_per_cycle.
  uint32_t mcast_bytes_per_cycle = 22;
  /// A core's rate on its own L1 (sharded operands and results), bytes per cycle. Assumption: the
  /// width of its two NoC ports together, 2 x noc_bytes_per_cycle; at least noc_bytes_per_cycle.
  uint32_t l1_bytes_per_cycle = 64;
  /// Hand-off of one conv2d activation block between reader, compute and writer (read barrier
  /// plus circular-buffer semaphores), cycles. Assumption, the order of a DRAM round trip.
  uint32_t conv_block_sync_cycles = 500;

  int cores() const { return grid_x * grid_y; }
  /// Highest L1 address (exclusive) that tensors may use: base + (size - base) * fraction,
  /// aligned down to l1_alignment.
  uint64_t l1_usable_top() const;
  /// Canonical encoding hashed into plan keys (every field, fixed order).
  Hash128 hash() const;
  /// Invariants: non-zero sizes and rates, base below size with usable L1 above it, power-of-two
  /// alignments, banks at least one aligned page. The error names the offending field and its
  /// value.
  Status verify() const;
};

/// Wormhole B0 n150: 8x8 Tensix, 1464 KiB L1, 12 x 1 GiB DRAM banks, 1 GHz.
ChipDesc wormhole_b0();

/// Wormhole B0 as one chip of an n300 card: 8x7 compute grid (one Tensix row does dispatch),
/// otherwise as wormhole_b0().
ChipDesc wormhole_n300();

/// Blackhole p150: 11x10 compute grid, 1536 KiB L1, 8 DRAM banks of 4,278,190,080 B, 1.35 GHz.
ChipDesc blackhole_p150();

/// A built-in descriptor by name ("wormhole_b0" alias "n150", "n300", "blackhole_p150").
Result<ChipDesc> builtin_chip(std::string_view name);
/// Names accepted by builtin_chip().
std::vector<std::string_view> builtin_chip_names();

}  // namespace meshplan::device
