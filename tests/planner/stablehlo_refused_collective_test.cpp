// Collectives whose direct launch tt-metal refuses (device::collective_launch_rule) lower to an
// equivalent legal sequence instead of refusing the program: a reduce_scatter over 8 chips of a
// dim of 2 tiles is an all_reduce and the all_slice of each chip's block; an all_gather of a
// rank-1 tensor gathers its [1, N] reshape along dim 1. Run on 8 emulated chips with global
// inputs; the expected values are worked out by hand. tt-metal's all_reduce (rank 2 or more, by sum
// only) and point_to_point (no device sending to itself) likewise: a rank-0/1 all_reduce reduces
// its [1, N] reshape, a max or min is an all_gather and a local reduce, a self pair a local copy.
// An all_to_all breaking tt-metal's tiling rules is an all_gather along the concat dim and an
// all_slice of the split dim (split and concat on one dim: through an [n, size / n] view).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "mesh_program_run.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/collective_rules.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/mesh_spec.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

planner::Graph mesh_graph(const std::string& text) {
  return test::mesh_graph(text, 8);
}
using test::run_on_mesh;

// The compile summary's communication report of a module run through the mesh pipeline on its
// own mesh.
CommStats communication_of(const std::string& text) {
  auto m = parse_module(text, "mesh.mlir");
  REQUIRE(m);
  PipelineOptions options;
  options.mesh_rows = 0;
  options.mesh_cols = 0;
  REQUIRE(run_pipeline(*m, options));
  auto comm = communication(*m);
  REQUIRE_MESSAGE(comm, (comm ? "" : comm.error().message));
  return *comm;
}

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
    auto comm = communication_of(text);
    REQUIRE(comm.ops.size() == 1);
    CHECK(comm.ops[0].kind == "all_reduce + all_slice");
    CHECK(comm.ops[0].bytes == 448);
    CHECK(comm.bytes == 448);
    CHECK(comm.count("all_reduce") == 1);
    CHECK(comm.count("reduce_scatter") == 0);
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

TEST_CASE("an all_to_all tt-metal refuses is an all_gather along the concat dim and all_slice") {
  // Device i holds rows 8i..8i+7 of the 64x16 argument. The all_to_all splits each 8x16 block's
  // 16 columns in 8 and stacks device i's piece at rows 8i..8i+7: device j gets columns 2j, 2j+1
  // of all 64 rows, which the out_sharding puts back in place, so the result is the argument.
  // tt-metal refuses it (8 rows to concatenate at the second-last dim, not a multiple of 16).
  const std::string text = R"(module {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<64x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<64x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{}, {"x"}]>] manual_axes={"x"} (%a: tensor<8x16xf32>) {
      %b = "stablehlo.all_to_all"(%a) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, split_count = 8 : i64, split_dimension = 1 : i64}> : (tensor<8x16xf32>) -> tensor<64x2xf32>
      sdy.return %b : tensor<64x2xf32>
    } : (tensor<64x16xf32>) -> tensor<64x16xf32>
    return %0 : tensor<64x16xf32>
  }
}
)";
  device::OpConfig c;
  c.mesh_rows = 1;
  c.mesh_cols = 8;
  c.cluster_axis = 1;
  c.split_dim = 1;
  c.concat_dim = 0;
  const std::vector<int64_t> block = {8, 16};
  CHECK(device::collective_launch_rule(device::OpKind::all_to_all, "a", block, c) ==
        "all_to_all's operand of 'a' has 8 at dim 0 (the second-last); tt-metal: \"0 dimension "
        "support only 0 or 16 padding, so must be divisible by 16\"");
  {
    // Each device receives the other 7 devices' whole 8x16 f32 operands (512 bytes each): 3584
    // bytes, 8 times the all_to_all's 7/8 * 512 = 448.
    auto comm = communication_of(text);
    REQUIRE(comm.ops.size() == 1);
    CHECK(comm.ops[0].kind == "all_gather + all_slice");
    CHECK(comm.ops[0].bytes == 3584);
    CHECK(comm.bytes == 3584);
    CHECK(comm.count("all_gather") == 1);
    CHECK(comm.count("all_to_all") == 0);
  }
  planner::Graph g = mesh_graph(text);
  CHECK(count(g, device::OpKind::all_to_all) == 0);
  CHECK(count(g, device::OpKind::all_gather) == 1);
  CHECK(count(g, device::OpKind::all_slice) == 1);
  std::vector<float> input(64 * 16);
  for (int i = 0; i < 64 * 16; ++i) input[i] = static_cast<float>(i % 97) - 40.0f;
  CHECK(run_on_mesh(g, {64, 16}, input) == input);
}

