// Per-device numerics without a device mesh: the compiled per-device program, simulated on the
// host with collectives on host arrays, gives the single-device reference result.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/spmd_host.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

Module load(const std::string& text_or_path, bool is_path) {
  auto m = is_path ? parse_module_file(test::source_path(text_or_path))
                   : parse_module(text_or_path, "t.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::move(*m);
}

double max_diff(const std::vector<HostArray>& a, const std::vector<HostArray>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    REQUIRE(a[k].shape == b[k].shape);
    for (size_t i = 0; i < a[k].data.size(); ++i)
      d = std::max(d, static_cast<double>(std::fabs(a[k].data[i] - b[k].data[i])));
  }
  return d;
}

/// Compiles `m` for rows x cols, runs the per-device program on the host, compares with the
/// reference; returns the compiled module.
Module check_spmd(const Module& original, int64_t rows, int64_t cols, uint64_t seed = 7) {
  Module m = original;
  PipelineOptions o;
  o.mesh_rows = rows;
  o.mesh_cols = cols;
  auto s = run_pipeline(m, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  auto inputs = random_inputs(original, seed);
  auto ref = evaluate_reference(original, inputs);
  REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
  auto got = evaluate_spmd(m, inputs);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  CHECK(max_diff(*ref, *got) < 1e-4);
  return m;
}

}  // namespace

TEST_CASE("tensor-parallel MLP on 1x8: per-device programs give the reference") {
  Module m = check_spmd(load("examples/models/tp_mlp.mlir", true), 1, 8);
  auto comm = communication(m);
  REQUIRE(comm.has_value());
  CHECK(comm->count("all_reduce") == 1);
}

TEST_CASE("data-parallel MLP with softmax-style reduce on 1x2, 2x4 and 8x4") {
  Module original = load("examples/models/mlp_dp.mlir", true);
  for (auto [r, c] : {std::pair<int64_t, int64_t>{1, 2}, {2, 4}, {8, 4}}) {
    CAPTURE(r);
    CAPTURE(c);
    Module m = check_spmd(original, r, c);
    auto comm = communication(m);
    REQUIRE(comm.has_value());
    CHECK(comm->bytes == 0);
  }
}

TEST_CASE("the seed cases that run on one chip give the reference per device") {
  for (const char* file :
       {"tests/planner/golden/case1_input.mlir", "tests/planner/golden/case6_input.mlir"}) {
    Module original = load(file, true);
    check_spmd(original, 1, 2);
  }
  check_spmd(load("tests/planner/golden/case4_input.mlir", true), 1, 8);
  // A replicated constant meets a batch-sharded value: it is sliced per device (all_slice).
  Module g = check_spmd(load("tests/planner/golden/generic_form.mlir", true), 1, 2);
  CHECK(print_module(g).find("sdy.all_slice") != std::string::npos);
}

TEST_CASE("2-D sharded matmul: all_reduce, reduce_scatter and all_to_all computed on host arrays") {
  std::string mm =
      "sdy.mesh @mesh = <[\"x\"=2, \"y\"=4]>\n"
      "func.func @main(%a: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, "
      "{\"y\"}]>}, "
      "%b: tensor<32x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"y\"}, {}]>}) -> %R {\n"
      "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<16x32xf32>, "
      "tensor<32x8xf32>) -> tensor<16x8xf32>\n"
      "  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>\n"
      "  return %1 : tensor<8x16xf32>\n}\n";
  for (const char* result :
       {"tensor<8x16xf32>",
        "(tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"y\"}, {\"x\"}]>})",
        "(tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {\"y\", \"x\"}]>})"}) {
    CAPTURE(result);
    std::string text = mm;
    text.replace(text.find("%R"), 2, result);
    check_spmd(load(text, false), 2, 4);
  }
  std::string a2a =
      "sdy.mesh @mesh = <[\"x\"=2, \"y\"=4]>\n"
      "func.func @main(%a: tensor<64x128xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"y\"}, "
      "{}]>}) "
      "-> "
      "(tensor<64x128xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {\"y\"}]>}) {\n"
      "  %0 = stablehlo.negate %a : tensor<64x128xf32>\n  return %0 : tensor<64x128xf32>\n}\n";
  // 16 rows a chip to concatenate, 32 columns left: an all_to_all tt-metal takes.
  Module m = check_spmd(load(a2a, false), 2, 4);
  auto comm = communication(m);
  REQUIRE(comm.has_value());
  CHECK(comm->count("all_to_all") == 1);
}

TEST_CASE("the host simulation catches a missing collective") {
  Module m = load("examples/models/tp_mlp.mlir", true);
  Module original = m;
  PipelineOptions o;
  o.mesh_cols = 8;
  REQUIRE(run_pipeline(m, o).has_value());
  // Drop the all_reduce: each device now returns its partial sum.
  Op& mc = m.ops[m.entry()->body.ops[0]];
  auto& body = mc.regions[0].ops;
  auto it = std::find_if(body.begin(), body.end(),
                         [&](OpId o) { return m.ops[o].name == "stablehlo.all_reduce"; });
  REQUIRE(it != body.end());
  ValueId partial = m.ops[*it].operands[0];
  body.erase(it);
  m.ops[body.back()].operands[0] = partial;
  auto got = evaluate_spmd(m, random_inputs(original, 3));
  REQUIRE_FALSE(got.has_value());
  CHECK(got.error().message.find("replicated copies of result 0 disagree") != std::string::npos);
}
