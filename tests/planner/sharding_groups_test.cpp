// Sharding groups in the `sdy-propagation` stage against Shardy's documentation
// (sdy_dialect.md, ShardingGroupOp; sdy_import_passes.md, -sdy-sharding-group-import): the
// values of a group end with one sharding, groups sharing a value merge and are renumbered,
// the members start from their common sharding, and members that state different shardings
// get open sharding constraints. Expected texts are worked out by hand from those rules.
#include <doctest/doctest.h>

#include "meshplan/planner/sharding_strategies.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

constexpr const char* kMesh = "sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]>\n";

Module parsed(const std::string& body) {
  auto m = parse_module_for_propagation(std::string(kMesh) + body, "groups.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::move(*m);
}

std::string propagated(const std::string& body, PropagationStrategy strategy,
                       std::vector<std::string>* notes = nullptr) {
  Module m = parsed(body);
  auto s = run_sdy_propagation(m, strategy);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  if (notes) *notes = m.notes;
  return print_module(m);
}

std::string refused(const std::string& body) {
  Module m = parsed(body);
  auto s = run_sdy_propagation(m, PropagationStrategy::basic);
  REQUIRE_FALSE(s.has_value());
  return s.error().message;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("sharding groups: a member's sharding reaches values no data flows to") {
  // %0 takes "x" from %arg0; the group gives it to %1, which is not connected to %0 by any
  // op, and %1's producer passes it back to %arg1.
  std::string out = propagated(R"(
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {?}]>},
                %arg1: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0 = stablehlo.abs %arg0 : tensor<8x4xf32>
  %1 = stablehlo.exponential %arg1 : tensor<8x4xf32>
  sdy.sharding_group %0 group_id=0 : tensor<8x4xf32>
  sdy.sharding_group %1 group_id=0 : tensor<8x4xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<8x4xf32>
}
)",
                               PropagationStrategy::basic);
  CAPTURE(out);
  const std::string open_x = "<@mesh, [{\"x\", ?}, {?}]>";
  CHECK(has(out, "%arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding" + open_x + "}"));
  CHECK(has(out, "stablehlo.abs %arg0 {sdy.sharding = #sdy.sharding_per_value<[" + open_x + "]>}"));
  CHECK(has(out, "stablehlo.exponential %arg1 {sdy.sharding = #sdy.sharding_per_value<[" + open_x +
                     "]>}"));
}

TEST_CASE("sharding groups: members start from the sharding the group states") {
  // %arg0 states a closed sharding; the constant in its group takes exactly that sharding
  // (closed dims stay closed) before propagation, and the negate of %arg1 follows it.
  std::string out = propagated(R"(
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>},
                %arg1: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.constant dense<1.0> : tensor<8x4xf32>
  %1 = stablehlo.add %0, %arg1 : tensor<8x4xf32>
  sdy.sharding_group %arg0 group_id=0 : tensor<8x4xf32>
  sdy.sharding_group %0 group_id=0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
)",
                               PropagationStrategy::basic);
  CAPTURE(out);
  CHECK(has(out,
            "stablehlo.constant {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
            "[{\"x\"}, {\"y\"}]>]>} dense<1.000000e+00>"));
  // The add's closed operand gives both dims to the add and to %arg1 (open there).
  CHECK(has(out,
            "%arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\", ?}, "
            "{\"y\", ?}]>}"));
}

TEST_CASE("sharding groups: groups that share a value merge and are numbered from 0") {
  // Groups 7 and 4 share %arg1, so they are one group led by 4; 9 stays apart. In id order
  // the merged group is 0 and group 9 is 1. The second sdy.sharding_group of %arg1 in the
  // merged group is dropped.
  std::string out = propagated(R"(
func.func @main(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y", ?}]>},
                %arg1: tensor<4xf32>, %arg2: tensor<4xf32>, %arg3: tensor<4xf32>) {
  sdy.sharding_group %arg0 group_id=7 : tensor<4xf32>
  sdy.sharding_group %arg1 group_id=7 : tensor<4xf32>
  sdy.sharding_group %arg1 group_id=4 : tensor<4xf32>
  sdy.sharding_group %arg2 group_id=4 : tensor<4xf32>
  sdy.sharding_group %arg3 group_id=9 : tensor<4xf32>
  return
}
)",
                               PropagationStrategy::basic);
  CAPTURE(out);
  CHECK(has(out, "sdy.sharding_group %arg0 group_id=0"));
  CHECK(has(out, "sdy.sharding_group %arg1 group_id=0"));
  CHECK(has(out, "sdy.sharding_group %arg2 group_id=0"));
  CHECK(has(out, "sdy.sharding_group %arg3 group_id=1"));
  size_t first = out.find("sdy.sharding_group %arg1");
  CHECK(out.find("sdy.sharding_group %arg1", first + 1) == std::string::npos);
  // One sharding for the merged group; %arg3's group states none.
  const std::string y = "{sdy.sharding = #sdy.sharding<@mesh, [{\"y\", ?}]>}";
  CHECK(has(out, "%arg1: tensor<4xf32> " + y));
  CHECK(has(out, "%arg2: tensor<4xf32> " + y));
  CHECK(has(out, "%arg3: tensor<4xf32>)"));
}

