// The `sdy-propagation` stage against Shardy's documentation: each strategy of the conflict
// resolution hierarchy (propagation.md), the pipeline's printed form (closed shardings, no
// priorities, constraints as reshards, sdy_export_passes.md) and the sdy constructs of
// sdy_dialect.md. Expected texts are worked out from those documents, in Shardy's syntax.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "meshplan/planner/sharding_strategies.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

std::string propagated(const std::string& text, PropagationStrategy strategy) {
  auto m = parse_module(text, "doc.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto s = run_sdy_propagation(*m, strategy);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return print_module(*m);
}

/// meshplan-compile's stdout and stderr for a module written to a temporary file.
std::string run_tool(const std::string& module, const std::string& args) {
  std::string tool = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
  REQUIRE_MESSAGE(std::filesystem::exists(tool), "build meshplan-compile first: ", tool);
  auto path = std::filesystem::temp_directory_path() / "meshplan_sdy_propagation_test.mlir";
  std::ofstream(path) << module;
  std::string cmd = tool + " " + path.string() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  std::filesystem::remove(path);
  return out;
}

std::string parse_error(const std::string& text) {
  auto m = parse_module(text, "bad.mlir");
  return m.has_value() ? "parsed" : m.error().message;
}

// A dot whose two non-contracting factors both want axis "a": %arg0 (8x4, 32 elements) has
// i = ["a", "b"], %arg1 (4x16, 64 elements) has j = ["a", "c"].
const std::string kCrossFactor = R"(sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", "b"}, {?}]>}, %arg1: tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"a", "c"}]>}) -> tensor<8x16xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
)";

}  // namespace

TEST_CASE("strategy names") {
  for (auto s : {PropagationStrategy::basic, PropagationStrategy::aggressive,
                 PropagationStrategy::op_priority, PropagationStrategy::user_priority,
                 PropagationStrategy::pipeline})
    CHECK(strategy_from_name(strategy_name(s)) == s);
  CHECK(!strategy_from_name("fast"));
}

TEST_CASE("propagation.md, basic propagation: an axis two factors want goes to neither") {
  // Basic "propagates axes that are compatible between all operands and results": "a" is
  // wanted by i and j, so only the axes before it could go, and there are none. Nothing
  // reaches the result: it prints no sharding (Shardy leaves unreached values alone).
  CHECK(propagated(kCrossFactor, PropagationStrategy::basic) == kCrossFactor);
}

TEST_CASE("propagation.md, aggressive propagation: the larger source tensor wins a conflict") {
  // Aggressive "resolves conflicts": j's axes come from the larger %arg1 (64 > 32 elements),
  // so the result takes ["a", "c"] on j and i keeps nothing (its first axis is taken).
  CHECK(propagated(kCrossFactor, PropagationStrategy::aggressive) ==
        R"(sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", "b"}, {?}]>}, %arg1: tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"a", "c"}]>}) -> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"a", "c", ?}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"a", "c", ?}]>]>} : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
)");
}

TEST_CASE("propagation.md, aggressive: a conflict between factors of different tensors is none") {
  // i ("a" from %arg0) and j ("a" on the dot's result) never meet in one operand: %arg1 holds
  // j and k only, so it takes j = "a"; the result already holds "a" and takes nothing for i.
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {?}]>}, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"a", ?}]>]>} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)";
  CHECK(propagated(in, PropagationStrategy::aggressive) ==
        R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {?}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"a", ?}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"a", ?}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"a", ?}]>]>} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)");
}

TEST_CASE("propagation.md, operation based priorities: element-wise ops before a dot") {
  // The adds (pass-through) carry the result's j = "a" back to the dot first; only then does
  // the dot run, and its result already holds "a" on dim 1.
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {?}]>}, %arg1: tensor<8x8xf32>) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"a", ?}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = stablehlo.add %0, %0 : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
)";
  CHECK(propagated(in, PropagationStrategy::op_priority) ==
        R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {?}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"a", ?}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"a", ?}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"a", ?}]>]>} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = stablehlo.add %0, %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"a", ?}]>]>} : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
)");
}

