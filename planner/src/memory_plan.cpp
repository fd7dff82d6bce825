// Address assignment by replaying the schedule through device::BankAllocator.
#include "meshplan/planner/memory_plan.hpp"

#include <map>
#include <sstream>

#include "meshplan/device/allocator.hpp"
#include "meshplan/device/placement.hpp"

namespace meshplan::planner {

namespace {

struct Allocators {
  device::BankAllocator dram, l1;
  explicit Allocators(const device::ChipDesc& chip)
      : dram("DRAM", 0, chip.dram_bank_size, chip.dram_alignment, device::BankAllocator::Direction::bottom_up),
        l1("L1", chip.l1_unreserved_base, chip.l1_usable_top(), chip.l1_alignment, device::BankAllocator::Direction::top_down) {}
  device::BankAllocator& of(device::BufferType b) { return b == device::BufferType::dram ? dram : l1; }
};

uint64_t bytes_for(const Value& v, const TensorLayout& t, const device::ChipDesc& chip, uint32_t* page) {
  *page = device::natural_page_size(v.shape, t.dtype, t.layout);
  device::TensorPlacement p = device::make_interleaved(v.name, v.shape, t.dtype, t.buffer, 0, t.layout);
  p.memory = t.memory;
  uint32_t banks = t.buffer == device::BufferType::dram ? chip.dram_banks : static_cast<uint32_t>(chip.cores());
  uint32_t align = t.buffer == device::BufferType::dram ? chip.dram_alignment : chip.l1_alignment;
  return device::interleaved_bytes_per_bank(device::page_count(p), *page, banks, align);
}

}  // namespace

Result<MemoryPlan> plan_memory(const Graph& g, const Schedule& s, const LayoutPlan& layout, const device::ChipDesc& chip) {
  MemoryPlan m;
  m.address.assign(g.values.size(), 0);
  m.bytes_per_bank.assign(g.values.size(), 0);
  m.page_size.assign(g.values.size(), 0);
  Allocators alloc(chip);
  auto place = [&](ValueId v) -> Status {
    const TensorLayout& t = layout.tensors[v];
    m.bytes_per_bank[v] = bytes_for(g.values[v], t, chip, &m.page_size[v]);
    auto addr = alloc.of(t.buffer).allocate(m.bytes_per_bank[v], g.values[v].name);
    if (!addr) return std::unexpected(with_context(addr.error(), str("placing tensor '", g.values[v].name, "' ", shape_string(g.values[v].shape))));
    m.address[v] = *addr;
    return {};
  };
  for (ValueId a : g.arguments) MESHPLAN_TRY(place(a));
  for (size_t pos = 0; pos < s.order().size(); ++pos) {
    for (ValueId r : g.ops[s.order()[pos]].results) MESHPLAN_TRY(place(r));
    for (ValueId v : s.dying_at(static_cast<int>(pos))) MESHPLAN_TRY(alloc.of(layout.tensors[v].buffer).free(m.address[v]));
  }
  m.dram_high_water = alloc.dram.high_water();
  m.l1_high_water = alloc.l1.high_water();
  return m;
}

Status verify_memory(const Graph& g, const Schedule& s, const LayoutPlan& layout, const MemoryPlan& m,
                     const device::ChipDesc& chip) {
  Allocators alloc(chip);
  auto take = [&](ValueId v) -> Status {
    auto st = alloc.of(layout.tensors[v].buffer).allocate_at(m.address[v], m.bytes_per_bank[v], g.values[v].name);
    if (!st) return std::unexpected(with_context(st.error(), "memory plan does not verify"));
    return {};
  };
  for (ValueId a : g.arguments) MESHPLAN_TRY(take(a));
  for (size_t pos = 0; pos < s.order().size(); ++pos) {
    for (ValueId r : g.ops[s.order()[pos]].results) MESHPLAN_TRY(take(r));
    for (ValueId v : s.dying_at(static_cast<int>(pos))) MESHPLAN_TRY(alloc.of(layout.tensors[v].buffer).free(m.address[v]));
  }
  MESHPLAN_TRY(alloc.dram.verify());
  MESHPLAN_TRY(alloc.l1.verify());
  return {};
}

std::string MemoryPlan::print(const Graph& g) const {
  std::ostringstream out;
  for (ValueId v = 0; v < address.size(); ++v)
    out << "%" << g.values[v].name << " @" << address[v] << " " << bytes_per_bank[v] << " B/bank page " << page_size[v] << "\n";
  out << "dram high-water " << dram_high_water << " l1 high-water " << l1_high_water << "\n";
  return out.str();
}

}  // namespace meshplan::planner
