// Mesh topology: a mesh program planned for a ring is keyed, costed, recorded and run as a ring.
// Ring and linear plans of one graph differ in key and collective time, not in layouts or
// numerics; the runtime refuses to run a plan on a mesh of the other topology, saying so; the
// planner refuses a mesh of another shape or chip.
#include <doctest/doctest.h>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/mesh_spec.hpp"
#include "meshplan/planner/candidates.hpp"
#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "meshplan/runtime/plan_query.hpp"

using namespace meshplan;
using planner::attr;

namespace {

/// A 1x8 program: x split by rows over the 8 chips, all_gather along the row, relu.
planner::Graph gather_graph() {
  planner::GraphBuilder b("ring_gather");
  b.mesh(1, 8, {"x", "y"});
  auto x = b.input("x", {32, 64});
  b.shard(x, device::MeshShardSpec{device::MeshShardType::devices, {-1, 0}, {}});
  auto g = b.op("all_gather", {x}, {attr("cluster_axis", int64_t{1}), attr("dim", int64_t{0})},
                "gather");
  b.output(b.relu(g, "act"));
  auto graph = b.build();
  REQUIRE_MESSAGE(graph, graph.error().message);
  return std::move(*graph);
}

struct Planned {
  std::vector<uint8_t> bytes;
  runtime::PlanRef plan;
};

Planned plan_for(const planner::Graph& g, std::optional<device::MeshDesc> mesh,
                 std::string policy = "dram") {
  planner::PlannerOptions o;
  o.policy = std::move(policy);
  o.mesh = std::move(mesh);
  auto compiled = planner::compile(g, device::wormhole_b0(), o);
  REQUIRE_MESSAGE(compiled, compiled.error().message);
  Planned p;
  p.bytes = std::move(compiled->bytes);
  auto ref = runtime::verify_plan(p.bytes, g.name);
  REQUIRE_MESSAGE(ref, ref.error().message);
  p.plan = *ref;
  return p;
}

uint64_t op_ns(const runtime::PlanRef& plan, std::string_view name) {
  for (const fb::OpPlan* op : *plan.plan().ops())
    if (op->name()->string_view() == name) return op->estimated_ns();
  FAIL("no op ", name);
  return 0;
}

}  // namespace

TEST_CASE("a ring mesh plan differs from the linear one in key and collective time only") {
  const planner::Graph g = gather_graph();
  const device::ChipDesc chip = device::wormhole_b0();
  device::MeshDesc line = *device::resolve_mesh_spec("1x8", chip);
  device::MeshDesc ring = *device::resolve_mesh_spec("1x8:ring", chip);
  for (const char* policy : {"dram", "greedy"}) {
    CAPTURE(policy);
    Planned by_default = plan_for(g, std::nullopt, policy);
    Planned linear = plan_for(g, line, policy);
    Planned ringed = plan_for(g, ring, policy);
    // The default mesh given explicitly is the default: same key, same bytes.
    CHECK(linear.plan.key() == by_default.plan.key());
    CHECK(linear.bytes == by_default.bytes);
    CHECK(ringed.plan.key() != linear.plan.key());
    const fb::PlanHeader* lh = linear.plan.plan().header();
    const fb::PlanHeader* rh = ringed.plan.plan().header();
    CHECK(lh->graph_key()->lo() == rh->graph_key()->lo());
    CHECK(lh->mesh()->topology() == 0);
    CHECK(rh->mesh()->topology() == 1);
    CHECK(rh->mesh()->descriptor_hash()->lo() == ring.hash().lo);
    CHECK(runtime::plan_mesh_desc(ringed.plan, chip)->hash() == ring.hash());
    // The all_gather is costed on the ring: half the bytes per link, fewer hops.
    CHECK(op_ns(ringed.plan, "gather") < op_ns(linear.plan, "gather"));
    CHECK(op_ns(ringed.plan, "act") == op_ns(linear.plan, "act"));
    CHECK(rh->metrics()->estimated_ns() < lh->metrics()->estimated_ns());
    // Layouts and addresses do not depend on the fabric.
    const auto* lt = linear.plan.plan().tensors();
    const auto* rt = ringed.plan.plan().tensors();
    REQUIRE(lt->size() == rt->size());
    for (uint32_t i = 0; i < lt->size(); ++i) {
      CHECK(lt->Get(i)->memory() == rt->Get(i)->memory());
      CHECK(lt->Get(i)->buffer() == rt->Get(i)->buffer());
      CHECK(lt->Get(i)->address() == rt->Get(i)->address());
    }
  }
}