TEST_CASE("propagation.md, user defined priorities: p0 first; the pipeline closes and drops") {
  // sharding_representation.md "Priorities": the divide's p0 dim 0 = "c" reaches every value
  // before the argument's p1 "a" is looked at (the argument keeps its own "a"); dim 1 = "b"
  // (p1) has no rival. The pipeline then closes every dim and drops the priorities
  // (sdy_export_passes.md, close shardings).
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}p1, {"b"}p1]>}, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
  %1 = stablehlo.divide %0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"c"}p0, {?}]>]>} : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
)";
  const std::string body = R"(
  %0 = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"c"}, {"b"}]>]>} : tensor<8x8xf32>
  %1 = stablehlo.divide %0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"c"}, {"b"}]>]>} : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
)";
  CHECK(propagated(in, PropagationStrategy::pipeline) ==
        R"(sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"c"}, {"b"}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"c"}, {"b"}]>}) {)" +
            body);
  // User-priority propagation alone drops the priorities but leaves the dims open.
  CHECK(
      propagated(in, PropagationStrategy::user_priority)
          .find("%1 = stablehlo.divide %0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
                "[{\"c\"}, {\"b\", ?}]>]>}") != std::string::npos);
}

TEST_CASE(
    "sdy_export_passes.md: an unused constraint steers, then leaves; unreached values stay bare") {
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = sdy.sharding_constraint %arg0 <@mesh, [{"a"}, {"b"}]> : tensor<8x8xf32>
  %1 = stablehlo.negate %arg1 : tensor<8x8xf32>
  return %arg0, %1 : tensor<8x8xf32>, tensor<8x8xf32>
}
)";
  // The constraint's sharding propagates like any value's (back to %arg0 and on to the first
  // result); nothing uses the constraint, so the pipeline's rewrites erase it as dead code
  // (a used one becomes a reshard: sharding_calls_test.cpp); nothing reaches the negate.
  CHECK(propagated(in, PropagationStrategy::pipeline) ==
        R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}, %arg1: tensor<8x8xf32>) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}, tensor<8x8xf32>) {
  %0 = stablehlo.negate %arg1 : tensor<8x8xf32>
  return %arg0, %0 : tensor<8x8xf32>, tensor<8x8xf32>
}
)");
}

TEST_CASE("sdy_dialect.md sdy.propagation_barrier: only the allowed direction passes") {
  // FORWARD: the operand's sharding reaches the result; nothing flows back to the operand.
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {?}]>}, %arg1: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = sdy.propagation_barrier %arg0 allowed_direction=FORWARD : tensor<8x8xf32>
  %1 = sdy.propagation_barrier %arg1 allowed_direction=FORWARD : tensor<8x8xf32>
  %2 = stablehlo.negate %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"b", ?}]>]>} : tensor<8x8xf32>
  return %0, %2 : tensor<8x8xf32>, tensor<8x8xf32>
}
)";
  CHECK(propagated(in, PropagationStrategy::basic) ==
        R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {?}]>}, %arg1: tensor<8x8xf32>) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {?}]>}, tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"b", ?}]>}) {
  %0 = sdy.propagation_barrier %arg0 allowed_direction=FORWARD {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a", ?}, {?}]>]>} : tensor<8x8xf32>
  %1 = sdy.propagation_barrier %arg1 allowed_direction=FORWARD {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"b", ?}]>]>} : tensor<8x8xf32>
  %2 = stablehlo.negate %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"b", ?}]>]>} : tensor<8x8xf32>
  return %0, %2 : tensor<8x8xf32>, tensor<8x8xf32>
}
)");
}

