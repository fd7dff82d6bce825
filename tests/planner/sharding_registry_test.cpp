// Factor rules of the ops Shardy's op sharding rule registry defines beyond the general ones
// (bitcast_convert across widths, cholesky, triangular_solve, the custom calls JAX emits), what
// insert-explicit-reshards does with custom calls Shardy has no rule for, and the printed
// forms MLIR's printer uses for these ops (as Shardy's export tests expect them). Expected
// rules are worked out by hand from the ops' semantics: factors shared where a dim carries the
// same elements, need_replication where elements move along a dim.
#include <doctest/doctest.h>

#include "meshplan/planner/key.hpp"
#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/sharding_export.hpp"
#include "meshplan/planner/sharding_strategies.hpp"
#include "meshplan/planner/spmd.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

Module parsed(const std::string& text, const std::string& file = "r.mlir") {
  auto m = parse_module(text, file);
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::move(*m);
}

/// The rule of the first op of the entry function of `text`.
std::string rule_of(const std::string& text) {
  Module m = parsed(text);
  auto r = sharding_rule(m, m.ops[m.entry()->body.ops.at(0)]);
  REQUIRE_MESSAGE(r.has_value(), r.error().message);
  return r->print();
}

/// `text` read as the `sdy-*` stages read it, after the export pass `pass`.
std::string exported(const std::string& text, std::string_view pass) {
  auto m = parse_module_for_propagation(text, "r.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto p = export_pass_from_name(pass);
  REQUIRE(p.has_value());
  auto s = run_sdy_export_pass(*m, *p);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return print_module(*m);
}

bool has(const std::string& text, const std::string& part) {
  INFO(text);
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("bitcast_convert across bit widths: the narrower type's extra minor dim replicates") {
  // ui32 pairs make one ui64: dims 0 and 1 carry the same elements, the size-2 minor dim of the
  // ui32 side has no counterpart and cannot be split.
  CHECK(rule_of(R"(func.func @main(%arg0: tensor<4x2x2xui32>) -> tensor<4x2xui64> {
  %0 = stablehlo.bitcast_convert %arg0 : (tensor<4x2x2xui32>) -> tensor<4x2xui64>
  return %0 : tensor<4x2xui64>
})") == "a b c -> a b {a=4 b=2 c=2(need_replication)}");
  CHECK(rule_of(R"(func.func @main(%arg0: tensor<4x2xui64>) -> tensor<4x2x2xui32> {
  %0 = stablehlo.bitcast_convert %arg0 : (tensor<4x2xui64>) -> tensor<4x2x2xui32>
  return %0 : tensor<4x2x2xui32>
})") == "a b -> a b c {a=4 b=2 c=2(need_replication)}");
  // One width: elementwise.
  CHECK(rule_of(R"(func.func @main(%arg0: tensor<4x2xf32>) -> tensor<4x2xi32> {
  %0 = stablehlo.bitcast_convert %arg0 : (tensor<4x2xf32>) -> tensor<4x2xi32>
  return %0 : tensor<4x2xi32>
})") == "a b -> a b {a=4 b=2}");
}

TEST_CASE("cholesky and triangular_solve: batch dims pass, the matrix dims replicate") {
  CHECK(rule_of(R"(func.func @main(%arg0: tensor<8x4x6x6xf32>) -> tensor<8x4x6x6xf32> {
  %0 = stablehlo.cholesky %arg0, lower = true : tensor<8x4x6x6xf32>
  return %0 : tensor<8x4x6x6xf32>
})") == "a b c d -> a b c d {a=8 b=4 c=6(need_replication) d=6(need_replication)}");
  // left_side, no transpose: a @ x = b with a 3x3, b 3x5. a's rows are b's rows, a's columns
  // x's rows, b's columns x's columns.
  CHECK(
      rule_of(
          R"(func.func @main(%arg0: tensor<8x3x3xf32>, %arg1: tensor<8x3x5xf32>) -> tensor<8x3x5xf32> {
  %0 = "stablehlo.triangular_solve"(%arg0, %arg1) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<8x3x3xf32>, tensor<8x3x5xf32>) -> tensor<8x3x5xf32>
  return %0 : tensor<8x3x5xf32>
})") ==
      "a b c, a b d -> a c d {a=8 b=3(need_replication) c=3(need_replication) "
      "d=5(need_replication)}");
  // Right side, transposed: x @ a^T = b with b 5x3: b's rows are x's rows, a's rows b's
  // columns, a's columns x's columns.
  CHECK(rule_of(
            R"(func.func @main(%arg0: tensor<3x3xf32>, %arg1: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %0 = "stablehlo.triangular_solve"(%arg0, %arg1) <{left_side = false, lower = true, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = false}> : (tensor<3x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
})") == "a b, c a -> c b {a=3(need_replication) b=3(need_replication) c=5(need_replication)}");
}

