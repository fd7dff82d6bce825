// stablehlo.collective_broadcast (StableHLO spec: every process of a replica group receives the
// operand of the group's first process) in a shard_map body on a 2-device mesh, run on two
// emulated chips; on one device with groups of one process it is the identity. Written sdy
// collectives (sdy.all_slice) outside a manual computation reshard the global value. Expected
// values are worked out by hand.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/mesh_spec.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"
#include "mesh_program_run.hpp"
#include "plan_run.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

/// The mesh pipeline and lowering of `text` (2 devices); the graph.
planner::Graph mesh_graph(const std::string& text) {
  return test::mesh_graph(text, 2);
}
using test::run_on_mesh;

/// A shard_map over "x" (2 devices) of a 4x2 f32 argument split by rows, whose body broadcasts
/// within `groups`.
std::string broadcast_module(const std::string& groups) {
  return R"(module {
  sdy.mesh @mesh = <["x"=2]>
  func.func @main(%arg0: tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%a: tensor<2x2xf32>) {
      %b = "stablehlo.collective_broadcast"(%a) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<)" +
         groups + R"(> : tensor<1x2xi64>}> : (tensor<2x2xf32>) -> tensor<2x2xf32>
      sdy.return %b : tensor<2x2xf32>
    } : (tensor<4x2xf32>) -> tensor<4x2xf32>
    return %0 : tensor<4x2xf32>
  }
}
)";
}

const std::vector<float> kInput = {1, 2, 3, 4, 5, 6, 7, 8};  // device 0: rows 0-1, device 1: 2-3

int count(const planner::Graph& g, device::OpKind kind) {
  int n = 0;
  for (const auto& op : g.ops) n += op.kind == kind;
  return n;
}

}  // namespace

TEST_CASE("collective_broadcast from device 0 gives every device device 0's piece") {
  planner::Graph g = mesh_graph(broadcast_module("[[0, 1]]"));
  CHECK(count(g, device::OpKind::all_gather) == 1);
  CHECK(run_on_mesh(g, {4, 2}, kInput) == std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4});
}

TEST_CASE("collective_broadcast whose group starts at device 1 sends device 1's piece") {
  planner::Graph g = mesh_graph(broadcast_module("[[1, 0]]"));
  CHECK(run_on_mesh(g, {4, 2}, kInput) == std::vector<float>{5, 6, 7, 8, 5, 6, 7, 8});
}

TEST_CASE("collective_broadcast on one device with the group {0} is the identity") {
  const std::string text = R"(func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "stablehlo.collective_broadcast"(%x) <{replica_groups = dense<[[0]]> : tensor<1x1xi64>}> : (tensor<3xf32>) -> tensor<3xf32>
  %1 = stablehlo.add %0, %x : tensor<3xf32>
  return %1 : tensor<3xf32>
}
)";
  planner::Graph g = test::lower_text(text, "one.mlir");
  CHECK(test::run_rank1(g, "dram", "one", {{1, -2, 3.5f}}) ==
        std::vector<std::vector<float>>{{2, -4, 7}});
  // Printed as --emit=stablehlo prints it, the module reads back to the same graph.
  auto m = parse_module(text, "rt.mlir");
  REQUIRE(m);
  const std::string printed = print_module(*m);
  CHECK(printed.find("stablehlo.collective_broadcast") != std::string::npos);
  auto again = parse_module(printed, "printed.mlir");
  REQUIRE_MESSAGE(again, (again ? "" : again.error().message));
  CHECK(print_module(*again) == printed);
  auto g2 = lower_to_graph(*again);
  REQUIRE_MESSAGE(g2, (g2 ? "" : g2.error().message));
  CHECK(planner::graph_key(*g2) == planner::graph_key(g));
}

TEST_CASE("collective_broadcast: bad groups and types are located refusals") {
  // Groups of two without a mesh.
  CHECK(test::lower_error(R"(func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "stablehlo.collective_broadcast"(%x) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
)") == "bad.mlir:2:3: unimplemented: stablehlo.collective_broadcast over groups of more than one "
       "process in a module without an sdy.mesh");
  // The result type is the operand's.
  CHECK(test::lower_error(R"(func.func @main(%x: tensor<3xf32>) -> tensor<6xf32> {
  %0 = "stablehlo.collective_broadcast"(%x) <{replica_groups = dense<[[0]]> : tensor<1x1xi64>}> : (tensor<3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}
)") == "bad.mlir:2:3: stablehlo.collective_broadcast's result type tensor<6xf32> differs from its "
       "operand's tensor<3xf32>");
}

TEST_CASE("sdy.all_slice written outside a manual computation reshards the global value") {
  // As tt-mlir's all_slice tests write it: a replicated argument sliced over "batch".
  const std::string text = R"(module {
  sdy.mesh @mesh = <["model"=1, "batch"=2]>
  func.func @main(%arg0: tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> tensor<2x4xf32> {
    %0 = sdy.all_slice [{}, {"batch"}] %arg0 out_sharding=<@mesh, [{}, {"batch"}]> : tensor<2x4xf32>
    %1 = stablehlo.add %0, %0 : tensor<2x4xf32>
    return %1 : tensor<2x4xf32>
  }
}
)";
  planner::Graph g = mesh_graph(text);
  CHECK(run_on_mesh(g, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}) ==
        std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16});
}

TEST_CASE("a slice keeping a split dim whole slices each device's rows to their local size") {
  // Rows split over "x"; the slice takes every row (dim 0 passes through split) and every
  // other column.
  const std::string text = R"(module {
  sdy.mesh @mesh = <["x"=2]>
  func.func @main(%arg0: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = stablehlo.slice %arg0 [0:4, 0:4:2] : (tensor<4x4xf32>) -> tensor<4x2xf32>
    return %0 : tensor<4x2xf32>
  }
}
)";
  planner::Graph g = mesh_graph(text);
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  CHECK(run_on_mesh(g, {4, 4}, x) == std::vector<float>{0, 2, 4, 6, 8, 10, 12, 14});
}
