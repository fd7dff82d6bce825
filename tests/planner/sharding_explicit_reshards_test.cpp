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

/// The partial version (Shardy's enable-full-version=false).
Result<std::string> try_partial(const std::string& text) {
  auto m = parse_module(text, "p.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  ExportOptions o;
  o.explicit_reshards = ExplicitReshards::partial;
  MESHPLAN_TRY(run_sdy_export_pass(*m, ExportPass::insert_explicit_reshards, o));
  return print_module(*m);
}

std::string partial_reshards(const std::string& text) {
  auto got = try_partial(text);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  return *got;
}

/// The module as the printer writes it, untouched by any pass.
std::string printed(const std::string& text) {
  auto m = parse_module(text, "p.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
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

// The partial version (enable-full-version=false) resolves only what a later partitioner does
// not: its expected texts follow Shardy's documentation of the option and the pass's stated
// rules, worked out by hand.

TEST_CASE("explicit reshards, partial: conflicts of other ops and function results stay") {
  // The negate's operand and result disagree and the function result wants a third sharding:
  // the full version reshards twice, the partial one leaves all of it to the partitioner.
  const std::string text = negate_module("[{\"y\"}, {}]", "[{\"x\"}, {}]");
  CHECK(count(reshards(text), "sdy.reshard") == 1);
  CHECK(partial_reshards(text) == printed(text));
  const std::string result = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) {
  %0 = stablehlo.abs %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)";
  CHECK(partial_reshards(result) == printed(result));
}

TEST_CASE("explicit reshards, partial: a dot result split like the contracting dim moves after") {
  // lhs [{"y"}, {"x"}] and rhs [{"x"}, {}] agree on the contracting dim ("x"); the result asks
  // "x" for its rows, which the lhs splits over "y". The result (8x4) is no larger than the
  // lhs (8x16) and its rows hold exactly the contracting axes, so the dot computes its rows
  // over "y" and the smaller result is resharded to "x" after it.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {"x"}]>}, %arg1: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x4xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {?}]>]>} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = stablehlo.negate %0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
)";
  std::string got = partial_reshards(text);
  CHECK(got.find("  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] "
                 "{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{\"y\"}, {?}]>]>} : "
                 "(tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>\n"
                 "  %1 = sdy.reshard %0 <@mesh, [{\"x\"}, {?}]> : tensor<8x4xf32>\n"
                 "  %2 = stablehlo.negate %1 : tensor<8x4xf32>\n") != std::string::npos);
  // The same dot with a result larger than the lhs (2x4 times 4x32): nothing moves.
  const std::string larger = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {"x"}]>}, %arg1: tensor<4x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> tensor<2x32xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} : (tensor<2x4xf32>, tensor<4x32xf32>) -> tensor<2x32xf32>
  return %0 : tensor<2x32xf32>
}
)";
  CHECK(partial_reshards(larger) == printed(larger));
  // Operands that disagree on the contracting dim: left to the partitioner.
  const std::string disagree = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, %arg1: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) -> tensor<8x4xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y"}, {}]>]>} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
)";
  CHECK(partial_reshards(disagree) == printed(disagree));
}

TEST_CASE("explicit reshards, partial: partial sums are summed where a use drops them") {
  // The reduce's result keeps "x" unreduced and its reduced dim is split over {"x", "y"}: an
  // all_reduce over "y" follows it; the multiply's result keeps nothing, so its operand is
  // summed over "x" first; the function result states no sharding and keeps no partial sums.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x", "y"}]>}, %arg1: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}], unreduced={"y"}>}) -> (tensor<4xf32>, tensor<4xf32>) {
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}], unreduced={"x"}>]>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = stablehlo.multiply %0, %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}]>]>} : tensor<4xf32>
  return %1, %arg1 : tensor<4xf32>, tensor<4xf32>
}
)";
  std::string got = partial_reshards(text);
  CHECK(got.find("  %1 = sdy.all_reduce {\"y\"} %0 out_sharding=<@mesh, [{}], "
                 "unreduced={\"x\"}> : tensor<4xf32>\n"
                 "  %2 = sdy.all_reduce {\"x\"} %1 out_sharding=<@mesh, [{}]> : tensor<4xf32>\n"
                 "  %3 = sdy.all_reduce {\"x\"} %1 out_sharding=<@mesh, [{}]> : tensor<4xf32>\n"
                 "  %4 = stablehlo.multiply %2, %3 {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@mesh, [{}]>]>} : tensor<4xf32>\n"
                 "  %5 = sdy.all_reduce {\"y\"} %arg1 out_sharding=<@mesh, [{}]> : "
                 "tensor<4xf32>\n"
                 "  return %4, %5 : tensor<4xf32>, tensor<4xf32>\n") != std::string::npos);
  CHECK(count(got, "sdy.reshard") == 0);
  // Partial maxima are combined by a max all_reduce where the function result drops them.
  const std::string max = R"(sdy.mesh @mesh = <["x"=2]>
func.func public @main(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}], unreduced=max{"x"}>}) -> tensor<4xf32> {
  return %arg0 : tensor<4xf32>
}
)";
  CHECK(partial_reshards(max).find("  %0 = sdy.all_reduce max {\"x\"} %arg0 out_sharding=<@mesh, "
                                   "[{}]> : tensor<4xf32>\n"
                                   "  return %0") != std::string::npos);
  // A reduced dim whose result keeps no partial sums: the partitioner sums it; nothing added.
  const std::string plain = R"(sdy.mesh @mesh = <["x"=2]>