TEST_CASE("an all_to_all tt-metal takes stays one all_to_all") {
  // The same exchange with 16-row blocks of 256 columns: 16 rows concatenate, 32 columns remain.
  const std::string text = R"(module {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<128x256xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<128x256xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{}, {"x"}]>] manual_axes={"x"} (%a: tensor<16x256xf32>) {
      %b = "stablehlo.all_to_all"(%a) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, split_count = 8 : i64, split_dimension = 1 : i64}> : (tensor<16x256xf32>) -> tensor<128x32xf32>
      sdy.return %b : tensor<128x32xf32>
    } : (tensor<128x256xf32>) -> tensor<128x256xf32>
    return %0 : tensor<128x256xf32>
  }
}
)";
  {
    auto comm = communication_of(text);
    REQUIRE(comm.ops.size() == 1);
    CHECK(comm.ops[0].kind == "all_to_all");
    // 7/8 of the 16x256 f32 operand (16384 bytes).
    CHECK(comm.ops[0].bytes == 14336);
  }
  planner::Graph g = mesh_graph(text);
  CHECK(count(g, device::OpKind::all_to_all) == 1);
  CHECK(count(g, device::OpKind::all_gather) == 0);
  std::vector<float> input(128 * 256);
  for (int i = 0; i < 128 * 256; ++i) input[i] = static_cast<float>(i % 101) - 50.0f;
  CHECK(run_on_mesh(g, {128, 256}, input) == input);
}

TEST_CASE("an all_to_all splitting and concatenating one refused dim transposes its blocks") {
  // Device i holds elements 8i..8i+7 of the 64-element argument; the all_to_all along dim 0 gives
  // device j element j of every device's block: out[8j + i] = x[8i + j], the 8x8 transpose.
  // tt-metal refuses it (8 elements in the last dim, not whole tiles); the lowering views each
  // block as [8, 1], gathers along dim 1 and keeps row j.
  const std::string text = R"(module {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%a: tensor<8xf32>) {
      %b = "stablehlo.all_to_all"(%a) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, concat_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, split_count = 8 : i64, split_dimension = 0 : i64}> : (tensor<8xf32>) -> tensor<8xf32>
      sdy.return %b : tensor<8xf32>
    } : (tensor<64xf32>) -> tensor<64xf32>
    return %0 : tensor<64xf32>
  }
}
)";
  planner::Graph g = mesh_graph(text);
  CHECK(count(g, device::OpKind::all_to_all) == 0);
  REQUIRE(count(g, device::OpKind::all_gather) == 1);
  for (const auto& op : g.ops)
    if (op.kind == device::OpKind::all_gather) {
      CHECK(g.values[op.operands[0]].shape == std::vector<int64_t>{8, 1});
      CHECK(g.values[op.results[0]].shape == std::vector<int64_t>{8, 8});
    }
  std::vector<float> input(64);
  for (int i = 0; i < 64; ++i) input[i] = static_cast<float>(i);
  std::vector<float> want(64);
  for (int j = 0; j < 8; ++j)
    for (int i = 0; i < 8; ++i) want[8 * j + i] = static_cast<float>(8 * i + j);
  CHECK(run_on_mesh(g, {64}, input) == want);
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

