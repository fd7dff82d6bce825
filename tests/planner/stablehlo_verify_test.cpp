// StableHLO semantic checks after parsing: dimension attributes out of range, written result
// types that do not follow, sizes past the limits, bad meshes and shardings, and hex constants
// of the wrong width are located errors (file:line:col), never a crash or a silent zero.
#include <doctest/doctest.h>

#include <string>

#include "meshplan/planner/stablehlo.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

/// A module whose @main takes `args`, runs `body` (line 3 on) and returns `ret`.
std::string module(const std::string& args, const std::string& result, const std::string& body,
                   const std::string& ret, const std::string& mesh = "") {
  return mesh + "func.func @main(" + args + ") -> " + result + " {\n" + body + "  return " + ret +
         " : " + result + "\n}\n";
}

std::string error_of(const std::string& text) {
  auto m = parse_module(text, "v.mlir");
  return m ? std::string() : m.error().message;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::string kAB = "%a: tensor<4x8xf32>, %b: tensor<8x16xf32>";

std::string dot(const std::string& dims, const std::string& result = "tensor<4x16xf32>") {
  return module(kAB, result,
                "  %0 = stablehlo.dot_general %a, %b, " + dims +
                    " : (tensor<4x8xf32>, tensor<8x16xf32>) -> " + result + "\n",
                "%0");
}

}  // namespace

TEST_CASE("a valid dot_general passes") {
  CHECK(error_of(dot("contracting_dims = [1] x [0]")).empty());
}

TEST_CASE("dot_general dimension attributes out of range are located errors") {
  std::string e = error_of(dot("contracting_dims = [2] x [0]"));
  CHECK(has(e, "v.mlir:2:"));
  CHECK(has(e, "names dimension 2, outside [0, 2) of the rank-2 lhs"));
  CHECK(has(error_of(dot("contracting_dims = [-1] x [0]")), "names dimension -1"));
  CHECK(has(error_of(dot("batching_dims = [4] x [4], contracting_dims = [1] x [0]")),
            "names dimension 4"));
  CHECK(has(error_of(dot("contracting_dims = [1, 1] x [0, 1]")), "names dimension 1 twice"));
  CHECK(has(error_of(dot("contracting_dims = [1] x [0, 1]")),
            "contracting_dims lists 1 lhs and 2 rhs dimensions"));
  CHECK(has(error_of(dot("contracting_dims = [0] x [0]")),
            "contracting dimension 0 of the lhs (4) differs from dimension 0 of the rhs (8)"));
  CHECK(has(error_of(dot("contracting_dims = [1] x [0]", "tensor<4x15xf32>")),
            "result type tensor<4x15xf32> is written, the operands give [4x16]"));
}

TEST_CASE("reduce, iota, slice, transpose and broadcast attributes out of range") {
  std::string reduce_body =
      "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
      "  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [DIMS] : "
      "(tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>\n";
  auto reduce = [&](const std::string& dims) {
    std::string body = reduce_body;
    body.replace(body.find("DIMS"), 4, dims);
    return module("%a: tensor<4x8xf32>", "tensor<4xf32>", body, "%0");
  };
  CHECK(error_of(reduce("1")).empty());
  CHECK(has(error_of(reduce("5")), "v.mlir:3:"));
  CHECK(has(error_of(reduce("5")), "dimensions names dimension 5, outside [0, 2)"));
  CHECK(has(error_of(reduce("-1")), "names dimension -1"));
  CHECK(has(error_of(reduce("0")), "result type tensor<4xf32> is written, the operands give [8]"));

  std::string iota =
      module("", "tensor<4x8xf32>", "  %0 = stablehlo.iota dim = 2 : tensor<4x8xf32>\n", "%0");
  CHECK(has(error_of(iota), "iota_dimension 2 is outside [0, 2) of its rank-2 result"));

  auto slice = [](const std::string& ranges, const std::string& result) {
    return module(
        "%a: tensor<4x8xf32>", result,
        "  %0 = stablehlo.slice %a [" + ranges + "] : (tensor<4x8xf32>) -> " + result + "\n", "%0");
  };
  CHECK(error_of(slice("0:2, 0:8:2", "tensor<2x4xf32>")).empty());
  CHECK(has(error_of(slice("0:2", "tensor<2xf32>")),
            "a rank-2 operand needs 2 start:limit[:stride] ranges, 1 are written"));
  CHECK(has(error_of(slice("0:5, 0:8", "tensor<5x8xf32>")),
            "range 0:5:1 of dimension 0 does not fit its size 4"));

  std::string transpose = module(
      "%a: tensor<4x8xf32>", "tensor<8x4xf32>",
      "  %0 = stablehlo.transpose %a, dims = [1, 1] : (tensor<4x8xf32>) -> tensor<8x4xf32>\n",
      "%0");
  CHECK(has(error_of(transpose), "permutation names dimension 1 twice"));

  std::string bcast = module(
      "%a: tensor<8xf32>", "tensor<4x8xf32>",
      "  %0 = stablehlo.broadcast_in_dim %a, dims = [2] : (tensor<8xf32>) -> tensor<4x8xf32>\n",
      "%0");
  CHECK(has(error_of(bcast), "broadcast_dimensions names dimension 2, outside [0, 2)"));
}

