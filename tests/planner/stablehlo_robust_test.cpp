// Bad input never crashes: every prefix and many single-byte mutations of the seed modules
// either parse and run through the mesh pipeline, or fail with a located error.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "meshplan/planner/spmd.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

int attempt(const std::string& text) {
  auto m = parse_module(text, "fuzz.mlir");
  if (!m) {
    CHECK(m.error().message.starts_with("fuzz.mlir:"));
    return 0;
  }
  PipelineOptions o;
  o.mesh_rows = 1;
  o.mesh_cols = m->main_mesh() ? m->main_mesh()->devices() : 2;
  auto s = run_pipeline(*m, o);
  if (s) {
    auto again = parse_module(print_module(*m), "printed.mlir");
    CHECK_MESSAGE(again.has_value(), (again ? "" : again.error().message + "\n" + text));
  }
  return 1;
}

}  // namespace

TEST_CASE("truncated and mutated modules fail cleanly") {
  std::mt19937 rng(1234);
  const std::string junk = "{}[]<>()%@#\":,=x?-0123456789 \nabc";
  int parsed = 0, tried = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(test::source_path("tests/planner/golden"))) {
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    for (size_t n = 0; n < text.size(); n += 13, ++tried) parsed += attempt(text.substr(0, n));
    for (int k = 0; k < 60; ++k, ++tried) {
      std::string t = text;
      t[rng() % t.size()] = junk[rng() % junk.size()];
      parsed += attempt(t);
    }
  }
  CHECK(tried > 1000);
  CHECK(parsed > 0);
}

TEST_CASE("numbers outside int64 or the mesh are located errors, not out-of-range conversions") {
  // Found by the StableHLO fuzzer under UBSan: a 99-digit integer attribute was converted to
  // int64.
  std::string big(99, '8');
  std::string text =
      "func.func @main(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {\n"
      "  %0 = stablehlo.add %a, %a {n = " +
      big +
      "} : tensor<4x8xf32>\n"
      "  return %0 : tensor<4x8xf32>\n}\n";
  auto m = parse_module(text, "big.mlir");
  REQUIRE_FALSE(m.has_value());
  CHECK(m.error().message.starts_with("big.mlir:2:"));
  CHECK(m.error().message.find("64 bits") != std::string::npos);
  // A collective_permute pair of 1e300 names no device (it was converted to int64 as well).
  std::string permute =
      "module @m {\n  sdy.mesh @mesh = <[\"x\"=2]>\n"
      "  func.func @main(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {\n"
      "    %0 = \"stablehlo.collective_permute\"(%a) {source_target_pairs = "
      "dense<[[1.0e300, 0.0], [1.0, 0.0]]> : tensor<2x2xi64>} : (tensor<4x8xf32>) -> "
      "tensor<4x8xf32>\n    return %0 : tensor<4x8xf32>\n  }\n}\n";
  auto pm = parse_module(permute, "permute.mlir");
  REQUIRE_MESSAGE(pm.has_value(), (pm ? "" : pm.error().message));
  const Op* op = nullptr;
  for (const Op& o : pm->ops)
    if (o.name == "stablehlo.collective_permute") op = &o;
  REQUIRE(op != nullptr);
  auto info = collective_info(*pm, *op);
  REQUIRE_FALSE(info.has_value());
  CHECK(info.error().message.find("outside the 2-device mesh") != std::string::npos);
}

TEST_CASE("deep nesting is a located error, not a stack overflow") {
  // 12,000 nested array attributes and 20,000 nested regions (generic form).
  std::string attrs =
      "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.abs %a {x = " +
      std::string(12000, '[') + std::string(12000, ']') +
      "} : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n";
  auto m = parse_module(attrs, "deep.mlir");
  REQUIRE_FALSE(m.has_value());
  CHECK(m.error().message.starts_with("deep.mlir:2:"));
  CHECK(m.error().message.find("nesting deeper than 256 levels") != std::string::npos);
  std::string dense = "func.func @main() -> tensor<1xf32> {\n  %0 = stablehlo.constant dense<" +
                      std::string(12000, '[') + "1.0" + std::string(12000, ']') +
                      "> : tensor<1xf32>\n  return %0 : tensor<1xf32>\n}\n";
  m = parse_module(dense, "deep.mlir");
  REQUIRE_FALSE(m.has_value());
  CHECK(m.error().message.find("nesting deeper than 256 levels") != std::string::npos);
  std::string regions = "func.func @main() -> () {\n";
  for (int i = 0; i < 20000; ++i) regions += "\"test.op\"() ({\n";
  for (int i = 0; i < 20000; ++i) regions += "}) : () -> ()\n";
  regions += "return\n}\n";
  m = parse_module(regions, "deep.mlir");
  REQUIRE_FALSE(m.has_value());
  CHECK(m.error().message.starts_with("deep.mlir:258:1: "));
  CHECK(m.error().message.find("nesting deeper than 256 levels") != std::string::npos);
}

TEST_CASE("a dot_general precision that is not DEFAULT, HIGH or HIGHEST is a located error") {
  // Found by the mutation test above: `#stablehlo<precision 4EFAULT>` was kept, then printed in
  // the pretty form as `precision = [DEFAULT, 4EFAULT]`, which no parser reads back.
  const std::string head =
      "func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {\n"
      "  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], precision = ";
  const std::string tail =
      " : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>\n"
      "  return %0 : tensor<4x2xf32>\n}\n";
  CHECK(parse_module(head + "[DEFAULT, HIGHEST]" + tail, "p.mlir").has_value());
  // The pretty form's list reads `4EFAULT` as a number followed by junk: a located error.
  auto bad = parse_module(head + "[DEFAULT, 4EFAULT]" + tail, "p.mlir");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.starts_with("p.mlir:2:"));
  auto generic = parse_module(
      "func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>) -> tensor<4x2xf32> {\n"
      "  %0 = \"stablehlo.dot_general\"(%a, %b) {dot_dimension_numbers = "
      "#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, "
      "precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision LOW>]} : "
      "(tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>\n"
      "  return %0 : tensor<4x2xf32>\n}\n",
      "g.mlir");
  REQUIRE_FALSE(generic.has_value());
  CHECK(generic.error().message.find("'LOW' is not DEFAULT, HIGH or HIGHEST") != std::string::npos);
}
