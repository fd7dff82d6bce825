// Propagation against the examples of Shardy's documentation (propagation.md and
// sharding_representation.md), each rebuilt as a module whose expected shardings are the ones
// the documentation states, in Shardy's printed form (propagated dims stay open: `?`).
#include <doctest/doctest.h>

#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/spmd.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

Module propagated(const std::string& text) {
  auto m = parse_module(text, "doc.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  PipelineOptions o;
  o.mesh_rows = 0;  // the module's own mesh
  o.mesh_cols = 0;
  o.stop_after = Stage::propagation;
  auto s = run_pipeline(*m, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return std::move(*m);
}

std::string arg(const Module& m, size_t n) {
  const auto& s = m.values[m.entry()->args.at(n).value].sharding;
  return s ? sharding_string(*s) : "none";
}

/// The sharding of op `n` (in body order) of the entry function.
std::string op_result(const Module& m, size_t n) {
  const Op& op = m.ops[m.entry()->body.ops.at(n)];
  REQUIRE(!op.shardings.empty());
  return sharding_string(op.shardings[0]);
}

}  // namespace

TEST_CASE("propagation.md: compatible major axes per factor (the a..g table)") {
  // T0 = %arg0, T1 = %arg1, T2 = the add's result; F0..F2 = dims 0..2.
  Module m = propagated(
      "sdy.mesh @mesh = <[\"a\"=2, \"b\"=2, \"c\"=2, \"d\"=2, \"e\"=2, \"f\"=2, \"g\"=2]>\n"
      "func.func @main(%arg0: tensor<8x8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"a\", "
      "?}, {?}, {\"f\", ?}]>}, %arg1: tensor<8x8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, "
      "[{\"a\", \"b\", ?}, {\"c\", \"d\", ?}, {\"g\", ?}]>}) -> tensor<8x8x8xf32> {\n"
      "  %0 = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, "
      "{\"c\", \"e\", ?}, {?}]>]>} : tensor<8x8x8xf32>\n"
      "  return %0 : tensor<8x8x8xf32>\n}\n");
  // F0 takes ["a", "b"], F1 ["c"], F2 nothing (f and g conflict).
  CHECK(arg(m, 0) == "<@mesh, [{\"a\", \"b\", ?}, {\"c\", ?}, {\"f\", ?}]>");
  CHECK(arg(m, 1) == "<@mesh, [{\"a\", \"b\", ?}, {\"c\", \"d\", ?}, {\"g\", ?}]>");
  CHECK(op_result(m, 0) == "<@mesh, [{\"a\", \"b\", ?}, {\"c\", \"e\", ?}, {?}]>");
}

TEST_CASE("sharding_representation.md: a reshape splits \"x\" into sub-axes") {
  Module m = propagated(
      "sdy.mesh @mesh_x = <[\"x\"=4]>\n"
      "func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh_x, [{\"x\"}]>}) "
      "-> tensor<2x4xf32> {\n"
      "  %0 = stablehlo.reshape %arg0 : (tensor<8xf32>) -> tensor<2x4xf32>\n"
      "  return %0 : tensor<2x4xf32>\n}\n");
  CHECK(op_result(m, 0) == "<@mesh_x, [{\"x\":(1)2, ?}, {\"x\":(2)2, ?}]>");
}

TEST_CASE("sharding_representation.md: an explicitly replicated axis never shards; others do") {
  Module m = propagated(
      "sdy.mesh @mesh_xyz = <[\"x\"=2, \"y\"=4, \"z\"=2]>\n"
      "func.func @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh_xyz, [{\"x\"}, "
      "{?}], replicated={\"y\"}>}, %arg1: tensor<4x8xf32> {sdy.sharding = "
      "#sdy.sharding<@mesh_xyz, [{\"x\"}, {\"y\"}]>}, %arg2: tensor<4x8xf32> {sdy.sharding = "
      "#sdy.sharding<@mesh_xyz, [{\"x\"}, {\"z\"}]>}) -> tensor<4x8xf32> {\n"
      "  %0 = stablehlo.add %arg0, %arg1 : tensor<4x8xf32>\n"
      "  %1 = stablehlo.add %arg0, %arg2 : tensor<4x8xf32>\n"
      "  %2 = stablehlo.add %0, %1 : tensor<4x8xf32>\n"
      "  return %2 : tensor<4x8xf32>\n}\n");
  CHECK(arg(m, 0) == "<@mesh_xyz, [{\"x\"}, {\"z\", ?}], replicated={\"y\"}>");
}

TEST_CASE("sharding_representation.md: a closed dim keeps its axes, an open one grows") {
  Module m = propagated(
      "sdy.mesh @mesh_xyz = <[\"x\"=2, \"y\"=4, \"z\"=2]>\n"
      "func.func @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh_xyz, "
      "[{\"x\"}, {\"z\", ?}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = "
      "#sdy.sharding<@mesh_xyz, [{\"x\", \"y\"}, {\"z\"}]>}, %arg2: tensor<16x8xf32> "
      "{sdy.sharding = #sdy.sharding<@mesh_xyz, [{\"x\"}, {\"z\", \"y\"}]>}) -> "
      "(tensor<16x8xf32>, tensor<16x8xf32>) {\n"
      "  %0 = stablehlo.add %arg0, %arg1 : tensor<16x8xf32>\n"
      "  %1 = stablehlo.add %arg0, %arg2 : tensor<16x8xf32>\n"
      "  return %0, %1 : tensor<16x8xf32>, tensor<16x8xf32>\n}\n");
  CHECK(arg(m, 0) == "<@mesh_xyz, [{\"x\"}, {\"z\", \"y\", ?}]>");
}

TEST_CASE("sharding_representation.md: p0 reaches the whole program before p1 meets it") {
  Module m = propagated(
      "sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]>\n"
      "func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}p0, "
      "{}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"y\"}p1, {}]>}) -> "
      "tensor<8x8xf32> {\n"
      "  %0 = stablehlo.abs %arg0 : tensor<8x8xf32>\n"
      "  %1 = stablehlo.negate %arg1 : tensor<8x8xf32>\n"
      "  %2 = stablehlo.add %0, %1 : tensor<8x8xf32>\n"
      "  return %2 : tensor<8x8xf32>\n}\n");
  CHECK(op_result(m, 0) == "<@mesh, [{\"x\", ?}, {?}]>");
  // Iteration p0 also reaches the negate backwards through the add; the p1 argument's "y"
  // comes too late for it (a reshard from %arg1 follows).
  CHECK(op_result(m, 1) == "<@mesh, [{\"x\", ?}, {?}]>");
  CHECK(op_result(m, 2) == "<@mesh, [{\"x\", ?}, {?}]>");
}