func.func public @main(%arg0: tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) -> tensor<4xf32> {
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}]>]>} : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";
  CHECK(partial_reshards(plain) == printed(plain));
}

TEST_CASE("explicit reshards, partial: a manual computation's boundary keeps what it states") {
  // The operand's partial sums over "x" are summed before the boundary (its in_sharding keeps
  // "y" only); inside, the returned value's "y" is summed since the out_sharding keeps none.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}], unreduced={"x", "y"}>}) -> (tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}], unreduced={"y"}>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%arg1: tensor<8xf32>) {
    %1 = stablehlo.negate %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}], unreduced={"y"}>]>} : tensor<8xf32>
    sdy.return %1 : tensor<8xf32>
  } : (tensor<16xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
)";
  std::string got = partial_reshards(text);
  CHECK(got.find("  %0 = sdy.all_reduce {\"x\"} %arg0 out_sharding=<@mesh, [{}], "
                 "unreduced={\"y\"}> : tensor<16xf32>\n"
                 "  %1 = sdy.manual_computation(%0)") != std::string::npos);
  CHECK(got.find("unreduced={\"y\"}>]>} : tensor<8xf32>\n"
                 "    %3 = sdy.all_reduce {\"y\"} %2 out_sharding=<@mesh, [{}]> : "
                 "tensor<8xf32>\n"
                 "    sdy.return %3 : tensor<8xf32>\n") != std::string::npos);
}

TEST_CASE("explicit reshards, partial: a concatenate fed other shardings is resolved") {
  // The operands disagree with the result: resolved as the full version does (the larger
  // operand's "y" wins, the result is resharded back after). Operands like the result: kept.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<4x24xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) -> tensor<4x32xf32> {
  %0 = stablehlo.concatenate %arg0, %arg1, dim = 1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}]>]>} : (tensor<4x8xf32>, tensor<4x24xf32>) -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}
)";
  std::string got = partial_reshards(text);
  CHECK(got.find("  %0 = sdy.reshard %arg0 <@mesh, [{\"y\"}, {}]> : tensor<4x8xf32>\n"
                 "  %1 = stablehlo.concatenate %0, %arg1, dim = 1 {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@mesh, [{\"y\"}, {}]>]>} : (tensor<4x8xf32>, "
                 "tensor<4x24xf32>) -> tensor<4x32xf32>\n"
                 "  %2 = sdy.reshard %1 <@mesh, [{}, {}]> : tensor<4x32xf32>\n"
                 "  return %2") != std::string::npos);
  const std::string same = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<4x24xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) {
  %0 = stablehlo.concatenate %arg0, %arg1, dim = 1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} : (tensor<4x8xf32>, tensor<4x24xf32>) -> tensor<4x32xf32>
  return %0 : tensor<4x32xf32>
}
)";
  CHECK(partial_reshards(same) == printed(same));
}

TEST_CASE("explicit reshards, partial: kept partial sums over disagreeing reduced dims fail") {
  // The result keeps "x" unreduced, but lhs and rhs split the contracting dim differently:
  // which sums it holds is undefined, a located error naming the op.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, %arg1: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) -> tensor<8x4xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}], unreduced={"x"}>]>} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
)";
  auto got = try_partial(text);
  REQUIRE_FALSE(got.has_value());
  CHECK(got.error().message.find("p.mlir:3:") != std::string::npos);
  CHECK(got.error().message.find("stablehlo.dot_general") != std::string::npos);
  CHECK(got.error().message.find("unreduced {\"x\"}") != std::string::npos);
}

// Shardy's maximal meshes (`<[], device_ids=[k]>`): an op whose result lives on one device gets
// its operands there through the module's global mesh (its first mesh with axes), replicated,
// and gives its results back replicated on that mesh; its own result sharding becomes `[]` on
// the single device. Users then reshard from the replicated value as for any other operand.
TEST_CASE("explicit reshards: an op on a maximal mesh goes through the global mesh replicated") {
  const std::string text = R"(sdy.mesh @mesh = <["x"=2]>
sdy.mesh @dev1 = <[], device_ids=[1]>
func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
  %0 = stablehlo.custom_call @Host(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@dev1, []>]>} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
)";
  std::string got = reshards(text);
  CHECK(got.find("  %0 = sdy.reshard %arg0 <@mesh, [{}, {}]> : tensor<8x4xf32>\n"
                 "  %1 = sdy.reshard %0 <@dev1, []> : tensor<8x4xf32>\n"
                 "  %2 = stablehlo.custom_call @Host(%1) {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@dev1, []>]>} : (tensor<8x4xf32>) -> tensor<8x4xf32>\n"
                 "  %3 = sdy.reshard %2 <@mesh, [{}, {}]> : tensor<8x4xf32>\n"
                 "  %4 = sdy.reshard %3 <@mesh, [{\"x\"}, {}]> : tensor<8x4xf32>\n"
                 "  return %4 : tensor<8x4xf32>\n") != std::string::npos);
  // A replicated operand on the global mesh goes to the device directly; a result whose own
  // sharding is on the mesh comes back replicated and then to that sharding.
  const std::string mixed = R"(sdy.mesh @mesh = <["x"=2]>
