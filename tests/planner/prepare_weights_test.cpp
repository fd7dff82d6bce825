// prepare_conv_weights: which conv2d weights the pass prepares (only arguments used solely as
// conv2d weights), what it rewrites, and what compile() records in the plan.
#include <doctest/doctest.h>

#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/prepare_weights.hpp"
#include "meshplan/runtime/input_transform.hpp"
#include "planner/builder.hpp"

using namespace meshplan;
using device::OpKind;
using planner::ArgKind;
using planner::Attribute;

namespace {

std::vector<Attribute> same_padding() {
  return {Attribute{"padding", std::vector<int64_t>{1, 1}}};
}

/// x -> conv(w1) -> conv(w2) -> conv(w2) -> conv(w3) + w3-based add -> conv(c_w constant) ...
planner::Graph pass_graph() {
  test::GraphBuilder b("prep");
  auto x = b.input("x", {1, 8, 8, 8});
  auto w1 = b.param("w1", {8, 3, 3, 8});  // prepared
  auto w2 = b.param("w2", {8, 3, 3, 8});  // shared by two convs: prepared once
  auto w3 = b.param("w3", {8, 1, 1, 8});  // also added to: not prepared
  auto w4 = b.input("w4", {8, 1, 1, 8});  // an input used as a weight: prepared
  auto w5 = b.param("w5", {8, 1, 1, 8});  // also a graph output: not prepared
  auto bias = b.param("bias", {8});
  auto c1 = b.op(OpKind::conv2d, "c1", {x, w1, bias}, same_padding());
  auto c2 = b.op(OpKind::conv2d, "c2", {c1, w2}, same_padding());
  auto c3 = b.op(OpKind::conv2d, "c3", {c2, w2}, same_padding());
  auto c4 = b.op(OpKind::conv2d, "c4", {c3, w3});
  auto c5 = b.op(OpKind::conv2d, "c5", {c4, w4});
  auto c6 = b.op(OpKind::conv2d, "c6", {c5, w5});
  auto w3r =
      b.op(OpKind::reshape, "w3r", {w3}, {Attribute{"shape", std::vector<int64_t>{1, 8, 1, 8}}});
  auto sum = b.add("sum", c6, w3r);
  b.output(sum);
  b.output(w5);
  return b.finish();
}

}  // namespace

TEST_CASE("prepare_conv_weights prepares arguments used only as conv2d weights") {
  planner::Graph g = pass_graph();
  planner::Graph before = g;
  auto candidates = planner::conv_weight_candidates(g);
  auto prepared = planner::prepare_conv_weights(g);
  REQUIRE_MESSAGE(prepared, (prepared ? std::string() : prepared.error().message));
  CHECK(prepared->size() == candidates.size());
  CHECK(planner::print_prepared(g, *prepared) ==
        "w1 [8x3x3x8] -> [72x8] groups 1\n"
        "w2 [8x3x3x8] -> [72x8] groups 1\n"
        "w4 [8x1x1x8] -> [8x8] groups 1\n");
  // Every conv using a prepared weight carries its window; the others are untouched.
  for (const planner::Op& op : g.ops) {
    CAPTURE(op.name);
    bool uses_prepared = op.kind == OpKind::conv2d &&
                         (op.name == "c1" || op.name == "c2" || op.name == "c3" || op.name == "c5");
    const Attribute* k = op.attribute("kernel");
    CHECK((k != nullptr) == uses_prepared);
    if (k && (op.name == "c1" || op.name == "c2"))
      CHECK(std::get<std::vector<int64_t>>(k->value) == std::vector<int64_t>{3, 3});
    if (k)
      CHECK(std::is_sorted(op.attributes.begin(), op.attributes.end(),
                           [](const Attribute& a, const Attribute& b) { return a.name < b.name; }));
  }
  // Results keep their shapes: the planned graph computes the same values.
  for (planner::ValueId v = 0; v < g.values.size(); ++v)
    if (g.values[v].producer != planner::kNoOp) CHECK(g.values[v].shape == before.values[v].shape);
  // A second run finds nothing left to prepare (rank-2 weights are prepared already).
  CHECK(planner::conv_weight_candidates(g).empty());
}

