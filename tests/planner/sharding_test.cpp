// Factor rules and propagation: conflict resolution by priority, op priority, common prefix;
// open/closed dims, replicated axes, sub-axes; and the collectives the mesh passes choose for the
// tensor-parallel MLP, data parallelism and a 2-D sharded matmul.
#include <doctest/doctest.h>

#include <algorithm>

#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/spmd.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

Module compile(const std::string& text, const char* stage, int64_t rows, int64_t cols) {
  auto m = parse_module(text, "t.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  PipelineOptions o;
  o.mesh_rows = rows;
  o.mesh_cols = cols;
  o.stop_after = *stage_from_name(stage);
  auto s = run_pipeline(*m, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return std::move(*m);
}

/// The sharding printed for op result `n` (in body order) of the entry function.
std::string result_sharding(const Module& m, size_t n) {
  const Op& op = m.ops[m.entry()->body.ops.at(n)];
  REQUIRE(!op.shardings.empty());
  return sharding_string(op.shardings[0]);
}

std::string arg_sharding(const Module& m, size_t n) {
  const auto& s = m.values[m.entry()->args.at(n).value].sharding;
  return s ? sharding_string(*s) : "none";
}

std::vector<CollectiveInfo> collectives(const Module& m) {
  std::vector<CollectiveInfo> out;
  for (OpId o : m.entry()->body.ops)
    for (const Block& b : m.ops[o].regions)
      for (OpId inner : b.ops) {
        const Op& op = m.ops[inner];
        if (op.name.find("all_") != std::string::npos ||
            op.name.find("reduce_scatter") != std::string::npos ||
            op.name.find("collective") != std::string::npos) {
          auto c = collective_info(m, op);
          REQUIRE_MESSAGE(c.has_value(), c.error().message);
          out.push_back(*c);
        }
      }
  return out;
}

const char* kMesh22 = "sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]>\n";

}  // namespace

TEST_CASE("factor rules print as einsum-like mappings") {
  auto m = parse_module(
      std::string(kMesh22) +
          "func.func @main(%a: tensor<4x6xf32>, %b: tensor<6x8xf32>) -> tensor<4x8xf32> {\n"
          "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x6xf32>, "
          "tensor<6x8xf32>) -> tensor<4x8xf32>\n"
          "  %1 = stablehlo.reshape %0 : (tensor<4x8xf32>) -> tensor<32xf32>\n"
          "  %2 = stablehlo.reshape %1 : (tensor<32xf32>) -> tensor<4x8xf32>\n"
          "  return %2 : tensor<4x8xf32>\n}\n",
      "t.mlir");
  REQUIRE(m.has_value());
  const auto& body = m->entry()->body.ops;
  auto dot = sharding_rule(*m, m->ops[body[0]]);
  REQUIRE(dot.has_value());
  CHECK(dot->print() == "a b, b c -> a c {a=4 b=6(reduction) c=8}");
  auto merge = sharding_rule(*m, m->ops[body[1]]);
  REQUIRE(merge.has_value());
  CHECK(merge->print() == "a b -> (a b) {a=4 b=8}");
  auto bad =
      parse_module(std::string(kMesh22) +
                       "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                       "  %0 = \"stablehlo.custom_call\"(%a) : (tensor<4xf32>) -> tensor<4xf32>\n"
                       "  return %0 : tensor<4xf32>\n}\n",
                   "t.mlir");
  REQUIRE(bad.has_value());
  auto r = sharding_rule(*bad, bad->ops[bad->entry()->body.ops[0]]);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message == "t.mlir:3:3: no sharding rule for 'stablehlo.custom_call'");
}

TEST_CASE("user priority wins over a longer sharding") {
  Module m = compile(
      std::string(kMesh22) +
          "func.func @main(%a: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\", "
          "\"y\"}p1, {}]>}, "
          "%b: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"y\"}p0, {}]>}) -> "
          "tensor<8x8xf32> {\n"
          "  %0 = stablehlo.add %a, %b : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>\n}\n",
      "propagation", 2, 2);
  CHECK(result_sharding(m, 0) == "<@mesh, [{\"y\", ?}, {?}]>");
}

