// Conformance of jnp.argmax / jnp.argmin over integer element types as JAX exports them: a
// two-input stablehlo.reduce of the values and an iota whose value init is the type's least
// (argmax) or greatest (argmin) value. Each module is parsed, printed and parsed again (same graph
// key), lowered, planned under every policy and run on the emulated chip; the reduced values and
// indices are compared with literals worked out by hand from the StableHLO spec's reduce
// semantics (the reducer keeps the larger / smaller value, ties the smaller index). An init that
// is not the type's bound could win against the elements and is refused.
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

/// jnp.argmax (`max`) or jnp.argmin of a 2x4 `element` argument along dimension 1, the value
/// init `init`, returning the reduced values and the indices.
std::string arg_module(const std::string& element, const std::string& init, bool max) {
  const std::string t = "tensor<" + element + ">";
  const std::string kind = element.starts_with("ui") ? "UNSIGNED" : "SIGNED";
  const std::string cmp = "(" + t + ", " + t + ") -> tensor<i1>";
  return "module @jit_f {\n"
         "  func.func public @main(%arg0: tensor<2x4x" +
         element + ">) -> (tensor<2x" + element +
         ">, tensor<2xi32>) {\n"
         "    %0 = stablehlo.iota dim = 1 : tensor<2x4xi32>\n"
         "    %c = stablehlo.constant dense<" +
         init + "> : " + t +
         "\n"
         "    %c_0 = stablehlo.constant dense<0> : tensor<i32>\n"
         "    %1:2 = stablehlo.reduce(%arg0 init: %c), (%0 init: %c_0) across dimensions = [1] : "
         "(tensor<2x4x" +
         element + ">, tensor<2x4xi32>, " + t + ", tensor<i32>) -> (tensor<2x" + element +
         ">, tensor<2xi32>)\n"
         "     reducer(%arg1: " +
         t + ", %arg3: " + t +
         ") (%arg2: tensor<i32>, %arg4: tensor<i32>)  {\n"
         "      %2 = stablehlo.compare  " +
         (max ? "GT" : "LT") + ", %arg1, %arg3,  " + kind + " : " + cmp +
         "\n"
         "      %3 = stablehlo.compare  NE, %arg1, %arg1,  " +
         kind + " : " + cmp +
         "\n"
         "      %4 = stablehlo.or %2, %3 : tensor<i1>\n"
         "      %5 = stablehlo.compare  EQ, %arg1, %arg3,  " +
         kind + " : " + cmp +
         "\n"
         "      %6 = stablehlo.compare  LT, %arg2, %arg4,  SIGNED : (tensor<i32>, tensor<i32>) -> "
         "tensor<i1>\n"
         "      %7 = stablehlo.and %5, %6 : tensor<i1>\n"
         "      %8 = stablehlo.or %4, %7 : tensor<i1>\n"
         "      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, " +
         t +
         "\n"
         "      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>\n"
         "      stablehlo.return %9, %10 : " +
         t +
         ", tensor<i32>\n"
         "    }\n"
         "    return %1#0, %1#1 : tensor<2x" +
         element +
         ">, tensor<2xi32>\n"
         "  }\n"
         "}\n";
}

/// Round trip, lower, plan under every policy, run on the emulator; both outputs exact.
void check(const std::string& text, const std::vector<float>& input,
           const std::vector<float>& want_values, const std::vector<float>& want_indices) {
  const planner::Graph g = test::lower_round_trip(text, "argreduce.mlir");
  const std::vector<int64_t> shape{2, 4};
  std::vector<runtime::TensorView> views{runtime::TensorView{shape, input}};
  for (const char* policy : kPolicies) {
    CAPTURE(policy);
    auto out = test::plan_and_run(g, policy, "argreduce", views);
    REQUIRE(out.size() == 2);
    CHECK(std::vector<float>(out[0].data.begin(), out[0].data.end()) == want_values);
    CHECK(std::vector<float>(out[1].data.begin(), out[1].data.end()) == want_indices);
  }
}

}  // namespace

TEST_CASE("integer argmax: the type's least value as init, first index on ties") {
  // Row 0: 3 at 0 and 2 -> index 0. Row 1: every element is the least i32 -> index 0.
  check(arg_module("i32", "-2147483648", true),
        {3, -7, 3, 1, -2147483648.0f, -2147483648.0f, -2147483648.0f, -2147483648.0f},
        {3, -2147483648.0f}, {0, 0});
  check(arg_module("i8", "-128", true), {-5, 9, -128, 9, -128, -1, -1, -128}, {9, -1}, {1, 1});
  check(arg_module("ui16", "0", true), {0, 0, 0, 0, 1, 65535, 7, 65535}, {0, 65535}, {0, 1});
  // ui64 lives in 32-bit words; its least value, 0, is one of them.
  check(arg_module("ui64", "0", true), {4, 2, 3, 2, 10, 11, 12, 13}, {4, 13}, {0, 3});
}

TEST_CASE("integer argmin: the type's greatest value as init, first index on ties") {
  check(arg_module("i32", "2147483647", false), {3, -7, 3, -7, 0, 1, 2, 0}, {-7, 0}, {1, 0});
  check(arg_module("ui8", "255", false), {255, 255, 255, 255, 9, 4, 200, 4}, {255, 4}, {0, 1});
  check(arg_module("i16", "32767", false), {-32768, 5, -32768, 0, 32767, 32767, 32766, 1},
        {-32768, 1}, {0, 3});
  check(arg_module("ui32", "4294967295", false), {8, 3, 3, 9, 70000, 65536, 70000, 65537},
        {3, 65536}, {1, 1});
}

TEST_CASE("integer argmax/argmin whose value init could win are refused, located") {
  // -127 beats an i8 row of -128s (the reduce would give index 0 with value -127).
  CHECK(lower_error(arg_module("i8", "-127", true))
            .starts_with("bad.mlir:6:5: unimplemented: variadic stablehlo.reduce whose value init "
                         "is not the least i8 value (supported: jnp.argmax/argmin's"));
  CHECK(lower_error(arg_module("i32", "2147483646", false))
            .starts_with("bad.mlir:6:5: unimplemented: variadic stablehlo.reduce whose value init "
                         "is not the greatest i32 value"));
  // i64's least value is beyond the 32-bit word i64 is computed in: the constant is refused.
  CHECK(lower_error(arg_module("i64", "-9223372036854775808", true))
            .starts_with("bad.mlir:4:5: stablehlo.constant: value -9223372036854775808 of type "
                         "i64 (element 0) is outside the range of i32"));
  CHECK(lower_error(arg_module("ui8", "0", false))
            .starts_with("bad.mlir:6:5: unimplemented: variadic stablehlo.reduce whose value init "
                         "is not the greatest ui8 value"));
}
