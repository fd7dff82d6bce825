// Integer arithmetic computed exactly: i32/ui32 StableHLO programs are parsed, lowered, planned
// under several policies and run on the emulated chip. Expected values are worked out by hand
// from two's-complement arithmetic and the StableHLO spec (wraparound modulo 2^32, truncating
// division, shift amounts >= 32, popcnt, count_leading_zeros, bitcast_convert of f32 bits);
// every case is one f32 would get wrong. Host tensors are f32, so the programs take arguments
// and return results that f32 holds exactly and do the wide arithmetic in between.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/stablehlo.hpp"
#include "meshplan/runtime/tensor.hpp"
#include "plan_run.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;
using meshplan::test::lower_error;

namespace {

const char* const kPolicies[] = {"dram", "l1-interleaved", "greedy"};

using Values = std::vector<float>;

/// Runs `text` (arguments and results all of shape [n]) on `inputs`; each result must equal
/// the matching row of `want` exactly.
void check(const std::string& text, const std::vector<Values>& inputs,
           const std::vector<Values>& want) {
  planner::Graph g = test::lower_text(text, "int_exact.mlir");
  for (const char* policy : kPolicies) {
    CAPTURE(policy);
    std::vector<Values> outputs = test::run_rank1(g, policy, "int_exact", inputs);
    REQUIRE(outputs.size() == want.size());
    for (size_t r = 0; r < want.size(); ++r) {
      CAPTURE(r);
      const std::vector<float>& got = outputs[r];
      std::string text;
      for (float v : got)  // integers as integers; inf, NaN and bf16 results as they are
        text += (std::isfinite(v) && std::fabs(v) < 9.2e18f && v == std::trunc(v)
                     ? std::to_string(static_cast<int64_t>(v))
                     : std::to_string(v)) +
                " ";
      CAPTURE(text);
      CHECK(got == want[r]);
    }
  }
}

/// jax.random's threefry2x32 (20 rounds) as JAX prints it: a private function of ui32 adds
/// (wrapping), rotations as (x << d) | (x >> (32 - d)) with broadcast scalar constants, and xors;
/// ks[2] = k0 ^ k1 ^ 0x1BD11BDA (466688986, a constant f32 does not hold).
std::string threefry_module() {
  const std::string t = "tensor<2xui32>";
  std::ostringstream s;
  int n = 0;
  auto fresh = [&] { return "%" + std::to_string(n++); };
  auto scalar = [&](uint32_t c) {
    std::string a = fresh(), b = fresh();
    s << "    " << a << " = stablehlo.constant dense<" << c << "> : tensor<ui32>\n"
      << "    " << b << " = stablehlo.broadcast_in_dim " << a << ", dims = [] : (tensor<ui32>) -> "
      << t << "\n";
    return b;
  };
  auto bin = [&](const char* op, const std::string& x, const std::string& y) {
    std::string r = fresh();
    s << "    " << r << " = stablehlo." << op << " " << x << ", " << y << " : " << t << "\n";
    return r;
  };
  s << R"(module @jit_threefry attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%z: tensor<2xui32>) -> (tensor<2xui32>, tensor<2xui32>, tensor<2xui32>, tensor<2xui32>) {
    %k0 = stablehlo.constant dense<[320440878, 320440878]> : tensor<2xui32>
    %k1 = stablehlo.constant dense<[57701188, 57701188]> : tensor<2xui32>
    %c0 = stablehlo.constant dense<[608135816, 0]> : tensor<2xui32>
    %c1 = stablehlo.constant dense<[2242054355, 1]> : tensor<2xui32>
    %x0 = stablehlo.add %c0, %z : tensor<2xui32>
    %r:2 = call @threefry2x32(%k0, %k1, %x0, %c1) : (tensor<2xui32>, tensor<2xui32>, tensor<2xui32>, tensor<2xui32>) -> (tensor<2xui32>, tensor<2xui32>)
    %s16 = stablehlo.constant dense<16> : tensor<2xui32>
    %m16 = stablehlo.constant dense<65535> : tensor<2xui32>
    %h0 = stablehlo.shift_right_logical %r#0, %s16 : tensor<2xui32>
    %l0 = stablehlo.and %r#0, %m16 : tensor<2xui32>
    %h1 = stablehlo.shift_right_logical %r#1, %s16 : tensor<2xui32>
    %l1 = stablehlo.and %r#1, %m16 : tensor<2xui32>
    return %h0, %l0, %h1, %l1 : tensor<2xui32>, tensor<2xui32>, tensor<2xui32>, tensor<2xui32>
  }
  func.func private @threefry2x32(%arg0: tensor<2xui32>, %arg1: tensor<2xui32>, %arg2: tensor<2xui32>, %arg3: tensor<2xui32>) -> (tensor<2xui32>, tensor<2xui32>) {
)";
  std::string ks[3] = {"%arg0", "%arg1",
                       bin("xor", bin("xor", "%arg0", "%arg1"), scalar(0x1BD11BDAu))};
  std::string x0 = bin("add", "%arg2", ks[0]), x1 = bin("add", "%arg3", ks[1]);
  const uint32_t rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  for (uint32_t i = 0; i < 5; ++i) {
    for (uint32_t r : rot[i % 2]) {
      x0 = bin("add", x0, x1);
      std::string left = bin("shift_left", x1, scalar(r));
      std::string right = bin("shift_right_logical", x1, scalar(32 - r));
      x1 = bin("xor", bin("or", left, right), x0);
    }
    x0 = bin("add", x0, ks[(i + 1) % 3]);
    x1 = bin("add", bin("add", x1, ks[(i + 2) % 3]), scalar(i + 1));
  }
  s << "    return " << x0 << ", " << x1 << " : " << t << ", " << t << "\n  }\n}\n";
  return s.str();
}

}  // namespace

