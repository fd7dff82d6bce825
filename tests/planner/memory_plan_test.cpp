// The L1 memory planner: interval packing reuses the space of dead tensors, stays above every
// op's circular buffers, reports what does not fit, and verify_memory() catches overlaps.
#include <doctest/doctest.h>

#include "graphs.hpp"
#include "meshplan/planner/memory_plan.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/schedule.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

// a -> b -> c -> d, 100 KiB each (50 tiles on one core).
planner::Graph chain() {
  GraphBuilder b("chain");
  auto x = b.relu("a", b.input("x", {320, 160}));
  x = b.relu("b", x);
  x = b.relu("c", x);
  b.output(b.relu("d", x));
  return b.finish();
}

planner::LayoutResult l1_everywhere(const planner::Graph& g, const device::ChipDesc& chip) {
  auto d = planner::LayoutDecision::all_dram(g, chip);
  REQUIRE(d);
  for (const planner::Op& op : g.ops) d->tensors[op.results[0]].buffer = device::BufferType::l1;
  auto r = planner::materialize(g, *d);
  REQUIRE(r);
  return std::move(*r);
}

planner::ValueId id(const planner::Graph& g, std::string_view name) {
  for (planner::ValueId v = 0; v < g.values.size(); ++v)
    if (g.values[v].name == name) return v;
  FAIL("no value ", name);
  return 0;
}

}  // namespace

TEST_CASE("interval packing reuses the addresses of dead tensors, from the top of L1 down") {
  device::ChipDesc chip = one_core_chip();
  planner::LayoutResult r = l1_everywhere(chain(), chip);
  planner::Schedule s = planner::Schedule::build(r.graph);
  auto packing = planner::pack_l1(r.graph, s, r.layout, chip);
  REQUIRE(packing);
  CHECK(packing->unplaced.empty());
  const auto& addr = packing->address;
  uint64_t size = 100 * 1024;
  CHECK(addr[id(r.graph, "a")] == chip.l1_usable_top() - size);
  CHECK(addr[id(r.graph, "b")] == chip.l1_usable_top() - 2 * size);
  CHECK(addr[id(r.graph, "c")] == addr[id(r.graph, "a")]);  // a is dead when c is produced
  CHECK(addr[id(r.graph, "d")] == addr[id(r.graph, "b")]);
  CHECK(packing->high_water == 2 * size);
  std::string dump = packing->print(r.graph, s, r.layout, chip);
  CHECK(dump == packing->print(r.graph, s, r.layout, chip));
  CHECK(dump.find("%c [2, 3] 102400 B/core @") != std::string::npos);

  auto memory = planner::plan_memory(r.graph, s, r.layout, chip);
  REQUIRE(memory);
  CHECK(planner::verify_memory(r.graph, s, r.layout, *memory, chip));
  // Moving c onto b's range (both live at position 2) must not verify.
  planner::MemoryPlan broken = *memory;
  broken.address[id(r.graph, "c")] = broken.address[id(r.graph, "b")];
  auto bad = planner::verify_memory(r.graph, s, r.layout, broken, chip);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("does not verify") != std::string::npos);
}

TEST_CASE("no L1 tensor goes below the circular buffers of an op in its lifetime") {
  device::ChipDesc chip = one_core_chip();
  for (const auto& g : {qkv_graph(), residual_graph(), chain()}) {
    planner::LayoutResult r = l1_everywhere(g, chip);
    planner::Schedule s = planner::Schedule::build(r.graph);
    auto packing = planner::pack_l1(r.graph, s, r.layout, chip);
    REQUIRE(packing);
    for (planner::ValueId v = 0; v < r.graph.values.size(); ++v) {
      if (!r.layout.tensors[v].in_l1()) continue;
      int first = std::max(s.defined_at(v), 0),
          last = std::min<int>(s.last_use(v), static_cast<int>(s.order().size()) - 1);
      for (int p = first; p <= last; ++p)
        CHECK(packing->address[v] >= chip.l1_unreserved_base + packing->cb_bytes[p]);
    }
    auto memory = planner::plan_memory(r.graph, s, r.layout, chip);
    REQUIRE(memory);
    CHECK(planner::verify_memory(r.graph, s, r.layout, *memory, chip));
  }
}

TEST_CASE("what does not pack is reported, and plan_memory names it") {
  device::ChipDesc chip = one_core_chip();
  planner::LayoutResult r = l1_everywhere(join_graph(), chip);  // two 800 KiB tensors live together
  planner::Schedule s = planner::Schedule::build(r.graph);
  auto packing = planner::pack_l1(r.graph, s, r.layout, chip);
  REQUIRE(packing);
  REQUIRE(packing->unplaced.size() == 1);
  auto memory = planner::plan_memory(r.graph, s, r.layout, chip);
  REQUIRE_FALSE(memory);
  CHECK(memory.error().code == ErrorCode::resource_exhausted);
  CHECK(memory.error().message.find(r.graph.values[packing->unplaced[0]].name) !=
        std::string::npos);
  // fit_and_validate demotes it: one spill, and the plan then packs.
  CHECK(planner::fit_and_validate(r, chip));
  CHECK(r.spills == 1);
}
