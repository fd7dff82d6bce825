// Collective ops in the graph IR (MESH-SPEC §1): shape inference on the graph's mesh, required
// attributes, boundary shards, JSON round trips and the graph key.
#include <doctest/doctest.h>

#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/key.hpp"

using namespace meshplan;
using namespace meshplan::planner;
using device::MeshShardSpec;
using device::MeshShardType;

namespace {

using Shape = std::vector<int64_t>;

/// One collective on a rows x cols graph; the result shape, or the error message.
Result<Shape> collective_shape(int rows, int cols, std::string_view kind, Shape in,
                               std::vector<Attribute> attrs) {
  GraphBuilder b("c");
  b.mesh(rows, cols);
  auto x = b.input("x", in);
  auto y = b.op(kind, {x}, std::move(attrs), "coll");
  b.output(y);
  auto g = b.build();
  if (!g) return std::unexpected(g.error());
  return g->values[g->outputs[0]].shape;
}

MeshShardSpec devices(int axis0, int axis1) {
  return MeshShardSpec{MeshShardType::devices, {axis0, axis1}, {}};
}

}  // namespace

TEST_CASE("collective result shapes follow the group size of their cluster axis") {
  // 2x4: axis 0 groups 2 chips, axis 1 groups 4, -1 all 8.
  auto ag = [&](int axis) {
    return collective_shape(2, 4, "all_gather", {32, 64},
                            {attr("dim", int64_t{-1}), attr("cluster_axis", int64_t{axis})});
  };
  CHECK(*ag(0) == Shape{32, 128});
  CHECK(*ag(1) == Shape{32, 256});
  CHECK(*ag(-1) == Shape{32, 512});
  CHECK(*collective_shape(2, 4, "reduce_scatter", {64, 32},
                          {attr("dim", int64_t{0}), attr("cluster_axis", int64_t{1}),
                           attr("reduce", "max")}) == Shape{16, 32});
  CHECK(*collective_shape(8, 4, "all_reduce", {32, 32}, {attr("cluster_axis", int64_t{0})}) ==
        Shape{32, 32});
  CHECK(*collective_shape(1, 2, "all_to_all", {64, 32},
                          {attr("split_dim", int64_t{0}), attr("concat_dim", int64_t{1}),
                           attr("cluster_axis", int64_t{1})}) == Shape{32, 64});
  CHECK(*collective_shape(2, 4, "collective_permute", {32, 32},
                          {attr("pairs", std::vector<int64_t>{0, 1, 1, 2, 7, 0})}) ==
        Shape{32, 32});
  CHECK(*collective_shape(8, 4, "all_slice", {256, 32},
                          {attr("dim", int64_t{0}), attr("cluster_axis", int64_t{-1})}) ==
        Shape{8, 32});
}

TEST_CASE("collectives are errors on a 1x1 graph and with bad attributes, naming the op") {
  auto one = collective_shape(1, 1, "all_reduce", {32, 32}, {attr("cluster_axis", int64_t{0})});
  REQUIRE(!one);
  CHECK(one.error().message.find("'coll' (all_reduce)") != std::string::npos);
  CHECK(one.error().message.find("1x1") != std::string::npos);
  auto missing = collective_shape(2, 4, "all_gather", {32, 32}, {attr("dim", int64_t{0})});
  REQUIRE(!missing);
  CHECK(missing.error().message.find("missing attribute 'cluster_axis'") != std::string::npos);
  auto axis = collective_shape(2, 4, "all_gather", {32, 32},
                               {attr("dim", int64_t{0}), attr("cluster_axis", int64_t{2})});
  REQUIRE(!axis);
  CHECK(axis.error().message.find("cluster_axis") != std::string::npos);
  auto uneven = collective_shape(2, 4, "reduce_scatter", {32, 30},
                                 {attr("dim", int64_t{1}), attr("cluster_axis", int64_t{1})});
  REQUIRE(!uneven);
  CHECK(uneven.error().message.find("does not split into 4") != std::string::npos);
  auto dim = collective_shape(2, 4, "all_slice", {32, 32},
                              {attr("dim", int64_t{2}), attr("cluster_axis", int64_t{1})});
  REQUIRE(!dim);
  CHECK(dim.error().message.find("out of range") != std::string::npos);
  auto outside = collective_shape(1, 2, "collective_permute", {32, 32},
                                  {attr("pairs", std::vector<int64_t>{0, 2})});
  REQUIRE(!outside);
  CHECK(outside.error().message.find("outside the 1x2 mesh") != std::string::npos);
  auto twice = collective_shape(2, 4, "collective_permute", {32, 32},
                                {attr("pairs", std::vector<int64_t>{0, 1, 2, 1})});
  REQUIRE(!twice);
  CHECK(twice.error().message.find("repeats a target") != std::string::npos);
  auto odd = collective_shape(2, 4, "collective_permute", {32, 32},
                              {attr("pairs", std::vector<int64_t>{0, 1, 2})});
  REQUIRE(!odd);
  auto reduce = collective_shape(2, 4, "all_reduce", {32, 32},
                                 {attr("cluster_axis", int64_t{0}), attr("reduce", "mean")});
  REQUIRE(!reduce);
  CHECK(reduce.error().message.find("\"sum\"") != std::string::npos);
}