TEST_CASE("i32 add and subtract wrap modulo 2^32 and stay exact beyond 2^24") {
  // 2147483520 + 127 = 2147483647, + 1 wraps to -2147483648; -2147483648 + -1 wraps to
  // 2147483647, - 2147483520 = 127; 16777216 + 1 + 1 = 16777218 (f32: 16777216);
  // 16777216 + 1 - 16777216 = 1 (f32: 0).
  check(
      R"(func.func public @main(%a: tensor<4xi32>, %b: tensor<4xi32>, %c: tensor<4xi32>) -> tensor<4xi32> {
  %0 = stablehlo.add %a, %b : tensor<4xi32>
  %1 = stablehlo.add %0, %c : tensor<4xi32>
  return %1 : tensor<4xi32>
})",
      {{2147483520.0f, -2147483648.0f, 16777216.0f, 16777216.0f},
       {127, -1, 1, 1},
       {1, -2147483520.0f, 1, -16777216.0f}},
      {{-2147483648.0f, 127, 16777218.0f, 1}});
}

TEST_CASE(
    "the largest i32 and ui32 constants are stored exactly (f32 rounds them up to 2^31, 2^32)") {
  // dense<2147483647> - 2147483520 = 127 (an INT_MIN word would give 128);
  // dense<4294967295> - 4294967040 = 255 (a zero word would give 256).
  check(
      R"(func.func public @main(%a: tensor<2xi32>, %b: tensor<2xui32>) -> (tensor<2xi32>, tensor<2xui32>) {
  %0 = stablehlo.constant dense<2147483647> : tensor<2xi32>
  %1 = stablehlo.subtract %0, %a : tensor<2xi32>
  %2 = stablehlo.constant dense<4294967295> : tensor<2xui32>
  %3 = stablehlo.subtract %2, %b : tensor<2xui32>
  return %1, %3 : tensor<2xi32>, tensor<2xui32>
})",
      {{2147483520.0f, 2147483520.0f}, {4294967040.0f, 4294967040.0f}}, {{127, 127}, {255, 255}});
}

