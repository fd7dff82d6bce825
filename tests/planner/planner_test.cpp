// The dram policy end to end inside the planner: schedule, memory plan, emitted FlatBuffer.
#include "meshplan/planner/planner.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/layout.hpp"
#include "meshplan/planner/memory_plan.hpp"
#include "meshplan/planner/schedule.hpp"
#include "meshplan/planner/testing.hpp"
#include "meshplan/runtime/plan.hpp"

#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner;

namespace {
Graph mlp() {
  auto g = load_graph_file(test::source_path("examples/models/mlp.json"));
  REQUIRE(g);
  return std::move(*g);
}
}  // namespace

TEST_CASE("schedule liveness") {
  Graph g = mlp();
  Schedule s = Schedule::build(g);
  CHECK(s.order().size() == 8);
  ValueId x = g.arguments[0];
  CHECK(s.defined_at(x) == -1);
  CHECK(s.last_use(x) == 0);
  CHECK(s.last_use(g.outputs[0]) == 8);  // outputs live to the end
  // Everything but the output dies somewhere, exactly once.
  size_t dying = 0;
  for (size_t pos = 0; pos < s.order().size(); ++pos)
    dying += s.dying_at(static_cast<int>(pos)).size();
  CHECK(dying == g.values.size() - 1);
  CHECK(s.print(g).find("0: fc1 frees %x") != std::string::npos);
}

TEST_CASE(
    "dram policy: every tensor DRAM-interleaved tiled bf16; memory plan verifies and reuses "
    "space") {
  Graph g = mlp();
  device::ChipDesc chip = device::wormhole_b0();
  Schedule s = Schedule::build(g);
  auto layout = run_layout_policy(g, s, chip, PlannerOptions::with_policy("dram"));
  REQUIRE(layout);
  for (const TensorLayout& t : layout->tensors) {
    CHECK(t.buffer == device::BufferType::dram);
    CHECK(t.memory == device::MemLayout::interleaved);
    CHECK(t.dtype == device::DType::bf16);
  }
  auto memory = plan_memory(g, s, *layout, chip);
  REQUIRE(memory);
  CHECK(verify_memory(g, s, *layout, *memory, chip));
  // Freed intermediates are reused: the high-water mark is below the sum of all tensors.
  uint64_t total = 0;
  for (uint64_t b : memory->bytes_per_bank) total += b;
  CHECK(memory->dram_high_water < total);
  // A corrupted address is caught by verify.
  MemoryPlan broken = *memory;
  broken.address[g.ops[1].results[0]] = broken.address[g.ops[0].results[0]];
  auto bad = verify_memory(g, s, *layout, broken, chip);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("overlaps") != std::string::npos);
}

TEST_CASE("compile: verified, complete and deterministic") {
  Graph g = mlp();
  auto a = compile(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"));
  auto b = compile(g, device::wormhole_b0(), PlannerOptions::with_policy("dram"));
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->bytes == b->bytes);
  auto ref = runtime::verify_plan(a->bytes, "mlp");
  REQUIRE(ref);
  const fb::Plan& p = ref->plan();
  CHECK(p.header()->format_major() == kPlanFormatMajor);
  CHECK(p.header()->planner_version()->string_view() == kPlannerVersion);
  CHECK(ref->key() == a->key);
  CHECK(p.ops()->size() == 8);
  CHECK(p.tensors()->size() == g.values.size());
  CHECK(p.inputs()->size() == 7);  // x and six parameters
  CHECK(p.header()->metrics()->estimated_ns() > 0);
  CHECK(std::string(p.header()->device()->name()->c_str()) == "wormhole_b0");
  for (const fb::OpPlan* op : *p.ops()) {
    CHECK(op->estimated_ns() > 0);
    CHECK(op->config()->grid_x() == 8);
  }
}

TEST_CASE("constants are stored in 64-byte aligned segments after the FlatBuffer") {
  std::string json =
      R"({ name: "k", arguments: [{ value: { name: "x", shape: [2, 3], dtype: "bf16" } },
      { value: { name: "c", shape: [2, 3], dtype: "bf16" }, kind: constant, data: [1, 2, 3, 4, 5, 6] }],
    ops: [{ name: "sum", kind: "add", operands: ["x", "c"], results: [{ name: "y" }] }], outputs: ["y"] })";
  auto g = import_graph_json(json);
  REQUIRE(g);
  auto plan = compile(*g, device::wormhole_b0(), PlannerOptions::with_policy("dram"));
  REQUIRE(plan);
  auto ref = runtime::verify_plan(plan->bytes, "k");
  REQUIRE(ref);
  REQUIRE(ref->plan().segments()->size() == 1);
  auto seg = ref->segment(0);
  REQUIRE(seg.size() == 24);
  CHECK((seg.data() - plan->bytes.data()) % 64 == 0);
  float third;
  std::memcpy(&third, seg.data() + 8, 4);
  CHECK(third == 3.0f);
  CHECK(ref->plan().inputs()->size() == 1);
}

TEST_CASE("planning errors name what does not fit or exist") {
  Graph g = mlp();
  PlannerOptions unknown;
  unknown.policy = "telepathy";
  auto e = compile(g, device::wormhole_b0(), unknown);
  REQUIRE_FALSE(e);
  CHECK(e.error().message.find("unknown policy 'telepathy'") != std::string::npos);
  CHECK(e.error().message.find("dram") != std::string::npos);

  // A tensor larger than DRAM: 12 banks x 1 GiB cannot hold 16 GiB of f32 (2^32 elements, the
  // most a tensor may hold).
  std::string json =
      R"({ name: "huge", arguments: [{ value: { name: "big", shape: [65536, 65536], dtype: "f32" } }],
    ops: [{ name: "r", kind: "relu", operands: ["big"], results: [{ name: "y" }] }], outputs: ["y"] })";
  auto huge = import_graph_json(json);
  REQUIRE(huge);
  auto h = compile(*huge, device::wormhole_b0(), PlannerOptions::with_policy("dram"));
  REQUIRE_FALSE(h);
  CHECK(h.error().code == ErrorCode::resource_exhausted);
  CHECK(h.error().message.find("'big'") != std::string::npos);
}
