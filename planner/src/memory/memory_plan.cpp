// Address assignment: L1 interval packing (pack_l1) and DRAM replay through device::BankAllocator.
#include "meshplan/planner/memory_plan.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <sstream>

#include "memory/memory_packed.hpp"
#include "meshplan/device/allocator.hpp"
#include "meshplan/device/placement.hpp"
#include "meshplan/planner/candidates.hpp"

namespace meshplan::planner {

namespace {

/// No value (freed_inside: the op frees none inside itself).
constexpr ValueId kNoValue = std::numeric_limits<ValueId>::max();

struct Allocators {
  device::BankAllocator dram, l1;
  explicit Allocators(const device::ChipDesc& chip)
      : dram("DRAM", 0, chip.dram_bank_size, chip.dram_alignment,
             device::BankAllocator::Direction::bottom_up),
        l1("L1", chip.l1_unreserved_base, chip.l1_usable_top(), chip.l1_alignment,
           device::BankAllocator::Direction::top_down) {}
  device::BankAllocator& of(device::BufferType b) {
    return b == device::BufferType::dram ? dram : l1;
  }
};

uint64_t bytes_for(const Value& v, const TensorLayout& t, const device::ChipDesc& chip,
                   uint32_t* page) {
  *page = device::natural_page_size(v.shape, t.dtype, t.layout);
  if (t.in_l1()) return l1_bytes_per_core(v, t, chip);
  device::TensorPlacement p = placement_of(v, t);
  return device::interleaved_bytes_per_bank(device::page_count(p), *page, chip.dram_banks,
                                            chip.dram_alignment);
}

// Lifetime of a value in schedule positions, inclusive, as the runtime allocates and frees it.
std::pair<int, int> lifetime(const Schedule& s, ValueId v, int n) {
  int first = std::max(s.defined_at(v), 0);
  int last = s.last_use(v) >= 0 ? s.last_use(v) : first;
  return {first, std::min(last, std::max(n - 1, 0))};
}

/// The value op `pos` frees inside itself (a conv2d with deallocate_activation: its input, after
/// the halo step copied it, before its result is allocated), or kNoValue. An error when the
/// config asks it of an input the op may not free: one read after the op (or a program output),
/// or that the op also reads as another operand.
Result<ValueId> freed_inside(const Graph& g, const Schedule& s, const LayoutPlan& layout, int pos,
                             ErrorCode code, std::string_view prefix) {
  OpId o = s.order()[pos];
  if (!layout.configs[o].deallocate_activation) return kNoValue;
  const Op& op = g.ops[o];
  if (op.kind != device::OpKind::conv2d || op.operands.empty())
    return fail(code, prefix, "op '", op.name, "': deallocate_activation is a conv2d option");
  ValueId v = op.operands[0];
  if (s.last_use(v) != pos)
    return fail(code, prefix, "conv2d '", op.name, "' frees its input '", g.values[v].name,
                "' (deallocate_activation) but ",
                s.last_use(v) >= static_cast<int>(s.order().size())
                    ? std::string("it is a program output")
                    : str("op '", g.ops[s.order()[s.last_use(v)]].name, "' reads it later"));
  if (std::count(op.operands.begin(), op.operands.end(), v) != 1)
    return fail(code, prefix, "conv2d '", op.name, "' frees its input '", g.values[v].name,
                "' (deallocate_activation) but also reads it as another operand");
  if (!layout.tensors[v].in_l1())
    return fail(code, prefix, "conv2d '", op.name, "' frees its input '", g.values[v].name,
                "' (deallocate_activation) but it is not in L1");
  return v;
}

/// OpModel's verdict on op `o` with its planned layouts and config; a rejection is an error
/// with `code`, `prefix` and OpModel's reason.
Result<device::OpValidation> validate_at(OpQuery& query, const Graph& g, const LayoutPlan& layout,
                                         OpId o, ErrorCode code, std::string_view prefix) {
  const Op& op = g.ops[o];
  std::vector<const TensorLayout*> in;
  for (ValueId v : op.operands) in.push_back(&layout.tensors[v]);
  device::OpValidation v = query.validate(op.kind, op.name, op.operands, in, op.results[0],
                                          layout.tensors[op.results[0]], layout.configs[o]);
  if (!v.ok)
    return fail(code, prefix,
                query
                    .explain(op.kind, op.name, op.operands, in, op.results[0],
                             layout.tensors[op.results[0]], layout.configs[o])
                    .reason);
  return v;
}

}  // namespace

Result<L1Packing> pack_l1(const Graph& g, const Schedule& s, const LayoutPlan& layout,
                          const device::ChipDesc& chip) {
  L1Packing out;
  int n = static_cast<int>(s.order().size());
  out.address.assign(g.values.size(), 0);
  out.cb_bytes.assign(s.order().size(), 0);
  OpQuery query(g, chip);
  // Lifetimes in half steps: step 2p is op p with its operands live (a conv2d freeing its input
  // runs its halo step there), 2p + 1 the op with its results live. A value lives from 2 * its
  // definition to 2 * its last use + 1, except that an input the op frees inside itself ends at
  // 2p and that op's results start at 2p + 1: they may share L1.
  std::vector<char> frees_inside(std::max(n, 1), 0);
  std::vector<char> freed_early(g.values.size(), 0);
  for (int pos = 0; pos < n; ++pos) {
    device::OpValidation v = MESHPLAN_TRY(validate_at(
        query, g, layout, s.order()[pos], ErrorCode::invalid_argument, "memory plan: "));
    out.cb_bytes[pos] = v.cb_bytes_per_core;
    ValueId freed = MESHPLAN_TRY(
        freed_inside(g, s, layout, pos, ErrorCode::invalid_argument, "memory plan: "));
    if (freed != kNoValue) {
      frees_inside[pos] = 1;
      freed_early[freed] = 1;
    }
  }
  struct Item {
    ValueId v;
    int first, last;
    uint64_t size, floor;
  };
  std::vector<Item> items;
  const uint64_t base = chip.l1_unreserved_base, top = chip.l1_usable_top();
  for (ValueId v = 0; v < g.values.size(); ++v) {
    if (!layout.tensors[v].in_l1()) continue;
    auto [first_pos, last_pos] = lifetime(s, v, n);
    int first = 2 * first_pos + (s.defined_at(v) >= 0 && frees_inside[first_pos] ? 1 : 0);
    int last = std::max(first, 2 * last_pos + (freed_early[v] ? 0 : 1));
    uint64_t cb = 0;
    for (int p = first_pos; p <= last_pos && p < n; ++p) cb = std::max(cb, out.cb_bytes[p]);
    uint64_t floor = (base + cb + chip.l1_alignment - 1) / chip.l1_alignment * chip.l1_alignment;
    items.push_back(
        Item{v, first, last, l1_bytes_per_core(g.values[v], layout.tensors[v], chip), floor});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.size != b.size ? a.size > b.size : a.first != b.first ? a.first < b.first : a.v < b.v;
  });
  // Placed items per schedule position, so overlap queries touch only the item's lifetime: a
  // list per position through one node buffer (a vector per position was a third of the
  // packing's allocations). The order a position lists its items in does not matter: the
  // overlapping ranges are sorted below.
  struct Placed {
    uint32_t item, next;
  };
  constexpr uint32_t kEnd = UINT32_MAX;
  std::vector<uint32_t> head(std::max(2 * n, 2), kEnd);
  std::vector<Placed> placed;
  std::vector<uint64_t> addr(items.size(), 0);
  std::vector<uint32_t> stamp(items.size(), 0);
  std::vector<uint32_t> overlapping;
  std::vector<std::pair<uint64_t, uint64_t>> occupied, merged;
  uint64_t lowest = top;
  for (uint32_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    overlapping.clear();
    for (int p = it.first; p <= it.last; ++p)
      for (uint32_t k = head[p]; k != kEnd; k = placed[k].next)
        if (uint32_t j = placed[k].item; stamp[j] != i + 1) {
          stamp[j] = i + 1;
          overlapping.push_back(j);
        }
    // Occupied address ranges of the tensors live with this one, merged: two of them may
    // overlap each other in address (their lifetimes need not overlap), so a gap is only a gap
    // between merged ranges.
    occupied.clear();
    for (uint32_t j : overlapping) occupied.emplace_back(addr[j], addr[j] + items[j].size);
    std::sort(occupied.begin(), occupied.end());
    merged.clear();
    for (const auto& r : occupied)
      if (!merged.empty() && r.first <= merged.back().second)
        merged.back().second = std::max(merged.back().second, r.second);
      else
        merged.push_back(r);
    // Walk the gaps from the top down; keep the smallest gap above some live tensor that holds
    // the item, else take the space below the lowest one.
    uint64_t ceiling = top, best_gap = UINT64_MAX, best_addr = 0;
    bool found = false;
    for (auto r = merged.rbegin(); r != merged.rend(); ++r) {
      uint64_t end = std::min(r->second, ceiling);
      if (ceiling - end >= it.size) {
        uint64_t a = ceiling - it.size;
        if (a >= it.floor && ceiling - end < best_gap) {
          best_gap = ceiling - end;
          best_addr = a;
          found = true;
        }
      }
      ceiling = std::min(ceiling, r->first);
    }
    if (!found && ceiling >= it.floor + it.size) {
      best_addr = ceiling - it.size;
      found = true;
    }
    if (!found) {
      out.unplaced.push_back(it.v);
      continue;
    }
    addr[i] = best_addr;
    out.address[it.v] = best_addr;
    lowest = std::min(lowest, best_addr);
    for (int p = it.first; p <= it.last; ++p) {
      placed.push_back(Placed{i, head[p]});
      head[p] = static_cast<uint32_t>(placed.size() - 1);
    }
  }
  out.high_water = top - lowest;
  return out;
}