TEST_CASE("sdy_dialect.md sdy.sharding_group: members share one sharding; the pipeline drops it") {
  const std::string in = R"(sdy.mesh @mesh = <["a"=2]>
func.func @main(%arg0: tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"a"}]>}, %arg1: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %0 = stablehlo.abs %arg0 : tensor<16x16xf32>
  %1 = stablehlo.exponential %arg1 : tensor<16x16xf32>
  sdy.sharding_group %0 group_id=7 : tensor<16x16xf32>
  sdy.sharding_group %1 group_id=7 : tensor<16x16xf32>
  return %0, %1 : tensor<16x16xf32>, tensor<16x16xf32>
}
)";
  const std::string basic = propagated(in, PropagationStrategy::basic);
  // The import numbers the groups 0, 1, ... (their order kept).
  CHECK(basic.find("sdy.sharding_group %1 group_id=0 : tensor<16x16xf32>") != std::string::npos);
  CHECK(basic.find("%1 = stablehlo.exponential %arg1 {sdy.sharding = "
                   "#sdy.sharding_per_value<[<@mesh, [{?}, {\"a\", ?}]>]>}") != std::string::npos);
  CHECK(propagated(in, PropagationStrategy::pipeline) ==
        R"(sdy.mesh @mesh = <["a"=2]>
func.func @main(%arg0: tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"a"}]>}, %arg1: tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"a"}]>}) -> (tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"a"}]>}, tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"a"}]>}) {
  %0 = stablehlo.abs %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"a"}]>]>} : tensor<16x16xf32>
  %1 = stablehlo.exponential %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"a"}]>]>} : tensor<16x16xf32>
  return %0, %1 : tensor<16x16xf32>, tensor<16x16xf32>
}
)");
}

TEST_CASE("sharding_representation.md: an inlined mesh becomes the module's @mesh") {
  const std::string in =
      R"(func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<mesh<["a"=2, "b"=2]>, [{"a"}, {"b"}]>}, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)";
  CHECK(propagated(in, PropagationStrategy::pipeline) ==
        R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %0 = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {"b"}]>]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)");
}

TEST_CASE("propagation.md constant splitting: every use of a constant gets its own sdy.constant") {
  // The dot's operands take "a" (lhs rows) and "b" (rhs rows) from the result's sharding; the
  // returned copy is reached by nothing and keeps no sharding.
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}) -> (tensor<8x16xi32>, tensor<8x8xi32>) {
  %0 = stablehlo.constant dense<1> : tensor<8x16xi32>
  %1 = stablehlo.dot_general %0, %0, contracting_dims = [1] x [1] : (tensor<8x16xi32>, tensor<8x16xi32>) -> tensor<8x8xi32>
  %2 = stablehlo.add %1, %arg0 : tensor<8x8xi32>
  return %0, %2 : tensor<8x16xi32>, tensor<8x8xi32>
}
)";
  CHECK(propagated(in, PropagationStrategy::pipeline) ==
        R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}) -> (tensor<8x16xi32>, tensor<8x8xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %0 = sdy.constant {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {}]>]>} dense<1> : tensor<8x16xi32>
  %1 = sdy.constant {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"b"}, {}]>]>} dense<1> : tensor<8x16xi32>
  %2 = sdy.constant dense<1> : tensor<8x16xi32>
  %3 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {"b"}]>]>} : (tensor<8x16xi32>, tensor<8x16xi32>) -> tensor<8x8xi32>
  %4 = stablehlo.add %3, %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {"b"}]>]>} : tensor<8x8xi32>
  return %2, %4 : tensor<8x16xi32>, tensor<8x8xi32>
}
)");
}

TEST_CASE("sharding_representation.md: uneven splits, size-one axes and an empty-mesh template") {
  // "a"=3 does not divide 4: Shardy's default propagation still propagates it (the minor-most
  // factor may be split unevenly, with padding). The sharding on the empty mesh only says dim 0
  // is closed and dim 1 open: it takes @mesh, and its closed empty dim 0 is one basic
  // propagation must agree with, so "b" goes nowhere.
  const std::string in = R"(sdy.mesh @mesh = <["a"=3, "b"=1]>
sdy.mesh @empty = <[]>
func.func @main(%arg0: tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}, {"a"}]>}, %arg1: tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@empty, [{}, {?}]>}) -> tensor<2x4xf32> {
  %0 = stablehlo.add %arg0, %arg1 : tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
)";
  CHECK(propagated(in, PropagationStrategy::basic) ==
        R"(sdy.mesh @mesh = <["a"=3, "b"=1]>
sdy.mesh @empty = <[]>
func.func @main(%arg0: tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b"}, {"a"}]>}, %arg1: tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"a", ?}]>}) -> (tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"a", ?}]>}) {
  %0 = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {"a", ?}]>]>} : tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
)");
}