TEST_CASE("sharding groups: members stating different shardings get open constraints") {
  // %arg0 says [{"x"}, {}], %arg1 says [{}, {"y"}]: a warning, and each argument gets a fully
  // open constraint at the top of the body (the later member's first), which takes its uses
  // and its place in the group. Basic propagation then visits %c1 (on %arg1) first: it takes
  // "y" in dim 1, which the group gives %c0; %c0 takes "x" from %arg0 in dim 0 (its closed
  // empty dim 1 conflicts with "y", so dim 1 keeps what it has), which the group gives %c1.
  std::vector<std::string> notes;
  std::string out = propagated(R"(
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>})
    -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
  sdy.sharding_group %arg0 group_id=0 : tensor<8x8xf32>
  sdy.sharding_group %arg1 group_id=0 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)",
                               PropagationStrategy::basic, &notes);
  CAPTURE(out);
  REQUIRE(notes.size() == 1);
  CHECK(has(notes[0], "groups.mlir:3:11: warning: sharding group 0"));
  CHECK(has(notes[0], "<@mesh, [{\"x\"}, {}]>"));
  CHECK(has(notes[0], "<@mesh, [{}, {\"y\"}]>"));
  const std::string both = "<@mesh, [{\"x\", ?}, {\"y\", ?}]>";
  CHECK(has(out, "  %0 = sdy.sharding_constraint %arg1 " + both +
                     " : tensor<8x8xf32>\n"
                     "  %1 = sdy.sharding_constraint %arg0 " +
                     both +
                     " : tensor<8x8xf32>\n"
                     "  %2 = stablehlo.add %1, %0"));
  CHECK(has(out, "sdy.sharding_group %1 group_id=0"));
  CHECK(has(out, "sdy.sharding_group %0 group_id=0"));
  // The arguments keep what they state.
  CHECK(has(out, "%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {}]>}"));
}

TEST_CASE("sharding groups: fully open shardings say nothing, so they do not conflict") {
  std::vector<std::string> notes;
  std::string out = propagated(R"(
func.func @main(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = sdy.sharding_constraint %arg0 <@mesh, [{?}, {?}]> : tensor<8x8xf32>
  sdy.sharding_group %0 group_id=0 : tensor<8x8xf32>
  %1 = sdy.sharding_constraint %arg0 <@mesh, [{}, {"y"}]> : tensor<8x8xf32>
  sdy.sharding_group %1 group_id=0 : tensor<8x8xf32>
  return %0, %1 : tensor<8x8xf32>, tensor<8x8xf32>
}
)",
                               PropagationStrategy::basic, &notes);
  CAPTURE(out);
  CHECK(notes.empty());
  CHECK(has(out, "%0 = sdy.sharding_constraint %arg0 <@mesh, [{}, {\"y\"}]>"));
  CHECK(has(out, "%1 = sdy.sharding_constraint %arg0 <@mesh, [{}, {\"y\"}]>"));
}

TEST_CASE("sharding groups: the pipeline removes the groups after propagation") {
  std::string out = propagated(R"(
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                %arg1: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.negate %arg1 : tensor<8x4xf32>
  sdy.sharding_group %arg0 group_id=0 : tensor<8x4xf32>
  sdy.sharding_group %0 group_id=0 : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
)",
                               PropagationStrategy::pipeline);
  CAPTURE(out);
  CHECK_FALSE(has(out, "sharding_group"));
  CHECK(has(out, "%arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {}]>}"));
  CHECK(has(out,
            "stablehlo.negate %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
            "[{\"x\"}, {}]>]>}"));
}

TEST_CASE("sharding groups: malformed groups are refused where they are written") {
  SUBCASE("values of two shapes") {
    std::string e = refused(R"(
func.func @main(%arg0: tensor<8x4xf32>, %arg1: tensor<4x8xf32>) {
  sdy.sharding_group %arg0 group_id=2 : tensor<8x4xf32>
  sdy.sharding_group %arg1 group_id=2 : tensor<4x8xf32>
  return
}
)");
    CHECK(has(e, "groups.mlir:5:3"));
    CHECK(has(e, "tensor<4x8xf32>"));
    CHECK(has(e, "group 2"));
    CHECK(has(e, "one shape"));
  }
  SUBCASE("a group across a manual computation's boundary") {
    std::string e = refused(R"(
func.func @main(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  sdy.sharding_group %arg0 group_id=1 : tensor<8x4xf32>
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%arg1: tensor<4x4xf32>) {
    %1 = stablehlo.negate %arg1 : tensor<4x4xf32>
    sdy.sharding_group %1 group_id=1 : tensor<4x4xf32>
    sdy.return %1 : tensor<4x4xf32>
  } : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
)");
    // The shapes differ too; the shape is checked first.
    CHECK(has(e, "groups.mlir:7:5"));
  }
  SUBCASE("same shape, inside and outside a manual computation") {
    std::string e = refused(R"(
func.func @main(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  sdy.sharding_group %arg0 group_id=1 : tensor<8x4xf32>
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{}, {}]>] out_shardings=[<@mesh, [{}, {}]>] manual_axes={} (%arg1: tensor<8x4xf32>) {
    sdy.sharding_group %arg1 group_id=1 : tensor<8x4xf32>
    sdy.return %arg1 : tensor<8x4xf32>
  } : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
)");
    CHECK(has(e, "groups.mlir:6:5"));
    CHECK(has(e, "group 1"));
    CHECK(has(e, "sdy.manual_computation"));
  }
  SUBCASE("a negative group id") {
    std::string e = refused(R"(
func.func @main(%arg0: tensor<8x4xf32>) {
  sdy.sharding_group %arg0 group_id=-1 : tensor<8x4xf32>
  return
}
)");
    CHECK(has(e, "groups.mlir:4:3"));
    CHECK(has(e, "negative"));
  }
}
