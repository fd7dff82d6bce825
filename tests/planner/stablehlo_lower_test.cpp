// The per-device program lowered to the graph IR and planned chip by chip; ops without a
// meshplan op fail with a clear unimplemented error; the meshplan-compile .mlir flags.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

Module compiled(const char* path, int64_t rows, int64_t cols) {
  auto m = parse_module_file(test::source_path(path));
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  PipelineOptions o;
  o.mesh_rows = rows;
  o.mesh_cols = cols;
  o.argument_types = {};
  auto s = run_pipeline(*m, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return std::move(*m);
}

std::string run_tool(const std::string& args) {
  std::string tool = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
  REQUIRE_MESSAGE(std::filesystem::exists(tool), "build meshplan-compile first: ", tool);
  std::string cmd = tool + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  return out;
}

std::string golden(const std::string& name) {
  std::ifstream in(test::source_path("tests/planner/golden/" + name + ".mlir"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("a data-parallel MLP's per-device program lowers to matmul/add/relu and plans") {
  Module m = compiled("examples/models/dp_mlp_relu.mlir", 2, 4);
  auto g = lower_to_graph(m);
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  REQUIRE(g->ops.size() == 4);
  CHECK(g->ops[0].kind == device::OpKind::matmul);
  CHECK(g->ops[1].kind == device::OpKind::add);
  CHECK(g->ops[2].kind == device::OpKind::relu);
  CHECK(g->ops[3].kind == device::OpKind::matmul);
  CHECK(g->values[g->arguments[0]].shape ==
        std::vector<int64_t>{8, 128});  // local: 64 rows over 8 chips
  CHECK(g->values[g->outputs[0]].shape == std::vector<int64_t>{8, 128});
  auto chip = device::builtin_chip("wormhole_b0");
  REQUIRE(chip.has_value());
  auto plan = planner::compile(*g, *chip, planner::PlannerOptions::with_policy("dram"));
  REQUIRE_MESSAGE(plan.has_value(), plan.error().message);
  CHECK(!plan->bytes.empty());
}

TEST_CASE("ops without a meshplan op name themselves and their location") {
  auto m = parse_module(
      "func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {\n"
      "  %0 = \"stablehlo.cholesky\"(%a) {lower = true} : (tensor<4x4xf32>) -> tensor<4x4xf32>\n"
      "  return %0 : tensor<4x4xf32>\n}\n",
      "not.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto g = lower_to_graph(*m);
  REQUIRE_FALSE(g.has_value());
  CHECK(g.error().code == ErrorCode::unimplemented);
  CHECK(g.error().message.starts_with(
      "not.mlir:2:3: unimplemented: stablehlo.cholesky has no meshplan op (meshplan lowers "));
}

TEST_CASE("a data-parallel MLP with a max-reduce and a broadcast lowers per device") {
  auto dp = lower_to_graph(compiled("examples/models/mlp_dp.mlir", 2, 4));
  REQUIRE_MESSAGE(dp.has_value(), dp.error().message);
  std::vector<device::OpKind> kinds;
  for (const auto& op : dp->ops) kinds.push_back(op.kind);
  using K = device::OpKind;
  // The broadcast of the row max is a reshape to [8, 1] that subtract broadcasts implicitly.
  CHECK(kinds == std::vector<K>{K::matmul, K::tanh, K::matmul, K::reduce_max, K::reshape,
                                K::subtract, K::exp});
  CHECK(dp->values[dp->outputs[0]].shape == std::vector<int64_t>{8, 32});
}

TEST_CASE("meshplan-compile --emit=sdy / --stop-after print each stage") {
  std::string case1 = test::source_path("tests/planner/golden/case1_input.mlir");
  CHECK(run_tool(case1 + " --mesh 1x2 --arg-types=input --emit=sdy") == golden("case1_12_close"));
  CHECK(run_tool(case1 + " --mesh 1x2 --arg-types=input --emit=sdy --stop-after=propagation") ==
        golden("case1_06_propagation"));
  std::string case6 = test::source_path("tests/planner/golden/case6_input.mlir");
  // Seed 003's case 6 passes its sharded argument pre-sharded (the goldens say so).
  CHECK(run_tool(case6 + " --mesh 1x2 --presharded --emit=sdy --stop-after=explicit-reshards") ==
        golden("case6_08_explicit_reshards"));
  CHECK(run_tool(case6 + " --mesh 1x2 --presharded --emit=sdy --stop-after=collectives") ==
        golden("case6_10_collectives"));
  CHECK(run_tool(case6 + " --mesh 1x2 --emit=stablehlo") == golden("case6_input"));
  test::TempDir dir;
  std::string out = dir.file("out.mlir");
  CHECK(run_tool(case1 + " --mesh 1x2 --arg-types=input --emit=sdy -o " + out).empty());
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == golden("case1_12_close"));
  CHECK(run_tool(case1 + " --mesh 1x2 --emit=sdy --stop-after=nowhere") ==
        "meshplan-compile: error: invalid_argument: --stop-after: unknown stage 'nowhere'\n");
  CHECK(run_tool(case1 + " --mesh 3x2 --emit=sdy").empty() == false);
}

TEST_CASE("elementwise StableHLO ops lower to the meshplan op of the same meaning") {
  auto g = lower_to_graph(compiled("tests/planner/golden/case1_input.mlir", 1, 2));
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  REQUIRE(g->ops.size() == 1);
  CHECK(g->ops[0].kind == *device::op_from_name("abs"));
  CHECK(g->values[g->arguments[0]].shape == std::vector<int64_t>{16, 48, 24, 32});
}
