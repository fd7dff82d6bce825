// The `sdy-propagation` stage's printed form where it follows MLIR's printer (value names) and
// Shardy's documented semantics for data-flow edges and unreduced values (sdy_dialect.md).
// Expected texts are worked out by hand from those rules.
#include <doctest/doctest.h>

#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/sharding_strategies.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/spmd_host.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

std::string printed(const std::string& text) {
  auto m = parse_module_for_propagation(text, "doc.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return print_module(*m);
}

std::string propagated(const std::string& text, PropagationStrategy strategy) {
  auto m = parse_module_for_propagation(text, "doc.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto s = run_sdy_propagation(*m, strategy);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return print_module(*m);
}

}  // namespace

TEST_CASE("MLIR value names: constants are %c/%cst, regions numbered after their parent") {
  // MLIR's printer names a stablehlo.constant result `c` (integer elements) or `cst` (others),
  // made unique with `_K` from one counter per function: %c, %cst, %c_0. The ops of a region
  // are numbered before the regions nested in it, so the while is %0 and the add after it %1;
  // both loop regions then start from %2, and the loop arguments `iterArg` take the next
  // conflict id, 1.
  const std::string in = R"(sdy.mesh @mesh = <["a"=2]>
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %a = stablehlo.constant dense<0> : tensor<i32>
  %b = stablehlo.constant dense<1.000000e+00> : tensor<4xf32>
  %n = stablehlo.constant dense<4> : tensor<i32>
  %w:2 = stablehlo.while(%x = %arg0, %i = %a) : tensor<4xf32>, tensor<i32>
   cond {
    %p = stablehlo.compare  LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %s = stablehlo.add %x, %b : tensor<4xf32>
    stablehlo.return %s, %i : tensor<4xf32>, tensor<i32>
  }
  %r = stablehlo.add %w#0, %w#0 : tensor<4xf32>
  return %r : tensor<4xf32>
}
)";
  CHECK(printed(in) == R"(sdy.mesh @mesh = <["a"=2]>
func.func @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %cst = stablehlo.constant dense<1.000000e+00> : tensor<4xf32>
  %c_0 = stablehlo.constant dense<4> : tensor<i32>
  %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_1 = %c) : tensor<4xf32>, tensor<i32>
   cond {
    %2 = stablehlo.compare  LT, %iterArg_1, %c_0 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %2 : tensor<i1>
  } do {
    %2 = stablehlo.add %iterArg, %cst : tensor<4xf32>
    stablehlo.return %2, %iterArg_1 : tensor<4xf32>, tensor<i32>
  }
  %1 = stablehlo.add %0#0, %0#0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
)");
}

TEST_CASE("sdy_dialect.md data flow edges: a token result needs no edge, a barrier is an edge") {
  // The barrier's result and operand share one sharding through the explicit edge: %arg1
  // takes the edge's [{"a"}, {}] back from the function result, and the barrier itself
  // carries none (the edge owns it). The case's token result has no sharding and no edge,
  // so the case carries none either.
  const std::string in = R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<i32>, %arg1: tensor<8x4xf32>, %arg2: !stablehlo.token, %arg3: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"b"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}, !stablehlo.token, tensor<8x4xf32>) {
  %0 = stablehlo.optimization_barrier %arg1 : tensor<8x4xf32>
  %1 = sdy.data_flow_edge %0 : tensor<8x4xf32>
  %2:2 = "stablehlo.case"(%arg0) ({
    stablehlo.return %arg2, %arg3 : !stablehlo.token, tensor<8x4xf32>
  }, {
    stablehlo.return %arg2, %arg3 : !stablehlo.token, tensor<8x4xf32>
  }) : (tensor<i32>) -> (!stablehlo.token, tensor<8x4xf32>)
  %3 = sdy.data_flow_edge %2#1 : tensor<8x4xf32>
  return %1, %2#0, %3 : tensor<8x4xf32>, !stablehlo.token, tensor<8x4xf32>
}
)";
  CHECK(propagated(in, PropagationStrategy::basic) == R"(sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<i32>, %arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}, {?}]>}, %arg2: !stablehlo.token, %arg3: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"b"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}, !stablehlo.token, tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"b", ?}]>}) {
  %0 = stablehlo.optimization_barrier %arg1 : tensor<8x4xf32>
  %1 = sdy.data_flow_edge %0 sharding=<@mesh, [{"a", ?}, {?}]> : tensor<8x4xf32>
  %2:2 = "stablehlo.case"(%arg0) ({
    stablehlo.return %arg2, %arg3 : !stablehlo.token, tensor<8x4xf32>
  }, {
    stablehlo.return %arg2, %arg3 : !stablehlo.token, tensor<8x4xf32>
  }) : (tensor<i32>) -> (!stablehlo.token, tensor<8x4xf32>)
  %3 = sdy.data_flow_edge %2#1 sharding=<@mesh, [{?}, {"b", ?}]> : tensor<8x4xf32>
  return %1, %2#0, %3 : tensor<8x4xf32>, !stablehlo.token, tensor<8x4xf32>
}
)");
}