TEST_CASE("sdy_dialect.md sdy.data_flow_edge: a case's branches meet in the edge's sharding") {
  // The edge owns the case result's sharding (printed on the edge, not on the case); both
  // branch values and the result share it, so %arg2 takes "a" from %arg1.
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<i32>, %arg1: tensor<4xi64> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}]>}, %arg2: tensor<4xi64>) -> tensor<4xi64> {
  %0 = "stablehlo.case"(%arg0) ({
    stablehlo.return %arg1 : tensor<4xi64>
  }, {
    stablehlo.return %arg2 : tensor<4xi64>
  }) : (tensor<i32>) -> tensor<4xi64>
  %1 = sdy.data_flow_edge %0 : tensor<4xi64>
  return %1 : tensor<4xi64>
}
)";
  CHECK(propagated(in, PropagationStrategy::basic) ==
        R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<i32>, %arg1: tensor<4xi64> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}]>}, %arg2: tensor<4xi64> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}]>}) -> (tensor<4xi64> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}]>}) {
  %0 = "stablehlo.case"(%arg0) ({
    stablehlo.return %arg1 : tensor<4xi64>
  }, {
    stablehlo.return %arg2 : tensor<4xi64>
  }) : (tensor<i32>) -> tensor<4xi64>
  %1 = sdy.data_flow_edge %0 sharding=<@mesh, [{"a", ?}]> : tensor<4xi64>
  return %1 : tensor<4xi64>
}
)");
}

TEST_CASE("meshplan-compile --stop-after=sdy-propagation [--propagation=NAME]") {
  // The default is the pipeline (closed shardings); each strategy is selectable by name.
  CHECK(run_tool(kCrossFactor, "--emit=sdy --stop-after=sdy-propagation --propagation=basic") ==
        kCrossFactor);
  CHECK(run_tool(kCrossFactor, "--emit=sdy --stop-after=sdy-propagation")
            .find("-> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {\"a\", "
                  "\"c\"}]>})") != std::string::npos);
  CHECK(run_tool(kCrossFactor, "--emit=sdy --stop-after=sdy-propagation --propagation=fast") ==
        "meshplan-compile: error: invalid_argument: --propagation: unknown strategy 'fast' "
        "(basic, aggressive, op-priority, user-priority, pipeline)\n");
  CHECK(run_tool(kCrossFactor, "--emit=sdy --propagation=basic") ==
        "meshplan-compile: error: invalid_argument: --propagation selects the strategy of "
        "--stop-after=sdy-propagation\n");
}

TEST_CASE("propagation.md basic vs aggressive: a closed dim binds basic propagation only") {
  // %arg0's closed dim 1 holds "b", %arg1's open one "b", "c": basic keeps the compatible "b";
  // aggressive takes the larger "b", "c" for the result (the closed dim stays as it is).
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {"b"}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"b", "c", ?}]>}) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)";
  const std::string basic = propagated(in, PropagationStrategy::basic);
  CHECK(
      basic.find("%0 = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
                 "[{?}, {\"b\", ?}]>]>}") != std::string::npos);
  const std::string aggressive = propagated(in, PropagationStrategy::aggressive);
  CHECK(aggressive.find("%0 = stablehlo.add %arg0, %arg1 {sdy.sharding = "
                        "#sdy.sharding_per_value<[<@mesh, [{\"a\", ?}, {\"b\", \"c\", ?}]>]>}") !=
        std::string::npos);
}

TEST_CASE("sdy_propagation_passes.md op-priority heuristics: a multi-use value waits") {
  // %0 feeds two ops, so neither propagates in the first (pass-through) round; the results'
  // closed [{}, {"a"}] comes back through the negates first, and the exponentials keep it when
  // %0's "a" on dim 0 arrives in the second round.
  const std::string in = R"(sdy.mesh @mesh = <["a"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"a"}]>}, tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"a"}]>}) {
  %0 = stablehlo.abs %arg0 : tensor<8x8xf32>
  %1 = stablehlo.exponential %0 : tensor<8x8xf32>
  %2 = stablehlo.exponential %0 : tensor<8x8xf32>
  %3 = stablehlo.negate %1 : tensor<8x8xf32>
  %4 = stablehlo.negate %2 : tensor<8x8xf32>
  return %3, %4 : tensor<8x8xf32>, tensor<8x8xf32>
}
)";
  const std::string out = propagated(in, PropagationStrategy::op_priority);
  CHECK(out.find("%0 = stablehlo.abs %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
                 "[{\"a\", ?}, {?}]>]>}") != std::string::npos);
  for (const char* op : {"%1 = stablehlo.exponential %0", "%2 = stablehlo.exponential %0"})
    CHECK(out.find(std::string(op) + " {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, "
                                     "{\"a\", ?}]>]>}") != std::string::npos);
}

