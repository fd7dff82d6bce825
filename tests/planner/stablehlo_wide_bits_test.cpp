// Conformance of the integer bit ops on i64 and ui64, which the device computes in 32-bit words:
// and, or, xor, not and the shifts of run-time values whose 64-bit result is the word's, and every
// bit op of constants evaluated exactly in 64 bits at lowering time. Each module is parsed,
// printed and parsed again (same graph key), lowered, planned under every policy and run on the
// emulated chip; the results are compared with literals worked out by hand from the StableHLO
// spec's two's complement semantics. The ops whose result can leave the word are refused, located.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lowering_check.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/executable.hpp"
#include "plan_run.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;
using meshplan::test::lower_error;

namespace {

const char* const kPolicies[] = {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"};

/// Round trip, lower, plan under every policy, run on the emulator with inputs of `shape`;
/// every output exact.
void check(const std::string& text, const std::vector<std::vector<float>>& inputs,
           const std::vector<std::vector<float>>& want, std::vector<int64_t> shape = {4}) {
  const planner::Graph g = test::lower_round_trip(text, "wide.mlir");
  std::vector<runtime::TensorView> views;
  for (const auto& in : inputs) views.push_back(runtime::TensorView{shape, in});
  for (const char* policy : kPolicies) {
    CAPTURE(policy);
    auto out = test::plan_and_run(g, policy, "wide", views);
    // After the results: an overflow output per wide add (docs/formats.md), which must be 0.
    REQUIRE(out.size() >= want.size());
    for (size_t k = 0; k < out.size(); ++k) {
      CAPTURE(k);
      std::vector<float> got(out[k].data.begin(), out[k].data.end());
      if (k < want.size())
        CHECK(got == want[k]);
      else
        CHECK(got == std::vector<float>(got.size(), 0.0f));
    }
  }
}

const char* const kI64RunTime = R"(module @jit_f {
  func.func public @main(%x: tensor<4xi64>, %y: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>) {
    %0 = stablehlo.and %x, %y : tensor<4xi64>
    %1 = stablehlo.or %x, %y : tensor<4xi64>
    %2 = stablehlo.xor %x, %y : tensor<4xi64>
    %3 = stablehlo.not %x : tensor<4xi64>
    %4 = stablehlo.shift_right_arithmetic %x, %y : tensor<4xi64>
    return %0, %1, %2, %3, %4 : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xi64>
  }
}
)";

}  // namespace

TEST_CASE("i64 and, or, xor, not, shift_right_arithmetic of run-time values") {
  // x = -5, 7, -2^31, 65535; y = 1, -1, 31, 40. In 64-bit two's complement:
  // and: -5 & 1 = 1, 7 & -1 = 7, -2^31 & 31 = 0, 65535 & 40 = 40;
  // or: -5 | 1 = -5, 7 | -1 = -1, -2^31 | 31 = -2147483617, 65535 | 40 = 65535;
  // xor: -5 ^ 1 = -6, 7 ^ -1 = -8, -2^31 ^ 31 = -2147483617, 65535 ^ 40 = 65495;
  // not: 4, -8, 2^31 - 1, -65536;
  // x >> y (arithmetic): -3; 0 (the amount -1 is 2^64 - 1 unsigned: 7's sign fill); -1; 0.
  check(kI64RunTime, {{-5, 7, -2147483648.0f, 65535}, {1, -1, 31, 40}},
        {{1, 7, 0, 40},
         {-5, -1, -2147483617.0f, 65535},
         {-6, -8, -2147483617.0f, 65495},
         {4, -8, 2147483647.0f, -65536},
         {-3, 0, -1, 0}});
}