sdy.mesh @dev0 = <[], device_ids=[0]>
func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
  %0:2 = stablehlo.custom_call @Two(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@dev0, []>, <@mesh, [{"x"}, {}]>]>} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>)
  return %0#0, %0#1 : tensor<8x4xf32>, tensor<8x4xf32>
}
)";
  std::string two = reshards(mixed);
  CHECK(two.find("  %0 = sdy.reshard %arg0 <@dev0, []> : tensor<8x4xf32>\n"
                 "  %1:2 = stablehlo.custom_call @Two(%0) {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@dev0, []>, <@dev0, []>]>} : (tensor<8x4xf32>) -> "
                 "(tensor<8x4xf32>, tensor<8x4xf32>)\n"
                 "  %2 = sdy.reshard %1#0 <@mesh, [{}, {}]> : tensor<8x4xf32>\n"
                 "  %3 = sdy.reshard %1#1 <@mesh, [{}, {}]> : tensor<8x4xf32>\n"
                 "  %4 = sdy.reshard %3 <@mesh, [{\"x\"}, {}]> : tensor<8x4xf32>\n"
                 "  return %2, %4 : tensor<8x4xf32>, tensor<8x4xf32>\n") != std::string::npos);
}

TEST_CASE("explicit reshards: maximal shardings where Shardy refuses them are located errors") {
  auto error_of = [](const std::string& text) {
    auto m = parse_module(text, "r.mlir");
    REQUIRE_MESSAGE(m.has_value(), m.error().message);
    auto s = run_sdy_export_pass(*m, *export_pass_from_name("sdy-insert-explicit-reshards"));
    REQUIRE(!s.has_value());
    return s.error().message;
  };
  const std::string arg = error_of(R"(sdy.mesh @mesh = <["x"=2]>
sdy.mesh @dev0 = <[], device_ids=[0]>
func.func public @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@dev0, []>}) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
)");
  CHECK(arg.find("r.mlir:3:1") != std::string::npos);
  CHECK(arg.find("argument 0 cannot have a single-device (maximal) sharding @dev0") !=
        std::string::npos);
  const std::string conflict = error_of(R"(sdy.mesh @mesh = <["x"=2]>
sdy.mesh @dev0 = <[], device_ids=[0]>
sdy.mesh @dev1 = <[], device_ids=[1]>
func.func public @main(%arg0: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0:2 = stablehlo.custom_call @Two(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@dev0, []>, <@dev1, []>]>} : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return %0#0, %0#1 : tensor<8xf32>, tensor<8xf32>
}
)");
  CHECK(conflict.find("r.mlir:5:") != std::string::npos);
  CHECK(conflict.find("conflicting single-device result shardings @dev0 and @dev1") !=
        std::string::npos);
}

// Data-flow edges (Shardy's ShardableDataFlowOpInterface): a while's result owns the edge
// through its operand, its regions' arguments and the value its body yields; the ops inside
// its body see the arguments with the result's sharding, and each source that differs is
// resharded right after it is defined (a function argument: at the start of the body).
const std::string kWhile = R"(sdy.mesh @mesh = <["x"=4, "y"=2]>
func.func public @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}) {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %c_0 = stablehlo.constant dense<1> : tensor<i32>
  %c_1 = stablehlo.constant dense<3> : tensor<i32>
  %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_2 = %c) : tensor<8xf32>, tensor<i32> attributes {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y"}]>, <@mesh, []>]>}
   cond {
    %1 = stablehlo.compare  LT, %iterArg_2, %c_1 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %1 = stablehlo.add %iterArg_2, %c_0 : tensor<i32>
    %2 = stablehlo.negate %iterArg {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} : tensor<8xf32>
    stablehlo.return %2, %1 : tensor<8xf32>, tensor<i32>
  }
  return %0#0 : tensor<8xf32>
}
)";

TEST_CASE("explicit reshards: a while's operand, body arguments and yield follow its sharding") {
  // The bound is an argument (with a constant bound the importer unrolls the loop).
  std::string text = kWhile;
  text.replace(text.find("%c_1 = stablehlo.constant dense<3>"), 35,
               "%c_1 = stablehlo.add %arg1, %arg1");
  text.replace(text.find(") -> (tensor<8xf32>"), 1, ", %arg1: tensor<i32>)");
  std::string got = reshards(text);
  // The operand: right after %arg0 is defined, i.e. first in the function.
  CHECK(got.find(") {\n  %0 = sdy.reshard %arg0 <@mesh, [{\"y\"}]> : tensor<8xf32>\n"
                 "  %c = stablehlo.constant") != std::string::npos);
  CHECK(got.find("  %1 = stablehlo.add %arg1, %arg1 : tensor<i32>\n") != std::string::npos);
  CHECK(got.find("  %2:2 = stablehlo.while(%iterArg = %0, %iterArg_1 = %c)") != std::string::npos);
  // Inside the body the argument is on "y"; the negate wants "x" (4 devices, more split): the
  // argument moves before it, and the value the body yields moves back to "y" after it.
  CHECK(got.find("    %4 = sdy.reshard %iterArg <@mesh, [{\"x\"}]> : tensor<8xf32>\n"
                 "    %5 = stablehlo.negate %4 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
                 "[{\"x\"}]>]>} : tensor<8xf32>\n"
                 "    %6 = sdy.reshard %5 <@mesh, [{\"y\"}]> : tensor<8xf32>\n"
                 "    stablehlo.return %6, %3 : tensor<8xf32>, tensor<i32>\n") !=
        std::string::npos);
  // The scalar counter is replicated on both sides: no reshard for it.
  CHECK(count(got, "sdy.reshard") == 3);
  // On the emulated mesh (the importer unrolls the three iterations), equal to one device.
  check_equals_one_device(kWhile, 0);
}

