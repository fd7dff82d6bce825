// StableHLO forms real exporters write beyond the canonical pretty printer: MLIR's explicitly
// signed integers (si32 reads as i32), stablehlo.constant with its generic body after the bare
// name, tensor.empty (contents unspecified: meshplan reads zeros), stablehlo.einsum /
// unary_einsum and XLA's custom_call @mhlo.topk. Each module is parsed, printed and parsed again
// (same graph key), lowered, planned and run on the emulated chip; results are compared with
// literals worked out by hand from the spec. Refusals (stablehlo.rng, a second module, einsum
// diagonals) name file:line:col.
#include <doctest/doctest.h>

#include <bit>
#include <string>
#include <vector>

#include "lowering_check.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "plan_run.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;
using meshplan::test::lower_error;

namespace {

using Input = std::pair<std::vector<int64_t>, std::vector<float>>;

/// Parses, checks the print -> parse round trip (same graph key), plans (greedy and dram) and
/// runs; every output must equal `want` bit for bit.
void check(const std::string& text, const std::vector<Input>& inputs,
           const std::vector<std::vector<float>>& want) {
  const planner::Graph g = test::lower_round_trip(text, "real.mlir");
  std::vector<runtime::TensorView> views;
  for (const auto& [shape, data] : inputs) views.push_back({shape, data});
  for (const char* policy : {"greedy", "dram"}) {
    CAPTURE(policy);
    auto outputs = test::plan_and_run(g, policy, "real", views);
    REQUIRE(outputs.size() == want.size());
    for (size_t r = 0; r < want.size(); ++r) {
      CAPTURE(r);
      const auto& out = outputs[r].data;
      REQUIRE(out.size() == want[r].size());
      for (size_t i = 0; i < out.size(); ++i) {
        CAPTURE(i);
        CHECK(std::bit_cast<uint32_t>(out[i]) == std::bit_cast<uint32_t>(want[r][i]));
      }
    }
  }
}

/// The located error parsing `text` (named bad.mlir), which must fail to parse.
std::string parse_error(const std::string& text) {
  auto m = parse_module(text, "bad.mlir");
  REQUIRE_FALSE(m.has_value());
  return m.error().message;
}

}  // namespace

TEST_CASE("si32 reads as i32 (MLIR's signed integers hold what StableHLO's signless ones do)") {
  check(R"(func.func @main(%arg0: tensor<4xsi32>, %arg1: tensor<4xsi32>) -> tensor<4xsi32> {
  %0 = stablehlo.subtract %arg0, %arg1 : tensor<4xsi32>
  return %0 : tensor<4xsi32>
}
)",
        {{{4}, {5, -3, 0, 7}}, {{4}, {8, -3, 2, -1}}}, {{-3, 0, -2, 8}});
  CHECK(parse_error("func.func @main(%arg0: tensor<4xsi7>) -> tensor<4xsi7> {\n"
                    "  return %arg0 : tensor<4xsi7>\n}\n")
            .starts_with("bad.mlir:1:33: element type si7 is not supported"));
}

TEST_CASE("stablehlo.constant with its generic body after the bare name") {
  check(R"(func.func @main(%arg0: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = stablehlo.constant() <{value = dense<[[1.5, -2.0], [0.25, 4.0]]> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
  %1 = stablehlo.multiply %arg0, %0 : tensor<2x2xf32>
  return %1 : tensor<2x2xf32>
}
)",
        {{{2, 2}, {2, 3, 4, -1}}}, {{3, -6, 1, -4}});
  CHECK(parse_error("func.func @main() -> tensor<2xf32> {\n"
                    "  %0 = stablehlo.constant() <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : "
                    "() -> tensor<3xf32>\n  return %0 : tensor<3xf32>\n}\n")
            .starts_with("bad.mlir:2:8: stablehlo.constant: the value's type tensor<2xf32> "
                         "differs from the result type"));
}