TEST_CASE("a rank-1 sum all_reduce reduces its [1, N] reshape, a scalar one its [1, 1]") {
  // Device i holds elements 8i..8i+7 of the argument (value 8i + j at j); the psum gives every
  // device sum_i (8i + j) = 224 + 8j.
  const std::string vector = R"(module {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{}]>] manual_axes={"x"} (%a: tensor<8xf32>) {
      %b = "stablehlo.all_reduce"(%a) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, use_global_device_ids}> ({
      ^bb0(%p: tensor<f32>, %q: tensor<f32>):
        %s = stablehlo.add %p, %q : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) : (tensor<8xf32>) -> tensor<8xf32>
      sdy.return %b : tensor<8xf32>
    } : (tensor<64xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
)";
  planner::Graph g = mesh_graph(vector);
  REQUIRE(count(g, device::OpKind::all_reduce) == 1);
  for (const auto& op : g.ops)
    if (op.kind == device::OpKind::all_reduce)
      CHECK(g.values[op.operands[0]].shape == std::vector<int64_t>{1, 8});
  std::vector<float> input(64);
  for (int i = 0; i < 64; ++i) input[i] = static_cast<float>(i);
  CHECK(run_on_mesh(g, {64}, input) == std::vector<float>{224, 232, 240, 248, 256, 264, 272, 280});

  // The psum of a sharded dot product: device i sums a[2i] * a[2i] + a[2i+1] * a[2i+1], the
  // all_reduce adds the 8 partial sums: 0^2 + 1^2 + ... + 15^2 = 1240.
  const std::string dot = R"(module {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<f32> {sdy.sharding = #sdy.sharding<@mesh, []>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, []>] manual_axes={"x"} (%a: tensor<2xf32>) {
      %d = stablehlo.dot_general %a, %a, contracting_dims = [0] x [0] : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
      %b = "stablehlo.all_reduce"(%d) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, use_global_device_ids}> ({
      ^bb0(%p: tensor<f32>, %q: tensor<f32>):
        %s = stablehlo.add %p, %q : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) : (tensor<f32>) -> tensor<f32>
      sdy.return %b : tensor<f32>
    } : (tensor<16xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}
)";
  planner::Graph s = mesh_graph(dot);
  REQUIRE(count(s, device::OpKind::all_reduce) == 1);
  for (const auto& op : s.ops)
    if (op.kind == device::OpKind::all_reduce)
      CHECK(s.values[op.operands[0]].shape == std::vector<int64_t>{1, 1});
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i);
  CHECK(run_on_mesh(s, {16}, v) == std::vector<float>{1240});
}

namespace {

/// An 8-device program whose device i reduces row i of an 8x4 argument with `body`
/// (stablehlo.maximum or stablehlo.minimum) over all devices; `rank1` reduces the row as a
/// 4-vector.
std::string max_min_module(const std::string& body, bool rank1) {
  const std::string t = rank1 ? "tensor<4xf32>" : "tensor<1x4xf32>";
  std::string text = R"(module {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (T {sdy.sharding = #sdy.sharding<@mesh, SPEC>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, SPEC>] manual_axes={"x"} (%a: tensor<1x4xf32>) {
      %r = stablehlo.reshape %a : (tensor<1x4xf32>) -> T
      %b = "stablehlo.all_reduce"(%r) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, use_global_device_ids}> ({
      ^bb0(%p: tensor<f32>, %q: tensor<f32>):
        %s = BODY %p, %q : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) : (T) -> T
      sdy.return %b : T
    } : (tensor<8x4xf32>) -> T
    return %0 : T
  }
}
)";
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  };
  replace("T", t);
  replace("SPEC", rank1 ? "[{}]" : "[{}, {}]");
  replace("BODY", body);
  return text;
}

const std::vector<float> kRows = {3,  -7, 12, 0, -2, 5,  1, 9, 8, -1, -6, 4,  0,  11, 2, -3,
                                  -5, 2,  7,  6, 14, -9, 3, 1, 1, 0,  -4, 10, -8, 6,  5, -2};

}  // namespace