TEST_CASE("same priority: the longest compatible sharding, else the common prefix") {
  auto text = [](const char* a, const char* b) {
    return std::string(kMesh22) +
           "func.func @main(%a: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [" + a +
           ", {}]>}, %b: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [" + b +
           ", {}]>}) -> tensor<8x8xf32> {\n  %0 = stablehlo.add %a, %b : tensor<8x8xf32>\n  return "
           "%0 : "
           "tensor<8x8xf32>\n}\n";
  };
  CHECK(result_sharding(compile(text("{\"x\"}", "{\"x\", \"y\"}"), "propagation", 2, 2), 0) ==
        "<@mesh, [{\"x\", \"y\", ?}, {?}]>");
  CHECK(result_sharding(compile(text("{\"x\"}", "{\"y\"}"), "propagation", 2, 2), 0) ==
        "<@mesh, [{?}, {?}]>");
}

TEST_CASE("closed dims are never extended; open ones are; replicated axes are never used") {
  auto text = [](const char* b) {
    return std::string(kMesh22) +
           "func.func @main(%a: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, "
           "{}]>}, %b: "
           "tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, " +
           b +
           ">}) -> tensor<8x8xf32> {\n  %0 = stablehlo.add %a, %b : tensor<8x8xf32>\n  return %0 : "
           "tensor<8x8xf32>\n}\n";
  };
  Module closed = compile(text("[{}, {}]"), "explicit-reshards", 2, 2);
  CHECK(arg_sharding(closed, 1) == "<@mesh, [{}, {}]>");
  CHECK(print_module(closed).find("sdy.reshard %arg1 <@mesh, [{\"x\"}, {}]>") != std::string::npos);
  Module open = compile(text("[{?}, {?}]"), "explicit-reshards", 2, 2);
  CHECK(arg_sharding(open, 1) == "<@mesh, [{\"x\", ?}, {?}]>");
  CHECK(print_module(open).find("sdy.reshard") == std::string::npos);
  Module repl = compile(text("[{?}, {?}], replicated={\"x\"}"), "propagation", 2, 2);
  CHECK(arg_sharding(repl, 1) == "<@mesh, [{?}, {?}], replicated={\"x\"}>");
}

TEST_CASE("reshape splits an axis into sub-axes and merges them back") {
  std::string text =
      "sdy.mesh @mesh = <[\"x\"=4]>\n"
      "func.func @main(%a: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}]>}) -> "
      "tensor<8xf32> {\n"
      "  %0 = stablehlo.reshape %a : (tensor<8xf32>) -> tensor<2x4xf32>\n"
      "  %1 = stablehlo.reshape %0 : (tensor<2x4xf32>) -> tensor<8xf32>\n"
      "  return %1 : tensor<8xf32>\n}\n";
  Module m = compile(text, "propagation", 1, 4);
  CHECK(result_sharding(m, 0) == "<@mesh, [{\"x\":(1)2, ?}, {\"x\":(2)2, ?}]>");
  CHECK(result_sharding(m, 1) == "<@mesh, [{\"x\", ?}]>");
  // Printed sub-axes parse back.
  auto again = parse_module(print_module(m), "again.mlir");
  REQUIRE(again.has_value());
  CHECK(print_module(*again) == print_module(m));
}

