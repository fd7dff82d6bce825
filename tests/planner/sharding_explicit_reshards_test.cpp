// Explicit reshards as Shardy's sdy-insert-explicit-reshards chooses them (sdy_export_passes.md
// and the pass's documented semantics): operands and results that agree keep their sharding;
// otherwise the tensor that would move the most bytes stays where it is (the larger tensor of a
// unary op, the axes the most elements already hold elsewhere); sharded reduction factors give
// an sdy.all_reduce over the axes the result does not keep unreduced, and unreduced operands are
// summed only over the axes their user does not keep. Expected texts are worked out by hand.
#include <doctest/doctest.h>

#include "meshplan/planner/sharding_export.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/spmd_host.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

std::string reshards(const std::string& text) {
  auto m = parse_module(text, "r.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto p = export_pass_from_name("sdy-insert-explicit-reshards");
  REQUIRE(p.has_value());
  auto s = run_sdy_export_pass(*m, *p);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return print_module(*m);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

/// The whole pipeline on global host arrays, then the per-device program on the emulated mesh
/// against the module run on one device.
void check_equals_one_device(const std::string& text, size_t all_reduces) {
  auto local = parse_module(text, "e.mlir");
  REQUIRE(local.has_value());
  PipelineOptions o;
  o.mesh_rows = 0;  // the module's own mesh
  o.mesh_cols = 0;
  o.stop_after = *stage_from_name("close");
  auto s = run_pipeline(*local, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  CHECK(count(print_module(*local), "\"stablehlo.all_reduce\"") == all_reduces);
  auto global = parse_module(text, "e.mlir");
  REQUIRE(global.has_value());
  auto inputs = random_inputs(*global, 11);
  auto ref = evaluate_reference(*global, inputs);
  REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
  auto spmd = evaluate_spmd(*local, inputs);
  REQUIRE_MESSAGE(spmd.has_value(), spmd.error().message);
  REQUIRE(spmd->size() == ref->size());
  for (size_t r = 0; r < ref->size(); ++r) {
    REQUIRE((*spmd)[r].data.size() == (*ref)[r].data.size());
    for (size_t i = 0; i < (*ref)[r].data.size(); ++i)
      CHECK((*spmd)[r].data[i] == doctest::Approx((*ref)[r].data[i]));
  }
}

// The contracting dim is split over "x" on the lhs (256 elements) and over "y" on the rhs (512
// elements): the rhs keeps its "y", the lhs moves to it, and the dot's partial sums over "y"
// are all-reduced. (Taking neither would gather both operands whole.)
const std::string kDot = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<8x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, %arg1: tensor<32x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) -> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}]>]>} : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
)";

// A negate whose operand and result shardings disagree (same number of elements on both sides,
// so the more split one stays; on a tie the operand's).
std::string negate_module(const std::string& in, const std::string& out) {
  return "sdy.mesh @mesh = <[\"x\"=4, \"y\"=2]>\n"
         "func.func public @main(%arg0: tensor<4x32xf32> {sdy.sharding = #sdy.sharding<@mesh, " +
         in + ">}) -> (tensor<4x32xf32> {sdy.sharding = #sdy.sharding<@mesh, " + out +
         ">}) {\n"
         "  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, " +
         out +
         ">]>} : tensor<4x32xf32>\n"
         "  return %0 : tensor<4x32xf32>\n}\n";
}

}  // namespace

TEST_CASE("explicit reshards: a conflicting contracting dim keeps the larger operand's axes") {
  std::string got = reshards(kDot);
  CHECK(got.find("  %0 = sdy.reshard %arg0 <@mesh, [{}, {\"y\"}]> : tensor<8x32xf32>\n"
                 "  %1 = stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [0] "
                 "{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}]>]>} : "
                 "(tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>\n"
                 "  %2 = sdy.all_reduce {\"y\"} %1 out_sharding=<@mesh, [{}, {}]> : "
                 "tensor<8x16xf32>\n"
                 "  return %2 : tensor<8x16xf32>\n") != std::string::npos);
  CHECK(count(got, "sdy.reshard") == 1);
  // On the emulated mesh: one all_reduce (the partial sums over "y"), equal to one device.
  check_equals_one_device(kDot, 1);
}