TEST_CASE("explicit reshards: each case branch yields the case's sharding") {
  const std::string text = R"(sdy.mesh @mesh = <["x"=4, "y"=2]>
func.func public @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, %arg1: tensor<i32>) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}) {
  %0 = "stablehlo.case"(%arg1) ({
    stablehlo.return %arg0 : tensor<8xf32>
  }, {
    %1 = stablehlo.abs %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} : tensor<8xf32>
    stablehlo.return %1 : tensor<8xf32>
  }) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y"}]>]>} : (tensor<i32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
)";
  std::string got = reshards(text);
  // Branch 0 yields the function argument: resharded at the start of the function; branch 1
  // yields the abs: resharded right after it, inside the branch.
  CHECK(got.find(") {\n  %0 = sdy.reshard %arg0 <@mesh, [{\"y\"}]> : tensor<8xf32>\n"
                 "  %1 = \"stablehlo.case\"(%arg1) ({\n"
                 "    stablehlo.return %0 : tensor<8xf32>\n") != std::string::npos);
  CHECK(got.find("    %2 = stablehlo.abs %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
                 "[{\"x\"}]>]>} : tensor<8xf32>\n"
                 "    %3 = sdy.reshard %2 <@mesh, [{\"y\"}]> : tensor<8xf32>\n"
                 "    stablehlo.return %3 : tensor<8xf32>\n") != std::string::npos);
  CHECK(count(got, "sdy.reshard") == 2);
}

TEST_CASE("explicit reshards: a dynamic_slice moves the axes of its sliced dims to kept dims") {
  // Shardy's rule: one factor per dim shared by operand and result; the sliced dims (4 -> 1,
  // 8 -> 2) need replication, so their axes ("x" then "y") go to the dim kept whole (32).
  const std::string text = R"(sdy.mesh @mesh = <["x"=4, "y"=2]>
func.func public @main(%arg0: tensor<32x4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}, {"y"}]>}, %arg1: tensor<i32>, %arg2: tensor<i32>, %arg3: tensor<i32>) -> (tensor<32x1x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"y"}]>}) {
  %0 = stablehlo.dynamic_slice %arg0, %arg1, %arg2, %arg3, sizes = [32, 1, 2] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}, {"y"}]>]>} : (tensor<32x4x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<32x1x2xf32>
  return %0 : tensor<32x1x2xf32>
}
)";
  std::string got = reshards(text);
  CHECK(got.find("  %0 = sdy.reshard %arg0 <@mesh, [{\"x\", \"y\"}, {}, {}]> : tensor<32x4x8xf32>\n"
                 "  %1 = stablehlo.dynamic_slice %0, %arg1, %arg2, %arg3, sizes = [32, 1, 2] "
                 "{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{\"x\", \"y\"}, {}, {}]>]>} : "
                 "(tensor<32x4x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> "
                 "tensor<32x1x2xf32>\n"
                 "  %2 = sdy.reshard %1 <@mesh, [{}, {}, {\"y\"}]> : tensor<32x1x2xf32>\n"
                 "  return %2") != std::string::npos);
}

TEST_CASE("explicit reshards: a pad prefers the tensor whose padded dims are not sharded") {
  // Shardy's pad rule: one factor per dim, the padded dim (28 -> 30) a permutation factor. The
  // operand (12544 elements) is larger than the result (12480) but has "z" on the padded dim:
  // the result's sharding wins and the operand moves to it before the pad.
  const std::string text = R"(sdy.mesh @mesh = <["x"=4, "y"=2, "z"=4]>
func.func public @main(%arg0: tensor<28x28x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"z"}, {}, {"x"}]>}, %arg1: tensor<f32>) -> (tensor<30x26x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"x"}]>}) {
  %0 = stablehlo.pad %arg0, %arg1, low = [1, -1, 0], high = [1, -1, 0], interior = [0, 0, 0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}, {"x"}]>]>} : (tensor<28x28x16xf32>, tensor<f32>) -> tensor<30x26x16xf32>
  return %0 : tensor<30x26x16xf32>
}
)";
  std::string got = reshards(text);
  CHECK(got.find("  %0 = sdy.reshard %arg0 <@mesh, [{}, {}, {\"x\"}]> : tensor<28x28x16xf32>\n"
                 "  %1 = stablehlo.pad %0, %arg1") != std::string::npos);
  CHECK(count(got, "sdy.reshard") == 1);
  // Neither side sharded on a padded dim: the larger tensor (the operand) keeps its sharding
  // and the result moves after the pad.
  std::string plain = text;
  plain.replace(plain.find("[{\"z\"}, {}, {\"x\"}]"), 18, "[{}, {}, {\"y\"}]");
  std::string kept = reshards(plain);
  CHECK(kept.find("  %0 = stablehlo.pad %arg0, %arg1, low = [1, -1, 0], high = [1, -1, 0], "
                  "interior = [0, 0, 0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, "
                  "{}, {\"y\"}]>]>} : (tensor<28x28x16xf32>, tensor<f32>) -> tensor<30x26x16xf32>\n"
                  "  %1 = sdy.reshard %0 <@mesh, [{}, {}, {\"x\"}]> : tensor<30x26x16xf32>\n") !=
        std::string::npos);
}