TEST_CASE("i32 multiply wraps; divide and remainder truncate") {
  // 65536 * 65536 = 2^32 -> 0; 46341^2 = 2147488281 -> -2147479015, + 2147483648 = 4633;
  // -65536 * 65537 = -4295032832 -> -65536; 4097^2 = 16785409, - 16777216 = 8193 (f32: 8192).
  check(
      R"(func.func public @main(%a: tensor<4xi32>, %b: tensor<4xi32>, %c: tensor<4xi32>) -> tensor<4xi32> {
  %0 = stablehlo.multiply %a, %b : tensor<4xi32>
  %1 = stablehlo.subtract %0, %c : tensor<4xi32>
  return %1 : tensor<4xi32>
})",
      {{65536, 46341, -65536, 4097}, {65536, 46341, 65537, 4097}, {0, -2147483648.0f, 0, 16777216}},
      {{0, 4633, -65536, 8193}});
  // Truncating division; x / 0 = -1 and x % 0 = x, INT_MIN / -1 = INT_MIN and INT_MIN % -1 = 0
  // (XLA's results); (16777216 + 1) % 2 = 1 and (16777216 + 1) / 16777217 = 1 (f32: 0 and 0).
  check(
      R"(func.func public @main(%a: tensor<8xi32>, %b: tensor<8xi32>, %c: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>) {
  %x = stablehlo.add %a, %c : tensor<8xi32>
  %0 = stablehlo.divide %x, %b : tensor<8xi32>
  %1 = stablehlo.remainder %x, %b : tensor<8xi32>
  return %0, %1 : tensor<8xi32>, tensor<8xi32>
})",
      {{7, -7, 7, -7, -2147483648.0f, 5, 16777216, 16777216},
       {2, 2, -2, -2, -1, 0, 2, 16777216},
       {0, 0, 0, 0, 0, 0, 1, 1}},
      {{3, -3, -3, 3, -2147483648.0f, -1, 8388608, 1}, {1, -1, 1, -1, 0, 5, 1, 1}});
}

TEST_CASE("i32 compare, select, maximum, negate, abs and sign beyond 2^24") {
  // x = a + 1 = [16777217, -2147483647, 6]: x > b = [1 (f32: equal), 0, 0];
  // max(x, b) - b = [1, 0, 0]; -a = [-16777216, -2147483648 (wraps), -5], abs of it =
  // [16777216, -2147483648 (wraps), 5], sign [1, -1, 1], their product [16777216, -2147483648
  // (wraps), 5].
  check(
      R"(func.func public @main(%a: tensor<3xi32>, %b: tensor<3xi32>) -> (tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) {
  %one = stablehlo.constant dense<1> : tensor<3xi32>
  %zero = stablehlo.constant dense<0> : tensor<3xi32>
  %x = stablehlo.add %a, %one : tensor<3xi32>
  %gt = stablehlo.compare GT, %x, %b, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
  %s = stablehlo.select %gt, %one, %zero : tensor<3xi1>, tensor<3xi32>
  %m = stablehlo.maximum %x, %b : tensor<3xi32>
  %d = stablehlo.subtract %m, %b : tensor<3xi32>
  %n = stablehlo.negate %a : tensor<3xi32>
  %ab = stablehlo.abs %n : tensor<3xi32>
  %sg = stablehlo.sign %ab : tensor<3xi32>
  %r = stablehlo.multiply %ab, %sg : tensor<3xi32>
  return %s, %d, %r : tensor<3xi32>, tensor<3xi32>, tensor<3xi32>
})",
      {{16777216, -2147483648.0f, 5}, {16777216, 0, 7}},
      {{1, 0, 0}, {1, 0, 0}, {16777216, -2147483648.0f, 5}});
}

TEST_CASE("i32 reductions (sum, max, min, product) are exact and wrap") {
  // x = a + 1 = [16777217, 16777217]: sum 33554434 - 33554432 = 2 (f32: 0); max and min
  // 16777217 - 16777216 = 1 (f32: 0); 65537 * 65535 * 1 = 4294967295, which wraps to -1.
  check(
      R"(func.func public @main(%a: tensor<2xi32>, %b: tensor<3xi32>) -> (tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) {
  %one = stablehlo.constant dense<1> : tensor<2xi32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %e = stablehlo.constant dense<1> : tensor<i32>
  %lo = stablehlo.constant dense<-2147483648> : tensor<i32>
  %hi = stablehlo.constant dense<2147483520> : tensor<i32>
  %c = stablehlo.constant dense<16777216> : tensor<i32>
  %c2 = stablehlo.constant dense<33554432> : tensor<i32>
  %x = stablehlo.add %a, %one : tensor<2xi32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<2xi32>, tensor<i32>) -> tensor<i32>
  %m = stablehlo.reduce(%x init: %lo) applies stablehlo.maximum across dimensions = [0] : (tensor<2xi32>, tensor<i32>) -> tensor<i32>
  %n = stablehlo.reduce(%x init: %hi) applies stablehlo.minimum across dimensions = [0] : (tensor<2xi32>, tensor<i32>) -> tensor<i32>
  %p = stablehlo.reduce(%b init: %e) applies stablehlo.multiply across dimensions = [0] : (tensor<3xi32>, tensor<i32>) -> tensor<i32>
  %s2 = stablehlo.subtract %s, %c2 : tensor<i32>
  %m2 = stablehlo.subtract %m, %c : tensor<i32>
  %n2 = stablehlo.subtract %n, %c : tensor<i32>
  return %s2, %m2, %n2, %p : tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>
})",
      {{16777216, 16777216}, {65537, 65535, 1}}, {{2}, {1}, {1}, {-1}});
}