TEST_CASE("op priority: elementwise ops propagate before dot_general") {
  // The dot comes first in program order and would put "x" on %a's dim 1; the add, propagated
  // first, puts it on dim 0, and an axis never shards two dims.
  std::string text =
      "sdy.mesh @mesh = <[\"x\"=2]>\n"
      "func.func @main(%a: tensor<8x8xf32>, %w: tensor<8x8xf32> {sdy.sharding = "
      "#sdy.sharding<@mesh, [{\"x\"}, {}]>}, "
      "%e: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {}]>}) -> "
      "(tensor<8x8xf32>, tensor<8x8xf32>) {\n"
      "  %0 = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0] : (tensor<8x8xf32>, "
      "tensor<8x8xf32>) -> tensor<8x8xf32>\n"
      "  %1 = stablehlo.add %a, %e : tensor<8x8xf32>\n"
      "  return %0, %1 : tensor<8x8xf32>, tensor<8x8xf32>\n}\n";
  Module m = compile(text, "propagation", 1, 2);
  CHECK(arg_sharding(m, 0) == "<@mesh, [{\"x\", ?}, {?}]>");
  CHECK(result_sharding(m, 0) == "<@mesh, [{\"x\", ?}, {?}]>");
}

TEST_CASE("tensor-parallel MLP on 1x8: one all_reduce, after the second matmul") {
  auto file = parse_module_file(test::source_path("examples/models/tp_mlp.mlir"));
  REQUIRE(file.has_value());
  Module m = compile(print_module(*file), "close", 1, 8);
  auto cs = collectives(m);
  REQUIRE(cs.size() == 1);
  CHECK(cs[0].kind == "all_reduce");
  CHECK(cs[0].cluster_axis == 1);
  // Nothing between the matmuls: the op before the all_reduce is the second dot_general and no
  // collective sits between the two dots.
  const Block& body = m.ops[m.entry()->body.ops[0]].regions[0];
  std::vector<std::string> names;
  for (OpId o : body.ops) names.push_back(m.ops[o].name);
  auto first_dot = std::find(names.begin(), names.end(), "stablehlo.dot_general");
  auto second_dot = std::find(first_dot + 1, names.end(), "stablehlo.dot_general");
  REQUIRE(second_dot != names.end());
  CHECK(*(second_dot + 1) == "stablehlo.all_reduce");
  auto comm = communication(m);
  REQUIRE(comm.has_value());
  // Megatron: one all_reduce of the [64, 128] f32 activations over 8 chips: 2 * 7/8 * 32 KiB.
  CHECK(comm->bytes == doctest::Approx(2.0 * 7 / 8 * 64 * 128 * 4));
}

TEST_CASE("data parallel on 2x4 with no annotations: no collective in the forward pass") {
  auto file = parse_module_file(test::source_path("examples/models/mlp_dp.mlir"));
  REQUIRE(file.has_value());
  Module m = compile(print_module(*file), "close", 2, 4);
  CHECK(collectives(m).empty());
  CHECK(arg_sharding(m, 0) == "none");  // local-shapes removes argument shardings
  const Op& mc = m.ops[m.entry()->body.ops[0]];
  CHECK(sharding_string(mc.in_shardings[0]) == "<@mesh, [{\"batch\", \"model\"}, {}]>");
  CHECK(m.values[mc.regions[0].args[0]].type.shape == std::vector<int64_t>{8, 96});
}