TEST_CASE("explicit reshards: plans refuse a maximal mesh with a located error") {
  // The mesh pipeline has no value that lives on one device: an op placed so is refused where
  // it is written, naming the mesh (the sdy stage above shows Shardy's reshards instead).
  auto m = parse_module(R"(sdy.mesh @mesh = <["x"=2]>
sdy.mesh @dev1 = <[], device_ids=[1]>
func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@dev1, []>]>} : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
)",
                        "p.mlir");
  REQUIRE(m.has_value());
  PipelineOptions o;
  o.mesh_rows = 0;
  o.mesh_cols = 0;
  auto s = run_pipeline(*m, o);
  REQUIRE(!s.has_value());
  CHECK(s.error().message.find("p.mlir:4:3: stablehlo.negate has a single-device (maximal) "
                               "sharding on @dev1") != std::string::npos);
}

TEST_CASE("explicit reshards: a reverse computes as the tensor without sharded reversed dims") {
  // Shardy's reverse rule: reversed dims are permutation factors. The result is split along
  // the reversed dim 1, the operand is not: the reverse keeps the operand's sharding, and the
  // result moves after it (the same number of elements on both sides).
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) -> (tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) {
  %0 = stablehlo.reverse %arg0, dims = [1] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"x"}]>]>} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
)";
  std::string got = reshards(text);
  CHECK(got.find("  %0 = stablehlo.reverse %arg0, dims = [1] {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@mesh, [{\"y\"}, {}]>]>} : tensor<4x8xf32>\n"
                 "  %1 = sdy.reshard %0 <@mesh, [{}, {\"x\"}]> : tensor<4x8xf32>\n"
                 "  return %1") != std::string::npos);
  CHECK(count(got, "sdy.reshard") == 1);
}

TEST_CASE("explicit reshards: replicated_to_unreduced and sharded_to_unreduced print as read") {
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2, "z"=2]>
func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {"x"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}], unreduced={"y", "z"}>}) {
  %0 = sdy.replicated_to_unreduced {"z"} %arg0 out_sharding=<@mesh, [{"y"}, {"x"}], unreduced={"z"}> : tensor<8x4xf32>
  %1 = sdy.sharded_to_unreduced [{"y"}, {}] %0 out_sharding=<@mesh, [{}, {"x"}], unreduced={"y", "z"}> : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
)";
  CHECK(printed(text) == text);
  // The out_sharding is required, named in the error.
  auto bad = parse_module(R"(sdy.mesh @mesh = <["x"=2]>
func.func public @main(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = sdy.sharded_to_unreduced [{"x"}, {}] %arg0 : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
)",
                          "b.mlir");
  REQUIRE(!bad.has_value());
  CHECK(bad.error().message.find("b.mlir:3:") != std::string::npos);
  CHECK(bad.error().message.find("out_sharding") != std::string::npos);
}

TEST_CASE("explicit reshards: a reshard adding unreduced axes becomes the unreduced moves") {
  // "y" shards dim 0 and the target's dim 0 is empty: it moves by sharded_to_unreduced; "z" is
  // replicated in the operand: replicated_to_unreduced, first. "x" stays on dim 1. Both modes.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2, "z"=2]>
func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {"x"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}], unreduced={"y", "z"}>}) {
  %0 = sdy.reshard %arg0 <@mesh, [{}, {"x"}], unreduced={"y", "z"}> : tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
)";
  const std::string want =
      "  %0 = sdy.replicated_to_unreduced {\"z\"} %arg0 out_sharding=<@mesh, [{\"y\"}, {\"x\"}], "
      "unreduced={\"z\"}> : tensor<8x4xf32>\n"
      "  %1 = sdy.sharded_to_unreduced [{\"y\"}, {}] %0 out_sharding=<@mesh, [{}, {\"x\"}], "
      "unreduced={\"y\", \"z\"}> : tensor<8x4xf32>\n"
      "  return %1 : tensor<8x4xf32>\n";
  std::string full = reshards(text);
  CHECK(full.find(want) != std::string::npos);
  CHECK(count(full, "sdy.reshard") == 0);
  std::string part = partial_reshards(text);
  CHECK(part.find(want) != std::string::npos);
  CHECK(count(part, "sdy.reshard") == 0);
}