TEST_CASE(
    "prepare_conv_weights: constants are prepared without a transform; mixed groups and split mesh "
    "arguments are skipped") {
  using planner::attr;
  planner::GraphBuilder b("skip");
  auto x = b.input("x", {1, 6, 6, 4});
  auto wc = b.constant("wc", {4, 3, 3, 4}, std::vector<float>(4 * 9 * 4, 0.5f));
  auto wg = b.parameter("wg", {4, 1, 1, 2});
  auto c1 = b.op("conv2d", {x, wc}, {}, "c1");
  auto c2 = b.op("conv2d", {c1, wg}, {attr("groups", 2)}, "c2");
  b.output(c2);
  auto g = b.build();
  REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
  auto prepared = planner::conv_weight_candidates(*g);
  // The grouped weight gets a host transform (its groups are recorded); the constant does not.
  REQUIRE(prepared.size() == 1);
  CHECK(g->values[prepared[0].value].name == "wg");
  CHECK(prepared[0].groups == 2);
  CHECK(prepared[0].host_shape == std::vector<int64_t>{4, 1, 1, 2});
  // The constant is prepared by the pass itself: its values are permuted in the graph.
  auto constants = planner::conv_constant_candidates(*g);
  REQUIRE(constants.size() == 1);
  CHECK(g->values[constants[0].value].name == "wc");
  planner::Graph rewritten = *g;
  auto pass = planner::prepare_conv_weights(rewritten);
  REQUIRE_MESSAGE(pass, (pass ? std::string() : pass.error().message));
  CHECK(pass->size() == 1);  // only the transform of wg
  const planner::Value& wc_after = rewritten.values[constants[0].value];
  CHECK(wc_after.shape == std::vector<int64_t>{36, 4});
  CHECK(wc_after.data.size() == 36 * 4);

  SUBCASE("a weight shared by convs with different groups is not prepared") {
    planner::GraphBuilder m("mixed");
    auto y = m.input("y", {1, 6, 6, 4});
    auto w = m.parameter("w", {4, 1, 1, 2});
    auto z = m.input("z", {1, 6, 6, 2});
    m.output(m.op("conv2d", {y, w}, {attr("groups", 2)}, "a"));
    m.output(m.op("conv2d", {z, w}, {}, "c"));
    auto mg = m.build();
    REQUIRE(mg);
    CHECK(planner::conv_weight_candidates(*mg).empty());
  }
  SUBCASE("on a mesh only replicated weights are prepared") {
    planner::GraphBuilder m("mesh");
    m.mesh(1, 2, {"x"});
    auto y = m.input("y", {1, 6, 6, 4});
    auto rep = m.parameter("rep", {4, 3, 3, 4});
    auto split = m.parameter("split", {4, 1, 1, 4});
    m.shard(y, device::MeshShardSpec{device::MeshShardType::devices, {-1, 0}, {}});
    m.shard(split, device::MeshShardSpec{device::MeshShardType::devices, {-1, 0}, {}});
    // identity: each chip gets its own host tensor, so there is no single one to prepare.
    auto ident = m.parameter("ident", {4, 1, 1, 4});
    m.shard(ident, device::MeshShardSpec{device::MeshShardType::identity, {-1, -1}, {}});
    auto a = m.op("conv2d", {y, rep}, {attr("padding", std::vector<int64_t>{1, 1})}, "a");
    auto b2 = m.op("conv2d", {a, split}, {}, "b");
    m.output(m.op("conv2d", {b2, ident}, {}, "c"),
             device::MeshShardSpec{device::MeshShardType::devices, {-1, 0}, {}});
    auto mg = m.build();
    REQUIRE_MESSAGE(mg, (mg ? std::string() : mg.error().message));
    auto c = planner::conv_weight_candidates(*mg);
    REQUIRE(c.size() == 1);
    CHECK(mg->values[c[0].value].name == "rep");
  }
}