TEST_CASE("bitwise ops and shifts on i32 and ui32 (StableHLO shift amounts >= 32)") {
  check(
      R"(func.func public @main(%a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  %0 = stablehlo.and %a, %b : tensor<4xi32>
  %1 = stablehlo.or %a, %b : tensor<4xi32>
  %2 = stablehlo.xor %a, %b : tensor<4xi32>
  %3 = stablehlo.not %b : tensor<4xi32>
  return %0, %1, %2, %3 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
})",
      {{12, -1, 16777216, -2147483648.0f}, {10, 255, 2, 0}},
      {{8, 255, 0, 0},
       {14, -1, 16777218, -2147483648.0f},
       {6, -256, 16777218, -2147483648.0f},
       {-11, -256, -3, -1}});
  // Amounts are unsigned (-1 is 2^32 - 1); >= 32 gives 0, or the sign fill for arithmetic.
  check(
      R"(func.func public @main(%a: tensor<8xi32>, %b: tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>, tensor<8xi32>) {
  %0 = stablehlo.shift_left %a, %b : tensor<8xi32>
  %1 = stablehlo.shift_right_logical %a, %b : tensor<8xi32>
  %2 = stablehlo.shift_right_arithmetic %a, %b : tensor<8xi32>
  return %0, %1, %2 : tensor<8xi32>, tensor<8xi32>, tensor<8xi32>
})",
      {{-1, 1, 1, -2147483648.0f, -5, 5, 3, -2147483648.0f}, {28, 31, 32, 2, 40, 40, -1, 31}},
      {{-268435456, -2147483648.0f, 0, 0, 0, 0, 0, 0},
       {15, 0, 0, 536870912, 0, 0, 0, 1},
       {-1, 0, 0, -536870912, -1, 0, 0, -1}});
  // ui32: convert(-1) = 4294967295 (wraps), >> 28 = 15; unsigned 4294967295 > 1 (signed: less);
  // 4294967295 -> f32 rounds to 4294967296.
  check(
      R"(func.func public @main(%a: tensor<2xi32>) -> (tensor<2xui32>, tensor<2xui32>, tensor<2xf32>) {
  %u = stablehlo.convert %a : (tensor<2xi32>) -> tensor<2xui32>
  %c28 = stablehlo.constant dense<28> : tensor<2xui32>
  %one = stablehlo.constant dense<1> : tensor<2xui32>
  %zero = stablehlo.constant dense<0> : tensor<2xui32>
  %s = stablehlo.shift_right_logical %u, %c28 : tensor<2xui32>
  %gt = stablehlo.compare GT, %u, %one, UNSIGNED : (tensor<2xui32>, tensor<2xui32>) -> tensor<2xi1>
  %g = stablehlo.select %gt, %one, %zero : tensor<2xi1>, tensor<2xui32>
  %f = stablehlo.convert %u : (tensor<2xui32>) -> tensor<2xf32>
  return %s, %g, %f : tensor<2xui32>, tensor<2xui32>, tensor<2xf32>
})",
      {{-1, -2147483648.0f}}, {{15, 8}, {1, 1}, {4294967296.0f, 2147483648.0f}});
}

TEST_CASE("popcnt and count_leading_zeros (lowered onto shifts, ands and adds)") {
  check(R"(func.func public @main(%a: tensor<7xi32>) -> (tensor<7xi32>, tensor<7xi32>) {
  %0 = stablehlo.popcnt %a : tensor<7xi32>
  %1 = stablehlo.count_leading_zeros %a : tensor<7xi32>
  return %0, %1 : tensor<7xi32>, tensor<7xi32>
})",
        {{0, 1, -1, 7, 16777215, -2147483648.0f, 65536}},
        {{0, 1, 32, 3, 24, 1, 1}, {32, 31, 0, 29, 8, 0, 15}});
}