TEST_CASE("explicit reshards: a result adding unreduced axes reshards first when dims differ") {
  // The result wants dim 0 on "y" with "x" unreduced; the argument has "x" on dim 0 and "y" on
  // dim 1. "x" cannot stay after "y" on dim 0 as it is, so the reshard moves to the result's
  // dims and "x", now replicated, becomes unreduced by replicated_to_unreduced.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}], unreduced={"x"}>}) {
  return %arg0 : tensor<8x4xf32>
}
)";
  const std::string want =
      "  %0 = sdy.reshard %arg0 <@mesh, [{\"y\"}, {}]> : tensor<8x4xf32>\n"
      "  %1 = sdy.replicated_to_unreduced {\"x\"} %0 out_sharding=<@mesh, [{\"y\"}, {}], "
      "unreduced={\"x\"}> : tensor<8x4xf32>\n"
      "  return %1 : tensor<8x4xf32>\n";
  CHECK(reshards(text).find(want) != std::string::npos);
  CHECK(partial_reshards(text).find(want) != std::string::npos);
  // A value without a sharding is left as it is.
  const std::string open = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<8x4xf32>) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}], unreduced={"x"}>}) {
  return %arg0 : tensor<8x4xf32>
}
)";
  CHECK(count(reshards(open), "_to_unreduced") == 0);
}

TEST_CASE("explicit reshards: plans refuse the unreduced moves with a located error") {
  auto m = parse_module(R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
  %0 = sdy.sharded_to_unreduced [{"x"}, {}] %arg0 out_sharding=<@mesh, [{}, {}], unreduced={"x"}> : tensor<8x4xf32>
  %1 = sdy.all_reduce {"x"} %0 out_sharding=<@mesh, [{}, {}]> : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
)",
                        "p.mlir");
  REQUIRE(m.has_value());
  PipelineOptions o;
  o.mesh_rows = 0;
  o.mesh_cols = 0;
  auto s = run_pipeline(*m, o);
  REQUIRE(!s.has_value());
  CHECK(s.error().code == ErrorCode::unimplemented);
  CHECK(s.error().message.find("p.mlir:3:3: sdy.sharded_to_unreduced is not lowered") !=
        std::string::npos);
}

TEST_CASE("explicit reshards: a concatenate along a sharded dim computes split along the others") {
  // Shardy's concatenate rule: one factor per dim shared by operands and result; the concatenated
  // dim needs replication when the operands are not slices, so its axis moves to the other dim
  // (4 rows split 2 ways) and the result moves back after the op.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, %arg1: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<4x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) {
  %0 = stablehlo.concatenate %arg0, %arg1, dim = 1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"x"}]>]>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
)";
  std::string got = reshards(text);
  CHECK(got.find("  %0 = sdy.reshard %arg0 <@mesh, [{\"x\"}, {}]> : tensor<4x8xf32>\n"
                 "  %1 = sdy.reshard %arg1 <@mesh, [{\"x\"}, {}]> : tensor<4x8xf32>\n"
                 "  %2 = stablehlo.concatenate %0, %1, dim = 1 {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>}") != std::string::npos);
  CHECK(got.find("  %3 = sdy.reshard %2 <@mesh, [{}, {\"x\"}]> : tensor<4x16xf32>\n  return %3") != std::string::npos);
  CHECK(count(got, "sdy.reshard") == 3);
}

TEST_CASE("explicit reshards: a concatenate of pieces of one tensor keeps its split dim") {
  // A slice of %arg0 concatenated with %arg0 itself: the concatenated dim is a permutation factor,
  // which every tensor holds split over "x" alike, so nothing is resharded.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<4x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) {
  %0 = stablehlo.slice %arg0 [0:4, 0:4] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"x"}]>]>} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  %1 = stablehlo.concatenate %0, %arg0, dim = 1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"x"}]>]>} : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x12xf32>
  return %1 : tensor<4x12xf32>
}
)";
  std::string got = reshards(text);
  CHECK(count(got, "sdy.reshard") == 0);
  CHECK(got.find("  %1 = stablehlo.concatenate %0, %arg0, dim = 1 {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@mesh, [{}, {\"x\"}]>]>}") != std::string::npos);
}

TEST_CASE("explicit reshards: a two-input reduce reduces both results across the split dim") {
  // Both inputs share a factor per dim; dim 0 is reduced (a reduction factor). "x" on dim 0 is held
  // by both inputs, "y" on dim 1 by the first: the second input takes "y" too, each result is
  // combined with a max over "x" (the body's op), and only then resharded to its replicated use.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}, %arg1: tensor<8x4xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4xf32>, tensor<4xi32>) {
  %0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %1 = stablehlo.constant dense<0> : tensor<i32>
  %2:2 = stablehlo.reduce(%arg0 init: %0), (%arg1 init: %1) across dimensions = [0] : (tensor<8x4xf32>, tensor<8x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
    reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>) {
      %3 = stablehlo.maximum %a, %b : tensor<f32>
      %4 = stablehlo.maximum %c, %d : tensor<i32>
      stablehlo.return %3, %4 : tensor<f32>, tensor<i32>
    }
  return %2#0, %2#1 : tensor<4xf32>, tensor<4xi32>
}
)";
  std::string got = reshards(text);
  CHECK(got.find("  %0 = sdy.reshard %arg1 <@mesh, [{\"x\"}, {\"y\"}]> : tensor<8x4xi32>\n"
                 "  %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c)") != std::string::npos);
  CHECK(got.find("  %2 = sdy.all_reduce {\"x\"} %1#0 out_sharding=<@mesh, [{\"y\"}]> {meshplan.reduction = \"max\"} : tensor<4xf32>\n"
                 "  %3 = sdy.all_reduce {\"x\"} %1#1 out_sharding=<@mesh, [{\"y\"}]> {meshplan.reduction = \"max\"} : tensor<4xi32>\n"
                 "  %4 = sdy.reshard %2 <@mesh, [{}]> : tensor<4xf32>\n"
                 "  %5 = sdy.reshard %3 <@mesh, [{}]> : tensor<4xi32>\n") != std::string::npos);
}

