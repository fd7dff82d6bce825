// The front door (plan_file.hpp): which pipeline a model takes, what it is named, the options
// it plans with, the notes it reports and the errors that name the option or the model.
#include "meshplan/planner/plan_file.hpp"

#include <doctest/doctest.h>

#include "meshplan/planner/import_json.hpp"
#include "test_util.hpp"

using namespace meshplan;

namespace {

// x [64, 256] times w [256, 128], w split by columns over the two chips of axis "x".
constexpr const char* kAnnotated = R"({
  "name": "tp",
  "mesh_axes": [{ "name": "x", "size": 2 }],
  "arguments": [
    { "value": { "name": "x", "shape": [64, 256], "dtype": "bf16" }, "kind": "input" },
    { "value": { "name": "w", "shape": [256, 128], "dtype": "bf16" }, "kind": "parameter",
      "sharding": "[{}, {\"x\"}]" }
  ],
  "ops": [{ "name": "fc", "kind": "matmul", "operands": ["x", "w"], "results": [{ "name": "y" }] }],
  "outputs": ["y"]
})";

constexpr const char* kUnnamed = R"({
  "arguments": [{ "value": { "name": "x", "shape": [32, 32], "dtype": "bf16" }, "kind": "input" }],
  "ops": [{ "name": "r", "kind": "relu", "operands": ["x"], "results": [{ "name": "y" }] }],
  "outputs": ["y"]
})";

// A relu MLP in StableHLO without a mesh of its own.
constexpr const char* kModule = R"(
func.func public @main(%arg0: tensor<64x128xf32>, %arg1: tensor<128x256xf32>) -> tensor<64x256xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<64x128xf32>, tensor<128x256xf32>) -> tensor<64x256xf32>
  %1 = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<64x256xf32>
  %3 = stablehlo.maximum %0, %2 : tensor<64x256xf32>
  return %3 : tensor<64x256xf32>
}
)";

}  // namespace

TEST_CASE("plan_file: sources are StableHLO unless a .json file or text opening with '{'") {
  using planner::ModelSource;
  CHECK(ModelSource::file("a/b.mlir").mlir());
  CHECK_FALSE(ModelSource::file("a/b.json").mlir());
  CHECK_FALSE(ModelSource::from_text("  \n{ }").mlir());
  CHECK(ModelSource::from_text("func.func @main() { }").mlir());
  CHECK(ModelSource::from_text("x").path == "<text>");
}

TEST_CASE("plan_file: a plain graph.json plans on one chip as compile() plans it") {
  const std::string path = test::source_path("examples/models/mlp.json");
  auto planned = planner::plan_file(path);
  REQUIRE_MESSAGE(planned, planned.error().message);
  CHECK_FALSE(planned->model.module_text);
  CHECK_FALSE(planned->stage_json);
  CHECK(planned->model.graph.name == "mlp");
  CHECK(planned->model.graph.ops.size() == 8);  // 3 x (matmul, add) + 2 relu in the file
  CHECK(planned->model.chip.name == "wormhole_b0");
  CHECK(planned->model.options.policy == "greedy");
  CHECK_FALSE(planned->model.options.mesh);
  REQUIRE(planned->plan);
  // The front door adds nothing to the plan: the graph file compiled directly gives its bytes.
  auto graph = planner::load_graph_file(path);
  REQUIRE(graph);
  auto direct = planner::compile(*graph, device::wormhole_b0(), planner::PlannerOptions{});
  REQUIRE(direct);
  CHECK(direct->bytes == planned->plan->bytes);
}

TEST_CASE("plan_file: a StableHLO module without a mesh plans on one chip under the given name") {
  planner::FileOptions options;
  options.name = "relu_mlp";
  options.planner.policy = "dram";
  auto planned = planner::plan_file(planner::ModelSource::from_text(kModule), options);
  REQUIRE_MESSAGE(planned, planned.error().message);
  CHECK(planned->model.graph.name == "relu_mlp");
  CHECK(planned->model.graph.mesh.single_chip());
  CHECK(planned->model.options.policy == "dram");
  CHECK(planned->plan);
}

TEST_CASE("plan_file: a graph.json without a name takes the given one, else stays unnamed") {
  auto unnamed = planner::import_model(planner::ModelSource::from_text(kUnnamed), {});
  REQUIRE_MESSAGE(unnamed, unnamed.error().message);
  CHECK(unnamed->graph.name.empty());
  planner::FileOptions options;
  options.name = "model";
  auto named = planner::import_model(planner::ModelSource::from_text(kUnnamed), options);
  REQUIRE_MESSAGE(named, named.error().message);
  CHECK(named->graph.name == "model");
}

