// Sharding through masks, bounds and min/product reductions: compare, select and clamp are
// pointwise (clamp's scalar bounds take no factor), a minimum reduction over a sharded dim is an
// all_reduce(min), a product over a sharded dim gathers first (no collective multiplies); the
// per-device programs simulated on the host give the reference, and lower to the new ops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/spmd_host.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

// x [8, 6] split over "x" along dim 0; "y" unused.
constexpr const char* kModel = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%x: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %t: tensor<8x6xf32>) -> (tensor<8x6xf32>, tensor<8xf32>, tensor<6xf32>, tensor<6xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<8x6xf32>
  %lo = stablehlo.constant dense<-0.5> : tensor<f32>
  %hi = stablehlo.constant dense<0.5> : tensor<f32>
  %c = stablehlo.compare  GT, %x, %t,  FLOAT : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xi1>
  %s = stablehlo.select %c, %x, %zero : tensor<8x6xi1>, tensor<8x6xf32>
  %k = stablehlo.clamp %lo, %s, %hi : (tensor<f32>, tensor<8x6xf32>, tensor<f32>) -> tensor<8x6xf32>
  %inf = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %rows = stablehlo.reduce(%k init: %inf) applies stablehlo.minimum across dimensions = [1] : (tensor<8x6xf32>, tensor<f32>) -> tensor<8xf32>
  %cols = stablehlo.reduce(%k init: %inf) applies stablehlo.minimum across dimensions = [0] : (tensor<8x6xf32>, tensor<f32>) -> tensor<6xf32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %two = stablehlo.constant dense<2.0> : tensor<8x6xf32>
  %k2 = stablehlo.add %k, %two : tensor<8x6xf32>
  %prod = stablehlo.reduce(%k2 init: %one) applies stablehlo.multiply across dimensions = [0] : (tensor<8x6xf32>, tensor<f32>) -> tensor<6xf32>
  return %k, %rows, %cols, %prod : tensor<8x6xf32>, tensor<8xf32>, tensor<6xf32>, tensor<6xf32>
}
)";

Module parsed(const std::string& text) {
  auto m = parse_module(text, "t.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::move(*m);
}

}  // namespace

TEST_CASE("clamp is pointwise; a product reduction keeps its reduced dims replicated") {
  Module m = parsed(kModel);
  const auto& body = m.entry()->body.ops;
  auto op_named = [&](std::string_view name) -> const Op& {
    for (OpId o : body)
      if (m.ops[o].name == name) return m.ops[o];
    FAIL("no op ", std::string(name));
    return m.ops[body[0]];
  };
  auto clamp = sharding_rule(m, op_named("stablehlo.clamp"));
  REQUIRE_MESSAGE(clamp.has_value(), clamp.error().message);
  CHECK(clamp->print() == ", a b,  -> a b {a=8 b=6}");
  std::vector<const Op*> reduces;
  for (OpId o : body)
    if (m.ops[o].name == "stablehlo.reduce") reduces.push_back(&m.ops[o]);
  REQUIRE(reduces.size() == 3);
  auto mn = sharding_rule(m, *reduces[1]);
  REQUIRE(mn.has_value());
  CHECK(mn->reduction_kind == "min");
  CHECK(mn->print() == "a b,  -> b {a=8(reduction) b=6}");
  auto prod = sharding_rule(m, *reduces[2]);
  REQUIRE(prod.has_value());
  CHECK(prod->print() == "a b,  -> b {a=8(need_replication) b=6}");
}

TEST_CASE("masks, clamp, min and product reductions on a 2x2 mesh: host SPMD == reference") {
  Module original = parsed(kModel);
  Module m = original;
  PipelineOptions o;
  o.mesh_rows = 2;
  o.mesh_cols = 2;
  auto s = run_pipeline(m, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  auto inputs = random_inputs(original, 3);
  auto ref = evaluate_reference(original, inputs);
  REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
  auto got = evaluate_spmd(m, inputs);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  REQUIRE(ref->size() == got->size());
  double worst = 0;
  for (size_t k = 0; k < ref->size(); ++k) {
    REQUIRE((*ref)[k].shape == (*got)[k].shape);
    for (size_t i = 0; i < (*ref)[k].data.size(); ++i)
      worst = std::max(worst, std::fabs(double((*ref)[k].data[i]) - (*got)[k].data[i]));
  }
  CHECK(worst < 1e-5);
  auto comm = communication(m);
  REQUIRE(comm.has_value());
  // The min over the sharded dim reduces partial minima: a min all_reduce, which tt-metal's
  // all_reduce (sum only) refuses, so it is lowered and counted as an all_gather and a local
  // reduce_min; the product gathers its operand (and the sharded outputs are gathered at the
  // boundary).
  CHECK(std::any_of(comm->ops.begin(), comm->ops.end(),
                    [](const CommStats::Item& i) { return i.kind == "all_gather + reduce_min"; }));
  CHECK(comm->count("all_reduce") == 0);
  CHECK(comm->count("all_gather") >= 2);
  bool min_reduce = false;
  for (OpId op : m.entry()->body.ops)
    for (const Block& b : m.ops[op].regions)
      for (OpId inner : b.ops)
        if (m.ops[inner].name == "stablehlo.all_reduce") {
          auto c = collective_info(m, m.ops[inner]);
          REQUIRE(c.has_value());
          min_reduce |= c->reduction == "min";
        }
  CHECK(min_reduce);
  // The per-device program lowers to the new ops.
  auto g = lower_to_graph(m);
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  auto count = [&](device::OpKind k) {
    return std::count_if(g->ops.begin(), g->ops.end(),
                         [&](const planner::Op& op) { return op.kind == k; });
  };
  CHECK(count(device::OpKind::gt) == 1);
  CHECK(count(device::OpKind::where) == 1);
  CHECK(count(device::OpKind::clamp) == 1);
  CHECK(count(device::OpKind::reduce_min) == 3);  // the program's 2 and the min all_reduce's
  CHECK(count(device::OpKind::reduce_prod) == 1);
}