TEST_CASE("compile records a conv_weight transform per prepared input; the option turns it off") {
  planner::Graph g = pass_graph();
  planner::PlannerOptions o;
  o.policy = "greedy";
  // Weights alone: flatten_spatial would give x a reshape transform (flatten_spatial_test.cpp
  // covers both transforms in one plan).
  o.flatten_spatial = false;
  auto on = planner::compile(g, device::wormhole_b0(), o);
  REQUIRE_MESSAGE(on, (on ? std::string() : on.error().message));
  auto plan = runtime::verify_plan(on->bytes, "on");
  REQUIRE_MESSAGE(plan, (plan ? std::string() : plan.error().message));
  const auto* transforms = plan->plan().input_transforms();
  REQUIRE(transforms);
  REQUIRE(transforms->size() == plan->plan().inputs()->size());
  CHECK(plan->plan().header()->options()->prepare_weights());
  // Inputs in argument order: x w1 w2 w3 w4 w5 bias.
  const char* kinds[] = {"none",        "conv_weight", "conv_weight", "none",
                         "conv_weight", "none",        "none"};
  for (uint32_t i = 0; i < transforms->size(); ++i) {
    CAPTURE(i);
    CHECK(fb::EnumNameInputTransformKind(transforms->Get(i)->kind()) == std::string(kinds[i]));
  }
  CHECK(std::ranges::equal(runtime::user_input_shape(*plan, 1), std::vector<int64_t>{8, 3, 3, 8}));
  CHECK(std::ranges::equal(plan->placement(plan->plan().inputs()->Get(1)).shape,
                           std::vector<int64_t>{72, 8}));
  CHECK(std::ranges::equal(runtime::user_input_shape(*plan, 3), std::vector<int64_t>{8, 1, 1, 8}));

  planner::PlannerOptions off_options = o;
  off_options.prepare_weights = false;
  auto off = planner::compile(g, device::wormhole_b0(), off_options);
  REQUIRE(off);
  CHECK(off->key != on->key);
  CHECK(off->graph_key == on->graph_key);
  auto off_plan = runtime::verify_plan(off->bytes, "off");
  REQUIRE(off_plan);
  CHECK(off_plan->plan().input_transforms() == nullptr);
  CHECK_FALSE(off_plan->plan().header()->options()->prepare_weights());
  CHECK(std::ranges::equal(off_plan->placement(off_plan->plan().inputs()->Get(1)).shape,
                           std::vector<int64_t>{8, 3, 3, 8}));
  // A graph without conv2d weights has no transforms either.
  test::GraphBuilder m("mm");
  auto a = m.input("a", {32, 32});
  m.output(m.relu("r", a));
  auto plain = planner::compile(m.finish(), device::wormhole_b0(), o);
  REQUIRE(plain);
  CHECK(runtime::verify_plan(plain->bytes, "mm")->plan().input_transforms() == nullptr);
}

TEST_CASE("prepared weights run on every policy, matching the reference and the unprepared plan") {
  planner::Graph g = pass_graph();
  for (const char* policy : {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"}) {
    CAPTURE(policy);
    planner::PlannerOptions o;
    o.policy = policy;
    test::E2E on = test::run_e2e(g, device::wormhole_b0(), o);
    o.prepare_weights = false;
    test::E2E off = test::run_e2e(g, device::wormhole_b0(), o);
    // The weights are tiny here; the prepared form is never slower.
    CHECK(on.estimated_ns <= off.estimated_ns);
    // Consistency check, not a validation: both sum device::estimate().
    CHECK(on.estimated_ns == on.device_ns);
  }
}

TEST_CASE("a constant conv2d weight is prepared in the plan: same results, 2-D constant") {
  // A constant 3x3 weight with distinct values (a wrong permutation changes the result), a
  // constant that is also added elsewhere (not prepared), on every policy.
  test::GraphBuilder b("const_w");
  auto x = b.input("x", {1, 8, 8, 8});
  std::vector<float> values(8 * 3 * 3 * 8);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 23) / 23.0f - 0.5f;
  auto w = b.constant("w", {8, 3, 3, 8}, values);
  auto c1 = b.op(OpKind::conv2d, "c1", {x, w}, same_padding());
  b.output(b.relu("r", c1));
  planner::Graph g = b.finish();
  for (const char* policy : {"dram", "greedy", "beam", "df-sharding"}) {
    CAPTURE(policy);
    planner::PlannerOptions o;
    o.policy = policy;
    test::E2E on = test::run_e2e(g, device::wormhole_b0(), o);  // checks against the reference
    o.prepare_weights = false;
    test::E2E off = test::run_e2e(g, device::wormhole_b0(), o);
    CHECK(on.estimated_ns < off.estimated_ns);  // the padded [O, KH, KW, I] tiles are gone
  }
  planner::PlannerOptions o;
  o.policy = "dram";
  auto compiled = planner::compile(g, device::wormhole_b0(), o);
  REQUIRE(compiled);
  auto plan = runtime::verify_plan(compiled->bytes, "const_w");
  REQUIRE(plan);
  // The only input is x (the constant is in the plan): no conv_weight transform for the host.
  REQUIRE(plan->plan().inputs()->size() == 1);
  if (const auto* transforms = plan->plan().input_transforms())
    for (const fb::InputTransform* t : *transforms)
      CHECK(t->kind() != fb::InputTransformKind::conv_weight);
  bool found = false;
  for (const fb::TensorPlan* t : *plan->plan().tensors())
    if (t->name()->string_view() == "w") {
      found = true;
      CHECK(std::ranges::equal(*t->shape(), std::vector<int64_t>{72, 8}));
    }
  CHECK(found);
}