TEST_CASE("custom calls Shardy knows get its rules") {
  // Pointwise targets (host offload, sharding inspection, mhlo.erf).
  CHECK(rule_of(R"(func.func @main(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.custom_call @mhlo.erf(%arg0) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
})") == "a b -> a b {a=8 b=4}");
  // Eigh: eigenvectors keep both matrix dims, eigenvalues the last one.
  CHECK(
      rule_of(R"(func.func @main(%arg0: tensor<8x4x4xf32>) -> (tensor<8x4x4xf32>, tensor<8x4xf32>) {
  %0:2 = stablehlo.custom_call @Eigh(%arg0) : (tensor<8x4x4xf32>) -> (tensor<8x4x4xf32>, tensor<8x4xf32>)
  return %0#0, %0#1 : tensor<8x4x4xf32>, tensor<8x4xf32>
})") == "a b c -> a b c, a c {a=8 b=4 c=4}");
  // Qr: batch dim only; the taus' dim is a factor of its own.
  CHECK(rule_of(
            R"(func.func @main(%arg0: tensor<8x5x3xf32>) -> (tensor<8x5x3xf32>, tensor<8x3xf32>) {
  %0:2 = stablehlo.custom_call @Qr(%arg0) : (tensor<8x5x3xf32>) -> (tensor<8x5x3xf32>, tensor<8x3xf32>)
  return %0#0, %0#1 : tensor<8x5x3xf32>, tensor<8x3xf32>
})") == "a b c -> a b c, a d {a=8 b=5(need_replication) c=3(need_replication) "
        "d=3(need_replication)}");
  // top-k along the last dim: the rows pass, the sorted dim replicates.
  CHECK(
      rule_of(R"(func.func @main(%arg0: tensor<16x8xf32>) -> (tensor<16x2xf32>, tensor<16x2xi32>) {
  %0:2 = stablehlo.custom_call @mhlo.topk(%arg0) {mhlo.attributes = {k = 2 : i64, largest = true}, mhlo.version = 1 : i64} : (tensor<16x8xf32>) -> (tensor<16x2xf32>, tensor<16x2xi32>)
  return %0#0, %0#1 : tensor<16x2xf32>, tensor<16x2xi32>
})") == "a b -> a b, a b {a=16 b=8(need_replication)}");
}

TEST_CASE("insert-explicit-reshards leaves custom calls without a rule as they are") {
  // An unknown target has no rule; a stated rule marked `custom` is for propagation only. In
  // both, Shardy inserts no reshard around the call. The known pointwise target computes on
  // its operand's sharding and its result is resharded for the return (as in Shardy's
  // custom_call_move_to_host case).
  const std::string text = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {"x"}]>}, tensor<2x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {"x"}]>}, tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) {
  %0 = stablehlo.custom_call @foo(%arg0) {sdy.sharding = #sdy.sharding_per_value<[#sdy.sharding<@mesh, [{"y"}, {"x"}]>]>} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %1 = stablehlo.custom_call @bar(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y"}, {"x"}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([j, i]) {i=4, j=2}, custom>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
  %2 = stablehlo.custom_call @MoveToHost(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y"}, {}]>]>} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %0, %1, %2 : tensor<4x2xf32>, tensor<2x4xf32>, tensor<4x2xf32>
}
)";
  const std::string out = exported(text, "sdy-insert-explicit-reshards");
  CHECK(has(out, "%0 = stablehlo.custom_call @foo(%arg0) {sdy.sharding"));
  CHECK(has(out, "%1 = stablehlo.custom_call @bar(%arg0) {sdy.sharding"));
  CHECK(has(out,
            "%2 = stablehlo.custom_call @MoveToHost(%arg0) {sdy.sharding = "
            "#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {\"y\"}]>]>} : (tensor<4x2xf32>) -> "
            "tensor<4x2xf32>\n  %3 = sdy.reshard %2 <@mesh, [{\"y\"}, {}]> : tensor<4x2xf32>\n"));
  // The unknown target still has no rule for the mesh pipeline: a located error names it.
  Module m = parsed(text);
  auto r = sharding_rule(m, m.ops[m.entry()->body.ops.at(0)]);
  REQUIRE_FALSE(r.has_value());
  CHECK(has(r.error().message, "r.mlir:3:"));
  CHECK(has(r.error().message, "no sharding rule for 'stablehlo.custom_call'"));
}

