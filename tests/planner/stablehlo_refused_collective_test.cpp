// Collectives whose direct launch tt-metal refuses (device::collective_launch_rule) lower to an
// equivalent legal sequence instead of refusing the program: a reduce_scatter over 8 chips of a
// dim of 2 tiles is an all_reduce and the all_slice of each chip's block; an all_gather of a
// rank-1 tensor gathers its [1, N] reshape along dim 1. Run on 8 emulated chips with global
// inputs; the expected values are worked out by hand.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/collective_rules.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/mesh_spec.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"
#include "mesh_program_run.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

planner::Graph mesh_graph(const std::string& text) {
  return test::mesh_graph(text, 8);
}
using test::run_on_mesh;

int count(const planner::Graph& g, device::OpKind kind) {
  int n = 0;
  for (const auto& op : g.ops) n += op.kind == kind;
  return n;
}

}  // namespace

TEST_CASE("the device refuses a reduce_scatter of 2 tiles over 8 chips and a rank-1 all_gather") {
  device::OpConfig c;
  c.mesh_rows = 1;
  c.mesh_cols = 8;
  c.cluster_axis = 1;
  c.collective_dim = 1;
  const std::vector<int64_t> two_tiles = {1, 64}, eight_tiles = {1, 256}, rank1 = {16};
  CHECK(device::collective_launch_rule(device::OpKind::reduce_scatter, "a", two_tiles, c) ==
        "operand 'a' scatters dim 1 (64, 2 tiles) over 8 chips; tt-metal: \"Number of tiles at "
        "dimension 1 must be divisible by ring_size\"");
  CHECK(device::collective_launch_rule(device::OpKind::reduce_scatter, "a", eight_tiles, c) == "");
  c.collective_dim = 0;
  CHECK(device::collective_launch_rule(device::OpKind::all_gather, "a", rank1, c) ==
        "operand 'a' has rank 1; tt-metal: \"AllGather requires tensor of rank 2 or greater\"");
}

TEST_CASE("a reduce_scatter over 8 chips of a dim of 2 tiles is an all_reduce and all_slice") {
  // Device i holds row i of the 8x64 argument; the reduce_scatter sums the rows and device k keeps
  // columns 8k..8k+7 of the sum, which the out_sharding puts back in place: a 1x64 result.
  const std::string text = R"(module {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<8x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<1x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{}, {"x"}]>] manual_axes={"x"} (%a: tensor<1x64xf32>) {
      %b = "stablehlo.reduce_scatter"(%a) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, scatter_dimension = 1 : i64, use_global_device_ids}> ({
      ^bb0(%p: tensor<f32>, %q: tensor<f32>):
        %s = stablehlo.add %p, %q : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) : (tensor<1x64xf32>) -> tensor<1x8xf32>
      sdy.return %b : tensor<1x8xf32>
    } : (tensor<8x64xf32>) -> tensor<1x64xf32>
    return %0 : tensor<1x64xf32>
  }
}
)";
  {
    // The communication report counts the all_reduce that moves: each chip sends 2 * 7/8 of its
    // 1x64 f32 operand (256 bytes), 448 bytes, not the reduce_scatter's 224.
    auto m = parse_module(text, "mesh.mlir");
    REQUIRE(m);
    PipelineOptions options;
    options.mesh_rows = 0;
    options.mesh_cols = 0;
    REQUIRE(run_pipeline(*m, options));
    auto comm = communication(*m);
    REQUIRE_MESSAGE(comm, (comm ? "" : comm.error().message));
    REQUIRE(comm->ops.size() == 1);
    CHECK(comm->ops[0].kind == "all_reduce + all_slice");
    CHECK(comm->ops[0].bytes == 448);
    CHECK(comm->bytes == 448);
    CHECK(comm->count("all_reduce") == 1);
    CHECK(comm->count("reduce_scatter") == 0);
  }
  planner::Graph g = mesh_graph(text);
  CHECK(count(g, device::OpKind::reduce_scatter) == 0);
  CHECK(count(g, device::OpKind::all_reduce) == 1);
  CHECK(count(g, device::OpKind::all_slice) == 1);
  std::vector<float> input(8 * 64);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 64; ++j) input[i * 64 + j] = static_cast<float>(i + j);
  // Column j sums i + j over i = 0..7: 28 + 8j.
  std::vector<float> want(64);
  for (int j = 0; j < 64; ++j) want[j] = static_cast<float>(28 + 8 * j);
  CHECK(run_on_mesh(g, {8, 64}, input) == want);
}

TEST_CASE("an all_gather of a rank-1 tensor gathers its [1, N] reshape along dim 1") {
  const std::string text = R"(module {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{}]>] manual_axes={"x"} (%a: tensor<2xf32>) {
      %b = "stablehlo.all_gather"(%a) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, use_global_device_ids}> : (tensor<2xf32>) -> tensor<16xf32>
      %c = stablehlo.add %b, %b : tensor<16xf32>
      sdy.return %c : tensor<16xf32>
    } : (tensor<16xf32>) -> tensor<16xf32>
    return %0 : tensor<16xf32>
  }
}
)";
  planner::Graph g = mesh_graph(text);
  REQUIRE(count(g, device::OpKind::all_gather) == 1);
  for (const auto& op : g.ops)
    if (op.kind == device::OpKind::all_gather) {
      CHECK(g.values[op.operands[0]].shape == std::vector<int64_t>{1, 2});
      CHECK(g.values[op.results[0]].shape == std::vector<int64_t>{1, 16});
    }
  std::vector<float> input(16);
  for (int i = 0; i < 16; ++i) input[i] = static_cast<float>(i) - 5.5f;
  std::vector<float> want(16);
  for (int i = 0; i < 16; ++i) want[i] = 2 * (static_cast<float>(i) - 5.5f);
  CHECK(run_on_mesh(g, {16}, input) == want);
}

TEST_CASE("a collective_broadcast of a rank-1 tensor gathers it as one row") {
  // Every device receives device 0's piece (elements 0 and 1 of the argument).
  const std::string text = R"(module {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%a: tensor<2xf32>) {
      %b = "stablehlo.collective_broadcast"(%a) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>}> : (tensor<2xf32>) -> tensor<2xf32>
      sdy.return %b : tensor<2xf32>
    } : (tensor<16xf32>) -> tensor<16xf32>
    return %0 : tensor<16xf32>
  }
}
)";
  planner::Graph g = mesh_graph(text);
  std::vector<float> input(16);
  for (int i = 0; i < 16; ++i) input[i] = static_cast<float>(10 + i);
  std::vector<float> want(16);
  for (int i = 0; i < 16; ++i) want[i] = static_cast<float>(10 + i % 2);
  CHECK(run_on_mesh(g, {16}, input) == want);
}