TEST_CASE("tensor.empty reads as zeros of its type") {
  check(R"(func.func @main(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = tensor.empty() : tensor<2x3xf32>
  %1 = stablehlo.maximum %arg0, %0 : tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
)",
        {{{2, 3}, {-1, 2, -3, 4, -5, 6}}}, {{0, 2, 0, 4, 0, 6}});
  CHECK(parse_error("func.func @main(%n: tensor<i64>) -> tensor<2xf32> {\n"
                    "  %0 = tensor.empty(%n) : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n")
            .starts_with("bad.mlir:2:21: expected ')': tensor.empty takes no operands"));
}

TEST_CASE("stablehlo.einsum: contraction, batch dims, summed labels and a transposed output") {
  // [[1,2,3],[4,5,6]] . [[1,0,0,1],[0,1,0,1],[0,0,1,1]] = [[1,2,3,6],[4,5,6,15]], transposed.
  check(R"(func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<4x2xf32> {
  %0 = "stablehlo.einsum"(%a, %b) {einsum_config = "ij,jk->ki"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}
)",
        {{{2, 3}, {1, 2, 3, 4, 5, 6}}, {{3, 4}, {1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1}}},
        {{1, 4, 2, 5, 3, 6, 6, 15}});
  // b batches, x is summed in the lhs alone, i contracts: out[j, b] = sum_i (sum_x l[b,x,i])
  // r[b,i,j].
  check(
      R"(func.func @main(%l: tensor<2x2x2xf32>, %r: tensor<2x2x3xf32>) -> tensor<3x2xf32> {
  %0 = "stablehlo.einsum"(%l, %r) <{einsum_config = "bxi,bij->jb"}> : (tensor<2x2x2xf32>, tensor<2x2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
)",
      {{{2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}}, {{2, 2, 3}, {1, -1, 2, 0, 3, 1, 2, 1, 0, -1, 1, 4}}},
      {{4, 10, 14, 26, 14, 56}});
}

TEST_CASE("stablehlo.unary_einsum: a sum over the dropped label, then the output order") {
  check(R"(func.func @main(%u: tensor<2x3x2xf32>) -> tensor<2x2xf32> {
  %0 = "stablehlo.unary_einsum"(%u) {einsum_config = "abc->ca"} : (tensor<2x3x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
)",
        {{{2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}}, {{9, 27, 12, 30}});
}

TEST_CASE("einsum and unary_einsum in pretty form (config = \"...\")") {
  // out[i] = sum_j a[i,j] b[j] (a matrix-vector product), then the row sums of a.
  check(
      R"(func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = stablehlo.einsum %a, %b, config = "ij,j->i" : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  %1 = stablehlo.unary_einsum %a, config = "ij->i" : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0, %1 : tensor<2xf32>, tensor<2xf32>
}
)",
      {{{2, 3}, {1, 2, 3, 4, 5, 6}}, {{3}, {2, 0, -1}}}, {{-1, 2}, {6, 15}});
  CHECK(parse_error("func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<f32> {\n"
                    "  %0 = stablehlo.einsum %a, %b : (tensor<2xf32>, tensor<2xf32>) -> "
                    "tensor<f32>\n  return %0 : tensor<f32>\n}\n")
            .starts_with("bad.mlir:2:32: expected ', config = \"...\"'"));
}

