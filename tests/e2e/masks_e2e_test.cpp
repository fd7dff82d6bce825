// StableHLO with masks and bounds end to end: a masked softmax (compare + select, a causal iota
// mask), ReLU6 (clamp) and min/product reductions -> lower_to_graph -> every policy -> plan ->
// Executable on the emulated chip, checked against the module's host evaluation; and the same
// ops sharded over an emulated 2x2 mesh through meshplan-compile / meshplan-run --check.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/spmd_host.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"
#include "plan_run.hpp"
#include "test_util.hpp"

using namespace meshplan;
using planner::shlo::HostArray;

namespace {

const char* const kPolicies[] = {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"};

// Attention-like scores [64, 96] masked by a key-padding mask (keep where mask > 0) and by a
// causal mask (key j <= query i), softmax over keys; ReLU6 of 8x the scores; the per-row minimum
// and the product of 1 + scores/8 over the queries.
constexpr const char* kModel =
    R"(func.func @main(%s: tensor<64x96xf32>, %pad: tensor<1x96xf32>) -> (tensor<64x96xf32>, tensor<64x96xf32>, tensor<64xf32>, tensor<96xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<64x96xf32>
  %neg = stablehlo.constant dense<-1.0e9> : tensor<64x96xf32>
  %pb = stablehlo.broadcast_in_dim %pad, dims = [0, 1] : (tensor<1x96xf32>) -> tensor<64x96xf32>
  %keep = stablehlo.compare  GT, %pb, %zero,  FLOAT : (tensor<64x96xf32>, tensor<64x96xf32>) -> tensor<64x96xi1>
  %i = stablehlo.iota dim = 0 : tensor<64x96xi32>
  %j = stablehlo.iota dim = 1 : tensor<64x96xi32>
  %causal = stablehlo.compare  LE, %j, %i,  SIGNED : (tensor<64x96xi32>, tensor<64x96xi32>) -> tensor<64x96xi1>
  %m0 = stablehlo.select %keep, %s, %neg : tensor<64x96xi1>, tensor<64x96xf32>
  %m1 = stablehlo.select %causal, %m0, %neg : tensor<64x96xi1>, tensor<64x96xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %mx = stablehlo.reduce(%m1 init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<64x96xf32>, tensor<f32>) -> tensor<64xf32>
  %mxb = stablehlo.broadcast_in_dim %mx, dims = [0] : (tensor<64xf32>) -> tensor<64x96xf32>
  %d = stablehlo.subtract %m1, %mxb : tensor<64x96xf32>
  %e = stablehlo.exponential %d : tensor<64x96xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %sum = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1] : (tensor<64x96xf32>, tensor<f32>) -> tensor<64xf32>
  %sumb = stablehlo.broadcast_in_dim %sum, dims = [0] : (tensor<64xf32>) -> tensor<64x96xf32>
  %p = stablehlo.divide %e, %sumb : tensor<64x96xf32>
  %eight = stablehlo.constant dense<8.0> : tensor<64x96xf32>
  %x8 = stablehlo.multiply %s, %eight : tensor<64x96xf32>
  %lo = stablehlo.constant dense<0.0> : tensor<f32>
  %hi = stablehlo.constant dense<6.0> : tensor<f32>
  %r6 = stablehlo.clamp %lo, %x8, %hi : (tensor<f32>, tensor<64x96xf32>, tensor<f32>) -> tensor<64x96xf32>
  %inf = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %rmin = stablehlo.reduce(%s init: %inf) applies stablehlo.minimum across dimensions = [1] : (tensor<64x96xf32>, tensor<f32>) -> tensor<64xf32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %onet = stablehlo.constant dense<1.0> : tensor<64x96xf32>
  %q = stablehlo.divide %s, %eight : tensor<64x96xf32>
  %q1 = stablehlo.add %q, %onet : tensor<64x96xf32>
  %prod = stablehlo.reduce(%q1 init: %one) applies stablehlo.multiply across dimensions = [0] : (tensor<64x96xf32>, tensor<f32>) -> tensor<96xf32>
  return %p, %r6, %rmin, %prod : tensor<64x96xf32>, tensor<64x96xf32>, tensor<64xf32>, tensor<96xf32>
}
)";

int count(const planner::Graph& g, device::OpKind kind) {
  int n = 0;
  for (const auto& op : g.ops) n += op.kind == kind;
  return n;
}

}  // namespace