TEST_CASE("bitcast_convert reinterprets the stored words") {
  // 1.0f = 0x3f800000 = 1065353216, -2.0f = 0xc0000000 = -1073741824.
  check(
      R"(func.func public @main(%a: tensor<3xf32>, %b: tensor<3xi32>) -> (tensor<3xi32>, tensor<3xf32>) {
  %0 = stablehlo.bitcast_convert %a : (tensor<3xf32>) -> tensor<3xi32>
  %1 = stablehlo.bitcast_convert %b : (tensor<3xi32>) -> tensor<3xf32>
  return %0, %1 : tensor<3xi32>, tensor<3xf32>
})",
      {{1.0f, -2.0f, 0.0f}, {1065353216.0f, -1073741824.0f, 0}},
      {{1065353216.0f, -1073741824.0f, 0}, {1.0f, -2.0f, 0.0f}});
}

TEST_CASE("bitcast_convert between i8/ui8, i16/ui16 and from bf16 to i16/ui16") {
  // Two's complement by hand: i8 -128 = 0x80 = 128, -1 = 0xff = 255, -37 = 0xdb = 219; ui8 200 =
  // 0xc8 = -56. i16 -300 = 0xfed4 = 65236; ui16 50000 = 0xc350 = -15536.
  check(
      R"(func.func public @main(%a: tensor<5xi8>, %b: tensor<5xui8>, %c: tensor<5xi16>, %d: tensor<5xui16>) -> (tensor<5xui8>, tensor<5xi8>, tensor<5xui16>, tensor<5xi16>) {
  %0 = stablehlo.bitcast_convert %a : (tensor<5xi8>) -> tensor<5xui8>
  %1 = stablehlo.bitcast_convert %b : (tensor<5xui8>) -> tensor<5xi8>
  %2 = stablehlo.bitcast_convert %c : (tensor<5xi16>) -> tensor<5xui16>
  %3 = stablehlo.bitcast_convert %d : (tensor<5xui16>) -> tensor<5xi16>
  return %0, %1, %2, %3 : tensor<5xui8>, tensor<5xi8>, tensor<5xui16>, tensor<5xi16>
})",
      {{-128, -1, 0, 127, -37},
       {0, 255, 128, 127, 200},
       {-32768, -1, 0, 32767, -300},
       {0, 65535, 32768, 32767, 50000}},
      {{128, 255, 0, 127, 219},
       {0, -1, -128, 127, -56},
       {32768, 65535, 0, 32767, 65236},
       {0, -1, -32768, 32767, -15536}});
  // bf16 bits: 1.0 = 0x3f80 = 16256, -2.0 = 0xc000 = 49152 (i16 -16384), 0.5 = 0x3f00 = 16128,
  // -0.0 = 0x8000 = 32768 (i16 -32768), inf = 0x7f80 = 32640, 3.140625 = 0x4049 = 16457.
  check(R"(func.func public @main(%a: tensor<6xbf16>) -> (tensor<6xui16>, tensor<6xi16>) {
  %0 = stablehlo.bitcast_convert %a : (tensor<6xbf16>) -> tensor<6xui16>
  %1 = stablehlo.bitcast_convert %a : (tensor<6xbf16>) -> tensor<6xi16>
  return %0, %1 : tensor<6xui16>, tensor<6xi16>
})",
        {{1.0f, -2.0f, 0.5f, -0.0f, INFINITY, 3.140625f}},
        {{16256, 49152, 16128, 32768, 32640, 16457}, {16256, -16384, 16128, -32768, 32640, 16457}});
}

TEST_CASE("bitcast_convert from i16/ui16 to bf16: the 16 bits as bf16's") {
  // 0x3f80 = 16256 -> 1.0, 0xc000 = 49152 (i16 -16384) -> -2.0, 0x3f00 = 16128 -> 0.5,
  // 0x7f80 = 32640 -> inf, 0x4049 = 16457 -> 3.140625, 0xff80 = 65408 (i16 -128) -> -inf.
  check(
      R"(func.func public @main(%a: tensor<6xui16>, %b: tensor<6xi16>) -> (tensor<6xbf16>, tensor<6xbf16>) {
  %0 = stablehlo.bitcast_convert %a : (tensor<6xui16>) -> tensor<6xbf16>
  %1 = stablehlo.bitcast_convert %b : (tensor<6xi16>) -> tensor<6xbf16>
  return %0, %1 : tensor<6xbf16>, tensor<6xbf16>
})",
      {{16256, 49152, 16128, 32640, 16457, 65408}, {16256, -16384, 16128, 32640, 16457, -128}},
      {{1.0f, -2.0f, 0.5f, INFINITY, 3.140625f, -INFINITY},
       {1.0f, -2.0f, 0.5f, INFINITY, 3.140625f, -INFINITY}});
}

