// Seed 003's cases and the example .mlir models lowered after the mesh pipeline: the per-device
// graph has the local shapes and the ops expected; on a 1x1 mesh the lowered graph, compiled and
// run on the device reference, gives evaluate_reference's result for the whole module.
#include <doctest/doctest.h>

#include "lowering_check.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;
using K = device::OpKind;

namespace {

Module load(const std::string& path) {
  auto m = parse_module_file(test::source_path(path));
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::move(*m);
}

Module piped(const std::string& path, int64_t rows, int64_t cols) {
  Module m = load(path);
  PipelineOptions o;
  o.mesh_rows = rows;
  o.mesh_cols = cols;
  auto s = run_pipeline(m, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return m;
}

planner::Graph lowered(const Module& m) {
  auto g = lower_to_graph(m);
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  return std::move(*g);
}

std::vector<K> kinds(const planner::Graph& g) {
  std::vector<K> out;
  for (const auto& op : g.ops) out.push_back(op.kind);
  return out;
}

std::vector<int64_t> arg_shape(const planner::Graph& g, size_t i) {
  return g.values[g.arguments.at(i)].shape;
}

/// On a 1x1 mesh: evaluate_reference(original) == run_reference(compile(lower(pipeline))).
void check_single_chip(const std::string& path) {
  CAPTURE(path);
  Module original = load(path);
  Module local = piped(path, 1, 1);
  auto inputs = random_inputs(original, 5);
  test::check_same_results(original, lowered(local), inputs);
}

}  // namespace

TEST_CASE("seed 003 case 1 lowers at 1x1 and 1x2 (batch-parallel, local shape 16x48x24x32)") {
  check_single_chip("tests/planner/golden/case1_input.mlir");
  planner::Graph g = lowered(piped("tests/planner/golden/case1_input.mlir", 1, 2));
  CHECK(kinds(g) == std::vector<K>{K::abs});
  CHECK(arg_shape(g, 0) == std::vector<int64_t>{16, 48, 24, 32});
}

TEST_CASE("seed 003 case 2: the solved manual computation's body lowers with its local shapes") {
  planner::Graph g = lowered(piped("tests/planner/golden/case2_input.mlir", 2, 4));
  CHECK(kinds(g) == std::vector<K>{K::neg});
  CHECK(arg_shape(g, 0) == std::vector<int64_t>{1, 512, 128, 256});
}

TEST_CASE("seed 003 case 4: the reshape of a batch-sharded input lowers per device on 1x8") {
  planner::Graph g = lowered(piped("tests/planner/golden/case4_input.mlir", 1, 8));
  CHECK(kinds(g) == std::vector<K>{K::reshape});
  CHECK(arg_shape(g, 0) == std::vector<int64_t>{128, 2, 32, 32});
  CHECK(g.values[g.outputs[0]].shape == std::vector<int64_t>{256, 1024});
}

TEST_CASE("example models lower on one chip with the reference result, and per device on 2x4") {
  check_single_chip("examples/models/dp_mlp_relu.mlir");
  check_single_chip("examples/models/mlp_dp.mlir");
  for (const char* path : {"examples/models/dp_mlp_relu.mlir", "examples/models/mlp_dp.mlir"}) {
    CAPTURE(path);
    planner::Graph g = lowered(piped(path, 2, 4));
    CHECK(arg_shape(g, 0) == std::vector<int64_t>{8, g.values[g.arguments[0]].shape[1]});
    for (K k : kinds(g)) CHECK(device::op_name(k) != "all_reduce");  // data parallel
  }
}
