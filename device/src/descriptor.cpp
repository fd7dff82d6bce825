// Built-in chip descriptors. Numbers from shared/DEVICE-FACTS.md (tt-metal and tt-mlir public
// sources); where sources disagree the choice is written next to the number.
#include "meshplan/device/descriptor.hpp"

#include <bit>

namespace meshplan::device {

uint64_t ChipDesc::l1_usable_top() const {
  uint64_t top = l1_unreserved_base +
                 static_cast<uint64_t>(static_cast<double>(l1_size - l1_unreserved_base) * l1_usable_fraction);
  return top / l1_alignment * l1_alignment;
}

Hash128 ChipDesc::hash() const {
  Hasher h;
  h.string("meshplan.chip.v1").string(name).u32(grid_x).u32(grid_y).u64(l1_size);
  h.u64(l1_unreserved_base).f64(l1_usable_fraction).u32(dram_banks).u64(dram_bank_size);
  h.u32(l1_alignment).u32(dram_alignment).f64(clock_ghz).u32(matmul_flops_per_cycle);
  h.u32(eltwise_elems_per_cycle).u32(noc_bytes_per_cycle).f64(dram_gbps).u32(ethernet_links);
  h.f64(ethernet_gbps).u64(dispatch_ns);
  return h.digest();
}

Status ChipDesc::verify() const {
  if (grid_x == 0 || grid_y == 0) return fail(ErrorCode::invalid_argument, "chip '", name, "': empty core grid");
  if (l1_size == 0 || l1_unreserved_base >= l1_size)
    return fail(ErrorCode::invalid_argument, "chip '", name, "': L1 unreserved base ", l1_unreserved_base,
                " is not below L1 size ", l1_size);
  if (dram_banks == 0 || dram_bank_size == 0)
    return fail(ErrorCode::invalid_argument, "chip '", name, "': no DRAM");
  if (!std::has_single_bit(l1_alignment) || !std::has_single_bit(dram_alignment))
    return fail(ErrorCode::invalid_argument, "chip '", name, "': alignments must be powers of two");
  if (!(l1_usable_fraction > 0.0 && l1_usable_fraction <= 1.0))
    return fail(ErrorCode::invalid_argument, "chip '", name, "': l1_usable_fraction must be in (0, 1]");
  return {};
}

ChipDesc wormhole_b0() {
  ChipDesc d;
  d.name = "wormhole_b0";
  d.grid_x = 8;
  d.grid_y = 8;
  d.l1_size = 1499136;            // 1464 KiB per Tensix.
  d.l1_unreserved_base = 102400;  // 100 KiB; system descriptors show 97,248-104,224: we take 100 KiB.
  d.l1_usable_fraction = 0.95;    // tt-mlir's cap.
  d.dram_banks = 12;              // 6 GDDR6 channels, 12 banks of 1 GiB.
  d.dram_bank_size = 1ull << 30;
  d.l1_alignment = 16;
  d.dram_alignment = 32;
  d.clock_ghz = 1.0;
  d.matmul_flops_per_cycle = 4096;  // LoFi; a 32x32x32 tile-matmul takes 16 cycles.
  d.eltwise_elems_per_cycle = 32;
  d.noc_bytes_per_cycle = 32;
  d.dram_gbps = 288.0;  // Peak; 267 measured. The timing model uses peak.
  d.ethernet_links = 16;
  d.ethernet_gbps = 12.5;
  d.dispatch_ns = 1000;
  return d;
}

Result<ChipDesc> builtin_chip(std::string_view name) {
  if (name == "wormhole_b0" || name == "n150") return wormhole_b0();
  std::string known;
  for (auto n : builtin_chip_names()) known += (known.empty() ? "" : ", ") + std::string(n);
  return fail(ErrorCode::not_found, "unknown device '", name, "' (built-in devices: ", known, ")");
}

std::vector<std::string_view> builtin_chip_names() { return {"wormhole_b0", "n150"}; }

}  // namespace meshplan::device
