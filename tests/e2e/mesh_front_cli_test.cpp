// meshplan-compile on annotated graph.json files: --emit=stablehlo prints the exported module,
// --emit=sdy the per-device program after the pipeline (TP Llama: exactly two all_reduces),
// --stop-after works as for .mlir models, named meshes are accepted, and a --mesh that does not
// match the annotations is an error naming both.
#include <doctest/doctest.h>

#include <fstream>

#include "meshplan/planner/export_stablehlo.hpp"
#include "meshplan/planner/import_json.hpp"
#include "test_util.hpp"
#include "zoo.hpp"

namespace meshplan {
namespace {

std::string compile_tool() {
  return std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// Writes the reduced mesh zoo model `name` as an annotated graph.json; returns its path.
std::string write_model(const test::TempDir& dir, const std::string& name,
                        planner::AnnotatedGraph* out) {
  for (const auto& spec : models::mesh_zoo())
    if (spec.name == name) {
      auto model = spec.reduced();
      REQUIRE(model.has_value());
      auto json = planner::export_graph_json(model->graph, model->annotations);
      REQUIRE(json.has_value());
      std::string path = dir.file(name + ".json");
      std::ofstream(path) << *json;
      *out = std::move(*model);
      return path;
    }
  FAIL("no mesh model ", name);
  return "";
}

TEST_CASE("meshplan-compile MODEL.json: the mesh front end's emit paths") {
  test::TempDir dir;
  planner::AnnotatedGraph model;
  std::string json = write_model(dir, "llama3_8b_decode_tp_t3k", &model);
  const std::string tool = compile_tool();

  // --emit=stablehlo: the exported module, exactly as the API prints it.
  auto exported = planner::export_stablehlo(model.graph, model.annotations);
  REQUIRE(exported.has_value());
  auto r = test::run_shell(tool + " " + json + " --emit=stablehlo");
  CHECK(r.status == 0);
  CHECK(r.text == planner::shlo::print_module(*exported));

  // --emit=sdy: the per-device program; Megatron needs two all_reduces per layer.
  r = test::run_shell(tool + " " + json + " --mesh t3k --emit=sdy");
  CHECK_MESSAGE(r.status == 0, r.text);
  CHECK(count(r.text, "sdy.manual_computation") == 1);
  CHECK(count(r.text, "\"stablehlo.all_reduce\"") == 2);
  CHECK(count(r.text, "\"stablehlo.all_gather\"") == 0);

  // --stop-after=propagation shows the shardings propagated through the custom calls.
  r = test::run_shell(tool + " " + json + " --emit=sdy --stop-after=propagation");
  CHECK(r.status == 0);
  CHECK(r.text.find("meshplan.softmax") != std::string::npos);
  CHECK(r.text.find("sdy.sharding_per_value") != std::string::npos);

  // A mesh the annotations were not made for.
  r = test::run_shell(tool + " " + json + " --mesh galaxy --emit=sdy");
  CHECK(r.status != 0);
  CHECK_MESSAGE(
      r.text.find("annotated for a 2x4 mesh but --mesh galaxy has 32 chips") != std::string::npos,
      r.text);
  r = test::run_shell(tool + " " + json + " --mesh 2y4 --emit=sdy");
  CHECK(r.status != 0);
  CHECK(r.text.find("--mesh: mesh '2y4': not RxC (e.g. 2x4)") != std::string::npos);
}

TEST_CASE("meshplan-compile MODEL.json --mesh: an unannotated graph gets the batch split") {
  test::TempDir dir;
  planner::AnnotatedGraph model;
  std::string json = write_model(dir, "resnet50_b8_dp_n300", &model);
  // Drop the annotations: --mesh alone must give the same data-parallel program.
  auto plain = planner::export_graph_json(model.graph);
  REQUIRE(plain.has_value());
  std::string path = dir.file("plain.json");
  std::ofstream(path) << *plain;
  auto r = test::run_shell(compile_tool() + " " + path + " --mesh n300 --emit=stablehlo");
  CHECK(r.status == 0);
  CHECK(r.text.find(R"(sdy.mesh @mesh = <["model"=1, "batch"=2]>)") != std::string::npos);
  r = test::run_shell(compile_tool() + " " + path + " --mesh 1x2 --emit=sdy");
  CHECK_MESSAGE(r.status == 0, r.text);
  CHECK(r.text.find("tensor<1x32x32x3xbf16>") != std::string::npos);  // batch 2 -> 1 per chip
  CHECK(r.text.find("stablehlo.all_") == std::string::npos);
}

}  // namespace
}  // namespace meshplan
