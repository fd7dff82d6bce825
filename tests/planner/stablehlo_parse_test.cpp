// The StableHLO/Shardy parser and printer: seed 003's modules print back byte for byte, printed
// modules re-parse to the same text, and every syntax error names file:line:col and what was
// expected.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "meshplan/planner/stablehlo.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string error_of(std::string_view text) {
  auto m = parse_module(text, "m.mlir");
  REQUIRE_FALSE(m.has_value());
  return m.error().message;
}

}  // namespace

TEST_CASE("every seed-003 module prints back exactly as written") {
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(test::source_path("tests/planner/golden"))) {
    std::string path = entry.path().string();
    const std::string name = entry.path().filename().string();  // not the checkout's path
    if (!path.ends_with(".mlir") || name.find("case") == std::string::npos) continue;
    ++files;
    std::string text = read_text(path);
    auto m = parse_module(text, path);
    REQUIRE_MESSAGE(m.has_value(), m.error().message);
    CHECK_MESSAGE(print_module(*m) == text, path);
  }
  CHECK(files == 27);
}

TEST_CASE("print -> parse -> print is identical for the whole op set") {
  for (const char* rel : {"tests/planner/golden/syntax_tour.mlir", "examples/models/tp_mlp.mlir",
                          "examples/models/mlp_dp.mlir"}) {
    auto m = parse_module_file(test::source_path(rel));
    REQUIRE_MESSAGE(m.has_value(), m.error().message);
    std::string once = print_module(*m);
    auto again = parse_module(once, "printed.mlir");
    REQUIRE_MESSAGE(again.has_value(), again.error().message);
    CHECK(print_module(*again) == once);
  }
}

TEST_CASE("the parser keeps structure: shardings, sub-axes, priorities, regions, props") {
  auto m = parse_module_file(test::source_path("tests/planner/golden/syntax_tour.mlir"));
  REQUIRE(m.has_value());
  REQUIRE(m->meshes.size() == 1);
  CHECK(m->meshes[0].devices() == 8);
  const Func& f = m->funcs.at(0);
  const TensorSharding& s = *m->values[f.args[0].value].sharding;
  REQUIRE(s.dims.size() == 2);
  CHECK(s.dims[0].open);
  CHECK(s.dims[0].priority == 1);
  CHECK(s.dims[1].axes[0] == AxisRef{"y", 1, 2});
  CHECK(s.replicated[0] == AxisRef{"y", 2, 2});
  int regions = 0, dots = 0;
  for (OpId o : f.body.ops) {
    const Op& op = m->ops[o];
    regions += static_cast<int>(op.regions.size());
    if (op.name == "stablehlo.dot_general") {
      ++dots;
      CHECK(op.prop("lhs_batching_dimensions")->ints == std::vector<int64_t>{0});
      CHECK(op.prop("rhs_contracting_dimensions")->ints == std::vector<int64_t>{1});
    }
    if (op.name == "stablehlo.constant" && m->values[op.results[0]].type.shape.size() == 2)
      CHECK(op.prop("value")->values == std::vector<double>{1.5, 2, -3, 4, 1, 2, 3, 4});
  }
  CHECK(regions == 2);
  CHECK(dots == 1);
}

TEST_CASE("syntax errors report file:line:col and what was expected") {
  CHECK(error_of(
            "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %b : tensor<2xf32>\n}") ==
        "m.mlir:2:10: use of undefined value %b");
  CHECK(error_of("func.func @f(%a: tensor<2xf32) -> tensor<2xf32> {}") ==
        "m.mlir:1:30: expected '>' closing the tensor type, found ') -> tensor<'");
  CHECK(error_of("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.frobnicate "
                 "%a : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}")
            .starts_with("m.mlir:2:8: unsupported op 'stablehlo.frobnicate' in pretty form"));
  CHECK(
      error_of(
          "sdy.mesh @mesh = <[\"x\"=2]>\nfunc.func @f(%a: tensor<2xf32> {sdy.sharding = "
          "#sdy.sharding<@mesh, [{\"z\"}]>}) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}") ==
      "m.mlir:2:62: axis \"z\" is not in mesh @mesh");
  CHECK(error_of("sdy.mesh @mesh = <[\"x\"=2]>\nfunc.func @f(%a: tensor<2xf32> {sdy.sharding = "
                 "#sdy.sharding<@mesh, [{\"x\"]>}) -> tensor<2xf32> {}") ==
        "m.mlir:2:74: expected '}' closing a dimension sharding, found ']>}) -> tens'");
  CHECK(error_of("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.add %a, %a "
                 ": tensor<3xf32>\n  return %0 : tensor<2xf32>\n}")
            .starts_with("m.mlir:2:"));
  CHECK(error_of("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.abs %a : "
                 "tensor<2xf32>\n}") == "m.mlir:3:1: function @f does not end with return");
  CHECK(error_of("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.constant "
                 "dense<[1.0, 2.0, 3.0]> : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}") ==
        "m.mlir:2:52: dense literal has 3 values but its type tensor<2xf32> holds 2");
  CHECK(error_of("garbage") ==
        "m.mlir:1:1: expected 'sdy.mesh', 'func.func' or 'module', found 'garbage'");
  CHECK(error_of("func.func @f(%a: tensor<2xf32>, %a: tensor<2xf32>) -> tensor<2xf32> {}") ==
        "m.mlir:1:33: value %a is defined twice");
}

TEST_CASE("generic-form ops (older exporters) normalize to the pretty form; hex constants decode") {
  auto m = parse_module_file(test::source_path("tests/planner/golden/generic_form.mlir"));
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  std::string text = print_module(*m);
  CHECK(
      text.find(
          "stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, "
          "DEFAULT] : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>") != std::string::npos);
  CHECK(text.find("stablehlo.constant dense<[[1.000000e+00, 2.000000e+00], [3.000000e+00, "
                  "4.000000e+00], [-1.000000e+00, -2.000000e+00], [-3.000000e+00, -4.000000e+00]]> "
                  ": tensor<4x2xf32>") != std::string::npos);
  // MLIR's names: the f32 constant is %cst and takes no number.
  CHECK(text.find("stablehlo.compare  GT, %0, %cst,  FLOAT") != std::string::npos);
  CHECK(text.find("stablehlo.broadcast_in_dim %1, dims = [0, 1]") != std::string::npos);
  auto again = parse_module(text, "printed.mlir");
  REQUIRE(again.has_value());
  CHECK(print_module(*again) == text);
}
