// i8, i16, ui8 and ui16 wrap at their own width: they are computed in 32-bit words and brought
// back after every op that can leave their range, as StableHLO's integer arithmetic and
// integer-to-integer convert say (two's complement, modulo 2^8 / 2^16). Expected values are
// worked out by hand; every case is one that 32-bit arithmetic alone would get wrong.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/stablehlo.hpp"
#include "plan_run.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

using Values = std::vector<float>;

std::string corpus(const char* name) {
  std::ifstream in(test::source_path(std::string("tests/planner/jax/corpus/") + name));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs `text` on `inputs` (all rank 1) under two policies; returns the greedy outputs after
/// checking that the dram policy agrees.
std::vector<Values> run(const std::string& text, const std::vector<Values>& inputs) {
  planner::Graph g = test::lower_text(text, "narrow.mlir");
  std::vector<Values> dram = test::run_rank1(g, "dram", "narrow", inputs);
  std::vector<Values> greedy = test::run_rank1(g, "greedy", "narrow", inputs);
  CHECK(dram == greedy);
  return greedy;
}

}  // namespace

TEST_CASE("int8 add and multiply wrap modulo 2^8 ((x + 127) * y)") {
  auto got = run(corpus("int8_wrap.mlir"), {{0, 1, 2, -128}, {1, 1, 3, -1}});
  REQUIRE(got.size() == 1);
  // 127; 128 -> -128; 129 -> -127, * 3 = -381 -> -381 + 512 = 131 -> -125; -1 * -1 = 1.
  CHECK(got[0] == Values{127, -128, -125, 1});
}

TEST_CASE("convert to uint8 / int16 keeps the low bits; uint8 add and int16 multiply wrap") {
  auto got = run(corpus("uint8_convert.mlir"), {{0, 40, 300, -1}});
  REQUIRE(got.size() == 2);
  // uint8: 0, 40, 300 - 256 = 44, -1 -> 255; + 250: 250, 290 - 256, 294 - 256, 505 - 256.
  CHECK(got[0] == Values{250, 34, 38, 249});
  // int16: 40000 - 65536, 300000 - 5 * 65536 = -27680, -1000.
  CHECK(got[1] == Values{0, -25536, -27680, -1000});
}

TEST_CASE("int8 negate, abs, divide, subtract, converts and reductions at their width") {
  const std::string text =
      R"(func.func public @main(%arg0: tensor<3xi8>, %arg1: tensor<3xui8>, %arg2: tensor<3xi8>) -> (tensor<3xi8>, tensor<3xi8>, tensor<3xi8>, tensor<3xi8>, tensor<3xui8>, tensor<3xi8>, tensor<3xi16>, tensor<i8>, tensor<i8>) {
  %0 = stablehlo.negate %arg0 : tensor<3xi8>
  %1 = stablehlo.abs %arg0 : tensor<3xi8>
  %c = stablehlo.constant dense<-1> : tensor<3xi8>
  %2 = stablehlo.divide %arg0, %c : tensor<3xi8>
  %c_0 = stablehlo.constant dense<1> : tensor<3xi8>
  %3 = stablehlo.subtract %arg0, %c_0 : tensor<3xi8>
  %4 = stablehlo.convert %arg0 : (tensor<3xi8>) -> tensor<3xui8>
  %5 = stablehlo.convert %arg1 : (tensor<3xui8>) -> tensor<3xi8>
  %6 = stablehlo.convert %arg0 : (tensor<3xi8>) -> tensor<3xi16>
  %c_1 = stablehlo.constant dense<0> : tensor<i8>
  %7 = stablehlo.reduce(%arg2 init: %c_1) applies stablehlo.add across dimensions = [0] : (tensor<3xi8>, tensor<i8>) -> tensor<i8>
  %c_2 = stablehlo.constant dense<1> : tensor<i8>
  %8 = stablehlo.reduce(%arg2 init: %c_2) applies stablehlo.multiply across dimensions = [0] : (tensor<3xi8>, tensor<i8>) -> tensor<i8>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<3xi8>, tensor<3xi8>, tensor<3xi8>, tensor<3xi8>, tensor<3xui8>, tensor<3xi8>, tensor<3xi16>, tensor<i8>, tensor<i8>
}
)";
  auto got = run(text, {{-128, 127, 5}, {200, 255, 7}, {100, 100, 100}});
  REQUIRE(got.size() == 9);
  CHECK(got[0] == Values{-128, -127, -5});  // -(-128) = 128 -> -128
  CHECK(got[1] == Values{-128, 127, 5});    // |-128| = 128 -> -128
  CHECK(got[2] == Values{-128, -127, -5});  // -128 / -1 = 128 -> -128
  CHECK(got[3] == Values{127, 126, 4});     // -128 - 1 = -129 -> 127
  CHECK(got[4] == Values{128, 127, 5});     // -128 -> 0x80
  CHECK(got[5] == Values{-56, -1, 7});      // 200 -> 200 - 256, 255 -> -1
  CHECK(got[6] == Values{-128, 127, 5});    // sign-extended
  CHECK(got[7] == Values{44});              // 300 - 256
  CHECK(got[8] == Values{64});              // 10^6 = 3906 * 256 + 64
}

TEST_CASE("a narrow constant outside its type's range is a located error") {
  std::string e = test::lower_error(R"(func.func public @main(%arg0: tensor<2xi8>) -> tensor<2xi8> {
  %c = stablehlo.constant dense<[1, 200]> : tensor<2xi8>
  %0 = stablehlo.add %arg0, %c : tensor<2xi8>
  return %0 : tensor<2xi8>
}
)");
  CHECK(e.starts_with("bad.mlir:2:3:"));
  CHECK(e.find("value 200 of type i8 (element 1) is outside the range of i8") != std::string::npos);
}
