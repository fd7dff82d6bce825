// flatten_spatial: which ops form regions, the rewrite (flat shapes, input_nhw, edge reshapes,
// outputs kept), the plan's reshape input transform, and that flat plans compute what the NHWC
// plans compute on every policy; --no-flatten-spatial plans the graph as given.
#include <doctest/doctest.h>

#include "meshplan/planner/flatten_spatial.hpp"
#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/input_transform.hpp"
#include "planner/builder.hpp"

using namespace meshplan;
using device::OpKind;
using planner::Attribute;

namespace {

Attribute pad1() {
  return Attribute{"padding", std::vector<int64_t>{1, 1}};
}

/// x [2,6,5,8] -> conv c1 (+relu) -> max_pool p1 [2,3,2,8] -> a = add(p1, y) -> reduce_sum r
/// (an edge); a is also output 1 and feeds the graph's reshape rs. y [2,3,2,8] also feeds a
/// permute (an edge), so it enters the region through a reshape.
planner::Graph region_graph() {
  test::GraphBuilder b("flat");
  auto x = b.input("x", {2, 6, 5, 8});
  auto y = b.input("y", {2, 3, 2, 8});
  auto w = b.param("w", {8, 3, 3, 8});
  auto c1 =
      b.op(OpKind::conv2d, "c1", {x, w}, {Attribute{"activation", std::string("relu")}, pad1()});
  auto p1 = b.op(OpKind::max_pool2d, "p1", {c1},
                 {Attribute{"kernel", std::vector<int64_t>{2, 2}},
                  Attribute{"stride", std::vector<int64_t>{2, 2}}});
  auto a = b.add("a", p1, y);
  auto r = b.op(OpKind::reduce_sum, "r", {a}, {Attribute{"dims", std::vector<int64_t>{1, 2}}});
  auto rs = b.op(OpKind::reshape, "rs", {a}, {Attribute{"shape", std::vector<int64_t>{2, 48}}});
  auto yp = b.op(OpKind::permute, "yp", {y}, {Attribute{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  b.output(r);
  b.output(a);
  b.output(rs);
  b.output(yp);
  return b.finish();
}

std::string names_of(const planner::Graph& g) {
  std::string s;
  for (const planner::Op& op : g.ops) s += op.name + " ";
  return s;
}

}  // namespace

TEST_CASE("flatten_spatial finds regions of conv2d, pools and shape-preserving eltwise ops") {
  planner::Graph g = region_graph();
  planner::SpatialRegions r = planner::find_spatial_regions(g);
  CHECK(r.count == 1);
  CHECK(r.print(g) == "region 0: c1 p1 a\n");

  SUBCASE("eltwise ops alone, broadcasting binaries and reshapes make no region") {
    test::GraphBuilder b("none");
    auto x = b.input("x", {1, 4, 4, 8});
    auto bias = b.input("bias", {1, 1, 1, 8});
    auto s = b.add("s", b.relu("r", x), bias);  // relu region without a window op: none
    auto w = b.param("w", {8, 1, 1, 8});
    auto c = b.op(OpKind::conv2d, "c", {s, w});
    auto t = b.add("t", c, bias);  // broadcast: an edge
    b.output(t);
    planner::Graph h = b.finish();
    CHECK(planner::find_spatial_regions(h).print(h) == "region 0: c\n");
  }
  SUBCASE("on a mesh graph arguments keep their shapes and enter through a reshape") {
    planner::GraphBuilder m("mesh");
    m.mesh(1, 2, {"x"});
    auto x = m.input("x", {1, 6, 6, 4});
    auto w = m.parameter("w", {4, 3, 3, 4});
    m.output(m.op("conv2d", {x, w}, {}, "c"));
    auto mg = m.build();
    REQUIRE(mg);
    CHECK(planner::find_spatial_regions(*mg).count == 1);
    auto r = planner::flatten_spatial(*mg);
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
    CHECK(r->inputs.empty());
    CHECK(planner::print_flattened(*mg, *r) == "regions 1 flat_ops 1 reshapes 2 rewired 0\n");
    CHECK(mg->values[mg->arguments[0]].shape == std::vector<int64_t>{1, 6, 6, 4});
    CHECK(mg->values[mg->outputs[0]].shape == std::vector<int64_t>{1, 4, 4, 4});
  }
}

TEST_CASE("flatten_spatial rewrites a region, puts reshapes at its edges and keeps outputs") {
  planner::Graph g = region_graph();
  planner::Graph before = g;
  auto res = planner::flatten_spatial(g);
  REQUIRE_MESSAGE(res, (res ? std::string() : res.error().message));
  // x only feeds c1: planned flat with a host transform. y also feeds permute: an entry
  // reshape. a feeds reduce_sum and is an output: one exit reshape, the output keeps the name;
  // the graph's own reshape rs takes the flat value (rewired).
  CHECK(planner::print_flattened(g, *res) ==
        "regions 1 flat_ops 3 reshapes 2 rewired 1\n"
        "x [2x6x5x8] -> [1x1x60x8]\n");
  CHECK(names_of(g) == "c1 p1 y.to_flat a a.to_nhwc r rs yp ");
  auto value = [&](std::string_view name) -> const planner::Value& {
    for (const planner::Value& v : g.values)
      if (v.name == name) return v;
    FAIL("no value ", name);
    return g.values[0];
  };
  CHECK(value("c1").shape == std::vector<int64_t>{1, 1, 60, 8});
  CHECK(value("p1").shape == std::vector<int64_t>{1, 1, 12, 8});
  CHECK(value("y.flat").shape == std::vector<int64_t>{1, 1, 12, 8});
  CHECK(value("a.flat").shape == std::vector<int64_t>{1, 1, 12, 8});
  CHECK(value("y").shape == std::vector<int64_t>{2, 3, 2, 8});
  // Outputs: same names and shapes as before.
  REQUIRE(g.outputs.size() == before.outputs.size());
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    CHECK(g.values[g.outputs[i]].name == before.values[before.outputs[i]].name);
    CHECK(g.values[g.outputs[i]].shape == before.values[before.outputs[i]].shape);
  }
  for (const planner::Op& op : g.ops) {
    CAPTURE(op.name);
    const Attribute* nhw = op.attribute("input_nhw");
    if (op.name == "c1") {
      REQUIRE(nhw);
      CHECK(std::get<std::vector<int64_t>>(nhw->value) == std::vector<int64_t>{2, 6, 5});
    } else if (op.name == "p1") {
      REQUIRE(nhw);
      CHECK(std::get<std::vector<int64_t>>(nhw->value) == std::vector<int64_t>{2, 6, 5});
    } else {
      CHECK(nhw == nullptr);
    }
  }
  // Flattened again: nothing left (window ops already carry input_nhw).
  CHECK(planner::find_spatial_regions(g).count == 0);
}

TEST_CASE("compile plans regions flat with a reshape input transform; the option turns it off") {
  planner::Graph g = region_graph();
  planner::PlannerOptions o;
  o.policy = "greedy";
  auto on = planner::compile(g, device::wormhole_b0(), o);
  REQUIRE_MESSAGE(on, (on ? std::string() : on.error().message));
  auto plan = runtime::verify_plan(on->bytes, "on");
  REQUIRE_MESSAGE(plan, (plan ? std::string() : plan.error().message));
  CHECK(plan->plan().header()->options()->flatten_spatial());
  const auto* transforms = plan->plan().input_transforms();
  REQUIRE(transforms);
  REQUIRE(transforms->size() == 3);  // x y w
  CHECK(transforms->Get(0)->kind() == fb::InputTransformKind::reshape);
  CHECK(transforms->Get(1)->kind() == fb::InputTransformKind::none);
  CHECK(transforms->Get(2)->kind() == fb::InputTransformKind::conv_weight);
  CHECK(std::ranges::equal(runtime::user_input_shape(*plan, 0), std::vector<int64_t>{2, 6, 5, 8}));
  CHECK(std::ranges::equal(plan->placement(plan->plan().inputs()->Get(0)).shape,
                           std::vector<int64_t>{1, 1, 60, 8}));
  // The conv's config carries the geometry through the plan to the runtime.
  bool seen = false;
  for (const fb::OpPlan* op : *plan->plan().ops())
    if (op->kind() == fb::OpKind::conv2d) {
      seen = true;
      CHECK(op->config()->input_n() == 2);
      CHECK(op->config()->input_h() == 6);
      CHECK(op->config()->input_w() == 5);
    }
  CHECK(seen);

  planner::PlannerOptions off_options = o;
  off_options.flatten_spatial = false;
  auto off = planner::compile(g, device::wormhole_b0(), off_options);
  REQUIRE(off);
  CHECK(off->key != on->key);
  CHECK(off->graph_key == on->graph_key);
  auto off_plan = runtime::verify_plan(off->bytes, "off");
  REQUIRE(off_plan);
  CHECK_FALSE(off_plan->plan().header()->options()->flatten_spatial());
  // Off: the graph as given (ops and shapes), no reshape transform, no geometry.
  CHECK(off_plan->plan().ops()->size() == g.ops.size());
  for (const fb::OpPlan* op : *off_plan->plan().ops()) CHECK(op->config()->input_n() == 0);
  CHECK(off_plan->plan().input_transforms()->Get(0)->kind() == fb::InputTransformKind::none);
  CHECK(std::ranges::equal(off_plan->placement(off_plan->plan().inputs()->Get(0)).shape,
                           std::vector<int64_t>{2, 6, 5, 8}));
  // A graph without a region gives the same plan bytes either way (only the key differs).
  test::GraphBuilder m("mm");
  auto a = m.input("a", {1, 4, 4, 32});
  m.output(m.relu("r", a));
  planner::Graph mg = m.finish();
  auto plain_on = planner::compile(mg, device::wormhole_b0(), o);
  auto plain_off = planner::compile(mg, device::wormhole_b0(), off_options);
  REQUIRE(plain_on);
  REQUIRE(plain_off);
  auto pon = runtime::verify_plan(plain_on->bytes, "mm");
  auto poff = runtime::verify_plan(plain_off->bytes, "mm");
  REQUIRE(pon);
  REQUIRE(poff);
  CHECK(pon->plan().ops()->size() == poff->plan().ops()->size());
  CHECK(pon->plan().input_transforms() == nullptr);
  CHECK_FALSE(pon->plan().header()->options()->flatten_spatial());
}

TEST_CASE("flat plans compute what NHWC plans compute, on every policy") {
  planner::Graph g = region_graph();
  for (const char* policy : {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"}) {
    CAPTURE(policy);
    planner::PlannerOptions o;
    o.policy = policy;
    test::E2E on = test::run_e2e(g, device::wormhole_b0(), o);  // checks against its reference
    // Consistency check, not a validation: both sum device::estimate().
    CHECK(on.estimated_ns == on.device_ns);
    // Same host inputs (NHWC, the user's shapes) through both plans: the same outputs.
    planner::PlannerOptions off_options = o;
    off_options.flatten_spatial = false;
    auto c_on = planner::compile(g, device::wormhole_b0(), o);
    auto c_off = planner::compile(g, device::wormhole_b0(), off_options);
    REQUIRE(c_on);
    REQUIRE(c_off);
    auto p_on = runtime::verify_plan(c_on->bytes, "on");
    auto p_off = runtime::verify_plan(c_off->bytes, "off");
    REQUIRE(p_on);
    REQUIRE(p_off);
    auto inputs = runtime::random_inputs(*p_off, 3);
    auto views = runtime::views_of(inputs);
    auto ref_off = runtime::run_reference(*p_off, views);
    REQUIRE(ref_off);
    auto dev = device::EmulatedDevice::create(device::wormhole_b0());
    REQUIRE(dev);
    auto exe = runtime::Executable::bind(*p_on, **dev);
    REQUIRE(exe);
    auto run = (*exe)->run(views);
    REQUIRE_MESSAGE(run, (run ? std::string() : run.error().message));
    REQUIRE(run->outputs.size() == ref_off->size());
    for (size_t i = 0; i < run->outputs.size(); ++i)
      CHECK(run->outputs[i].shape == (*ref_off)[i].shape);
    runtime::CheckReport report =
        runtime::check_outputs(run->outputs, *ref_off, runtime::kDefaultTolerance);
    CHECK_MESSAGE(report.ok, "relative error ", report.relative_error);
  }
}

TEST_CASE("a reshape input transform checks the host shape and verify_plan checks the volume") {
  planner::Graph g = region_graph();
  planner::PlannerOptions o;
  o.policy = "dram";
  auto on = planner::compile(g, device::wormhole_b0(), o);
  REQUIRE(on);
  auto plan = runtime::verify_plan(on->bytes, "on");
  REQUIRE(plan);
  std::vector<float> data(2 * 6 * 5 * 8, 1.0f), out(data.size());
  std::vector<int64_t> wrong{2, 5, 6, 8};
  auto bad = runtime::apply_input_transform(*plan, 0, runtime::TensorView{wrong, data}, out);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("flattens into [1x1x60x8]") != std::string::npos);
  std::vector<int64_t> right{2, 6, 5, 8};
  REQUIRE(runtime::apply_input_transform(*plan, 0, runtime::TensorView{right, data}, out));
  CHECK(out == data);
}

TEST_CASE("a graph may give the flat form itself: attribute input_nhw, checked against the shape") {
  auto json = [](const std::string& rows) {
    return R"({ "name": "given", "arguments": [
      { "value": { "name": "x", "shape": [1, 1, )" +
           rows + R"(, 8], "dtype": "bf16" }, "kind": "input" },
      { "value": { "name": "w", "shape": [16, 3, 3, 8], "dtype": "bf16" }, "kind": "parameter" }],
      "ops": [{ "name": "c", "kind": "conv2d", "operands": ["x", "w"], "results": [{ "name": "y" }],
                "attributes": [{ "name": "input_nhw", "ints": [2, 4, 5] },
                               { "name": "padding", "ints": [1, 1] }] }],
      "outputs": ["y"] })";
  };
  auto g = planner::import_graph_json(json("40"), "given.json");
  REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
  CHECK(g->values[g->outputs[0]].shape == std::vector<int64_t>{1, 1, 40, 16});
  CHECK(planner::find_spatial_regions(*g).count == 0);  // already flat
  planner::PlannerOptions o;
  o.policy = "greedy";
  test::E2E e = test::run_e2e(*g, device::wormhole_b0(), o);
  // Consistency check, not a validation: both sum device::estimate().
  CHECK(e.estimated_ns == e.device_ns);
  auto bad = planner::import_graph_json(json("41"), "bad.json");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("'c'") != std::string::npos);
  CHECK(bad.error().message.find("is not [1x1x40xC]") != std::string::npos);
}