TEST_CASE("ui64 shifts right of run-time values: logical and arithmetic alike") {
  // x = 0xFFFF0000, 256, 7, 1; s = 16, 4, 40, 0: a ui64 below 2^32 has no sign bit set.
  check(R"(module @jit_f {
  func.func public @main(%x: tensor<4xui64>, %s: tensor<4xui64>) -> (tensor<4xui64>, tensor<4xui64>) {
    %0 = stablehlo.shift_right_logical %x, %s : tensor<4xui64>
    %1 = "stablehlo.shift_right_arithmetic"(%x, %s) : (tensor<4xui64>, tensor<4xui64>) -> tensor<4xui64>
    return %0, %1 : tensor<4xui64>, tensor<4xui64>
  }
}
)",
        {{4294901760.0f, 256, 7, 1}, {16, 4, 40, 0}}, {{65535, 16, 0, 1}, {65535, 16, 0, 1}});
}

TEST_CASE("i64 and ui64 bit ops of constants fold exactly in 64 bits") {
  check(R"(module @jit_f {
  func.func public @main(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xui64>) {
    %a = stablehlo.constant dense<[42, -1, -1, -8]> : tensor<4xi64>
    %s = stablehlo.constant dense<[32, 33, 0, 64]> : tensor<4xi64>
    %0 = stablehlo.shift_right_logical %a, %s : tensor<4xi64>
    %b = stablehlo.constant dense<[-1, 255, 1, 0]> : tensor<4xi64>
    %1 = stablehlo.popcnt %b : tensor<4xi64>
    %2 = stablehlo.count_leading_zeros %b : tensor<4xi64>
    %c = stablehlo.constant dense<[1, 3, 4096, 0]> : tensor<4xui64>
    %d = stablehlo.constant dense<[30, 4, 12, 70]> : tensor<4xui64>
    %3 = stablehlo.shift_left %c, %d : tensor<4xui64>
    %r0 = stablehlo.add %0, %x : tensor<4xi64>
    return %r0, %1, %2, %3 : tensor<4xi64>, tensor<4xi64>, tensor<4xi64>, tensor<4xui64>
  }
}
)",
        // 42 >>> 32 = 0; (2^64 - 1) >>> 33 = 2^31 - 1 (plus x = -1: 2^31 - 2); -1 >>> 0 = -1;
        // -8 >>> 64 = 0. popcnt: 64, 8, 1, 0; clz: 0, 56, 63, 64. 1 << 30, 3 << 4, 4096 << 12
        // = 2^24, 0 << 70 = 0.
        {{0, -1, 0, 0}},
        {{0, 2147483646.0f, -1, 0},
         {64, 8, 1, 0},
         {0, 56, 63, 64},
         {1073741824.0f, 48, 16777216.0f, 0}});
}

TEST_CASE("a folded i64 bit op whose value f32 does not hold is built exactly on the device") {
  // 2^24 ^ 1 = 16777217, which f32 rounds to 2^24; its low bit survives the and with x = 1.
  check(R"(module @jit_f {
  func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
    %a = stablehlo.constant dense<16777216> : tensor<4xi64>
    %b = stablehlo.constant dense<[1, 0, 3, 1]> : tensor<4xi64>
    %0 = stablehlo.xor %a, %b : tensor<4xi64>
    %1 = stablehlo.and %0, %x : tensor<4xi64>
    return %1 : tensor<4xi64>
  }
}
)",
        {{1, 1, 3, 16777216.0f}}, {{1, 0, 3, 16777216.0f}});
}

