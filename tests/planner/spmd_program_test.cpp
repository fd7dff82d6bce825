// The per-device program: mesh_shard boundary specs, the verifier, and the text summary.
#include <doctest/doctest.h>

#include "meshplan/planner/spmd.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

Module local_program(const char* path, int64_t rows, int64_t cols,
                     std::vector<std::string> types = {}) {
  auto m = parse_module_file(test::source_path(path));
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  PipelineOptions o;
  o.mesh_rows = rows;
  o.mesh_cols = cols;
  o.argument_types = std::move(types);
  auto s = run_pipeline(*m, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return std::move(*m);
}

}  // namespace

TEST_CASE("TP-MLP per-device program: boundary shards, one all_reduce on cluster axis 1") {
  Module m = local_program("examples/models/tp_mlp.mlir", 1, 8);
  auto summary = print_spmd_summary(m);
  REQUIRE_MESSAGE(summary.has_value(), summary.error().message);
  CHECK(*summary ==
        "mesh @mesh [x=1, tp=8]\n"
        "mesh_shard full_to_shard input 0 type=replicate shard_shape=[1, 1] shard_dims=[-1, -1]\n"
        "mesh_shard full_to_shard input 1 type=devices shard_shape=[1, 8] shard_dims=[-1, 1]\n"
        "mesh_shard full_to_shard input 2 type=devices shard_shape=[8] shard_dims=[-1, 0]\n"
        "mesh_shard full_to_shard input 3 type=devices shard_shape=[8, 1] shard_dims=[-1, 0]\n"
        "mesh_shard shard_to_full result 0 type=replicate shard_shape=[1, 1] shard_dims=[-1, -1]\n"
        "all_reduce dim=-1 cluster_axis=1 group_size=8 tensor<64x128xf32> -> tensor<64x128xf32>\n"
        "bytes_per_device_link 57344\n");
}

TEST_CASE("DP on 2x4: the batch dim is split over both axes, no collective") {
  Module m = local_program("examples/models/dp_mlp_relu.mlir", 2, 4,
                           {"input", "parameter", "parameter", "parameter"});
  auto shards = mesh_shards(m);
  REQUIRE(shards.has_value());
  REQUIRE(shards->size() == 5);
  CHECK((*shards)[0].type == "devices");
  CHECK((*shards)[0].shard_shape == std::vector<int64_t>{8, 1});
  CHECK((*shards)[0].shard_dims == std::vector<int64_t>{0, 0});
  CHECK((*shards)[1].type == "replicate");
  CHECK((*shards)[4].shard_shape == std::vector<int64_t>{8, 1});
  auto summary = print_spmd_summary(m);
  REQUIRE_MESSAGE(summary.has_value(), summary.error().message);
  CHECK(summary->ends_with("bytes_per_device_link 0\n"));
}

TEST_CASE("the verifier rejects a program whose local shapes or groups are wrong") {
  Module m = local_program("examples/models/tp_mlp.mlir", 1, 8);
  CHECK(verify_local_program(m).has_value());
  Module bad_type = m;
  Op& mc = bad_type.ops[bad_type.entry()->body.ops[0]];
  bad_type.values[mc.regions[0].args[1]].type.shape = {128, 64};
  auto s = verify_local_program(bad_type);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().code == ErrorCode::invalid_argument);
  CHECK(s.error().message.find(
            "sdy.manual_computation: block argument 1 has type tensor<128x64xf32>, not the local "
            "shape of tensor<128x256xf32> under <@mesh, [{}, {\"tp\"}]>: each device holds "
            "tensor<128x32xf32> (declare that type, or change the sharding)") != std::string::npos);
  Module bad_groups = m;
  for (Op& op : bad_groups.ops)
    if (op.name == "stablehlo.all_reduce") {
      Attr g = *op.prop("replica_groups");
      g.values[1] = 0;  // device 0 twice
      op.set_prop("replica_groups", g);
    }
  auto s2 = verify_local_program(bad_groups);
  REQUIRE_FALSE(s2.has_value());
  CHECK(s2.error().code == ErrorCode::invalid_argument);
  CHECK(s2.error().message.find("stablehlo.all_reduce: device 0 is not in exactly one replica "
                                "group (it appears twice)") != std::string::npos);
  // A global-view program is not a per-device program.
  auto global = parse_module_file(test::source_path("examples/models/tp_mlp.mlir"));
  REQUIRE(global.has_value());
  CHECK_FALSE(verify_local_program(*global).has_value());
}

namespace {

/// A user's per-device program on mesh ["x"=2, "y"=2]: `arg_type` is the declared block
/// argument type of an 8x8 input split [{"x"}, {}]; `groups` the all_reduce's replica groups.
std::string user_program(const std::string& arg_type, const std::string& groups) {
  return R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x", "y"} (%arg1: )" +
         arg_type + R"() {
    %1 = "stablehlo.all_reduce"(%arg1) <{replica_groups = )" +
         groups + R"(}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : ()" +
         arg_type + ") -> " + arg_type + R"(
    sdy.return %1 : )" +
         arg_type +
         R"(
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)";
}

std::string pipeline_error(const std::string& text) {
  auto m = parse_module(text, "u.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  PipelineOptions o;
  o.mesh_rows = o.mesh_cols = 0;  // the module's own mesh
  auto s = run_pipeline(*m, o);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().code == ErrorCode::invalid_argument);
  return s.error().message;
}

}  // namespace

TEST_CASE("user errors in a manual computation are located and say what to write") {
  const std::string ok_groups = "dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>";
  CHECK(pipeline_error(user_program("tensor<8x8xf32>", ok_groups)) ==
        "u.mlir:3:3: sdy.manual_computation: block argument 0 has type tensor<8x8xf32>, not the "
        "local shape of tensor<8x8xf32> under <@mesh, [{\"x\"}, {}]>: each device holds "
        "tensor<4x8xf32> (declare that type, or change the sharding)");
  CHECK(pipeline_error(
            user_program("tensor<4x8xf32>", "dense<[[0, 2], [1, 5]]> : tensor<2x2xi64>")) ==
        "u.mlir:4:5: stablehlo.all_reduce: replica groups name device 5, outside the 4-device "
        "mesh @mesh");
  CHECK(pipeline_error(user_program("tensor<4x8xf32>", "dense<[[0, 2]]> : tensor<1x2xi64>")) ==
        "u.mlir:4:5: stablehlo.all_reduce: replica groups cover 2 of the 4 devices of mesh "
        "@mesh (device 1 is in none); list every device once");
}