TEST_CASE("explicit reshards: a unary op keeps the larger sharding, else the operand's") {
  // "x"=4 splits more than "y"=2: the operand moves to the result's sharding before the op.
  std::string larger = reshards(negate_module("[{\"y\"}, {}]", "[{\"x\"}, {}]"));
  CHECK(larger.find("  %0 = sdy.reshard %arg0 <@mesh, [{\"x\"}, {}]> : tensor<4x32xf32>\n"
                    "  %1 = stablehlo.negate %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
                    "[{\"x\"}, {}]>]>} : tensor<4x32xf32>\n"
                    "  return %1") != std::string::npos);
  // Equal sizes on different dims: the op computes as the operand is placed, the result is
  // resharded after it (not both to a third sharding).
  const std::string same = negate_module("[{\"x\"}, {}]", "[{}, {\"x\"}]");
  std::string kept = reshards(same);
  CHECK(kept.find("  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
                  "[{\"x\"}, {}]>]>} : tensor<4x32xf32>\n"
                  "  %1 = sdy.reshard %0 <@mesh, [{}, {\"x\"}]> : tensor<4x32xf32>\n"
                  "  return %1") != std::string::npos);
  CHECK(count(kept, "sdy.reshard") == 1);
  check_equals_one_device(same, 0);
}

TEST_CASE("explicit reshards: unreduced values are summed only over the axes a use drops") {
  // The add keeps the partial sums over "x" its result states: no all_reduce before it; the
  // return sums them since the function result is replicated.
  const std::string add = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}], unreduced={"x"}>}) -> (tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}], unreduced={"x"}>]>} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
)";
  std::string got = reshards(add);
  CHECK(got.find("  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@mesh, [{}, {}], unreduced={\"x\"}>]>} : "
                 "tensor<4x8xf32>\n"
                 "  %1 = sdy.all_reduce {\"x\"} %0 out_sharding=<@mesh, [{}, {}]> : "
                 "tensor<4x8xf32>\n"
                 "  return %1") != std::string::npos);
  CHECK(count(got, "sdy.all_reduce") == 1);
  // A reduction over a dim split over {"x", "y"} whose result keeps "x":(1)2 unreduced sums
  // over the rest of the reduction axes: "x":(2)2 and "y".
  const std::string reduce = R"(sdy.mesh @mesh = <["x"=4, "y"=2]>
func.func public @main(%arg0: tensor<2x64x13xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x", "y"}, {}]>}) -> (tensor<2x13xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}], unreduced={"x":(1)2}>}) {
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}], unreduced={"x":(1)2}>]>} : (tensor<2x64x13xf32>, tensor<f32>) -> tensor<2x13xf32>
  return %0 : tensor<2x13xf32>
}
)";
  std::string partial = reshards(reduce);
  CHECK(partial.find("  %1 = sdy.all_reduce {\"x\":(2)2, \"y\"} %0 out_sharding=<@mesh, [{}, {}], "
                     "unreduced={\"x\":(1)2}> : tensor<2x13xf32>\n"
                     "  return %1") != std::string::npos);
  CHECK(count(partial, "sdy.reshard") == 0);
}

TEST_CASE("explicit reshards: an uneven split of a one-factor dim stays on its factor") {
  // 13 is not divisible by "x"=2: the operand's split still counts (Shardy keeps it on the
  // factor), so the unary op computes as its more split operand is placed and only the result
  // moves; the split is not ignored as if the operand were whole.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2]>
func.func public @main(%arg0: tensor<2x13xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<2x13xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}]>]>} : tensor<2x13xf32>
  return %0 : tensor<2x13xf32>
}
)";
  std::string got = reshards(text);
  CHECK(got.find("  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
                 "[{}, {\"x\"}]>]>} : tensor<2x13xf32>\n"
                 "  %1 = sdy.reshard %0 <@mesh, [{}, {}]> : tensor<2x13xf32>\n"
                 "  return %1") != std::string::npos);
}