TEST_CASE("stablehlo.einsum refusals name file:line:col") {
  auto einsum = [](const std::string& config, const std::string& a, const std::string& b,
                   const std::string& r) {
    return "func.func @main(%a: " + a + ", %b: " + b + ") -> " + r +
           " {\n  %0 = \"stablehlo.einsum\"(%a, %b) {einsum_config = \"" + config + "\"} : (" + a +
           ", " + b + ") -> " + r + "\n  return %0 : " + r + "\n}\n";
  };
  CHECK(parse_error(einsum("ii,ij->j", "tensor<2x2xf32>", "tensor<2x3xf32>", "tensor<3xf32>"))
            .starts_with("bad.mlir:2:3: stablehlo.einsum: einsum_config \"ii,ij->j\": 'ii' "
                         "repeats a label (diagonals are not supported)"));
  CHECK(parse_error(einsum("ij,jk->ik", "tensor<2x3xf32>", "tensor<4x5xf32>", "tensor<2x5xf32>"))
            .starts_with("bad.mlir:2:3: stablehlo.einsum: einsum_config \"ij,jk->ik\": label "
                         "'j' has sizes 3 and 4"));
  CHECK(parse_error(einsum("ij,jk->iz", "tensor<2x3xf32>", "tensor<3x5xf32>", "tensor<2x5xf32>"))
            .starts_with("bad.mlir:2:3: stablehlo.einsum: einsum_config \"ij,jk->iz\": output "
                         "label 'z' is in no operand"));
  CHECK(
      parse_error(einsum("...j,jk->...k", "tensor<2x3xf32>", "tensor<3x5xf32>", "tensor<2x5xf32>"))
          .starts_with("bad.mlir:2:3: stablehlo.einsum: einsum_config \"...j,jk->...k\": an "
                       "ellipsis is not supported"));
}

TEST_CASE("custom_call @mhlo.topk: k largest or smallest, sorted, ties by lower index") {
  const char* text =
      R"(func.func @main(%arg0: tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %0:2 = stablehlo.custom_call @mhlo.topk(%arg0) {mhlo.attributes = {k = 3 : i64, largest = LARGEST}, mhlo.version = 1 : i64} : (tensor<2x6xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>)
  return %0#0, %0#1 : tensor<2x3xf32>, tensor<2x3xi32>
}
)";
  const std::vector<float> rows = {3, 1, 3, -2, 5, 1, 0, 7, -4, 7, 2, -4};
  auto with = [&](const char* largest) {
    std::string t = text;
    t.replace(t.find("LARGEST"), 7, largest);
    return t;
  };
  check(with("true"), {{{2, 6}, rows}}, {{5, 3, 3, 7, 7, 2}, {4, 0, 2, 1, 3, 4}});
  check(with("false"), {{{2, 6}, rows}}, {{-2, 1, 1, -4, -4, 0}, {3, 1, 5, 2, 5, 0}});
  const std::string too_many =
      "func.func @main(%arg0: tensor<4xf32>) -> (tensor<5xf32>, tensor<5xi32>) {\n"
      "  %0:2 = stablehlo.custom_call @mhlo.topk(%arg0) {mhlo.attributes = {k = 5 : i64, "
      "largest = true}} : (tensor<4xf32>) -> (tensor<5xf32>, tensor<5xi32>)\n"
      "  return %0#0, %0#1 : tensor<5xf32>, tensor<5xi32>\n}\n";
  CHECK(lower_error(too_many).starts_with(
      "bad.mlir:2:3: custom_call @mhlo.topk: k = 5 is outside [0, 4]"));
  std::string odd = too_many;
  odd.replace(odd.find("largest = true"), 14, "recall = 0.9");
  CHECK(
      lower_error(odd).starts_with("bad.mlir:2:3: custom_call @mhlo.topk: unknown attribute "
                                   "'recall' in mhlo.attributes"));
}

TEST_CASE("refused with a location: stablehlo.rng (implementation-defined) and a second module") {
  CHECK(parse_error(R"(func.func @main(%lo: tensor<f32>, %hi: tensor<f32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<4> : tensor<1xi64>
  %0 = stablehlo.rng %lo, %hi, %c, distribution =  UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
)")
            .starts_with("bad.mlir:3:8: stablehlo.rng is not supported: the specification "
                         "leaves the numbers it draws implementation-defined"));
  CHECK(parse_error("module @first {\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                    "    return %a : tensor<2xf32>\n  }\n}\n\nmodule @second {\n}\n") ==
        "bad.mlir:7:1: a second module (module @second) follows module @first; meshplan "
        "compiles one module per file (split the file, one module in each)");
}
