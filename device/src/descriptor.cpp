// Built-in chip descriptors. Numbers from shared/DEVICE-FACTS.md (tt-metal and tt-mlir public
// sources); where sources disagree the choice is written next to the number.
#include "meshplan/device/descriptor.hpp"

#include <bit>

namespace meshplan::device {

uint64_t ChipDesc::l1_usable_top() const {
  uint64_t top =
      l1_unreserved_base +
      static_cast<uint64_t>(static_cast<double>(l1_size - l1_unreserved_base) * l1_usable_fraction);
  return top / l1_alignment * l1_alignment;
}

Hash128 ChipDesc::hash() const {
  Hasher h;
  h.string("meshplan.chip.v3").string(name).u32(grid_x).u32(grid_y).u64(l1_size);
  h.u64(l1_unreserved_base).f64(l1_usable_fraction).u32(dram_banks).u64(dram_bank_size);
  h.u32(l1_alignment).u32(dram_alignment).f64(clock_ghz).u32(matmul_flops_per_cycle);
  h.u32(eltwise_elems_per_cycle).u32(noc_bytes_per_cycle).f64(dram_gbps).u32(ethernet_links);
  h.f64(ethernet_gbps).u64(dispatch_ns).f64(pcie_h2d_gbps).f64(pcie_d2h_gbps);
  h.f64(matmul_utilization).u32(dram_read_bytes_per_cycle).u32(mcast_bytes_per_cycle);
  h.u32(l1_bytes_per_cycle).u32(conv_block_sync_cycles);
  return h.digest();
}

Status ChipDesc::verify() const {
  auto bad = [&](std::string_view field, auto value, std::string_view rule) {
    return fail(ErrorCode::invalid_argument, "chip '", name, "': field '", field, "' = ", value,
                " ", rule);
  };
  if (grid_x == 0) return bad("grid_x", grid_x, "must be > 0");
  if (grid_y == 0) return bad("grid_y", grid_y, "must be > 0");
  if (l1_size == 0) return bad("l1_size", l1_size, "must be > 0");
  if (l1_unreserved_base >= l1_size)
    return bad("l1_unreserved_base", l1_unreserved_base, str("is not below l1_size ", l1_size));
  if (!(l1_usable_fraction > 0.0 && l1_usable_fraction <= 1.0))
    return bad("l1_usable_fraction", l1_usable_fraction, "must be in (0, 1]");
  if (!std::has_single_bit(l1_alignment))
    return bad("l1_alignment", l1_alignment, "must be a power of two");
  // One tile of the largest format (f32, 4096 B) must fit between the base and the usable top,
  // or no tensor and no circular buffer can be placed.
  if (l1_usable_top() < l1_unreserved_base + 4096)
    return bad("l1_unreserved_base", l1_unreserved_base,
               str("leaves ",
                   l1_usable_top() > l1_unreserved_base ? l1_usable_top() - l1_unreserved_base : 0,
                   " usable bytes of L1 below l1_size ", l1_size, " x l1_usable_fraction ",
                   l1_usable_fraction, "; one f32 tile needs 4096"));
  if (dram_banks == 0) return bad("dram_banks", dram_banks, "must be > 0");
  if (!std::has_single_bit(dram_alignment))
    return bad("dram_alignment", dram_alignment, "must be a power of two");
  if (dram_bank_size < dram_alignment)
    return bad("dram_bank_size", dram_bank_size,
               str("must hold at least one aligned page (dram_alignment ", dram_alignment, ")"));
  if (!(clock_ghz > 0.0)) return bad("clock_ghz", clock_ghz, "must be > 0");
  if (matmul_flops_per_cycle == 0)
    return bad("matmul_flops_per_cycle", matmul_flops_per_cycle, "must be > 0");
  if (eltwise_elems_per_cycle == 0)
    return bad("eltwise_elems_per_cycle", eltwise_elems_per_cycle, "must be > 0");
  if (noc_bytes_per_cycle == 0)
    return bad("noc_bytes_per_cycle", noc_bytes_per_cycle, "must be > 0");
  if (!(dram_gbps > 0.0)) return bad("dram_gbps", dram_gbps, "must be > 0");
  if (ethernet_links > 0 && !(ethernet_gbps > 0.0))
    return bad("ethernet_gbps", ethernet_gbps, "must be > 0 when the chip has ethernet links");
  if (!(pcie_h2d_gbps > 0.0)) return bad("pcie_h2d_gbps", pcie_h2d_gbps, "must be > 0");
  if (!(pcie_d2h_gbps > 0.0)) return bad("pcie_d2h_gbps", pcie_d2h_gbps, "must be > 0");
  if (!(matmul_utilization > 0.0 && matmul_utilization <= 1.0))
    return bad("matmul_utilization", matmul_utilization,
               "must be in (0, 1]: an achieved share of the FPU's peak");
  if (dram_read_bytes_per_cycle == 0 || dram_read_bytes_per_cycle > noc_bytes_per_cycle)
    return bad("dram_read_bytes_per_cycle", dram_read_bytes_per_cycle,
               str("must be in (0, noc_bytes_per_cycle ", noc_bytes_per_cycle,
                   "]: a core's DRAM reads enter through its NoC port"));
  if (mcast_bytes_per_cycle == 0 || mcast_bytes_per_cycle > noc_bytes_per_cycle)
    return bad("mcast_bytes_per_cycle", mcast_bytes_per_cycle,
               str("must be in (0, noc_bytes_per_cycle ", noc_bytes_per_cycle,
                   "]: a multicast leaves through the sender's NoC port"));
  if (l1_bytes_per_cycle < noc_bytes_per_cycle)
    return bad("l1_bytes_per_cycle", l1_bytes_per_cycle,
               str("must be at least noc_bytes_per_cycle ", noc_bytes_per_cycle,
                   ": a core reads its own L1 no slower than it reads another's"));
  return {};
}

ChipDesc wormhole_b0() {
  ChipDesc d;
  d.name = "wormhole_b0";
  d.grid_x = 8;
  d.grid_y = 8;
  d.l1_size = 1499136;  // 1464 KiB per Tensix.
  d.l1_unreserved_base =
      102400;                   // 100 KiB; system descriptors show 97,248-104,224: we take 100 KiB.
  d.l1_usable_fraction = 0.95;  // tt-mlir's cap.
  d.dram_banks = 12;            // 6 GDDR6 channels, 12 banks of 1 GiB.
  d.dram_bank_size = 1ull << 30;
  d.l1_alignment = 16;
  d.dram_alignment = 32;
  d.clock_ghz = 1.0;
  d.matmul_flops_per_cycle = 4096;  // LoFi; a 32x32x32 tile-matmul takes 16 cycles.
  d.eltwise_elems_per_cycle = 32;
  d.noc_bytes_per_cycle = 32;
  d.dram_gbps = 267.0;  // Measured (288 peak): the model times what the chip achieves.
  d.ethernet_links = 16;
  d.ethernet_gbps = 12.5;
  d.dispatch_ns = 1000;
  // PCIe 4.0 x16. Host to device: about 15 GB/s in tt-metal's C++ transfer test (tt-metal issue
  // #20518). Device to host: 1.9 GB/s, the best EnqueueReadBuffer run of 512 MiB on Wormhole in
  // tt-metal PR #7759's test_rw_buffer (reads are the slow direction; see the rules document).
  d.pcie_h2d_gbps = 15.0;
  d.pcie_d2h_gbps = 1.9;
  // tt-metal tech_reports/GEMM_FLOPS (N150, manually tuned): mean of the best device-based
  // utilizations of the demos' dtype/fidelity pairs (bf16 HiFi4 92.4%, bfp8_b HiFi2 89.2%,
  // bfp4_b LoFi 87.7%).
  d.matmul_utilization = 0.89;
  // Tenstorrent's measured data-movement primitives (tt-low-level-documentation,
  // data_movement_doc/general/ideal_performance.md, Wormhole B0): "DRAM Read" 22 B/cycle per
  // core, "One To All (Multicast + Linked)" 22 B/cycle.
  d.dram_read_bytes_per_cycle = 22;
  d.mcast_bytes_per_cycle = 22;
  d.l1_bytes_per_cycle = 64;       // Assumption: both NoC ports, 2 x 32 B/cycle.
  d.conv_block_sync_cycles = 500;  // Assumption: the order of a DRAM read round trip.
  return d;
}

ChipDesc wormhole_n300() {
  ChipDesc d = wormhole_b0();
  d.name = "n300";
  // DEVICE-FACTS "Chips" (tt-metal public sources): 8x8 Tensix, 7x8 when a row does dispatch.
  // We take 8 columns x 7 rows: tt-metal's default n300 setup gives one Tensix row to dispatch,
  // and a plan made for 56 cores also runs where all 64 are free (the converse does not hold).
  d.grid_x = 8;
  d.grid_y = 7;
  // 12 GiB per chip = 12 banks x 1 GiB, as wormhole_b0. Two of the 16 ethernet links join the
  // card's two chips; the mesh descriptor (MeshDesc::links) says how many a mesh uses.
  return d;
}

ChipDesc blackhole_p150() {
  ChipDesc d;
  d.name = "blackhole_p150";
  // DEVICE-FACTS "Chips" (tt-metal / tt-mlir public sources): 13x10 = 130 Tensix, 11x10 = 110 on
  // newer firmware. We take 11x10: newer firmware keeps two columns, and a plan for 110 cores
  // runs on both firmware generations.
  d.grid_x = 11;
  d.grid_y = 10;
  d.l1_size = 1572864;           // 1536 KiB per Tensix.
  d.l1_unreserved_base = 98304;  // 96 KiB, from the Blackhole system descriptor.
  d.l1_usable_fraction = 0.95;   // tt-mlir's cap, as for Wormhole.
  d.dram_banks = 8;
  d.dram_bank_size = 4278190080ull;
  d.l1_alignment = 16;
  d.dram_alignment = 64;
  d.clock_ghz = 1.35;
  d.matmul_flops_per_cycle = 4096;  // Same per cycle as Wormhole.
  d.eltwise_elems_per_cycle = 32;
  d.noc_bytes_per_cycle = 64;
  d.dram_gbps = 500.0;  // Measured (512 peak).
  d.ethernet_links = 14;
  d.ethernet_gbps = 50.0;
  d.dispatch_ns = 1000;
  // No published Blackhole transfer figure was found: the Wormhole figures (assumption).
  d.pcie_h2d_gbps = 15.0;
  d.pcie_d2h_gbps = 1.9;
  d.matmul_utilization = 0.89;  // Wormhole's (GEMM_FLOPS gives no per-fidelity P150 figures).
  // The same measurements on Blackhole: "DRAM Read" 33 B/cycle, "One To All (Multicast +
  // Linked)" 41 B/cycle.
  d.dram_read_bytes_per_cycle = 33;
  d.mcast_bytes_per_cycle = 41;
  d.l1_bytes_per_cycle = 128;      // Assumption: both NoC ports, 2 x 64 B/cycle.
  d.conv_block_sync_cycles = 500;  // Assumption, as for Wormhole.
  return d;
}

Result<ChipDesc> builtin_chip(std::string_view name) {
  if (name == "wormhole_b0" || name == "n150") return wormhole_b0();
  if (name == "n300") return wormhole_n300();
  if (name == "blackhole_p150") return blackhole_p150();
  std::string known;
  for (auto n : builtin_chip_names()) known += (known.empty() ? "" : ", ") + std::string(n);
  return fail(ErrorCode::not_found, "unknown device '", name, "' (built-in devices: ", known, ")");
}

std::vector<std::string_view> builtin_chip_names() {
  return {"wormhole_b0", "n150", "n300", "blackhole_p150"};
}

}  // namespace meshplan::device