TEST_CASE("a max all_reduce is an all_gather along a new unit dim and a local reduce_max") {
  const std::string text = max_min_module("stablehlo.maximum", false);
  {
    // The communication report counts the all_gather that moves: each chip sends its 1x4 f32
    // operand (16 bytes) to the 7 others, 112 bytes; no all_reduce.
    auto comm = communication_of(text);
    REQUIRE(comm.ops.size() == 1);
    CHECK(comm.ops[0].kind == "all_gather + reduce_max");
    CHECK(comm.ops[0].bytes == 112);
    CHECK(comm.bytes == 112);
    CHECK(comm.count("all_gather") == 1);
    CHECK(comm.count("all_reduce") == 0);
  }
  planner::Graph g = mesh_graph(text);
  CHECK(count(g, device::OpKind::all_reduce) == 0);
  CHECK(count(g, device::OpKind::all_gather) == 1);
  CHECK(count(g, device::OpKind::reduce_max) == 1);
  for (const auto& op : g.ops)
    if (op.kind == device::OpKind::all_gather) {
      CHECK(g.values[op.operands[0]].shape == std::vector<int64_t>{1, 1, 4});
      CHECK(g.values[op.results[0]].shape == std::vector<int64_t>{8, 1, 4});
    }
  // The column maxima of kRows.
  CHECK(run_on_mesh(g, {8, 4}, kRows) == std::vector<float>{14, 11, 12, 10});
}

TEST_CASE("a rank-1 min all_reduce gathers its [1, N] reshape and reduces it with reduce_min") {
  planner::Graph g = mesh_graph(max_min_module("stablehlo.minimum", true));
  CHECK(count(g, device::OpKind::all_reduce) == 0);
  CHECK(count(g, device::OpKind::all_gather) == 1);
  CHECK(count(g, device::OpKind::reduce_min) == 1);
  // The column minima of kRows.
  CHECK(run_on_mesh(g, {8, 4}, kRows) == std::vector<float>{-8, -9, -6, -3});
}

TEST_CASE("a collective_permute's pair from a device to itself is a local copy") {
  // Devices 0 and 1 swap, 3 and 4 swap, device 2 keeps its row; no pair targets 5, 6 and 7,
  // which get zeros.
  const std::string text = R"(module {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%a: tensor<1x2xf32>) {
      %b = "stablehlo.collective_permute"(%a) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 0], [2, 2], [3, 4], [4, 3]]> : tensor<5x2xi64>}> : (tensor<1x2xf32>) -> tensor<1x2xf32>
      sdy.return %b : tensor<1x2xf32>
    } : (tensor<8x2xf32>) -> tensor<8x2xf32>
    return %0 : tensor<8x2xf32>
  }
}
)";
  planner::Graph g = mesh_graph(text);
  REQUIRE(count(g, device::OpKind::collective_permute) == 1);
  for (const auto& op : g.ops)
    if (op.kind == device::OpKind::collective_permute) {
      auto config = planner::op_config(op, g.mesh);
      REQUIRE(config);
      CHECK(device::permute_pairs(*config) ==
            std::vector<std::pair<int, int>>{{0, 1}, {1, 0}, {3, 4}, {4, 3}});
    }
  CHECK(count(g, device::OpKind::all_slice) == 1);
  CHECK(count(g, device::OpKind::where) == 1);
  std::vector<float> input = {1, 2, 11, 12, 21, 22, 31, 32, 41, 42, 51, 52, 61, 62, 71, 72};
  CHECK(run_on_mesh(g, {8, 2}, input) ==
        std::vector<float>{11, 12, 1, 2, 21, 22, 41, 42, 31, 32, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("a collective_permute whose every pair sends a device to itself is no op") {
  const std::string text = R"(module {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%a: tensor<1x2xf32>) {
      %b = "stablehlo.collective_permute"(%a) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 0], [1, 1], [2, 2], [3, 3], [4, 4], [5, 5], [6, 6], [7, 7]]> : tensor<8x2xi64>}> : (tensor<1x2xf32>) -> tensor<1x2xf32>
      %c = stablehlo.add %b, %b : tensor<1x2xf32>
      sdy.return %c : tensor<1x2xf32>
    } : (tensor<8x2xf32>) -> tensor<8x2xf32>
    return %0 : tensor<8x2xf32>
  }
}
)";
  planner::Graph g = mesh_graph(text);
  CHECK(count(g, device::OpKind::collective_permute) == 0);
  CHECK(count(g, device::OpKind::where) == 0);
  std::vector<float> input = {1, 2, 11, 12, 21, 22, 31, 32, 41, 42, 51, 52, 61, 62, 71, 72};
  CHECK(run_on_mesh(g, {8, 2}, input) ==
        std::vector<float>{2, 4, 22, 24, 42, 44, 62, 64, 82, 84, 102, 104, 122, 124, 142, 144});
}