TEST_CASE("bitcast_convert whose bits the device does not hold is a located error") {
  // f16 is computed in f32 (its bits are not stored); i8 and ui16 differ in width.
  for (const char* sig : {"(tensor<2xf16>) -> tensor<2xui16>", "(tensor<2xui16>) -> tensor<2xf16>",
                          "(tensor<2xi8>) -> tensor<2xui16>"}) {
    CAPTURE(sig);
    std::string s = sig;
    std::string from = s.substr(1, s.find(')') - 1), to = s.substr(s.rfind(' ') + 1);
    std::string e = lower_error("func.func public @main(%a: " + from + ") -> " + to +
                                " {\n  %0 = stablehlo.bitcast_convert %a : " + s +
                                "\n  return %0 : " + to + "\n}");
    CHECK(e.find("bad.mlir:2:") != std::string::npos);
    CHECK(e.find("bitcast_convert") != std::string::npos);
  }
}

TEST_CASE("integer dot_general wraps modulo 2^32 as integer arithmetic does") {
  // [[65536, 3, 1], [-2, 65536, 7]] . [[65536, 32768], [5, 1], [2, -3]]:
  // 65536*65536 + 15 + 2 = 2^32 + 17 -> 17; 65536*32768 + 3 - 3 = 2^31 -> -2^31;
  // -131072 + 327680 + 14 = 196622; -65536 + 65536 - 21 = -21. f32 would give 4294967313.
  check(R"(func.func public @main(%a: tensor<6xi32>, %b: tensor<6xi32>) -> tensor<4xi32> {
  %x = stablehlo.reshape %a : (tensor<6xi32>) -> tensor<2x3xi32>
  %y = stablehlo.reshape %b : (tensor<6xi32>) -> tensor<3x2xi32>
  %0 = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0] : (tensor<2x3xi32>, tensor<3x2xi32>) -> tensor<2x2xi32>
  %1 = stablehlo.reshape %0 : (tensor<2x2xi32>) -> tensor<4xi32>
  return %1 : tensor<4xi32>
})",
        {{65536, 3, 1, -2, 65536, 7}, {65536, 32768, 5, 1, 2, -3}},
        {{17, -2147483648.0f, 196622, -21}});
  // Batched ui8, the rhs batched on its dim 1: r[b] = sum_k a[b,k] * c[k,b], modulo 256.
  // a = [[200, 100], [255, 1]], c = [[2, 3], [1, 255]]: 400 + 100 = 500 -> 244;
  // 765 + 255 = 1020 -> 252.
  check(R"(func.func public @main(%a: tensor<4xui8>, %c: tensor<4xui8>) -> tensor<2xui8> {
  %x = stablehlo.reshape %a : (tensor<4xui8>) -> tensor<2x2xui8>
  %y = stablehlo.reshape %c : (tensor<4xui8>) -> tensor<2x2xui8>
  %0 = stablehlo.dot_general %x, %y, batching_dims = [0] x [1], contracting_dims = [1] x [0] : (tensor<2x2xui8>, tensor<2x2xui8>) -> tensor<2xui8>
  return %0 : tensor<2xui8>
})",
        {{200, 100, 255, 1}, {2, 3, 1, 255}}, {{244, 252}});
}

TEST_CASE("integer dot_general too large to compute elementwise is a located error") {
  std::string e =
      lower_error(R"(func.func public @main(%a: tensor<128x128xi32>) -> tensor<128x128xi32> {
  %0 = stablehlo.dot_general %a, %a, contracting_dims = [1] x [0] : (tensor<128x128xi32>, tensor<128x128xi32>) -> tensor<128x128xi32>
  return %0 : tensor<128x128xi32>
})");
  CHECK(e.find("bad.mlir:2:") != std::string::npos);
  CHECK(e.find("dot_general") != std::string::npos);
  CHECK(e.find("i32") != std::string::npos);
}