TEST_CASE("explicit reshards: a gather from a split collapsed dim sums the pieces") {
  // The collapsed dim 0 (8 rows, split over "x") is a reduction factor of Shardy's gather rule:
  // each device gathers from its rows, the operand is not resharded, an all_reduce over "x"
  // follows. The offset dim 1 is taken whole and keeps "y" through to the result.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}, %arg1: tensor<2x1xi32>) -> (tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) {
  %0 = "stablehlo.gather"(%arg0, %arg1) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 4>, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"y"}]>]>} : (tensor<8x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
)";
  std::string got = reshards(text);
  CHECK(count(got, "sdy.reshard") == 0);
  CHECK(got.find("  %0 = \"stablehlo.gather\"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], "
                 "collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, "
                 "slice_sizes = array<i64: 1, 4>}> {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {\"y\"}]>]>}") != std::string::npos);
  CHECK(got.find("  %1 = sdy.all_reduce {\"x\"} %0 out_sharding=<@mesh, [{}, {\"y\"}]> : tensor<2x4xf32>\n  return %1") != std::string::npos);
}

TEST_CASE("explicit reshards: a scatter split along its updates sums the devices' results") {
  // The updates' dim 0 pairs with the indices' dim 0 and has no dim of the operand: with an adding
  // update computation it is a reduction factor, so the split "x" stays and the result is summed.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func public @main(%arg0: tensor<8x4xf32>, %arg1: tensor<2x1xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg2: tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x4xf32> {
  %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %1 = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %1 : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false, sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}]>]>} : (tensor<8x4xf32>, tensor<2x1xi32>, tensor<2x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
)";
  std::string got = reshards(text);
  CHECK(count(got, "sdy.reshard") == 0);
  CHECK(got.find("  %1 = sdy.all_reduce {\"x\"} %0 out_sharding=<@mesh, [{}, {}]> : tensor<8x4xf32>\n  return %1") != std::string::npos);
  // An update computation that only replaces combines nothing: that dim needs replication.
  std::string replace = text;
  replace.erase(replace.find("    %1 = stablehlo.add"), std::string("    %1 = stablehlo.add %a, %b : tensor<f32>\n").size());
  replace.replace(replace.find("return %1 : tensor<f32>"), 9, "return %b");
  std::string replaced = reshards(replace);
  CHECK(replaced.find("  %0 = sdy.reshard %arg1 <@mesh, [{}, {}]> : tensor<2x1xi32>\n"
                      "  %1 = sdy.reshard %arg2 <@mesh, [{}, {}]> : tensor<2x4xf32>\n"
                      "  %2 = \"stablehlo.scatter\"(%arg0, %0, %1)") != std::string::npos);
  CHECK(count(replaced, "sdy.all_reduce") == 0);
}

TEST_CASE("explicit reshards: clamp, select and sort print as Shardy's printer does") {
  const std::string text = R"(sdy.mesh @mesh = <["x"=2]>
func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xi1>, %arg2: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = stablehlo.clamp %arg0, %arg0, %arg0 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.clamp %arg2, %arg0, %arg2 : (tensor<f32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = stablehlo.select %arg1, %arg0, %0 : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = "stablehlo.sort"(%arg0) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %4 = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %4 : tensor<i1>
  }) {dimension = 0 : i64, is_stable = true} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
)";
  std::string got = reshards(text);
  CHECK(got.find("  %0 = stablehlo.clamp %arg0, %arg0, %arg0 : tensor<4xf32>\n") != std::string::npos);
  CHECK(got.find("  %1 = stablehlo.clamp %arg2, %arg0, %arg2 : (tensor<f32>, tensor<4xf32>, "
                 "tensor<f32>) -> tensor<4xf32>\n") != std::string::npos);
  CHECK(got.find("  %2 = stablehlo.select %arg1, %arg0, %0 : tensor<4xi1>, tensor<4xf32>\n") !=
        std::string::npos);
  CHECK(got.find("\"stablehlo.sort\"(%arg0) <{dimension = 0 : i64, is_stable = true}> ({") !=
        std::string::npos);
}