TEST_CASE("2x4 matmul with the contracting dim on one axis: all_reduce on that axis only") {
  std::string text =
      "sdy.mesh @mesh = <[\"x\"=2, \"y\"=4]>\n"
      "func.func @main(%a: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, "
      "{\"y\"}]>}, "
      "%b: tensor<32x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"y\"}, {}]>}) -> %R {\n"
      "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<64x32xf32>, "
      "tensor<32x16xf32>) -> tensor<64x16xf32>\n  return %0 : tensor<64x16xf32>\n}\n";
  auto with_result = [&](const char* r) {
    std::string t = text;
    t.replace(t.find("%R"), 2, r);
    return t;
  };
  Module m = compile(with_result("tensor<64x16xf32>"), "close", 2, 4);
  auto cs = collectives(m);
  REQUIRE(cs.size() == 1);
  CHECK(cs[0].kind == "all_reduce");
  CHECK(cs[0].cluster_axis == 1);
  CHECK(cs[0].groups == std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  // When the result is wanted sharded on "y", the all_reduce + all_slice become one reduce_scatter.
  Module rs = compile(
      with_result("(tensor<64x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {\"y\"}]>})"),
      "close", 2, 4);
  auto rcs = collectives(rs);
  REQUIRE(rcs.size() == 1);
  CHECK(rcs[0].kind == "reduce_scatter");
  CHECK(rcs[0].dim == 1);
  CHECK(rcs[0].cluster_axis == 1);
}

TEST_CASE("a reshard that moves an axis between dims becomes one all_to_all") {
  std::string text = std::string(kMesh22) +
                     "func.func @main(%a: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, "
                     "[{\"x\"}, {}]>}) -> "
                     "(tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {\"x\"}]>}) {\n"
                     "  return %a : tensor<8x8xf32>\n}\n";
  Module m = compile(text, "collectives", 2, 2);
  CHECK(print_module(m).find(
            "sdy.all_to_all [{\"x\"}: 0->1] %arg1 out_sharding=<@mesh, [{}, {\"x\"}]>") !=
        std::string::npos);
  Module local = compile(text, "close", 2, 2);
  auto cs = collectives(local);
  REQUIRE(cs.size() == 1);
  CHECK(cs[0].kind == "all_to_all");
  CHECK(cs[0].cluster_axis == 0);
}

TEST_CASE("replica groups follow the mesh, sub-axes included") {
  MeshDecl mesh{"mesh", {{"x", 2}, {"y", 4}}, {}};
  using G = std::vector<std::vector<int64_t>>;
  CHECK(replica_groups(mesh, {AxisRef{"y", 1, 0}}) == G{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(replica_groups(mesh, {AxisRef{"x", 1, 0}}) == G{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(replica_groups(mesh, {AxisRef{"y", 2, 2}}) == G{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(replica_groups(mesh, {AxisRef{"y", 1, 0}, AxisRef{"x", 1, 0}}) ==
        G{{0, 4, 1, 5, 2, 6, 3, 7}});
}

TEST_CASE("convolution: batch and output features propagate, spatial dims stay replicated") {
  std::string text =
      "sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]>\n"
      "func.func @main(%a: tensor<8x32x32x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, "
      "{\"y\"}, {}, {}]>}, "
      "%k: tensor<3x3x4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}, {\"y\"}]>}) -> "
      "tensor<8x30x30x16xf32> "
      "{\n"
      "  %0 = stablehlo.convolution(%a, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], "
      "window = {stride "
      "= [1, 1], pad = [[0, 0], [0, 0]], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, "
      "feature_group_count = 1 "
      ": i64} : (tensor<8x32x32x4xf32>, tensor<3x3x4x16xf32>) -> tensor<8x30x30x16xf32>\n"
      "  return %0 : tensor<8x30x30x16xf32>\n}\n";
  Module m = compile(text, "propagation", 2, 2);
  CHECK(result_sharding(m, 0) == "<@mesh, [{\"x\", ?}, {?}, {?}, {\"y\", ?}]>");
  auto rule = sharding_rule(m, m.ops[m.entry()->body.ops[0]]);
  REQUIRE(rule.has_value());
  CHECK(rule->print() ==
        "a b c d, e f d g -> a h i g {a=8 b=32(need_replication) c=32(need_replication) "
        "d=4(reduction) "
        "e=3(need_replication) f=3(need_replication) g=16 h=30(need_replication) "
        "i=30(need_replication)}");
  // The spatially sharded input is gathered before the convolution.
  Module r = compile(text, "explicit-reshards", 2, 2);
  CHECK(print_module(r).find("sdy.reshard %arg0 <@mesh, [{\"x\"}, {}, {}, {}]>") !=
        std::string::npos);
  auto again = parse_module(print_module(r), "again.mlir");
  REQUIRE(again.has_value());
  CHECK(print_module(*again) == print_module(r));
}
