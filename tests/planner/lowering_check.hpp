// Test helper: a lowered graph computes what its StableHLO module computes. The module's host
// evaluation (evaluate_reference) is compared with the device f32 reference (run_reference) of
// the plan compile() makes from the graph, on the same inputs.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/spmd_host.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"

namespace meshplan::test {

/// Parses `text` (named `file` in messages) and lowers it; the module as --emit=stablehlo prints
/// it must parse back and lower to the same graph (the same graph key). Returns the graph.
inline planner::Graph lower_round_trip(const std::string& text, const std::string& file) {
  using namespace planner::shlo;
  auto m = parse_module(text, file);
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  auto g = lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  std::string printed = print_module(*m);
  auto again = parse_module(printed, "printed.mlir");
  REQUIRE_MESSAGE(again, (again ? "" : again.error().message + "\n" + printed));
  auto g2 = lower_to_graph(*again);
  REQUIRE_MESSAGE(g2, (g2 ? "" : g2.error().message));
  CHECK(planner::graph_key(*g) == planner::graph_key(*g2));
  return std::move(*g);
}

/// `reference`'s results on `inputs` equal those of `g` (lowered from it, or from its
/// per-device program on a 1x1 mesh) compiled for wormhole_b0, within 1e-4 relative.
inline void check_same_results(const planner::shlo::Module& reference, const planner::Graph& g,
                               const std::vector<planner::shlo::HostArray>& inputs) {
  auto want = planner::shlo::evaluate_reference(reference, inputs);
  REQUIRE_MESSAGE(want.has_value(), want.error().message);
  auto plan =
      planner::compile(g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE_MESSAGE(plan.has_value(), plan.error().message);
  auto ref = runtime::verify_plan(plan->bytes, "lowered");
  REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
  std::vector<runtime::TensorView> views;
  for (const auto& in : inputs) views.push_back({in.shape, in.data});
  auto got = runtime::run_reference(*ref, views);
  REQUIRE_MESSAGE(got.has_value(), got.error().message);
  REQUIRE(got->size() == want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    CAPTURE(i);
    const auto& w = (*want)[i];
    const runtime::Tensor& r = (*got)[i];
    REQUIRE(r.shape == w.shape);
    double worst = 0, scale = 0;
    for (size_t k = 0; k < w.data.size(); ++k) {
      worst = std::max(worst, std::fabs(static_cast<double>(r.data[k]) - w.data[k]));
      scale = std::max(scale, std::fabs(static_cast<double>(w.data[k])));
    }
    CAPTURE(worst);
    CHECK(worst <= 1e-4 * (1 + scale));
    CHECK(scale > 0);  // a result of zeros would "match" a lowering that computed nothing
  }
}

}  // namespace meshplan::test