TEST_CASE("sdy_dialect.md unreduced: the pipeline all-reduces the axes a use drops") {
  // The dot's result is a partial sum over "y" and "x" (unreduced). The reshard keeps "x"
  // unreduced, so "y" is reduced right before it; the negate (linear) keeps what its result
  // states, "x"; the return's sharding states none, so "x" is reduced before the return.
  const std::string in = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y", "x"}]>}, %arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y", "x"}, {}]>}) -> (tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}], unreduced={"y", "x"}>]>} : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %1 = sdy.reshard %0 <@mesh, [{}, {}], unreduced={"x"}> : tensor<4x4xf32>
  %2 = stablehlo.negate %1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}], unreduced={"x"}>]>} : tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}
)";
  CHECK(propagated(in, PropagationStrategy::pipeline) == R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y", "x"}]>}, %arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y", "x"}, {}]>}) -> (tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}], unreduced={"y", "x"}>]>} : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %1 = sdy.all_reduce {"y"} %0 out_sharding=<@mesh, [{}, {}], unreduced={"x"}> : tensor<4x4xf32>
  %2 = sdy.reshard %1 <@mesh, [{}, {}], unreduced={"x"}> : tensor<4x4xf32>
  %3 = stablehlo.negate %2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}], unreduced={"x"}>]>} : tensor<4x4xf32>
  %4 = sdy.all_reduce {"x"} %3 out_sharding=<@mesh, [{}, {}]> : tensor<4x4xf32>
  return %4 : tensor<4x4xf32>
}
)");
  // Basic propagation alone (no export) inserts nothing.
  CHECK(propagated(in, PropagationStrategy::basic).find("all_reduce") == std::string::npos);
}

TEST_CASE("unreduced dot result: the sharded program all-reduces and equals one device") {
  // The contracting dim is split over "x" on both operands, so each device holds a partial
  // sum; the dot states it unreduced on "x" and the negate needs the full sum. With global
  // host arrays in, the sharded program must sum once over "x" (one all_reduce) and then
  // equal the one-device program; without the sum it would return half-sums.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2]>
func.func public @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, %arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}], unreduced={"x"}>]>} : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %1 = stablehlo.negate %0 : tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}
)";
  auto local = parse_module(text, "u.mlir");
  REQUIRE(local.has_value());
  PipelineOptions o;
  o.mesh_rows = 0;  // the module's own mesh
  o.mesh_cols = 0;
  o.stop_after = *stage_from_name("close");
  auto s = run_pipeline(*local, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  std::string printed = print_module(*local);
  size_t reduces = 0;
  for (size_t at = printed.find("\"stablehlo.all_reduce\""); at != std::string::npos;
       at = printed.find("\"stablehlo.all_reduce\"", at + 1))
    ++reduces;
  CHECK(reduces == 1);
  auto global = parse_module(text, "u.mlir");
  REQUIRE(global.has_value());
  auto inputs = random_inputs(*global, 7);
  auto ref = evaluate_reference(*global, inputs);
  REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
  auto spmd = evaluate_spmd(*local, inputs);
  REQUIRE_MESSAGE(spmd.has_value(), spmd.error().message);
  REQUIRE(spmd->size() == 1);
  REQUIRE((*spmd)[0].data.size() == 16);
  for (size_t i = 0; i < 16; ++i) CHECK((*spmd)[0].data[i] == doctest::Approx((*ref)[0].data[i]));
}

TEST_CASE("MLIR's printed forms: stablehlo.dot stays dot, an opaque attribute is one line") {
  // The propagation stage prints `stablehlo.dot` as written (Shardy's passes keep the op); the
  // mesh pipeline's parse reads it as the dot_general it is. A multi-line attribute prints on
  // one line, as MLIR prints attributes.
  const std::string in = R"(sdy.mesh @mesh = <["a"=2]>
func.func @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}, %arg1: tensor<8x2xf32>, %arg2: tensor<2x1xi32>) -> (tensor<4x2xf32>, tensor<2x4xf32>) {
  %0 = stablehlo.dot %arg0, %arg1, precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
  %1 = "stablehlo.gather"(%arg0, %arg2) <{dimension_numbers = #stablehlo.gather<
      offset_dims = [1],
      collapsed_slice_dims = [0],
      start_index_map = [0],
      index_vector_dim = 1>, slice_sizes = array<i64: 1, 8>}> : (tensor<4x8xf32>, tensor<2x1xi32>) -> tensor<2x8xf32>
  %2 = stablehlo.slice %1 [0:2, 0:4] : (tensor<2x8xf32>) -> tensor<2x4xf32>
  return %0, %2 : tensor<4x2xf32>, tensor<2x4xf32>
}
)";
  std::string out = propagated(in, PropagationStrategy::basic);
  CHECK(out.find("%0 = stablehlo.dot %arg0, %arg1, precision = [DEFAULT, DEFAULT] {sdy.sharding = "
                 "#sdy.sharding_per_value<[<@mesh, [{\"a\", ?}, {?}]>]>} : (tensor<4x8xf32>, "
                 "tensor<8x2xf32>) -> tensor<4x2xf32>\n") != std::string::npos);
  CHECK(out.find("#stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], "
                 "start_index_map = [0], index_vector_dim = 1>, slice_sizes") != std::string::npos);
  auto flat = parse_module(in, "doc.mlir");
  REQUIRE(flat.has_value());
  CHECK(print_module(*flat).find("stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x "
                                 "[0]") != std::string::npos);
}