namespace {

/// and, or, xor, not, shift_left, shift_right_logical, shift_right_arithmetic, popcnt and
/// count_leading_zeros of %a (and %s) of element type `t`, all of shape [8].
std::string bit_ops_module(const std::string& t) {
  const std::string ty = "tensor<8x" + t + ">";
  std::string s = "func.func public @main(%a: " + ty + ", %s: " + ty + ") -> (";
  for (int i = 0; i < 9; ++i) s += (i ? ", " : "") + ty;
  s += ") {\n";
  int n = 0;
  for (const char* op :
       {"and", "or", "xor", "shift_left", "shift_right_logical", "shift_right_arithmetic"})
    s += "  %" + std::to_string(n++) + " = stablehlo." + op + " %a, %s : " + ty + "\n";
  for (const char* op : {"not", "popcnt", "count_leading_zeros"})
    s += "  %" + std::to_string(n++) + " = stablehlo." + op + " %a : " + ty + "\n";
  s += "  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : ";
  for (int i = 0; i < 9; ++i) s += (i ? ", " : "") + ty;
  return s + "\n}\n";
}

}  // namespace

TEST_CASE("integer bit ops on i8, ui8, i16 and ui16 act at the type's width") {
  // Expected values from the StableHLO spec's definitions on 8- and 16-bit two's complement
  // words, worked out in plain Python integers (the and/xor/not rows cross-checked with numpy's
  // int8 .. uint16): shift amounts are read unsigned, and amounts of the width or more give 0
  // (left, logical) or the sign fill (arithmetic); popcnt and clz count the type's own bits.
  // Rows: and, or, xor, shift_left, shift_right_logical, shift_right_arithmetic, not, popcnt,
  // count_leading_zeros.
  check(bit_ops_module("i8"), {{-128, -1, 0, 1, 127, 100, -37, 64}, {1, 7, 8, 9, -1, 3, 2, 6}},
        {{0, 7, 0, 1, 127, 0, 2, 0},
         {-127, -1, 8, 9, -1, 103, -37, 70},
         {-127, -8, 8, 8, -128, 103, -39, 70},
         {0, -128, 0, 0, 0, 32, 108, 0},
         {64, 1, 0, 0, 0, 12, 54, 1},
         {-64, -1, 0, 0, 0, 12, -10, 1},
         {127, 0, -1, -2, -128, -101, 36, -65},
         {1, 8, 0, 1, 7, 3, 6, 1},
         {0, 0, 8, 7, 1, 1, 0, 1}});
  check(bit_ops_module("ui8"), {{0, 255, 128, 1, 127, 200, 37, 64}, {1, 7, 8, 9, 255, 3, 2, 6}},
        {{0, 7, 0, 1, 127, 0, 0, 0},
         {1, 255, 136, 9, 255, 203, 39, 70},
         {1, 248, 136, 8, 128, 203, 39, 70},
         {0, 128, 0, 0, 0, 64, 148, 0},
         {0, 1, 0, 0, 0, 25, 9, 1},
         {0, 255, 255, 0, 0, 249, 9, 1},
         {255, 0, 127, 254, 128, 55, 218, 191},
         {0, 8, 1, 1, 7, 3, 3, 1},
         {8, 0, 0, 7, 1, 0, 2, 1}});
  check(bit_ops_module("i16"),
        {{-32768, -1, 0, 1, 32767, 1000, -300, 16384}, {1, 15, 16, 17, -1, 3, 2, 6}},
        {{0, 15, 0, 1, 32767, 0, 0, 0},
         {-32767, -1, 16, 17, -1, 1003, -298, 16390},
         {-32767, -16, 16, 16, -32768, 1003, -298, 16390},
         {0, -32768, 0, 0, 0, 8000, -1200, 0},
         {16384, 1, 0, 0, 0, 125, 16309, 256},
         {-16384, -1, 0, 0, 0, 125, -75, 256},
         {32767, 0, -1, -2, -32768, -1001, 299, -16385},
         {1, 16, 0, 1, 15, 6, 11, 1},
         {0, 0, 16, 15, 1, 6, 0, 1}});
  check(bit_ops_module("ui16"),
        {{0, 65535, 32768, 1, 32767, 50000, 300, 16384}, {1, 15, 16, 17, 65535, 3, 2, 6}},
        {{0, 15, 0, 1, 32767, 0, 0, 0},
         {1, 65535, 32784, 17, 65535, 50003, 302, 16390},
         {1, 65520, 32784, 16, 32768, 50003, 302, 16390},
         {0, 32768, 0, 0, 0, 6784, 1200, 0},
         {0, 1, 0, 0, 0, 6250, 75, 256},
         {0, 65535, 65535, 0, 0, 63594, 75, 256},
         {65535, 0, 32767, 65534, 32768, 15535, 65235, 49151},
         {0, 16, 1, 1, 15, 6, 4, 1},
         {16, 0, 0, 15, 1, 0, 7, 1}});
}