TEST_CASE("propagation.md operation sharding rule: a two-input reduce shares its factors") {
  // Both inputs and both results of a variadic reduce share the kept dims' factors, so %arg0's
  // "a" on dim 2 reaches %arg1 and both results (dim 1 of each).
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<4x64x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"a"}]>}, %arg1: tensor<4x64x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %1:2 = stablehlo.reduce(%arg0 init: %0), (%arg1 init: %0) across dimensions = [1] : (tensor<4x64x8xf32>, tensor<4x64x8xf32>, tensor<f32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
    reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<f32>, %d: tensor<f32>) {
      %2 = stablehlo.add %a, %c : tensor<f32>
      %3 = stablehlo.add %b, %d : tensor<f32>
      stablehlo.return %2, %3 : tensor<f32>, tensor<f32>
    }
  return %1#0, %1#1 : tensor<4x8xf32>, tensor<4x8xf32>
}
)";
  const std::string out = propagated(in, PropagationStrategy::basic);
  CHECK(out.find("%arg1: tensor<4x64x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {?}, "
                 "{\"a\", ?}]>}") != std::string::npos);
  CHECK(out.find("{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}, {\"a\", ?}]>, <@mesh, "
                 "[{?}, {\"a\", ?}]>]>}") != std::string::npos);
}

TEST_CASE("propagation.md aggressive: operands take sideways only what the result holds") {
  // The add's closed result holds "a":(1)2 of %arg0's "a" (size 4): %arg1 receives that part,
  // not the whole axis; with an open empty result it would take all of "a".
  const std::string in = R"(sdy.mesh @mesh = <["a"=4]>
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}]>}, %arg1: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}]>}) -> tensor<8xf32> {
  %0 = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a":(1)2}]>]>} : tensor<8xf32>
  return %0 : tensor<8xf32>
}
)";
  CHECK(
      propagated(in, PropagationStrategy::aggressive)
          .find("%arg1: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"a\":(1)2, ?}]>}") !=
      std::string::npos);
  std::string open = in;
  open.replace(open.find("[{\"a\":(1)2}]"), 12, "[{?}]");
  CHECK(propagated(open, PropagationStrategy::aggressive)
            .find("%arg1: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"a\", ?}]>}") !=
        std::string::npos);
}

TEST_CASE("bad sdy input: located errors naming the value, the axis and the mesh") {
  CHECK(parse_error(R"(sdy.mesh @mesh = <["a"=2, "a"=4]>
)") == "bad.mlir:1:26: axis \"a\" appears twice in mesh @mesh");
  std::string e = parse_error(R"(sdy.mesh @mesh = <["a"=2]>
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"z"}]>}) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
)");
  CHECK(e.find("axis \"z\" is not in mesh @mesh") != std::string::npos);
  e = parse_error(R"(sdy.mesh @mesh = <["a"=2]>
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = sdy.propagation_barrier %arg0 allowed_direction=SIDEWAYS : tensor<8xf32>
  return %0 : tensor<8xf32>
}
)");
  CHECK(e.find("allowed_direction 'SIDEWAYS' is none of NONE, FORWARD, BACKWARD, BOTH") !=
        std::string::npos);
}