TEST_CASE(
    "plan_file: an annotated graph.json goes through the mesh pipeline to a per-chip program") {
  std::vector<std::pair<planner::NoteKind, std::string>> notes;
  planner::FileOptions options;
  options.mesh = "1x2";
  options.on_note = [&](planner::NoteKind kind, const std::string& text) {
    notes.emplace_back(kind, text);
  };
  auto planned = planner::plan_file(planner::ModelSource::from_text(kAnnotated), options);
  REQUIRE_MESSAGE(planned, planned.error().message);
  const planner::Graph& g = planned->model.graph;
  CHECK(g.name == "tp");  // the model's name, not the entry function's
  CHECK(g.mesh.rows * g.mesh.cols == 2);
  // Each chip holds half of w's columns: [256, 64].
  bool half = false;
  for (const auto& v : g.values) half |= v.shape == std::vector<int64_t>{256, 64};
  CHECK(half);
  REQUIRE(planned->plan);
  // The result is gathered from both chips: the summary names the communication.
  bool communication = false;
  for (const auto& [kind, text] : notes)
    communication |= kind == planner::NoteKind::summary && text.starts_with("<text>: ") &&
                     text.find("communication") != std::string::npos;
  CHECK(communication);
}

TEST_CASE("plan_file: a printed module or a per-chip stage stops before the plan") {
  planner::FileOptions sdy;
  sdy.mesh = "1x2";
  sdy.print_module = planner::ModuleOutput::sdy;
  auto printed = planner::plan_file(planner::ModelSource::from_text(kAnnotated), sdy);
  REQUIRE_MESSAGE(printed, printed.error().message);
  REQUIRE(printed->model.module_text);
  CHECK(printed->model.module_text->find("sdy.mesh") != std::string::npos);
  CHECK_FALSE(printed->plan);

  planner::FileOptions layout;
  layout.stop_after = "layout";
  auto staged = planner::plan_file(planner::ModelSource::from_text(kUnnamed), layout);
  REQUIRE_MESSAGE(staged, staged.error().message);
  REQUIRE(staged->stage_json);
  CHECK(staged->stage_json->find("\"r\"") != std::string::npos);  // the op, by name
  CHECK_FALSE(staged->plan);
}

TEST_CASE("plan_file: errors name the option or the mesh shapes that disagree") {
  const auto source = planner::ModelSource::from_text(kAnnotated);
  planner::FileOptions options;
  options.mesh = "2x2";
  auto shapes = planner::plan_file(source, options);
  REQUIRE_FALSE(shapes);
  CHECK(shapes.error().code == ErrorCode::incompatible);
  CHECK(shapes.error().message.find("annotated for a") != std::string::npos);
  CHECK(shapes.error().message.find("--mesh 2x2 has 4 chips") != std::string::npos);

  options.mesh = "bogus";
  auto mesh = planner::plan_file(source, options);
  REQUIRE_FALSE(mesh);
  CHECK(mesh.error().to_string().find("--mesh") != std::string::npos);

  planner::FileOptions propagation;
  propagation.propagation = "basic";
  auto strategy = planner::plan_file(planner::ModelSource::from_text(kModule), propagation);
  REQUIRE_FALSE(strategy);
  CHECK(strategy.error().message.find("--propagation") != std::string::npos);

  // The partial explicit reshards leave conflicts for a partitioner: Shardy's stage only.
  planner::FileOptions partial;
  partial.explicit_reshards = "partial";
  partial.print_module = planner::ModuleOutput::sdy;
  auto pipeline = planner::plan_file(planner::ModelSource::from_text(kModule), partial);
  REQUIRE_FALSE(pipeline);
  CHECK(pipeline.error().message.find("--explicit-reshards=partial applies to "
                                      "--stop-after=sdy-insert-explicit-reshards") !=
        std::string::npos);
  partial.explicit_reshards = "half";
  partial.stop_after = "sdy-insert-explicit-reshards";
  auto version = planner::plan_file(planner::ModelSource::from_text(kModule), partial);
  REQUIRE_FALSE(version);
  CHECK(version.error().message.find("--explicit-reshards: unknown version 'half'") !=
        std::string::npos);
  partial.explicit_reshards = "partial";
  CHECK(planner::plan_file(planner::ModelSource::from_text(kModule), partial).has_value());

  planner::FileOptions stage;
  stage.stop_after = "bogus";
  stage.print_module = planner::ModuleOutput::sdy;
  auto unknown = planner::plan_file(planner::ModelSource::from_text(kModule), stage);
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message.find("unknown stage 'bogus'") != std::string::npos);

  planner::FileOptions device;
  device.device = "no_such_chip";
  auto chip = planner::plan_file(planner::ModelSource::from_text(kUnnamed), device);
  REQUIRE_FALSE(chip);
  CHECK(chip.error().to_string().find("no_such_chip") != std::string::npos);
}
