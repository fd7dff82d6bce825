// Tensors with a dimension of size 0 in the `sdy-propagation` stage: they take part in
// propagation like any tensor (0 splits evenly over any axis); a reshape from or to an empty
// tensor relates no dims, so nothing passes through it. The mesh pipeline places them too.
#include <doctest/doctest.h>

#include "meshplan/planner/sharding_strategies.hpp"
#include "meshplan/planner/spmd.hpp"

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

TEST_CASE("the mesh pipeline places size-zero dims; a zero-size result of @main is refused") {
  auto m = parse_module(kModule, "empty.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  PipelineOptions o;
  o.mesh_rows = 0;
  o.mesh_cols = 0;
  auto s = run_pipeline(*m, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  // The per-device program splits 8 rows over "x" and 0 columns over "y".
  CHECK(has(print_module(*m), "(%arg1: tensor<4x0xf32>)"));
  auto g = lower_to_graph(*m);
  REQUIRE_FALSE(g.has_value());
  CHECK(
      has(g.error().message, "is the zero-size tensor<4x0xf32> (a plan has no zero-size outputs)"));
}