TEST_CASE("sdy_export_passes.md: the pipeline closes shardings inside loop bodies too") {
  // The while's body holds an open sharding; close-shardings applies to every op of the
  // module, nested regions included, so it prints closed like the top-level ones.
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}, %arg1: tensor<i32>) -> tensor<8x8xf32> {
  %0 = stablehlo.constant dense<0> : tensor<i32>
  %1:2 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %0) : tensor<8x8xf32>, tensor<i32>
   cond {
    %2 = stablehlo.compare  LT, %iterArg_0, %arg1 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %2 : tensor<i1>
  } do {
    %2 = stablehlo.add %iterArg, %iterArg {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a", ?}, {"b", ?}]>]>} : tensor<8x8xf32>
    stablehlo.return %2, %iterArg_0 : tensor<8x8xf32>, tensor<i32>
  }
  return %1#0 : tensor<8x8xf32>
}
)";
  std::string out = propagated(in, PropagationStrategy::pipeline);
  INFO(out);
  CHECK(
      out.find("stablehlo.add %iterArg, %iterArg {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
               "[{\"a\"}, {\"b\"}]>]>} : tensor<8x8xf32>") != std::string::npos);
  CHECK(out.find('?') == std::string::npos);
  // Basic propagation alone leaves the body's dims open.
  CHECK(propagated(in, PropagationStrategy::basic)
            .find("stablehlo.add %iterArg, %iterArg {sdy.sharding = "
                  "#sdy.sharding_per_value<[<@mesh, [{\"a\", ?}, {\"b\", ?}]>]>}") !=
        std::string::npos);
}

TEST_CASE("sdy-propagation import keeps constant-trip loops and barriers as written") {
  // A fori_loop-shaped while (0 to 4 by 1) and an optimization_barrier: the mesh passes get
  // the loop unrolled and the barrier dropped; Shardy's propagation sees both as written and
  // carries the argument's sharding through the loop into its body (sdy_dialect.md,
  // data-flow ops).
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {"b", ?}]>}) -> tensor<8x8xf32> {
  %0 = stablehlo.constant dense<0> : tensor<i32>
  %1 = stablehlo.constant dense<4> : tensor<i32>
  %2 = stablehlo.constant dense<1> : tensor<i32>
  %3:2 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %0) : tensor<8x8xf32>, tensor<i32>
   cond {
    %5 = stablehlo.compare  LT, %iterArg_0, %1 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %5 : tensor<i1>
  } do {
    %5 = stablehlo.add %iterArg_0, %2 : tensor<i32>
    %6 = stablehlo.add %iterArg, %iterArg : tensor<8x8xf32>
    stablehlo.return %6, %5 : tensor<8x8xf32>, tensor<i32>
  }
  %4 = stablehlo.optimization_barrier %3#0 : tensor<8x8xf32>
  return %4 : tensor<8x8xf32>
}
)";
  auto flat = parse_module(in, "loop.mlir");
  REQUIRE_MESSAGE(flat.has_value(), flat.error().message);
  std::string flat_text = print_module(*flat);
  CHECK(flat_text.find("stablehlo.while") == std::string::npos);
  CHECK(flat_text.find("optimization_barrier") == std::string::npos);

  auto kept = parse_module_for_propagation(in, "loop.mlir");
  REQUIRE_MESSAGE(kept.has_value(), kept.error().message);
  REQUIRE(run_sdy_propagation(*kept, PropagationStrategy::basic).has_value());
  std::string out = print_module(*kept);
  INFO(out);
  // MLIR's names: the constants are %c, %c_0, %c_1, so the loop arguments take `_2`.
  CHECK(out.find("stablehlo.while(%iterArg = %arg0, %iterArg_2 = %c) : tensor<8x8xf32>, "
                 "tensor<i32>") != std::string::npos);
  CHECK(out.find("= stablehlo.add %iterArg, %iterArg {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@mesh, [{\"a\", ?}, {\"b\", ?}]>]>} : "
                 "tensor<8x8xf32>") != std::string::npos);
  // The barrier passes the sharding on; StableHLO prints its attributes before the operands.
  CHECK(out.find("%1 = stablehlo.optimization_barrier {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@mesh, [{\"a\", ?}, {\"b\", ?}]>]>} %0#0 : "
                 "tensor<8x8xf32>\n") != std::string::npos);
  auto again = parse_module_for_propagation(out, "printed.mlir");
  REQUIRE_MESSAGE(again.has_value(), again.error().message);
  CHECK(print_module(*again) == out);
}