TEST_CASE("pad, reverse, dynamic_update_slice, bitcast_convert print as MLIR prints them") {
  // The forms of Shardy's export tests (MLIR's pretty printer); printing and parsing back
  // gives the same graph.
  const std::string text =
      R"(func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<1x2xf32>, %arg2: tensor<i32>) -> (tensor<2x3xf32>, tensor<3x6xf32>, tensor<2x3xf32>, tensor<2x3xi32>) {
  %0 = "stablehlo.reverse"(%arg0) <{dimensions = array<i64: 1>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = "stablehlo.pad"(%arg0, %1) <{edge_padding_high = array<i64: 1, 0>, edge_padding_low = array<i64: 0, 1>, interior_padding = array<i64: 0, 1>}> : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x6xf32>
  %3 = "stablehlo.dynamic_update_slice"(%arg0, %arg1, %arg2, %arg2) : (tensor<2x3xf32>, tensor<1x2xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
  %4 = "stablehlo.bitcast_convert"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xi32>
  return %0, %2, %3, %4 : tensor<2x3xf32>, tensor<3x6xf32>, tensor<2x3xf32>, tensor<2x3xi32>
}
)";
  Module m = parsed(text);
  const std::string printed = print_module(m);
  CHECK(has(printed, "%0 = stablehlo.reverse %arg0, dims = [1] : tensor<2x3xf32>\n"));
  CHECK(has(printed,
            "%1 = stablehlo.pad %arg0, %cst, low = [0, 1], high = [1, 0], interior = [0, 1] : "
            "(tensor<2x3xf32>, tensor<f32>) -> tensor<3x6xf32>\n"));
  CHECK(has(printed,
            "%2 = stablehlo.dynamic_update_slice %arg0, %arg1, %arg2, %arg2 : (tensor<2x3xf32>, "
            "tensor<1x2xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>\n"));
  CHECK(has(printed,
            "%3 = stablehlo.bitcast_convert %arg0 : (tensor<2x3xf32>) -> "
            "tensor<2x3xi32>\n"));
  auto g = lower_to_graph(m);
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  Module again = parsed(printed, "printed.mlir");
  CHECK(print_module(again) == printed);
  auto g2 = lower_to_graph(again);
  REQUIRE_MESSAGE(g2.has_value(), g2.error().message);
  CHECK(planner::graph_key(*g) == planner::graph_key(*g2));
}

TEST_CASE("cholesky's pretty form and #sdy.sharding inside sharding lists read and print back") {
  const std::string text = R"(sdy.mesh @mesh = <["x"=2]>
func.func @main(%arg0: tensor<4x3x3xf32>) -> (tensor<4x3x3xf32>, tensor<4x3x3xf32>) {
  %0 = stablehlo.cholesky %arg0, lower = true {sdy.sharding = #sdy.sharding_per_value<[#sdy.sharding<@mesh, [{"x"}, {}, {}]>]>} : (tensor<4x3x3xf32>) -> tensor<4x3x3xf32>
  %1 = "stablehlo.cholesky"(%arg0) <{lower = false}> : (tensor<4x3x3xf32>) -> tensor<4x3x3xf32>
  return %0, %1 : tensor<4x3x3xf32>, tensor<4x3x3xf32>
}
)";
  Module m = parsed(text);
  REQUIRE(m.ops[m.entry()->body.ops[0]].shardings.size() == 1);
  CHECK(sharding_string(m.ops[m.entry()->body.ops[0]].shardings[0]) ==
        "<@mesh, [{\"x\"}, {}, {}]>");
  const std::string printed = print_module(m);
  CHECK(has(printed,
            "%0 = stablehlo.cholesky %arg0, lower = true {sdy.sharding = "
            "#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}, {}]>]>} : tensor<4x3x3xf32>\n"));
  CHECK(has(printed, "%1 = stablehlo.cholesky %arg0, lower = false : tensor<4x3x3xf32>\n"));
  CHECK(print_module(parsed(printed, "again.mlir")) == printed);
  // A misspelt flag is a located error.
  auto bad = parse_module(R"(func.func @main(%arg0: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = stablehlo.cholesky %arg0, lower = yes : tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}
)",
                          "bad.mlir");
  REQUIRE_FALSE(bad.has_value());
  CHECK(has(bad.error().message, "bad.mlir:2:"));
}