std::string L1Packing::print(const Graph& g, const Schedule& s, const LayoutPlan& layout,
                             const device::ChipDesc& chip) const {
  std::ostringstream o;
  int n = static_cast<int>(s.order().size());
  for (ValueId v = 0; v < g.values.size(); ++v) {
    if (!layout.tensors[v].in_l1()) continue;
    auto [first, last] = lifetime(s, v, n);
    o << "%" << g.values[v].name << " [" << first << ", " << last << "] "
      << l1_bytes_per_core(g.values[v], layout.tensors[v], chip) << " B/core @" << address[v]
      << "\n";
  }
  for (ValueId v : unplaced) o << "unplaced %" << g.values[v].name << "\n";
  o << "l1 high-water " << high_water << "\n";
  return o.str();
}

Result<MemoryPlan> plan_memory(const Graph& g, const Schedule& s, const LayoutPlan& layout,
                               const device::ChipDesc& chip) {
  L1Packing packing = MESHPLAN_TRY(pack_l1(g, s, layout, chip));
  return plan_memory_packed(g, s, layout, chip, packing);
}

Result<MemoryPlan> plan_memory_packed(const Graph& g, const Schedule& s, const LayoutPlan& layout,
                                      const device::ChipDesc& chip, const L1Packing& packing) {
  MemoryPlan m;
  m.address.assign(g.values.size(), 0);
  m.bytes_per_bank.assign(g.values.size(), 0);
  m.page_size.assign(g.values.size(), 0);
  for (ValueId v = 0; v < g.values.size(); ++v)
    m.bytes_per_bank[v] = bytes_for(g.values[v], layout.tensors[v], chip, &m.page_size[v]);
  if (!packing.unplaced.empty()) {
    const Value& v = g.values[packing.unplaced[0]];
    return fail(ErrorCode::resource_exhausted, "L1 memory plan: tensor '", v.name, "' ",
                shape_string(v.shape), " (", m.bytes_per_bank[packing.unplaced[0]],
                " B per core) does not fit in L1 beside the tensors live with it");
  }
  for (ValueId v = 0; v < g.values.size(); ++v)
    if (layout.tensors[v].in_l1()) m.address[v] = packing.address[v];
  m.l1_high_water = packing.high_water;
  device::BankAllocator dram("DRAM", 0, chip.dram_bank_size, chip.dram_alignment,
                             device::BankAllocator::Direction::bottom_up);
  auto place = [&](ValueId v) -> Status {
    if (layout.tensors[v].in_l1()) return {};
    auto addr = dram.allocate(m.bytes_per_bank[v], g.values[v].name);
    if (!addr)
      return std::unexpected(with_context(
          addr.error(),
          str("placing tensor '", g.values[v].name, "' ", shape_string(g.values[v].shape))));
    m.address[v] = *addr;
    return {};
  };
  for (ValueId a : g.arguments) MESHPLAN_TRY(place(a));
  for (size_t pos = 0; pos < s.order().size(); ++pos) {
    for (ValueId r : g.ops[s.order()[pos]].results) MESHPLAN_TRY(place(r));
    for (ValueId v : s.dying_at(static_cast<int>(pos)))
      if (!layout.tensors[v].in_l1()) MESHPLAN_TRY(dram.free(m.address[v]));
  }
  m.dram_high_water = dram.high_water();
  return m;
}