TEST_CASE("sdy_dialect.md: an op without results may carry one rank-0 sharding") {
  // A side-effecting host callback placed on a maximal mesh (one device, no axes): its
  // sharding_per_value has one rank-0 sharding and no results; propagation leaves it alone.
  const std::string in = R"(sdy.mesh @maximal_mesh = <[], device_ids=[0]>
func.func @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  stablehlo.custom_call @callback(%arg0) {has_side_effect = true, sdy.sharding = #sdy.sharding_per_value<[<@maximal_mesh, []>]>} : (tensor<8x8xf32>) -> ()
  return %arg0 : tensor<8x8xf32>
}
)";
  CHECK(propagated(in, PropagationStrategy::pipeline) == in);
  // A sharding with dims on an op without results is still refused, located.
  std::string bad = in;
  bad.replace(bad.find("<@maximal_mesh, []>]>"), 21, "<@maximal_mesh, [{}]>]>");
  std::string err = parse_error(bad);
  CHECK(err.find("sdy.sharding lists 1 shardings for 0 results") != std::string::npos);
  CHECK(err.find("bad.mlir:3:") != std::string::npos);
}

TEST_CASE("sharding_representation.md: an empty-mesh sharding nothing propagates into stays") {
  // Closed replicated dims on the empty mesh admit no axis: nothing is propagated into the
  // sharding, so it keeps its own (empty) mesh, on an argument and on an op alike; the add's
  // operands disagree (%arg0 "a"/"b", %arg1 closed {}), so basic propagation gives it nothing.
  const std::string in = R"(sdy.mesh @empty = <[]>
sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {"b"}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@empty, [{}, {}]>}) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
  %1 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@empty, [{}, {}]>]>} : tensor<8x8xf32>
  %2 = stablehlo.add %0, %1 : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}
)";
  std::string out = propagated(in, PropagationStrategy::basic);
  INFO(out);
  CHECK(out.find("%arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@empty, [{}, {}]>})") !=
        std::string::npos);
  CHECK(out.find("%1 = stablehlo.negate %arg0 {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@empty, [{}, {}]>]>} : tensor<8x8xf32>") !=
        std::string::npos);
  CHECK(out.find("%0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>") != std::string::npos);
}

TEST_CASE("sharding_representation.md meshes: propagation stays within one mesh") {
  // "a"=3 and "a"=6 are different meshes: the add reading one tensor of each is left alone
  // (nothing reaches it or the function result). Two names for the same axes are one mesh.
  const std::string in = R"(sdy.mesh @m3 = <["a"=3]>
sdy.mesh @m6 = <["a"=6]>
sdy.mesh @m6b = <["a"=6]>
func.func @main(%arg0: tensor<12x8xf32> {sdy.sharding = #sdy.sharding<@m3, [{"a"}, {?}]>}, %arg1: tensor<12x8xf32> {sdy.sharding = #sdy.sharding<@m6, [{?}, {?}]>}, %arg2: tensor<12x8xf32> {sdy.sharding = #sdy.sharding<@m6b, [{"a"}, {?}]>}) -> (tensor<12x8xf32>, tensor<12x8xf32>) {
  %0 = stablehlo.add %arg0, %arg1 : tensor<12x8xf32>
  %1 = stablehlo.subtract %arg1, %arg2 : tensor<12x8xf32>
  return %0, %1 : tensor<12x8xf32>, tensor<12x8xf32>
}
)";
  std::string out = propagated(in, PropagationStrategy::basic);
  INFO(out);
  CHECK(out.find("%0 = stablehlo.add %arg0, %arg1 : tensor<12x8xf32>") != std::string::npos);
  CHECK(out.find("%1 = stablehlo.subtract %arg1, %arg2 {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@m6, [{\"a\", ?}, {?}]>]>}") != std::string::npos);
  CHECK(out.find("%arg1: tensor<12x8xf32> {sdy.sharding = #sdy.sharding<@m6, [{\"a\", ?}, "
                 "{?}]>}") != std::string::npos);
}

TEST_CASE("sdy_export_passes.md close-shardings: the pipeline drops replicated axes") {
  // Closing a sharding makes every dim closed, which already says the axes not named are
  // replicated: the explicit replicated={...} list goes; basic propagation keeps it.
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"b", ?}, {?}], replicated={"a"}>}) -> tensor<8x8xf32> {
  %0 = stablehlo.negate %arg0 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)";
  std::string out = propagated(in, PropagationStrategy::pipeline);
  INFO(out);
  CHECK(out.find("%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"b\"}, {}]>})") !=
        std::string::npos);
  CHECK(out.find("replicated") == std::string::npos);
  CHECK(propagated(in, PropagationStrategy::basic).find("replicated={\"a\"}") != std::string::npos);
}
