// Tensors with a dimension of size 0 in the `sdy-propagation` stage: they take part in
// propagation like any tensor (0 splits evenly over any axis); a reshape from or to an empty
// tensor relates no dims, so nothing passes through it. The mesh pipeline still refuses them.
#include <doctest/doctest.h>

#include "meshplan/planner/sharding_strategies.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

constexpr const char* kModule = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x0xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>})
    -> (tensor<8x0xf32>, tensor<0x4xf32>) {
  %0 = stablehlo.negate %arg0 : tensor<8x0xf32>
  %1 = stablehlo.reshape %arg0 : (tensor<8x0xf32>) -> tensor<0x4xf32>
  return %0, %1 : tensor<8x0xf32>, tensor<0x4xf32>
}
)";

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("sdy-propagation: size-zero dims propagate; a reshape of an empty tensor does not") {
  auto m = parse_module_for_propagation(kModule, "empty.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto s = run_sdy_propagation(*m, PropagationStrategy::basic);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  std::string out = print_module(*m);
  CAPTURE(out);
  // Both dims of the negate follow %arg0, the empty one included ("y" splits 0 evenly).
  CHECK(has(out,
            "stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, "
            "[{\"x\", ?}, {\"y\", ?}]>]>} : tensor<8x0xf32>"));
  CHECK(has(out, "stablehlo.reshape %arg0 : (tensor<8x0xf32>) -> tensor<0x4xf32>"));
  CHECK(has(out,
            "-> (tensor<8x0xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\", ?}, "
            "{\"y\", ?}]>}, tensor<0x4xf32>)"));
}

TEST_CASE("the mesh pipeline's import still refuses size-zero dims, where they are written") {
  auto m = parse_module(kModule, "empty.mlir");
  REQUIRE_FALSE(m.has_value());
  CHECK(has(m.error().message, "empty.mlir:2:1"));
  CHECK(has(m.error().message, "tensor<8x0xf32>"));
}