TEST_CASE("ring and linear plans run on their meshes with equal outputs; a mismatch is refused") {
  const planner::Graph g = gather_graph();
  const device::ChipDesc chip = device::wormhole_b0();
  device::MeshDesc line = *device::resolve_mesh_spec("1x8", chip);
  device::MeshDesc ring = *device::resolve_mesh_spec("1x8:ring", chip);
  Planned linear = plan_for(g, line), ringed = plan_for(g, ring);
  auto line_mesh = device::EmulatedMesh::create(line);
  auto ring_mesh = device::EmulatedMesh::create(ring);
  REQUIRE(line_mesh);
  REQUIRE(ring_mesh);
  auto on_line = runtime::Executable::bind(linear.plan, **line_mesh);
  auto on_ring = runtime::Executable::bind(ringed.plan, **ring_mesh);
  REQUIRE_MESSAGE(on_line, on_line.error().message);
  REQUIRE_MESSAGE(on_ring, on_ring.error().message);
  std::vector<runtime::Tensor> inputs = runtime::random_inputs(ringed.plan, 5);
  auto views = runtime::views_of(inputs);
  auto a = (*on_line)->run(views);
  auto b = (*on_ring)->run(views);
  REQUIRE_MESSAGE(a, a.error().message);
  REQUIRE_MESSAGE(b, b.error().message);
  REQUIRE(a->outputs.size() == 1);
  CHECK(a->outputs[0].shape == b->outputs[0].shape);
  CHECK(a->outputs[0].data == b->outputs[0].data);  // same numerics, bit for bit
  auto want = runtime::run_reference(ringed.plan, views);
  REQUIRE(want);
  CHECK(runtime::check_outputs(b->outputs, *want, runtime::kDefaultTolerance).ok);
  // Simulated on the emulated meshes: the ring's all_gather is faster, and so is the run.
  CHECK(b->collective_ns < a->collective_ns);
  CHECK(b->device_ns < a->device_ns);
  CHECK(b->bytes_moved == a->bytes_moved);

  // The ring plan on the linear mesh (and the other way round) is refused with the reason.
  auto wrong = runtime::Executable::bind(ringed.plan, **line_mesh);
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().code == ErrorCode::incompatible);
  CHECK(wrong.error().message.find("(ring, 1 links), this mesh is 1x8 (linear, 1 links)") !=
        std::string::npos);
  CHECK_FALSE(runtime::Executable::bind(linear.plan, **ring_mesh));
  runtime::PlanQuery q;
  q.mesh = &line;
  auto miss = runtime::check_plan_matches(ringed.plan, q);
  REQUIRE_FALSE(miss);
  CHECK(miss.error().message.find("mesh 1x8 1×8 descriptor differs ( topology ring ≠ linear )") !=
        std::string::npos);
  q.mesh = &ring;
  CHECK(runtime::check_plan_matches(ringed.plan, q));
}

TEST_CASE("the planner refuses a mesh of another shape or chip, or one for a single chip") {
  const planner::Graph g = gather_graph();
  const device::ChipDesc chip = device::wormhole_b0();
  auto error = [&](const planner::Graph& graph, device::MeshDesc mesh) {
    planner::PlannerOptions o;
    o.policy = "dram";
    o.mesh = std::move(mesh);
    auto r = planner::compile(graph, chip, o);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::invalid_argument);
    return r.error().message;
  };
  CHECK(error(g, *device::resolve_mesh_spec("t3k:ring", chip)) ==
        "graph 'ring_gather' runs on a 1x8 mesh, the mesh it was to be planned for (t3k) is 2x4");
  CHECK(error(g, *device::resolve_mesh_spec("1x8:ring", device::blackhole_p150()))
            .find("mesh 1x8 is made of blackhole_p150 chips") != std::string::npos);
  device::MeshDesc unwired = *device::resolve_mesh_spec("1x8:ring", chip);
  unwired.links = 0;
  CHECK(error(g, unwired).find("field 'links' = 0") != std::string::npos);
  planner::GraphBuilder b("single");
  b.output(b.relu(b.input("x", {32, 32}), "act"));
  auto single = b.build();
  REQUIRE(single);
  CHECK(error(*single, *device::resolve_mesh_spec("1x8:ring", chip)) ==
        "graph 'single' is a single-chip program: it cannot be planned for the 1x8 mesh 1x8");
  // A 1x1 mesh on a single-chip graph is no mesh at all.
  planner::PlannerOptions o;
  o.policy = "dram";
  o.mesh = *device::resolve_mesh_spec("1x1", chip);
  auto one = planner::compile(*single, chip, o);
  REQUIRE(one);
  auto plain = planner::compile(*single, chip, planner::PlannerOptions::with_policy("dram"));
  REQUIRE(plain);
  CHECK(one->bytes == plain->bytes);
}

TEST_CASE("layout policies cost collectives on the mesh they plan for") {
  // plan_layout's result, and the OpQuery every policy scores with, price the all_gather on the
  // given mesh: the ring and linear layout results differ by exactly the difference of the two
  // plans' gather times (the emitted plans time it on their mesh too).
  const planner::Graph g = gather_graph();
  const device::ChipDesc chip = device::wormhole_b0();
  device::MeshDesc line = *device::resolve_mesh_spec("1x8", chip);
  device::MeshDesc ring = *device::resolve_mesh_spec("1x8:ring", chip);
  for (const char* policy : {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"}) {
    CAPTURE(policy);
    planner::PlannerOptions o;
    o.policy = policy;
    o.mesh = line;
    auto on_line = planner::plan_layout(g, chip, o);
    REQUIRE_MESSAGE(on_line, on_line.error().message);
    o.mesh = ring;
    auto on_ring = planner::plan_layout(g, chip, o);
    REQUIRE_MESSAGE(on_ring, on_ring.error().message);
    REQUIRE(on_ring->mesh);
    CHECK(on_ring->mesh->topology == device::Topology::ring);
    uint64_t gather_line = op_ns(plan_for(g, line, policy).plan, "gather");
    uint64_t gather_ring = op_ns(plan_for(g, ring, policy).plan, "gather");
    REQUIRE(gather_ring < gather_line);
    CHECK(on_line->estimated_ns(chip) - on_ring->estimated_ns(chip) == gather_line - gather_ring);
    // The OpQuery of a policy: the same launch priced on each mesh.
    planner::OpQuery q_line(g, chip, line), q_ring(g, chip, ring);
    const planner::Op& op = g.ops[0];
    std::vector<const planner::TensorLayout*> in = {&on_ring->layout.tensors[op.operands[0]]};
    const planner::TensorLayout& out = on_ring->layout.tensors[op.results[0]];
    CHECK(q_line.cost(op.kind, op.name, op.operands, in, op.results[0], out,
                      on_ring->layout.configs[0]) -
              q_ring.cost(op.kind, op.name, op.operands, in, op.results[0], out,
                          on_ring->layout.configs[0]) ==
          gather_line - gather_ring);
  }
}
