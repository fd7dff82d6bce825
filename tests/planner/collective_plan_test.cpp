// Planning collectives: every policy plans them (interleaved DRAM/L1 in and out, costed on the
// graph's mesh), and the estimates depend on the group, not only on the shapes.
#include <doctest/doctest.h>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/planner/candidates.hpp"
#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/plan.hpp"

using namespace meshplan;
using namespace meshplan::planner;

TEST_CASE("two all_reduces of equal shapes on different axes get different estimates") {
  device::ChipDesc chip = device::builtin_mesh("t3k")->chip;
  GraphBuilder b("two_axes");
  b.mesh(2, 4);
  auto x = b.input("x", {64, 64});
  auto a0 = b.op("all_reduce", {x}, {attr("cluster_axis", int64_t{0})}, "ar0");
  auto a1 = b.op("all_reduce", {b.relu(a0, "act")}, {attr("cluster_axis", int64_t{1})}, "ar1");
  b.output(a1);
  auto g = b.build();
  REQUIRE(g);
  // OpQuery memoizes by shapes and layouts: the group must be part of its key.
  OpQuery q(*g, chip);
  auto cost_of = [&](const Op& op) {
    TensorLayout dram = interleaved_layout(g->values[op.operands[0]], device::BufferType::dram);
    const TensorLayout* in[] = {&dram};
    return q.cost(op.kind, op.name, op.operands, in, op.results[0], dram, *op_config(op, g->mesh));
  };
  const Op* ops[2] = {nullptr, nullptr};
  for (const Op& op : g->ops) {
    if (op.name == "ar0") ops[0] = &op;
    if (op.name == "ar1") ops[1] = &op;
  }
  REQUIRE(ops[0]);
  REQUIRE(ops[1]);
  uint64_t first = cost_of(*ops[0]);
  CHECK(cost_of(*ops[1]) > first);
  CHECK(cost_of(*ops[0]) == first);
  for (const char* policy : {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"}) {
    INFO(std::string(policy));
    PlannerOptions o;
    o.policy = policy;
    auto plan = compile(*g, chip, o);
    REQUIRE_MESSAGE(plan, (plan ? "" : plan.error().message));
    auto ref = runtime::verify_plan(plan->bytes, "two_axes");
    REQUIRE(ref);
    uint64_t ns0 = 0, ns1 = 0;
    for (const fb::OpPlan* op : *ref->plan().ops()) {
      if (op->name()->string_view() == "ar0") ns0 = op->estimated_ns();
      if (op->name()->string_view() == "ar1") ns1 = op->estimated_ns();
      if (device::is_collective(static_cast<device::OpKind>(op->kind()))) {
        // Collectives read and write interleaved tensors only.
        for (uint32_t id : *op->operands())
          CHECK(ref->plan().tensors()->Get(id)->memory() == fb::MemLayout::interleaved);
        for (uint32_t id : *op->results())
          CHECK(ref->plan().tensors()->Get(id)->memory() == fb::MemLayout::interleaved);
      }
    }
    // Same tensor: 2 chips per column (axis 0) move less than 4 per row (axis 1).
    CHECK(ns0 > 0);
    CHECK(ns1 > ns0);
    const fb::MeshInfo* m = ref->plan().header()->mesh();
    REQUIRE(m);
    CHECK(m->rows() == 2);
    CHECK(m->cols() == 4);
    CHECK(m->name()->string_view() == "t3k");
  }
}