TEST_CASE("sizes past the limits are refused up front, naming size and limit") {
  std::string huge =
      module("", "tensor<1099511627776xf32>",
             "  %0 = stablehlo.constant dense<1.0> : tensor<1099511627776xf32>\n", "%0");
  std::string e = error_of(huge);
  CHECK(has(e, "v.mlir:2:"));
  CHECK(has(e, "dimension 1099511627776, outside [1, 2147483647]"));
  std::string iota = module("", "tensor<65536x65537xf32>",
                            "  %0 = stablehlo.iota dim = 0 : tensor<65536x65537xf32>\n", "%0");
  CHECK(has(error_of(iota), "holds 4295032832 elements, more than the limit of 4294967296"));
}

TEST_CASE("meshes and shardings are checked") {
  std::string mesh = "sdy.mesh @mesh = <[\"x\"=2, \"y\"=4]>\n";
  auto sharded = [&](const std::string& sharding, const std::string& m) {
    return module("%a: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, " + sharding + ">}",
                  "tensor<8x8xf32>", "", "%a", m);
  };
  CHECK(error_of(sharded("[{\"x\"}, {\"y\"}]", mesh)).empty());
  CHECK(has(error_of(sharded("[{\"x\"}, {\"x\"}]", mesh)), "axis \"x\" is used twice"));
  CHECK(has(error_of(sharded("[{\"x\"}]", mesh)), "has 1 dims for a rank-2 tensor"));
  CHECK(has(error_of(sharded("[{\"z\"}, {}]", mesh)), "axis \"z\" is not in mesh @mesh"));
  std::string ids = "sdy.mesh @mesh = <[\"x\"=2, \"y\"=2], device_ids=[0, 1, 1, 3]>\n";
  CHECK(has(error_of(sharded("[{}, {}]", ids)), "device id 1 appears twice"));
  std::string range = "sdy.mesh @mesh = <[\"x\"=2, \"y\"=2], device_ids=[0, 1, 2, 7]>\n";
  CHECK(has(error_of(sharded("[{}, {}]", range)), "device id 7 is outside [0, 4)"));
  std::string big = "sdy.mesh @mesh = <[\"x\"=1099511627776]>\n";
  CHECK(has(error_of(sharded("[{}, {}]", big)),
            "axis 'x' has size 1099511627776; axis sizes are 1 to 65535"));
}

TEST_CASE("a returned value must have the declared result type") {
  std::string wrong = module("%a: tensor<4x8xf32>", "tensor<8x4xf32>", "", "%a");
  std::string e = error_of(wrong);
  CHECK(e.starts_with("v.mlir:"));
  CHECK(has(e, "operand 0 has type tensor<4x8xf32> but the op's type says tensor<8x4xf32>"));
}

TEST_CASE("hex constants must hold whole elements of exactly their type's width") {
  auto constant = [](const std::string& lit, const std::string& type) {
    return module("", type, "  %0 = stablehlo.constant dense<" + lit + "> : " + type + "\n", "%0");
  };
  CHECK(error_of(constant("0x3F800000", "tensor<f32>")).empty());
  CHECK(error_of(constant("0x3F80", "tensor<bf16>")).empty());
  std::string short_one = error_of(constant("0x3F80", "tensor<f32>"));
  CHECK(has(short_one, "v.mlir:2:"));
  CHECK(has(short_one, "hex element literal '0x3F80' has 4 digits; f32 needs exactly 8"));
  CHECK(has(error_of(constant("0x3F8000000000000000", "tensor<f32>")), "has 18 digits"));
  CHECK(has(error_of(constant("\"0x0000803F0000\"", "tensor<2xf32>")),
            "hex dense literal does not hold whole elements"));
  CHECK(error_of(constant("\"0x0000\"", "tensor<f16>")).empty());
  CHECK(has(error_of(constant("\"0x000000\"", "tensor<f16>")),
            "hex dense literal does not hold whole elements"));
}