TEST_CASE("integer bit ops on types the device does not hold at their width are located errors") {
  std::string e = lower_error(R"(func.func public @main(%a: tensor<2xi64>) -> tensor<2xi64> {
  %0 = stablehlo.shift_left %a, %a : tensor<2xi64>
  return %0 : tensor<2xi64>
})");
  CHECK(e.find("bad.mlir:2:") != std::string::npos);
  CHECK(e.find("i64") != std::string::npos);
  e = lower_error(R"(func.func public @main(%a: tensor<2xf64>) -> tensor<2xi64> {
  %0 = stablehlo.bitcast_convert %a : (tensor<2xf64>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
})");
  CHECK(e.find("bad.mlir:2:") != std::string::npos);
}

TEST_CASE("jax.random's threefry2x32 on ui32: Random123's known answer") {
  // Expected: tests/planner/threefry_ref.py (plain integer arithmetic), as 16-bit halves. Lane
  // 0: key (0x13198a2e, 0x03707344), counter (0x243f6a88, 0x85a308d3) -> (0xc4923a9c,
  // 0x483df7a0); lane 1: the same key, counter (0, 1) -> (0xd1d7b310, 0x1a231911).
  check(threefry_module(), {{0, 0}},
        {{50322, 53719}, {15004, 45840}, {18493, 6691}, {63392, 6417}});
}

TEST_CASE("computed signed values to ui64 are a located error") {
  // -1 as ui64 is 2^64 - 1: it does not fit the 32-bit words ui64 values live in.
  std::string e = lower_error(R"(func.func public @main(%a: tensor<2xi32>) -> tensor<2xui64> {
  %0 = stablehlo.convert %a : (tensor<2xi32>) -> tensor<2xui64>
  return %0 : tensor<2xui64>
})");
  CHECK(e.find("bad.mlir:2:") != std::string::npos);
  CHECK(e.find("i32 values to ui64") != std::string::npos);
}

TEST_CASE("i32 and ui32 power is integer exponentiation, exact modulo 2^32") {
  // (-3)^19 = -1162261467, 37 above the f32 -1162261504 (f32 pow gives that f32); 3^21 =
  // 10460353203 wraps to 1870418611, 51 above 1870418560; a negative exponent gives 0, except
  // for bases 1 and -1 ((-1)^-3 = -1, 1^-5 = 1; StableHLO's reference); 2^0 = 1; 4097^2 =
  // 16785409 (f32: 16785408); 7^11 = 1977326743, 23 above 1977326720.
  check(
      R"(func.func public @main(%a: tensor<8xi32>, %b: tensor<8xi32>, %c: tensor<8xi32>) -> tensor<8xi32> {
  %0 = stablehlo.power %a, %b : tensor<8xi32>
  %1 = stablehlo.subtract %0, %c : tensor<8xi32>
  return %1 : tensor<8xi32>
})",
      {{-3, 3, 2, -1, 1, 2, 4097, 7},
       {19, 21, -1, -3, -5, 0, 2, 11},
       {-1162261504.0f, 1870418560.0f, 0, 0, 0, 0, 16777216, 1977326720.0f}},
      {{37, 51, 0, -1, 1, 1, 8193, 23}});
  // ui32: 2^31 = 2147483648, 2^32 wraps to 0, 3^20 = 3486784401, 145 above 3486784256.
  check(
      R"(func.func public @main(%a: tensor<3xui32>, %b: tensor<3xui32>, %c: tensor<3xui32>) -> tensor<3xui32> {
  %0 = stablehlo.power %a, %b : tensor<3xui32>
  %1 = stablehlo.subtract %0, %c : tensor<3xui32>
  return %1 : tensor<3xui32>
})",
      {{2, 2, 3}, {31, 32, 20}, {0, 0, 3486784256.0f}}, {{2147483648.0f, 0, 145}});
}