TEST_CASE("i64/ui64 bit ops that can leave the 32-bit word are refused, located") {
  CHECK(lower_error(R"(module @jit_f {
  func.func public @main(%x: tensor<4xi64>, %y: tensor<4xi64>) -> tensor<4xi64> {
    %0 = stablehlo.shift_left %x, %y : tensor<4xi64>
    return %0 : tensor<4xi64>
  }
}
)")
            .starts_with("bad.mlir:3:5: unimplemented: stablehlo.shift_left on i64 of values "
                         "known only at run time (on i64 and ui64"));
  CHECK(lower_error(R"(module @jit_f {
  func.func public @main(%x: tensor<4xui64>) -> tensor<4xui64> {
    %0 = stablehlo.not %x : tensor<4xui64>
    return %0 : tensor<4xui64>
  }
}
)")
            .starts_with("bad.mlir:3:5: unimplemented: stablehlo.not on ui64 of values known"));
  CHECK(lower_error(R"(module @jit_f {
  func.func public @main(%x: tensor<4xi64>, %y: tensor<4xi64>) -> tensor<4xi64> {
    %0 = stablehlo.shift_right_logical %x, %y : tensor<4xi64>
    return %0 : tensor<4xi64>
  }
}
)")
            .starts_with("bad.mlir:3:5: unimplemented: stablehlo.shift_right_logical on i64"));
  // 1 << 40 and -1 >>> 1 leave the word: located errors naming the value.
  CHECK(lower_error(R"(module @jit_f {
  func.func public @main(%x: tensor<2xi64>) -> tensor<2xi64> {
    %a = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
    %s = stablehlo.constant dense<[3, 40]> : tensor<2xi64>
    %0 = stablehlo.shift_left %a, %s : tensor<2xi64>
    %1 = stablehlo.add %0, %x : tensor<2xi64>
    return %1 : tensor<2xi64>
  }
}
)") == "bad.mlir:5:5: stablehlo.shift_left: value 2199023255552 of type i64 (element 1) is "
       "outside the range of i32, the device dtype it is computed in");
  CHECK(lower_error(R"(module @jit_f {
  func.func public @main(%x: tensor<2xi64>) -> tensor<2xi64> {
    %a = stablehlo.constant dense<-1> : tensor<2xi64>
    %s = stablehlo.constant dense<1> : tensor<2xi64>
    %0 = stablehlo.shift_right_logical %a, %s : tensor<2xi64>
    %1 = stablehlo.add %0, %x : tensor<2xi64>
    return %1 : tensor<2xi64>
  }
}
)") == "bad.mlir:5:5: stablehlo.shift_right_logical: value 9223372036854775807 of type i64 "
       "(element 0) is outside the range of i32, the device dtype it is computed in");
}

TEST_CASE("i64/ui64 multiply by a broadcast constant checks its overflow at the operands' shapes") {
  // jax's iota_2x32_shape: 28 * i + x over ui64, then the high word (>> 32) and a low bit.
  // x = 0, 5, 0xFFFF0000, 3; i = 0, 1, 2, 3: 28 * i + x = 0, 33, 4294901816, 87.
  check(R"(module @jit_f {
  func.func public @main(%x: tensor<4xui64>, %i: tensor<4xui64>) -> (tensor<4xui64>, tensor<4xui64>) {
    %c = stablehlo.constant dense<28> : tensor<ui64>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui64>) -> tensor<4xui64>
    %1 = stablehlo.multiply %0, %i : tensor<4xui64>
    %2 = stablehlo.add %1, %x : tensor<4xui64>
    %c_0 = stablehlo.constant dense<32> : tensor<ui64>
    %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<ui64>) -> tensor<4xui64>
    %4 = stablehlo.shift_right_logical %2, %3 : tensor<4xui64>
    %c_1 = stablehlo.constant dense<8> : tensor<ui64>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<ui64>) -> tensor<4xui64>
    %6 = stablehlo.and %2, %5 : tensor<4xui64>
    return %4, %6 : tensor<4xui64>, tensor<4xui64>
  }
}
)",
        {{0, 5, 4294901760.0f, 3}, {0, 1, 2, 3}}, {{0, 0, 0, 0}, {0, 0, 8, 0}});
  // i64 of rank 2: a broadcast constant times run-time values, its overflow output 0.
  check(R"(module @jit_f {
  func.func public @main(%x: tensor<2x2xi64>) -> tensor<2x2xi64> {
    %c = stablehlo.constant dense<-2> : tensor<i64>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i64>) -> tensor<2x2xi64>
    %1 = stablehlo.multiply %0, %x : tensor<2x2xi64>
    return %1 : tensor<2x2xi64>
  }
}
)",
        {{3, -4, 0, 1000}}, {{-6, 8, 0, -2000}}, {2, 2});
}