TEST_CASE("a tensor-parallel MLP graph with boundary shards round-trips through JSON") {
  GraphBuilder b("tp_mlp");
  b.mesh(2, 4, {"x", "y"});
  auto x = b.input("x", {32, 64});
  auto w1 = b.parameter("w1", {64, 32});  // global [64, 128], column-split over axis 1
  auto w2 = b.parameter("w2", {32, 64});  // global [128, 64], row-split over axis 1
  b.shard(w1, devices(-1, 1));
  b.shard(w2, devices(-1, 0));
  auto h = b.relu(b.matmul(x, w1, "mm1"), "act");
  auto y = b.op("all_reduce", {b.matmul(h, w2, "mm2")}, {attr("cluster_axis", int64_t{1})}, "ar");
  b.output(y, MeshShardSpec{});
  auto g = b.build();
  REQUIRE(g);
  CHECK(g->argument_shards.size() == 3);
  CHECK(g->argument_shards[0].type == MeshShardType::replicate);
  CHECK(*boundary_full_shape(*g, 1, false) == Shape{64, 128});
  CHECK(*boundary_full_shape(*g, 2, false) == Shape{128, 64});
  CHECK(*boundary_full_shape(*g, 0, true) == Shape{32, 64});
  CHECK(g->print().find("mesh 2x4 axes=x,y") != std::string::npos);
  auto json = export_graph_json(*g);
  REQUIRE(json);
  auto again = import_graph_json(*json);
  REQUIRE(again);
  CHECK(again->mesh == g->mesh);
  CHECK(again->argument_shards == g->argument_shards);
  CHECK(again->output_shards == g->output_shards);
  CHECK(again->print() == g->print());
  CHECK(graph_key(*again) == graph_key(*g));
  // The mesh and the shards are part of the key.
  Graph other = *g;
  other.argument_shards[1] = devices(1, -1);
  Graph wider = *g;
  wider.mesh.rows = 4;
  CHECK(graph_key(other) != graph_key(*g));
  CHECK(graph_key(wider) != graph_key(*g));
}

TEST_CASE("boundary shards must be parallel to arguments and fit the local shapes") {
  const char* kJson = R"({
    name: "bad", mesh: { rows: 1, cols: 2 },
    arguments: [ { value: { name: "x", shape: [32, 32], dtype: "bf16" } } ],
    ops: [ { kind: "relu", operands: ["x"], results: [ { name: "y" } ] } ],
    outputs: ["y"], argument_shards: [ { type: devices, shard_dims: [-1, 2] } ],
    output_shards: [ {} ] })";
  auto g = import_graph_json(kJson, "bad.json");
  REQUIRE(!g);
  CHECK(g.error().message.find("argument 'x'") != std::string::npos);
  CHECK(g.error().message.find("shard_dims[1] = 2") != std::string::npos);
  const char* kMissing = R"({
    name: "bad", mesh: { rows: 1, cols: 2 },
    arguments: [ { value: { name: "x", shape: [32, 32], dtype: "bf16" } } ],
    ops: [ { kind: "all_gather", operands: ["x"], results: [ { name: "y" } ],
             attributes: [ { name: "dim", i: 0 }, { name: "cluster_axis", i: 1 } ] } ],
    outputs: ["y"] })";
  auto m = import_graph_json(kMissing, "missing.json");
  REQUIRE(!m);
  CHECK(m.error().message.find("argument shards") != std::string::npos);
  // With the shards it validates: y is [64, 32] per chip.
  std::string ok = kMissing;
  ok.insert(ok.rfind('}'), ", argument_shards: [ {} ], output_shards: [ {} ]");
  auto good = import_graph_json(ok, "ok.json");
  REQUIRE(good);
  CHECK(good->values[good->outputs[0]].shape == Shape{64, 32});
}