Status verify_memory(const Graph& g, const Schedule& s, const LayoutPlan& layout,
                     const MemoryPlan& m, const device::ChipDesc& chip) {
  OpQuery query(g, chip);
  std::vector<uint64_t> cb_bytes(s.order().size(), 0);
  for (size_t pos = 0; pos < s.order().size(); ++pos) {
    device::OpValidation v = MESHPLAN_TRY(validate_at(
        query, g, layout, s.order()[pos], ErrorCode::internal, "memory plan does not verify: "));
    cb_bytes[pos] = v.cb_bytes_per_core;
  }
  return verify_memory_packed(g, s, layout, m, chip, cb_bytes);
}

Status verify_memory_packed(const Graph& g, const Schedule& s, const LayoutPlan& layout,
                            const MemoryPlan& m, const device::ChipDesc& chip,
                            const std::vector<uint64_t>& cb_bytes) {
  if (cb_bytes.size() != s.order().size())
    return fail(ErrorCode::internal, "memory plan does not verify: ", cb_bytes.size(),
                " circular-buffer sizes for ", s.order().size(), " scheduled ops");
  Allocators alloc(chip);
  auto take = [&](ValueId v) -> Status {
    auto st = alloc.of(layout.tensors[v].buffer)
                  .allocate_at(m.address[v], m.bytes_per_bank[v], g.values[v].name);
    if (!st) return std::unexpected(with_context(st.error(), "memory plan does not verify"));
    return {};
  };
  for (ValueId a : g.arguments) MESHPLAN_TRY(take(a));
  for (size_t pos = 0; pos < s.order().size(); ++pos) {
    const Op& op = g.ops[s.order()[pos]];
    uint64_t cb_top = chip.l1_unreserved_base + cb_bytes[pos];
    auto check_cbs = [&]() -> Status {
      if (cb_top > alloc.l1.lowest_allocated())
        return fail(ErrorCode::internal, "memory plan does not verify: op '", op.name,
                    "': circular buffers [", chip.l1_unreserved_base, ", ", cb_top,
                    ") reach a live L1 tensor at ", alloc.l1.lowest_allocated());
      return {};
    };
    // A conv2d that frees its input: the halo step runs with the input live, then the input is
    // freed and the results allocated (they may take its L1); the circular buffers (with the
    // halo buffer) stay below every tensor live at either step.
    ValueId freed = MESHPLAN_TRY(freed_inside(g, s, layout, static_cast<int>(pos),
                                              ErrorCode::internal,
                                              "memory plan does not verify: "));
    if (freed != kNoValue) {
      MESHPLAN_TRY(check_cbs());
      MESHPLAN_TRY(alloc.l1.free(m.address[freed]));
    }
    for (ValueId r : op.results) MESHPLAN_TRY(take(r));
    MESHPLAN_TRY(check_cbs());
    for (ValueId d : s.dying_at(static_cast<int>(pos)))
      if (d != freed) MESHPLAN_TRY(alloc.of(layout.tensors[d].buffer).free(m.address[d]));
  }
  MESHPLAN_TRY(alloc.dram.verify());
  MESHPLAN_TRY(alloc.l1.verify());
  return {};
}

std::string MemoryPlan::print(const Graph& g) const {
  std::ostringstream out;
  for (ValueId v = 0; v < address.size(); ++v)
    out << "%" << g.values[v].name << " @" << address[v] << " " << bytes_per_bank[v]
        << " B/bank page " << page_size[v] << "\n";
  out << "dram high-water " << dram_high_water << " l1 high-water " << l1_high_water << "\n";
  return out.str();
}

}  // namespace meshplan::planner