TEST_CASE(
    "a graph.json all_reduce or collective_permute tt-metal refuses is a planning error naming "
    "the op") {
  // One collective `kind` named "cc" with `attrs` of a [shape] f32 input on a 2x4 mesh.
  auto graph = [](const std::string& shape, const std::string& kind, const std::string& attrs) {
    return std::string(R"({
  "name": "ar_rules",
  "mesh": { "rows": 2, "cols": 4, "axis_names": ["x", "y"] },
  "arguments": [ { "value": { "name": "x", "shape": )") +
           shape + R"(, "dtype": "f32" }, "kind": "input" } ],
  "argument_shards": [ { "type": "replicate" } ],
  "ops": [
    { "name": "cc", "kind": ")" +
           kind + R"(", "operands": ["x"], "results": [ { "name": "y" } ],
      "attributes": [ )" +
           attrs + R"( ] }
  ],
  "outputs": ["y"],
  "output_shards": [ { "type": "replicate" } ]
})";
  };
  const device::ChipDesc chip = device::builtin_mesh("t3k")->chip;
  auto error = [&](const std::string& text) -> std::string {
    auto g = planner::import_graph_json(text, "ar.json");
    REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
    auto plan = planner::compile(*g, chip, planner::PlannerOptions::with_policy("greedy"));
    return plan ? std::string("planned") : plan.error().message;
  };
  auto all_reduce = [&](const std::string& shape, const std::string& reduce) {
    return graph(
        shape, "all_reduce",
        R"({ "name": "cluster_axis", "i": 1 }, { "name": "reduce", "s": ")" + reduce + R"(" })");
  };
  CHECK(error(all_reduce("[1, 64]", "sum")) == "planned");
  const std::string rank1 = error(all_reduce("[64]", "sum"));
  CAPTURE(rank1);
  CHECK(rank1.find("'cc'") != std::string::npos);
  CHECK(rank1.find("tt-metal's all_reduce: \"Expected input tensor to be of at least rank 2\"") !=
        std::string::npos);
  const std::string max = error(all_reduce("[1, 64]", "max"));
  CAPTURE(max);
  CHECK(max.find("'cc'") != std::string::npos);
  CHECK(max.find("all_reduce by max; tt-metal's all_reduce reduces by sum only") !=
        std::string::npos);
  auto permute = [&](const std::string& pairs) {
    return graph("[32, 32]", "collective_permute", R"({ "name": "pairs", "ints": )" + pairs + " }");
  };
  CHECK(error(permute("[0, 1, 1, 0]")) == "planned");
  const std::string self = error(permute("[0, 1, 1, 0, 2, 2]"));
  CAPTURE(self);
  CHECK(self.find("'cc'") != std::string::npos);
  CHECK(self.find("pair (2, 2) sends chip 2 to itself; tt-metal's point_to_point: \"Can't "
                  "send/receive to the same device\"") != std::string::npos);
  auto all_to_all = [&](const std::string& shape) {
    return graph(shape, "all_to_all",
                 R"({ "name": "cluster_axis", "i": 1 }, { "name": "split_dim", "i": 1 }, )"
                 R"({ "name": "concat_dim", "i": 0 })");
  };
  CHECK(error(all_to_all("[16, 128]")) == "planned");
  const std::string a2a = error(all_to_all("[16, 64]"));
  CAPTURE(a2a);
  CHECK(a2a.find("'cc'") != std::string::npos);
  CHECK(a2a.find("all_to_all's result of 'x' has 16 at dim 1 (the last); tt-metal: \"1 dimension "
                 "doesn't support padding, so must be divisible by 32\"") != std::string::npos);
}