// Reshapes whose projection overflows: "x"=6 on the 24 = 4x6 dim of the operand gives factor i
// (size 4) "x":(1)2, and "x":(2)3 shares no divisor with what is left of i, so "x":(2)3 and "y"
// overflow. All the axes of the operand (as many devices as the result's) are dealt out again
// axis by axis to the first factor each shares a divisor with: "x":(1)2 and "y":(1)2 to i,
// "x":(2)3 and "y":(2)2 to j (size 6). The operand is resharded to that, the reshape keeps
// both factors and the result moves to its declared sharding after it.
TEST_CASE("explicit reshards: a reshape's overflow axes are dealt out again across factors") {
  const std::string text = R"(sdy.mesh @mesh = <["x"=6, "y"=4]>
func.func public @main(%arg0: tensor<24x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>}) -> (tensor<4x48xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x", "y"}]>}) {
  %0 = stablehlo.reshape %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"x", "y"}]>]>} : (tensor<24x8xf32>) -> tensor<4x48xf32>
  return %0 : tensor<4x48xf32>
}
)";
  const std::string got = reshards(text);
  CHECK(got.find("  %0 = sdy.reshard %arg0 <@mesh, [{\"x\":(1)2, \"y\":(1)2, \"x\":(2)3, "
                 "\"y\":(2)2}, {}]> : tensor<24x8xf32>\n"
                 "  %1 = stablehlo.reshape %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
                 "[{\"x\":(1)2, \"y\":(1)2}, {\"x\":(2)3, \"y\":(2)2}]>]>} : (tensor<24x8xf32>) -> "
                 "tensor<4x48xf32>\n"
                 "  %2 = sdy.reshard %1 <@mesh, [{}, {\"x\", \"y\"}]> : tensor<4x48xf32>\n"
                 "  return %2 : tensor<4x48xf32>\n") != std::string::npos);
  CHECK(count(got, "sdy.reshard") == 2);

  // The other direction: the result's dim 0 overflows; the operand's axes ("x" on j, "y" split
  // over j and k) are dealt out the same way on both sides.
  const std::string back = R"(sdy.mesh @mesh = <["x"=6, "y"=4]>
func.func public @main(%arg0: tensor<4x48xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x", "y"}]>}) -> (tensor<24x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>}) {
  %0 = stablehlo.reshape %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x", "y"}, {}]>]>} : (tensor<4x48xf32>) -> tensor<24x8xf32>
  return %0 : tensor<24x8xf32>
}
)";
  const std::string got_back = reshards(back);
  CHECK(got_back.find("  %0 = sdy.reshard %arg0 <@mesh, [{\"x\":(1)2, \"y\":(1)2}, {\"x\":(2)3, "
                      "\"y\":(2)2}]> : tensor<4x48xf32>\n"
                      "  %1 = stablehlo.reshape %0 {sdy.sharding = "
                      "#sdy.sharding_per_value<[<@mesh, [{\"x\":(1)2, \"y\":(1)2, \"x\":(2)3, "
                      "\"y\":(2)2}, {}]>]>} : (tensor<4x48xf32>) -> tensor<24x8xf32>\n"
                      "  %2 = sdy.reshard %1 <@mesh, [{\"x\", \"y\"}, {}]> : tensor<24x8xf32>\n") !=
        std::string::npos);
}

// An axis no factor can take overflows the last factor: with the rule ([ij, k])->([]) {i=3,
// j=2, k=1}, "x"=4 shares nothing with i, j takes "x":(1)2, and "x":(2)2 overflows k, the only
// factor of dim 1. The operand keeps what its dims can hold: dim 0 stops at the unsplit i.
TEST_CASE("explicit reshards: an axis no factor takes overflows the minor-most factor") {
  const std::string text = R"(sdy.mesh @mesh = <["x"=4]>
func.func public @main(%arg0: tensor<1x1xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<f32> {sdy.sharding = #sdy.sharding<@mesh, []>}) {
  %0 = stablehlo.reshape %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, []>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([ij, k])->([]) {i=3, j=2, k=1}>} : (tensor<1x1xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
)";
  const std::string got = reshards(text);
  CHECK(got.find("  %0 = sdy.reshard %arg0 <@mesh, [{}, {\"x\":(2)2}]> : tensor<1x1xf32>\n"
                 "  %1 = stablehlo.reshape %0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
                 "[]>]>") != std::string::npos);
  CHECK(count(got, "sdy.reshard") == 1);
}

// A broadcast's operand dim of size 1 expanded in place is a factor of its own, so the
// broadcast is a unary op: the larger tensor (the 24-element result, replicated) keeps its
// sharding and the operand is resharded to it. A function result that states no sharding is
// replicated: a sharded value returned there is resharded to replicated on its mesh. A result
// on a mesh of another device order differs from the same dims on the value's mesh unless
// both are replicated.
TEST_CASE("explicit reshards: unary broadcast, unsharded and other-mesh function results") {
  const std::string got = reshards(R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
sdy.mesh @other = <["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>
func.func @main(%arg0: tensor<4x1xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}, %arg1: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg2: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg3: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4x6xf32>, tensor<4x8xf32>, tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@other, [{}, {}]>}, tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@other, [{"x"}, {}]>}) {
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<4x1xf32>) -> tensor<4x6xf32>
  return %0, %arg1, %arg2, %arg3 : tensor<4x6xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
)");
  CHECK(got.find("  %0 = sdy.reshard %arg0 <@mesh, [{}, {}]> : tensor<4x1xf32>\n"
                 "  %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<4x1xf32>) -> "
                 "tensor<4x6xf32>\n"
                 "  %2 = sdy.reshard %arg1 <@mesh, [{}, {}]> : tensor<4x8xf32>\n"
                 "  %3 = sdy.reshard %arg3 <@other, [{\"x\"}, {}]> : tensor<4x8xf32>\n"
                 "  return %1, %2, %arg2, %3 : ") != std::string::npos);
  CHECK(count(got, "sdy.reshard") == 3);
}
