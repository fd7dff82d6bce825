// export_stablehlo: graph IR -> StableHLO/Shardy. Per op: the module prints and parses back
// unchanged, uses the StableHLO op or the meshplan custom call MESH-SPEC §2 names, and computes
// what the graph computes (evaluate_reference == device::reference op by op). Per mesh: the MLP
// exported with or without annotations runs through the pipeline and the SPMD simulation equals
// the single-device results. Annotation errors name the argument, axis and dim.
#include <doctest/doctest.h>

#include <functional>

#include "meshplan/planner/export_stablehlo.hpp"
#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/spmd_host.hpp"
#include "planner/mesh_front_util.hpp"

namespace meshplan::planner {
namespace {

using shlo::Module;
using V = GraphBuilder::Value;

struct OpCase {
  std::string name;
  std::function<void(GraphBuilder&)> build;
  std::string expect;  ///< A piece of text the exported module must contain.
  bool positive = false;
};

std::vector<int64_t> ints(std::initializer_list<int64_t> v) {
  return v;
}

std::vector<OpCase> op_cases() {
  std::vector<OpCase> c;
  auto unary = [&](std::string op, std::string expect, bool positive = false) {
    c.push_back({op,
                 [op](GraphBuilder& b) {
                   b.output(b.op(op, {b.input("x", {4, 8}, DType::f32)}));
                 },
                 expect, positive});
  };
  unary("relu", "stablehlo.maximum");
  unary("gelu", "call_target_name = \"meshplan.gelu\"");
  unary("silu", "call_target_name = \"meshplan.silu\"");
  unary("sigmoid", "stablehlo.logistic");
  unary("tanh", "stablehlo.tanh");
  unary("exp", "stablehlo.exponential");
  unary("log", "stablehlo.log", true);
  unary("sqrt", "stablehlo.sqrt", true);
  unary("rsqrt", "stablehlo.rsqrt", true);
  unary("reciprocal", "meshplan.reciprocal", true);
  unary("neg", "stablehlo.negate");
  unary("abs", "stablehlo.abs");
  for (std::string op : {"add", "subtract", "multiply", "divide", "maximum", "minimum"})
    c.push_back({op + "_broadcast",
                 [op](GraphBuilder& b) {
                   V x = b.input("x", {4, 8}, DType::f32);
                   V y = b.input("y", {8}, DType::f32);
                   b.output(b.op(op, {x, y}));
                   b.output(b.op(op, {b.input("z", {4, 1}, DType::f32), x}));
                 },
                 "stablehlo.broadcast_in_dim", op == "divide"});
  c.push_back(
      {"add_relu",
       [](GraphBuilder& b) {
         b.output(b.op("add",
                       {b.input("x", {2, 3, 4}, DType::f32), b.input("y", {2, 3, 4}, DType::f32)},
                       {attr("activation", "relu")}));
       },
       "stablehlo.maximum"});
  c.push_back(
      {"matmul",
       [](GraphBuilder& b) {
         b.output(b.matmul(b.input("a", {4, 8}, DType::f32), b.parameter("w", {8, 6}, DType::f32)));
       },
       "contracting_dims = [1] x [0]"});
  c.push_back(
      {"matmul_transposed_gelu",
       [](GraphBuilder& b) {
         b.output(b.op(
             "matmul", {b.input("a", {3, 8, 4}, DType::f32), b.parameter("w", {6, 8}, DType::f32)},
             {attr("transpose_a", true), attr("transpose_b", true), attr("activation", "gelu")}));
       },
       "contracting_dims = [1] x [1]"});
  c.push_back(
      {"matmul_batched",
       [](GraphBuilder& b) {
         b.output(b.op("matmul",
                       {b.input("a", {2, 4, 8}, DType::f32), b.input("b", {2, 6, 8}, DType::f32)},
                       {attr("transpose_b", true)}));
       },
       "batching_dims = [0] x [0], contracting_dims = [2] x [2]"});
  c.push_back({"linear",
               [](GraphBuilder& b) {
                 b.output(
                     b.op("linear",
                          {b.input("x", {4, 8}, DType::f32), b.parameter("w", {8, 6}, DType::f32),
                           b.parameter("bias", {6}, DType::f32)},
                          {attr("activation", "relu")}));
               },
               "meshplan.activation = \"relu\""});
  c.push_back({"reduce_sum_keepdim",
               [](GraphBuilder& b) {
                 b.output(b.op("reduce_sum", {b.input("x", {4, 8, 2}, DType::f32)},
                               {attr("dims", ints({1})), attr("keepdim", true)}));
               },
               "applies stablehlo.add across dimensions = [1]"});
  c.push_back({"reduce_max_all",
               [](GraphBuilder& b) {
                 b.output(b.op("reduce_max", {b.input("x", {4, 8}, DType::f32)}));
               },
               "applies stablehlo.maximum across dimensions = [0, 1]"});
  c.push_back({"reduce_max_int",
               [](GraphBuilder& b) {
                 b.output(b.op("reduce_max", {b.input("x", {4, 8}, DType::i32)},
                               {attr("dims", ints({0}))}));
               },
               "stablehlo.constant dense<-2147483648> : tensor<i32>"});
  c.push_back({"reduce_mean",
               [](GraphBuilder& b) {
                 b.output(b.op("reduce_mean", {b.input("x", {4, 8}, DType::f32)},
                               {attr("dims", ints({-1}))}));
               },
               "meshplan.dims = array<i64: -1>"});
  c.push_back({"softmax",
               [](GraphBuilder& b) {
                 b.output(b.op("softmax", {b.input("x", {4, 8}, DType::f32)}, {attr("dim", -1)}));
               },
               "meshplan.dim = -1 : i64"});
  c.push_back({"layer_norm",
               [](GraphBuilder& b) {
                 b.output(b.op("layer_norm",
                               {b.input("x", {4, 8}, DType::f32), b.parameter("w", {8}, DType::f32),
                                b.parameter("bias", {8}, DType::f32)},
                               {attr("epsilon", 1e-12)}));
               },
               "meshplan.epsilon = 1.000000e-12 : f64"});
  c.push_back({"rms_norm",
               [](GraphBuilder& b) {
                 b.output(
                     b.op("rms_norm",
                          {b.input("x", {4, 8}, DType::f32), b.parameter("w", {8}, DType::f32)},
                          {attr("epsilon", 1e-5)}));
               },
               "call_target_name = \"meshplan.rms_norm\""});
  c.push_back({"reshape",
               [](GraphBuilder& b) {
                 b.output(b.op("reshape", {b.input("x", {4, 8}, DType::f32)},
                               {attr("shape", ints({2, -1, 4}))}));
               },
               "stablehlo.reshape"});
  c.push_back({"permute",
               [](GraphBuilder& b) {
                 b.output(b.op("permute", {b.input("x", {2, 3, 4}, DType::f32)},
                               {attr("perm", ints({2, 0, 1}))}));
               },
               "stablehlo.transpose %arg0, dims = [2, 0, 1]"});
  c.push_back({"concat",
               [](GraphBuilder& b) {
                 b.output(b.op("concat",
                               {b.input("x", {2, 3}, DType::f32), b.input("y", {2, 5}, DType::f32)},
                               {attr("axis", -1)}));
               },
               "dim = 1"});
  c.push_back({"slice",
               [](GraphBuilder& b) {
                 b.output(b.op("slice", {b.input("x", {6, 8}, DType::f32)},
                               {attr("begins", ints({1, -6})), attr("ends", ints({5, 8})),
                                attr("steps", ints({1, 2}))}));
               },
               "[1:5, 2:7:2]"});
  c.push_back(
      {"typecast",
       [](GraphBuilder& b) {
         b.output(b.op("typecast", {b.input("x", {4, 8}, DType::bf16)}, {attr("dtype", "f32")}));
       },
       "stablehlo.convert"});
  c.push_back({"embedding",
               [](GraphBuilder& b) {
                 b.output(b.op("embedding", {b.input("ids", {2, 3}, DType::i32),
                                             b.parameter("table", {10, 4}, DType::f32)}));
               },
               "(tensor<2x3xi32>, tensor<10x4xf32>) -> tensor<2x3x4xf32>"});
  c.push_back({"conv2d",
               [](GraphBuilder& b) {
                 b.output(b.op("conv2d",
                               {b.input("x", {2, 6, 6, 4}, DType::f32),
                                b.parameter("w", {8, 3, 3, 4}, DType::f32),
                                b.parameter("bias", {8}, DType::f32)},
                               {attr("stride", ints({2, 2})), attr("padding", ints({1, 1})),
                                attr("activation", "relu")}));
               },
               "meshplan.stride = array<i64: 2, 2>"});
  c.push_back({"max_pool2d",
               [](GraphBuilder& b) {
                 b.output(b.op("max_pool2d", {b.input("x", {2, 6, 6, 4}, DType::f32)},
                               {attr("kernel", ints({3, 3})), attr("stride", ints({2, 2})),
                                attr("padding", ints({1, 1, 1, 1}))}));
               },
               "meshplan.max_pool2d"});
  c.push_back({"avg_pool2d",
               [](GraphBuilder& b) {
                 b.output(b.op("avg_pool2d", {b.input("x", {2, 6, 6, 4}, DType::f32)},
                               {attr("kernel", ints({2, 2})), attr("stride", ints({2, 2}))}));
               },
               "meshplan.avg_pool2d"});
  c.push_back({"global_avg_pool2d",
               [](GraphBuilder& b) {
                 b.output(b.op("global_avg_pool2d", {b.input("x", {2, 6, 6, 4}, DType::f32)}));
               },
               "meshplan.global_avg_pool2d"});
  return c;
}

TEST_CASE("export_stablehlo: every op prints, parses back unchanged and computes the graph") {
  for (const OpCase& c : op_cases()) {
    CAPTURE(c.name);
    GraphBuilder b(c.name);
    c.build(b);
    auto g = b.build();
    REQUIRE_MESSAGE(g.has_value(), g.error().message);
    auto m = export_stablehlo(*g);
    REQUIRE_MESSAGE(m.has_value(), m.error().message);
    std::string text = shlo::print_module(*m);
    CHECK_MESSAGE(text.find(c.expect) != std::string::npos, text);
    auto again = shlo::parse_module(text, "printed");
    REQUIRE_MESSAGE(again.has_value(), again.error().message);
    CHECK(shlo::print_module(*again) == text);
    // Every op of the module has a sharding rule (the pipeline needs one per op).
    for (shlo::OpId o : m->entry()->body.ops) {
      const shlo::Op& op = m->ops[o];
      if (op.name == "func.return") continue;
      auto rule = shlo::sharding_rule(*m, op);
      CHECK_MESSAGE(rule.has_value(), op.name, ": ", rule ? "" : rule.error().message);
    }
    auto inputs = test::graph_inputs(*g, *m, 3, c.positive);
    auto want = test::graph_reference(*g, inputs);
    REQUIRE_MESSAGE(want.has_value(), want.error().message);
    auto got = shlo::evaluate_reference(*again, inputs);
    REQUIRE_MESSAGE(got.has_value(), got.error().message);
    CHECK(test::max_rel_error(*got, *want) < 1e-5);
  }
}

TEST_CASE("export_stablehlo: the module declares the mesh, shardings and argument types") {
  GraphBuilder b("tp");
  V x = b.input("x", {8, 16});
  V w = b.parameter("w", {16, 32});
  V c = b.constant("c", {1}, {2.0f});
  b.output(b.op("multiply", {b.matmul(x, w), c}));
  auto g = b.build();
  REQUIRE(g.has_value());
  MeshAnnotations ann;
  ann.axes = {{"x", 2}, {"y", 4}};
  ann.arguments = {{"w", R"([{}, {"x", "y"}])"}};
  ann.outputs = {R"([{}, {"y"}])"};
  auto m = export_stablehlo(*g, ann);
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  std::string text = shlo::print_module(*m);
  CHECK(text.find(R"(sdy.mesh @mesh = <["x"=2, "y"=4]>)") != std::string::npos);
  CHECK(text.find(R"(sdy.sharding = #sdy.sharding<@mesh, [{}, {"x", "y"}]>)") != std::string::npos);
  CHECK(text.find("#ttcore.argument_type<constant>") != std::string::npos);
  CHECK(text.find("#ttcore.argument_type<parameter>") != std::string::npos);
  CHECK(text.find(R"(-> (tensor<8x32xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}))") !=
        std::string::npos);
  auto again = shlo::parse_module(text);
  REQUIRE(again.has_value());
  CHECK(shlo::print_module(*again) == text);
  shlo::PipelineOptions o = pipeline_options(ann);
  CHECK(o.mesh_rows == 2);
  CHECK(o.mesh_cols == 4);
}

Graph mlp_graph() {
  GraphBuilder b("mlp");
  V x = b.input("x", {64, 32}, DType::f32);
  std::vector<int64_t> widths = {32, 64, 64, 32};
  for (size_t i = 1; i < widths.size(); ++i) {
    std::string n = std::to_string(i);
    V w = b.parameter("w" + n, {widths[i - 1], widths[i]}, DType::f32);
    V bias = b.parameter("b" + n, {1, widths[i]}, DType::f32);
    x = b.op("add", {b.matmul(x, w), bias});
    if (i + 1 < widths.size()) x = b.relu(x);
  }
  b.output(x);
  return *b.build();
}

/// Megatron-style: layer 1 column-parallel, layer 2 row-parallel, layer 3 column-parallel,
/// over all axes.
MeshAnnotations mlp_tp(std::vector<std::pair<std::string, int64_t>> axes) {
  MeshAnnotations a;
  a.axes = axes;
  std::string all;
  for (const auto& [n, s] : axes) all += (all.empty() ? "\"" : ", \"") + n + "\"";
  a.arguments = {{"x", "[{}, {}]"},
                 {"w1", "[{}, {" + all + "}]"},
                 {"b1", "[{}, {" + all + "}]"},
                 {"w2", "[{" + all + "}, {}]"},
                 {"b2", "[{}, {}]"},
                 {"w3", "[{}, {" + all + "}]"},
                 {"b3", "[{}, {" + all + "}]"}};
  return a;
}

TEST_CASE("mesh MLP: SPMD == single device == graph reference on 1x2, 2x4 and 8x4") {
  Graph g = mlp_graph();
  SUBCASE("data parallel, no annotations: the pipeline shards the batch") {
    for (auto [r, c] : {std::pair<int64_t, int64_t>{1, 2}, {2, 4}, {8, 4}}) {
      CAPTURE(r);
      CAPTURE(c);
      Module local = test::check_mesh_equivalence(g, {}, r, c);
      auto stats = shlo::communication(local);
      REQUIRE(stats.has_value());
      CHECK(stats->count("all_reduce") == 0);  // weights replicated, batch split: no traffic
      auto shards = shlo::mesh_shards(local);
      REQUIRE(shards.has_value());
      CHECK(shards->front().type == "devices");
    }
  }
  SUBCASE("tensor parallel: column, row, column") {
    for (auto axes : {std::vector<std::pair<std::string, int64_t>>{{"x", 1}, {"y", 2}},
                      {{"x", 2}, {"y", 4}},
                      {{"x", 8}, {"y", 4}}}) {
      MeshAnnotations ann = mlp_tp(axes);
      CAPTURE(ann.rows());
      CAPTURE(ann.cols());
      Module local = test::check_mesh_equivalence(g, ann, 0, 0);
      auto stats = shlo::communication(local);
      REQUIRE(stats.has_value());
      CHECK(stats->count("all_reduce") == 1);  // after the row-parallel layer only
    }
  }
}

TEST_CASE("export_stablehlo: annotation errors name the argument, axis and dim") {
  Graph g = mlp_graph();
  auto err = [&](MeshAnnotations a) {
    auto m = export_stablehlo(g, a);
    REQUIRE_FALSE(m.has_value());
    return m.error().message;
  };
  MeshAnnotations a;
  a.axes = {{"x", 2}, {"y", 4}};
  a.arguments = {{"w1", R"([{}, {"tp"}])"}};
  std::string e = err(a);
  CHECK_MESSAGE(e.find("argument 'w1'") != std::string::npos, e);
  CHECK_MESSAGE(e.find("axis \"tp\" is not in mesh") != std::string::npos, e);
  CHECK_MESSAGE(e.find("(mesh axes: x, y)") != std::string::npos, e);

  a.axes = {{"x", 3}, {"y", 4}};
  a.arguments = {{"w1", R"([{"x"}, {}])"}};
  e = err(a);
  CHECK_MESSAGE(e.find("argument 'w1'") != std::string::npos, e);
  CHECK_MESSAGE(e.find("dim 0 of size 32 is not divisible by the 3 devices") != std::string::npos,
                e);

  a.axes = {{"x", 2}};
  a.arguments = {{"w9", R"([{"x"}, {}])"}};
  e = err(a);
  CHECK_MESSAGE(e.find("argument 'w9', which the graph does not have") != std::string::npos, e);

  a.arguments = {{"w1", R"([{"x"}])"}};
  e = err(a);
  CHECK_MESSAGE(e.find("1 dims for a rank-2 tensor") != std::string::npos, e);

  a.arguments = {{"w1", R"([{"x"}, {"x"}])"}};
  e = err(a);
  CHECK_MESSAGE(e.find("\"x\" is used twice") != std::string::npos, e);

  a.arguments = {{"w1", R"([{"x"}, {}})"}};
  e = err(a);
  CHECK_MESSAGE(
      e.find("argument 'w1': sharding '[{\"x\"}, {}}' does not read") != std::string::npos, e);
  a.arguments.clear();
  a.outputs = {R"([{}, {"z"}])"};
  e = err(a);
  CHECK_MESSAGE(e.find("graph 'mlp' output 0 '") != std::string::npos, e);
  a.outputs.clear();

  MeshAnnotations no_mesh;
  no_mesh.arguments = {{"w1", "[{}, {}]"}};
  e = err(no_mesh);
  CHECK_MESSAGE(e.find("no mesh axes") != std::string::npos, e);
}

TEST_CASE("meshplan custom calls: attributes of every kind round-trip through the text") {
  const char* text =
      "func.func @main(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {\n"
      "  %0 = \"stablehlo.custom_call\"(%arg0) {call_target_name = \"meshplan.softmax\", "
      "meshplan.dim = -1 : i64, meshplan.f = 0.1 : f64, meshplan.flag = true, meshplan.s = "
      "\"a\\\"b\", meshplan.ints = array<i64: 1, -2>, meshplan.doubles = array<f64: 0.5, "
      "1.0e-07>} : (tensor<4x8xf32>) -> tensor<4x8xf32>\n"
      "  return %0 : tensor<4x8xf32>\n"
      "}\n";
  auto m = shlo::parse_module(text);
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  std::string printed = shlo::print_module(*m);
  auto again = shlo::parse_module(printed);
  REQUIRE_MESSAGE(again.has_value(), again.error().message);
  CHECK(shlo::print_module(*again) == printed);
  CHECK(printed.find("array<f64: 5.000000e-01, 1.000000e-07>") != std::string::npos);
  const shlo::Op& op = again->ops[again->entry()->body.ops[0]];
  const shlo::Attr* d = op.attr("meshplan.doubles");
  REQUIRE(d);
  CHECK(d->values == std::vector<double>{0.5, 1e-7});
}

TEST_CASE("meshplan custom calls: sharding rules") {
  GraphBuilder b("rules");
  V x = b.input("x", {8, 16}, DType::f32);
  V w = b.parameter("w", {16}, DType::f32);
  V n = b.op("rms_norm", {x, w}, {attr("epsilon", 1e-5)});
  V s = b.op("softmax", {n}, {attr("dim", -1)});
  V l = b.op("linear",
             {s, b.parameter("lw", {16, 4}, DType::f32), b.parameter("lb", {4}, DType::f32)});
  b.output(b.op("reduce_mean", {l}, {attr("dims", ints({1})), attr("keepdim", true)}));
  auto g = b.build();
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  auto m = export_stablehlo(*g);
  REQUIRE(m.has_value());
  std::vector<std::string> rules;
  for (shlo::OpId o : m->entry()->body.ops)
    if (m->ops[o].name == "stablehlo.custom_call")
      rules.push_back(shlo::sharding_rule(*m, m->ops[o])->print());
  REQUIRE(rules.size() == 4);
  // rms_norm: the normalised dim is whole, the weight shares it; the batch dim passes through.
  CHECK(rules[0] == "a b, b -> a b {a=8 b=16(need_replication)}");
  // softmax over the last dim.
  CHECK(rules[1] == "a b -> a b {a=8 b=16(need_replication)}");
  // linear: the contracting dim is not a reduction (the bias follows the sum).
  CHECK(rules[2] == "a b, b c, c -> a c {a=8 b=16(need_replication) c=4}");
  // reduce_mean: the reduced dim is kept whole; keepdim gives a size-1 factor.
  CHECK(rules[3] == "a b -> a c {a=8 b=4(need_replication) c=1}");

  // A sharded normalised dim is gathered before the op, and the results stay right.
  MeshAnnotations ann;
  ann.axes = {{"x", 2}, {"y", 2}};
  ann.arguments = {{"x", R"([{"x"}, {"y"}])"}};
  Module local = test::check_mesh_equivalence(*g, ann, 0, 0);
  auto stats = shlo::communication(local);
  REQUIRE(stats.has_value());
  CHECK(stats->count("all_gather") >= 1);
}

}  // namespace
}  // namespace meshplan::planner
