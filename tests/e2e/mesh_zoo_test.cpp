// The annotated mesh zoo through the mesh front end: every reduced mesh model, exported with its
// shardings and run through the pipeline, computes on its mesh (SPMD host simulation) what it
// computes on one device (the exported module's reference and the graph's own device::reference).
// Tensor-parallel Llama needs exactly Megatron's communication: two all_reduces of the [seq,
// hidden] activations per layer, bytes 2(N-1)/N * T each, computed here from the shapes.
#include <doctest/doctest.h>

#include <algorithm>

#include "meshplan/planner/export_stablehlo.hpp"
#include "meshplan/planner/import_json.hpp"
#include "planner/mesh_front_util.hpp"
#include "test_util.hpp"
#include "zoo.hpp"

namespace meshplan {
namespace {

int64_t value_size(const planner::Graph& g, std::string_view name, size_t dim) {
  for (const auto& v : g.values)
    if (v.name == name) return v.shape.at(dim);
  return 0;
}

/// Megatron's all_reduce bytes per layer of a Llama graph: [seq, hidden] bf16 reduced over the
/// attention axes and over the FFN axes.
double megatron_bytes(const planner::Graph& g, int64_t attn_group, int64_t ffn_group) {
  const double t =
      static_cast<double>(value_size(g, "tokens", 0) * value_size(g, "tokens", 1)) * 2.0;  // bf16
  auto ar = [&](int64_t n) {
    return 2.0 * static_cast<double>(n - 1) / static_cast<double>(n) * t;
  };
  return ar(attn_group) + ar(ffn_group);
}

/// Chips in a group spanning `axes` of the annotated mesh.
int64_t group_size(const std::vector<std::string>& axes, const planner::MeshAnnotations& ann) {
  int64_t n = 1;
  for (const auto& [name, size] : ann.axes)
    if (std::find(axes.begin(), axes.end(), name) != axes.end()) n *= size;
  return n;
}

size_t argument_index(const planner::Graph& g, std::string_view name) {
  for (size_t i = 0; i < g.arguments.size(); ++i)
    if (g.values[g.arguments[i]].name == name) return i;
  return g.arguments.size();
}

TEST_CASE("mesh zoo (reduced): SPMD == single device == graph reference") {
  for (const models::MeshModelSpec& spec : models::mesh_zoo()) {
    CAPTURE(spec.name);
    auto model = spec.reduced();
    REQUIRE_MESSAGE(model.has_value(), model.error().message);
    const planner::MeshAnnotations& ann = model->annotations;
    CHECK(ann.rows() == spec.rows);
    CHECK(ann.cols() == spec.cols);
    planner::shlo::Module local =
        test::check_mesh_equivalence(model->graph, ann, spec.rows, spec.cols);
    auto stats = planner::shlo::communication(local);
    REQUIRE_MESSAGE(stats.has_value(), stats.error().message);
    if (spec.name.starts_with("llama")) {
      CHECK(stats->count("all_reduce") == 2);
      CHECK(stats->count("all_gather") == 0);
      CHECK(stats->count("all_to_all") == 0);
      CHECK(stats->count("reduce_scatter") == 0);
      int64_t na = group_size(models::llama_attention_axes(spec.mesh), ann);
      int64_t nf = group_size(models::llama_ffn_axes(spec.mesh), ann);
      CHECK(stats->bytes == doctest::Approx(megatron_bytes(model->graph, na, nf)));
    } else {  // data parallel: no communication at all
      CHECK(stats->counts.empty());
      auto shards = planner::shlo::mesh_shards(local);
      REQUIRE(shards.has_value());
      CHECK(shards->front().type == "devices");
    }
  }
}

TEST_CASE("mesh zoo (full shapes): TP Llama's collectives are Megatron's, 2 per layer") {
  for (const models::MeshModelSpec& spec : models::mesh_zoo()) {
    if (!spec.name.starts_with("llama")) continue;
    CAPTURE(spec.name);
    auto model = spec.full();
    REQUIRE_MESSAGE(model.has_value(), model.error().message);
    auto m = planner::export_stablehlo(model->graph, model->annotations);
    REQUIRE_MESSAGE(m.has_value(), m.error().message);
    auto st = planner::shlo::run_pipeline(*m, planner::pipeline_options(model->annotations));
    REQUIRE_MESSAGE(st.has_value(), st.error().message);
    auto stats = planner::shlo::communication(*m);
    REQUIRE(stats.has_value());
    CHECK(stats->count("all_reduce") == 2);
    CHECK(stats->counts.size() == 1);
    int64_t na = group_size(models::llama_attention_axes(spec.mesh), model->annotations);
    int64_t nf = group_size(models::llama_ffn_axes(spec.mesh), model->annotations);
    CHECK(stats->bytes == doctest::Approx(megatron_bytes(model->graph, na, nf)));
    // The boundary: column-parallel weights split along their output dim, row-parallel ones
    // along their input dim, N ways.
    auto shards = planner::shlo::mesh_shards(*m);
    REQUIRE(shards.has_value());
    auto shard_of = [&](std::string_view name) {
      size_t i = argument_index(model->graph, name);
      REQUIRE(i < shards->size());
      return (*shards)[i];
    };
    CHECK(shard_of("l0.wq").shard_shape == std::vector<int64_t>{1, na});
    CHECK(shard_of("l0.wk").shard_shape == std::vector<int64_t>{1, na});
    CHECK(shard_of("l0.wo").shard_shape == std::vector<int64_t>{na, 1});
    CHECK(shard_of("l0.w1").shard_shape == std::vector<int64_t>{1, nf});
    CHECK(shard_of("l0.w2").shard_shape == std::vector<int64_t>{nf, 1});
    // Host tensors are whole: the boundary splits or replicates them (never `identity`).
    CHECK(shard_of("l0.wq").type == "devices");
    CHECK(shard_of("tokens").type == "replicate");
  }
}

TEST_CASE("mesh zoo: annotated graph.json round-trips the shardings") {
  for (const models::MeshModelSpec& spec : models::mesh_zoo()) {
    CAPTURE(spec.name);
    auto model = spec.reduced();
    REQUIRE(model.has_value());
    auto json = planner::export_graph_json(model->graph, model->annotations);
    REQUIRE_MESSAGE(json.has_value(), json.error().message);
    auto back = planner::import_annotated_graph_json(*json, spec.name + ".json");
    REQUIRE_MESSAGE(back.has_value(), back.error().message);
    CHECK(back->annotations.axes == model->annotations.axes);
    CHECK(back->annotations.outputs == model->annotations.outputs);
    for (const auto& [name, s] : model->annotations.arguments)
      CHECK(back->annotations.argument(name) == s);
    CHECK(back->graph.print() == model->graph.print());
    // The same module comes out of the JSON form.
    auto a = planner::export_stablehlo_text(model->graph, model->annotations);
    auto b = planner::export_stablehlo_text(back->graph, back->annotations);
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    CHECK(*a == *b);
  }
}

TEST_CASE("mesh zoo: examples/models/<name>.json are the full models as meshplan-zoo writes them") {
  for (const models::MeshModelSpec& spec : models::mesh_zoo()) {
    CAPTURE(spec.name);
    auto model = spec.full();
    REQUIRE(model.has_value());
    auto json = planner::export_graph_json(model->graph, model->annotations);
    REQUIRE(json.has_value());
    auto file =
        planner::read_text_file(test::source_path("examples/models/" + spec.name + ".json"));
    REQUIRE_MESSAGE(file.has_value(), "regenerate with meshplan-zoo --write-json examples/models");
    CHECK(*file == *json);
  }
}

}  // namespace
}  // namespace meshplan
