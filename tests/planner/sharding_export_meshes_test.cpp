// sdy-insert-explicit-reshards on ops whose operands and results name different meshes: the op
// is computed on the mesh most of its split shardings name (the first to reach that count on a
// tie), values split on a mesh that orders the devices otherwise are moved to it, and an op
// whose meshes have other axes is left alone. Expected texts are worked out by hand from that
// rule (Shardy's insert_explicit_reshards semantics).
#include <doctest/doctest.h>

#include <string>

#include "meshplan/planner/sharding_export.hpp"
#include "meshplan/planner/sharding_strategies.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

// @a_rev has @a's axes with the devices in reverse order; @b has other axis sizes.
constexpr const char* kMeshes =
    "sdy.mesh @a = <[\"p\"=2, \"q\"=4]>\n"
    "sdy.mesh @a_rev = <[\"p\"=2, \"q\"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>\n"
    "sdy.mesh @b = <[\"p\"=4, \"q\"=2]>\n";

std::string reshards(const std::string& body) {
  auto m = parse_module_for_propagation(std::string(kMeshes) + body, "meshes.mlir");
  if (!m) FAIL(m.error().message);  // (the message is read only on failure)
  auto s = run_sdy_export_pass(*m, *export_pass_from_name("sdy-insert-explicit-reshards"));
  if (!s) FAIL(s.error().message);
  const std::string out = print_module(*m);
  REQUIRE(out.starts_with(kMeshes));
  return out.substr(std::string(kMeshes).size());
}

}  // namespace

TEST_CASE("explicit reshards: the op runs on the mesh most split shardings name") {
  // Both operands split on @a_rev, the result on @a: two to one, so the add is computed on
  // @a_rev (no operand moves) and its result is then moved to @a, where it is declared.
  const std::string in =
      "func.func @f(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a_rev, [{\"q\"}, "
      "{}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a_rev, [{\"q\"}, {}]>}) -> "
      "(tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a, [{\"q\"}, {}]>}) {\n"
      "  %0 = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@a, "
      "[{\"q\"}, {}]>]>} : tensor<8x8xf32>\n"
      "  return %0 : tensor<8x8xf32>\n"
      "}\n";
  CHECK(reshards(in) ==
        "func.func @f(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a_rev, [{\"q\"}, "
        "{}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a_rev, [{\"q\"}, {}]>}) -> "
        "(tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a, [{\"q\"}, {}]>}) {\n"
        "  %0 = stablehlo.add %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@a_rev, "
        "[{\"q\"}, {}]>]>} : tensor<8x8xf32>\n"
        "  %1 = sdy.reshard %0 <@a, [{\"q\"}, {}]> : tensor<8x8xf32>\n"
        "  return %1 : tensor<8x8xf32>\n"
        "}\n");
}

TEST_CASE("explicit reshards: on a tie the mesh named first wins, iota-ordered or not") {
  // One sharding on each mesh: the operand's @a_rev comes first, so the negate is computed
  // there and its result moved to @a.
  const std::string in =
      "func.func @f(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a_rev, [{\"p\"}, "
      "{}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a, [{\"p\"}, {}]>}) {\n"
      "  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@a, [{\"p\"}, "
      "{}]>]>} : tensor<8x8xf32>\n"
      "  return %0 : tensor<8x8xf32>\n"
      "}\n";
  CHECK(reshards(in) ==
        "func.func @f(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a_rev, [{\"p\"}, "
        "{}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a, [{\"p\"}, {}]>}) {\n"
        "  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@a_rev, "
        "[{\"p\"}, {}]>]>} : tensor<8x8xf32>\n"
        "  %1 = sdy.reshard %0 <@a, [{\"p\"}, {}]> : tensor<8x8xf32>\n"
        "  return %1 : tensor<8x8xf32>\n"
        "}\n");
}

TEST_CASE("explicit reshards: a split operand on another device order moves to the op's mesh") {
  // lhs and result on @a outvote rhs on @a_rev. The factor shardings already agree (i: "p",
  // j: "q"), yet rhs's pieces sit on other devices, so it is resharded to @a, same dims.
  const std::string in =
      "func.func @f(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@a, [{\"p\"}, {}]>}, "
      "%arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@a_rev, [{}, {\"q\"}]>}) -> "
      "(tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a, [{\"p\"}, {\"q\"}]>}) {\n"
      "  %0 = stablehlo.dot %arg0, %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@a, "
      "[{\"p\"}, {\"q\"}]>]>} : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>\n"
      "  return %0 : tensor<8x8xf32>\n"
      "}\n";
  CHECK(reshards(in) ==
        "func.func @f(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@a, [{\"p\"}, "
        "{}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@a_rev, [{}, {\"q\"}]>}) "
        "-> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a, [{\"p\"}, {\"q\"}]>}) {\n"
        "  %0 = sdy.reshard %arg1 <@a, [{}, {\"q\"}]> : tensor<16x8xf32>\n"
        "  %1 = stablehlo.dot %arg0, %0 {sdy.sharding = #sdy.sharding_per_value<[<@a, "
        "[{\"p\"}, {\"q\"}]>]>} : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>\n"
        "  return %1 : tensor<8x8xf32>\n"
        "}\n");
}

TEST_CASE("explicit reshards: replicated values on another device order stay") {
  // Every device holds the whole tensor on either mesh: nothing to move.
  const std::string in =
      "func.func @f(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a_rev, [{}, {}]>}) "
      "-> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a, [{}, {}]>}) {\n"
      "  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@a, [{}, "
      "{}]>]>} : tensor<8x8xf32>\n"
      "  return %0 : tensor<8x8xf32>\n"
      "}\n";
  CHECK(reshards(in) == in);
}

TEST_CASE("explicit reshards: an op on meshes of other axes is left as it is") {
  // @a ("p"=2, "q"=4) and @b ("p"=4, "q"=2) share axis names but not sizes: the stage picks
  // no mesh for the negate and inserts nothing, although its shardings disagree.
  const std::string in =
      "func.func @f(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@a, [{\"p\"}, {}]>}) "
      "-> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@b, [{}, {\"q\"}]>}) {\n"
      "  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@b, [{}, "
      "{\"q\"}]>]>} : tensor<8x8xf32>\n"
      "  return %0 : tensor<8x8xf32>\n"
      "}\n";
  CHECK(reshards(in) == in);
}