TEST_CASE("masked softmax, ReLU6, min and product reductions: every policy runs them exactly") {
  auto m = planner::shlo::parse_module(kModel, "masks.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  auto g = planner::shlo::lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  CHECK(count(*g, device::OpKind::gt) == 1);     // the padding mask, computed on device
  CHECK(count(*g, device::OpKind::where) == 2);  // padding and (folded) causal masks
  CHECK(count(*g, device::OpKind::clamp) == 1);
  CHECK(count(*g, device::OpKind::reduce_min) == 1);
  CHECK(count(*g, device::OpKind::reduce_prod) == 1);

  auto inputs = planner::shlo::random_inputs(*m, 5);
  auto want = planner::shlo::evaluate_reference(*m, inputs);
  REQUIRE_MESSAGE(want, (want ? "" : want.error().message));
  std::vector<runtime::Tensor> expected;
  for (const HostArray& w : *want) {
    runtime::Tensor t(w.shape);
    t.data.assign(w.data.begin(), w.data.end());
    expected.push_back(std::move(t));
  }
  std::vector<runtime::TensorView> views;
  for (const HostArray& in : inputs) views.push_back({in.shape, in.data});
  // Some keys are padded away and some kept, so both sides of the mask matter.
  int kept = 0;
  for (float v : inputs[1].data) kept += v > 0;
  CHECK(kept > 10);
  CHECK(kept < 86);

  for (const char* policy : kPolicies) {
    CAPTURE(policy);
    auto outputs = test::plan_and_run(*g, policy, "masks", views);
    REQUIRE(outputs.size() == expected.size());
    // f32 throughout: only summation order separates the device from the host evaluation.
    runtime::CheckReport rep = runtime::check_outputs(outputs, expected, 1e-4);
    INFO("relative error ", rep.relative_error);
    CHECK(rep.ok);
    // ReLU6 really bounds: the inputs reach beyond 6 and below 0.
    const auto& r6 = outputs[1].data;
    CHECK(*std::min_element(r6.begin(), r6.end()) == 0.0f);
    CHECK(*std::max_element(r6.begin(), r6.end()) == 6.0f);
  }
}

TEST_CASE("masks, clamp and min/product reductions sharded on a 2x2 mesh: every policy checks") {
  // x split over "x" along dim 0: the min over dim 0 becomes an all_reduce(min), the product
  // over dim 0 gathers first; compare, select and clamp stay on each chip's rows.
  const std::string model = R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%x: tensor<64x96xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %t: tensor<64x96xf32>) -> (tensor<64x96xf32>, tensor<96xf32>, tensor<96xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<64x96xf32>
  %lo = stablehlo.constant dense<-0.5> : tensor<f32>
  %hi = stablehlo.constant dense<0.5> : tensor<f32>
  %c = stablehlo.compare  GT, %x, %t,  FLOAT : (tensor<64x96xf32>, tensor<64x96xf32>) -> tensor<64x96xi1>
  %s = stablehlo.select %c, %x, %zero : tensor<64x96xi1>, tensor<64x96xf32>
  %k = stablehlo.clamp %lo, %s, %hi : (tensor<f32>, tensor<64x96xf32>, tensor<f32>) -> tensor<64x96xf32>
  %inf = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %cols = stablehlo.reduce(%k init: %inf) applies stablehlo.minimum across dimensions = [0] : (tensor<64x96xf32>, tensor<f32>) -> tensor<96xf32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %near = stablehlo.constant dense<1.0078125> : tensor<64x96xf32>
  %k2 = stablehlo.add %k, %near : tensor<64x96xf32>
  %prod = stablehlo.reduce(%k2 init: %one) applies stablehlo.multiply across dimensions = [0] : (tensor<64x96xf32>, tensor<f32>) -> tensor<96xf32>
  return %k, %cols, %prod : tensor<64x96xf32>, tensor<96xf32>, tensor<96xf32>
}
)";
  test::TempDir dir;
  std::string path = dir.file("masks_mesh.mlir");
  {
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f);
    std::fputs(model.c_str(), f);
    std::fclose(f);
  }
  const std::string bin = MESHPLAN_BINARY_DIR;
  for (const char* policy : kPolicies) {
    CAPTURE(policy);
    std::string cache = dir.file(std::string(policy) + ".mpc");
    auto c = test::run_shell(bin + "/planner/meshplan-compile " + path + " -o " + cache +
                             " --name m --mesh 2x2 --policy " + policy);
    INFO(c.text);
    REQUIRE(c.status == 0);
    auto r = test::run_shell(bin + "/runtime/meshplan-run " + cache + " --name m --check");
    INFO(r.text);
    CHECK(r.status == 0);
    CHECK(r.text.find("PASS") != std::string::npos);
    CHECK(r.text.find("bytes between chips") != std::string::npos);
  }
}
