// Seed 003's six cases through the mesh pipeline, stage by stage, against the document's text;
// and every stage's printed module parses back to the same text.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "meshplan/planner/spmd.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

std::string golden(const std::string& name) {
  std::ifstream in(test::source_path("tests/planner/golden/" + name + ".mlir"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string run(const std::string& input, int64_t rows, int64_t cols, const char* stage,
                std::vector<std::string> types = {}) {
  auto m = parse_module(golden(input), input + ".mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  PipelineOptions o;
  o.mesh_rows = rows;
  o.mesh_cols = cols;
  o.argument_types = std::move(types);
  o.presharded_arguments = true;  // The seed's cases come from JAX / torch-xla: pre-sharded.
  auto stage_value = stage_from_name(stage);
  REQUIRE(stage_value.has_value());
  o.stop_after = *stage_value;
  auto status = run_pipeline(*m, o);
  REQUIRE_MESSAGE(status.has_value(), status.error().message);
  return print_module(*m);
}

}  // namespace

TEST_CASE("case 1: single-chip graph, batch-parallel on 1x2") {
  const std::vector<std::string> t = {"input"};
  CHECK(run("case1_input", 1, 2, "tt-arguments", t) == golden("case1_02_tt_args"));
  CHECK(run("case1_input", 1, 2, "shard-status", t) == golden("case1_03_shard_status"));
  CHECK(run("case1_input", 1, 2, "argument-sharding", t) == golden("case1_04_arg_annotations"));
  CHECK(run("case1_input", 1, 2, "propagation", t) == golden("case1_06_propagation"));
  CHECK(run("case1_input", 1, 2, "explicit-reshards", t) == golden("case1_06_propagation"));
  CHECK(run("case1_input", 1, 2, "wrap", t) == golden("case1_09_wrap"));
  CHECK(run("case1_input", 1, 2, "collectives", t) == golden("case1_09_wrap"));
  CHECK(run("case1_input", 1, 2, "local-shapes", t) == golden("case1_11_local_shapes"));
  CHECK(run("case1_input", 1, 2, "close", t) == golden("case1_12_close"));
}

TEST_CASE("case 2: solved graph with a manual computation is left alone") {
  const std::vector<std::string> t = {"input"};
  CHECK(run("case2_input", 2, 4, "tt-arguments", t) == golden("case2_02_tt_args"));
  CHECK(run("case2_input", 2, 4, "shard-status", t) == golden("case2_03_shard_status"));
  CHECK(run("case2_input", 2, 4, "close", t) == golden("case2_03_shard_status"));
}

TEST_CASE("case 3: solved graph with pre-sharded inputs") {
  const std::vector<std::string> t = {"input", "parameter"};
  CHECK(run("case3_input", 2, 4, "tt-arguments", t) == golden("case3_02_tt_args"));
  CHECK(run("case3_input", 2, 4, "shard-status", t) == golden("case3_03_shard_status"));
  CHECK(run("case3_input", 2, 4, "close", t) == golden("case3_03_shard_status"));
}

TEST_CASE("case 4: partially solved, reshape propagates the batch sharding") {
  CHECK(run("case4_input", 1, 8, "tt-arguments") == golden("case4_input"));
  CHECK(run("case4_input", 1, 8, "shard-status") == golden("case4_03_shard_status"));
  CHECK(run("case4_input", 1, 8, "argument-sharding") == golden("case4_03_shard_status"));
  CHECK(run("case4_input", 1, 8, "propagation") == golden("case4_06_propagation"));
  CHECK(run("case4_input", 1, 8, "explicit-reshards") == golden("case4_06_propagation"));
  CHECK(run("case4_input", 1, 8, "wrap") == golden("case4_09_wrap"));
  CHECK(run("case4_input", 1, 8, "local-shapes") == golden("case4_11_local_shapes"));
  CHECK(run("case4_input", 1, 8, "close") == golden("case4_12_close"));
}

TEST_CASE("case 5: annotated ops and a manual collective keep their shardings") {
  std::string out = run("case5_input", 2, 4, "close");
  // Local shapes: 8192x784 split 2 x 4.
  CHECK(out.find("(%arg2: tensor<f32>, %arg3: tensor<4096x196xf32>)") != std::string::npos);
  CHECK(out.find("stablehlo.add %arg3, %1 : tensor<4096x196xf32>") != std::string::npos);
  CHECK(out.find("\"stablehlo.all_gather\"(%2)") != std::string::npos);
  CHECK(out.find("sdy.reshard") == std::string::npos);
  // No reshard was needed: propagation found nothing to change.
  CHECK(run("case5_input", 2, 4, "explicit-reshards").find("sdy.reshard") == std::string::npos);
}

TEST_CASE("case 6: sharding constraint -> reshards -> all_gather + all_slice") {
  CHECK(run("case6_input", 1, 2, "shard-status") == golden("case6_03_shard_status"));
  CHECK(run("case6_input", 1, 2, "propagation") == golden("case6_03_shard_status"));
  CHECK(run("case6_input", 1, 2, "constraint-to-reshard") ==
        golden("case6_07_constraint_to_reshard"));
  CHECK(run("case6_input", 1, 2, "explicit-reshards") == golden("case6_08_explicit_reshards"));
  CHECK(run("case6_input", 1, 2, "wrap") == golden("case6_09_wrap"));
  CHECK(run("case6_input", 1, 2, "collectives") == golden("case6_10_collectives"));
  // The document stops converting here; meshplan turns sdy.all_gather into stablehlo.all_gather
  // along cluster axis 1 with local shapes.
  std::string local = run("case6_input", 1, 2, "close");
  CHECK(local.find("(%arg1: tensor<32x16xf32>)") != std::string::npos);
  CHECK(local.find("all_gather_dim = 1 : i64") != std::string::npos);
  CHECK(local.find("sdy.all_slice [{\"y\"}, {}] %1 out_sharding=<@mesh, [{\"y\"}, {}]> : "
                   "(tensor<32x32xf32>) -> tensor<16x32xf32>") != std::string::npos);
}

TEST_CASE("every stage prints a module that parses back unchanged") {
  for (const char* model : {"examples/models/tp_mlp.mlir", "examples/models/mlp_dp.mlir"}) {
    for (const char* stage : {"import", "propagation", "explicit-reshards", "wrap", "collectives",
                              "local-shapes", "close"}) {
      auto m = parse_module_file(test::source_path(model));
      REQUIRE(m.has_value());
      PipelineOptions o;
      o.mesh_rows = std::string(model).find("tp_mlp") != std::string::npos ? 1 : 2;
      o.mesh_cols = o.mesh_rows == 1 ? 8 : 4;
      o.stop_after = *stage_from_name(stage);
      REQUIRE(run_pipeline(*m, o).has_value());
      std::string text = print_module(*m);
      auto again = parse_module(text, "printed.mlir");
      REQUIRE_MESSAGE(again.has_value(), stage, ": ", again.error().message);
      CHECK_MESSAGE(print_module(*again) == text, model, " at ", stage);
    }
  }
}