TEST_CASE("unreduced values with max/min reductions are read, and refused by the mesh pipeline") {
  // Shardy's `unreduced=max{...}` reads and prints back; summing max-partials would be a wrong
  // program, so the mesh pipeline refuses them where the sharding is written.
  const std::string text = R"(sdy.mesh @mesh = <["x"=2]>
func.func @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.maximum %arg0, %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {}], unreduced=max{"x"}>]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)";
  auto m = parse_module(text, "u.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  CHECK(has(print_module(*m), "unreduced=max{\"x\"}>"));
  PipelineOptions o;
  o.mesh_rows = 0;
  o.mesh_cols = 0;
  o.stop_after = *stage_from_name("close");
  auto s = run_pipeline(*m, o);
  REQUIRE_FALSE(s.has_value());
  CHECK(has(s.error().message, "u.mlir:3:"));
  CHECK(has(s.error().message, "unreduced=max{...}"));
  // Other kinds are not Shardy's: a parse error.
  std::string mul = text;
  mul.replace(mul.find("max{"), 3, "mul");
  auto bad = parse_module(mul, "u.mlir");
  REQUIRE_FALSE(bad.has_value());
  CHECK(has(bad.error().message, "unreduced=mul{...}"));
}

TEST_CASE("rng_bit_generator keeps its state replicated; collective_broadcast is pointwise") {
  // The output's dims are free factors of their own; the state (and its next value) is one
  // replicated factor, unrelated to the output.
  CHECK(rule_of(R"(func.func @main(%arg0: tensor<2xui64>) -> (tensor<2xui64>, tensor<4x8xui32>) {
  %0:2 = "stablehlo.rng_bit_generator"(%arg0) <{rng_algorithm = #stablehlo<rng_algorithm DEFAULT>}> : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4x8xui32>)
  return %0#0, %0#1 : tensor<2xui64>, tensor<4x8xui32>
})") == "a -> a, b c {a=2(need_replication) b=4 c=8}");
  CHECK(rule_of(R"(func.func @main(%arg0: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = "stablehlo.collective_broadcast"(%arg0) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
})") == "a b -> a b {a=2 b=4}");
}

TEST_CASE("rng_bit_generator prints as MLIR prints it, with its named results, and reads back") {
  const std::string text =
      R"(func.func @main(%arg0: tensor<2xui64>) -> (tensor<2xui64>, tensor<4x8xui32>) {
  %0:2 = "stablehlo.rng_bit_generator"(%arg0) <{rng_algorithm = #stablehlo<rng_algorithm DEFAULT>}> : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4x8xui32>)
  return %0#0, %0#1 : tensor<2xui64>, tensor<4x8xui32>
}
)";
  const std::string printed = print_module(parsed(text));
  CHECK(has(printed,
            "  %output_state, %output = stablehlo.rng_bit_generator %arg0, algorithm =  DEFAULT : "
            "(tensor<2xui64>) -> (tensor<2xui64>, tensor<4x8xui32>)\n"
            "  return %output_state, %output : tensor<2xui64>, tensor<4x8xui32>\n"));
  Module again = parsed(printed, "again.mlir");
  CHECK(print_module(again) == printed);
  const Op& op = again.ops[again.entry()->body.ops[0]];
  REQUIRE(op.prop("rng_algorithm") != nullptr);
  CHECK(op.prop("rng_algorithm")->text == "#stablehlo<rng_algorithm DEFAULT>");
}

TEST_CASE("insert-explicit-reshards reshards call operands to the callee's argument shardings") {
  // @foo states its argument sharding; @bar states none, so its operand (sharded) becomes
  // fully replicated on the operand's mesh, as Shardy's pass does. The calls keep the result
  // shardings they state; the callees' bodies are resharded on their own. Each reshard goes
  // right after its operand (here the block's start), so the one made later comes first.
  const std::string out = exported(R"(sdy.mesh @mesh = <["x"=4, "y"=2]>
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, tensor<8xf32>) {
  %0 = call @foo(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} : (tensor<8xf32>) -> tensor<8xf32>
  %1 = call @bar(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}
func.func private @foo(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}) {
  %0 = stablehlo.abs %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} : tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func private @bar(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
)",
                                   "sdy-insert-explicit-reshards");
  CHECK(has(out, R"(  %0 = sdy.reshard %arg0 <@mesh, [{}]> : tensor<8xf32>
  %1 = sdy.reshard %arg0 <@mesh, [{"x"}]> : tensor<8xf32>
  %2 = call @foo(%1) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} : (tensor<8xf32>) -> tensor<8xf32>
  %3 = call @bar(%0) : (tensor<8xf32>) -> tensor<8xf32>
  return %2, %3 : tensor<8xf32>, tensor<8xf32>
)"));
  CHECK(has(
      out,
      R"(  %0 = stablehlo.abs %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} : tensor<8xf32>
  %1 = sdy.reshard %0 <@mesh, [{"y"}]> : tensor<8xf32>
  return %1 : tensor<8xf32>
)"));
}
