// Plans a graph for one Wormhole chip and runs the plan on the emulator: the path every
// conformance test takes (compile → verify → bind → run), with each step's error failing the
// test with its message; and the lowering error of a StableHLO module the conformance tests refuse.
#pragma once

#include <doctest/doctest.h>

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/stablehlo.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"

namespace meshplan::test {

/// Compiles `g` with `policy`, verifies the plan (named `name` in messages), binds it on a fresh
/// emulated chip and runs it on `inputs`. Returns the outputs, which own their data.
inline std::vector<runtime::Tensor> plan_and_run(const planner::Graph& g, const char* policy,
                                                 const char* name,
                                                 std::span<const runtime::TensorView> inputs) {
  planner::PlannerOptions options;
  options.policy = policy;
  auto plan = planner::compile(g, device::wormhole_b0(), options);
  REQUIRE_MESSAGE(plan, (plan ? "" : plan.error().message));
  auto ref = runtime::verify_plan(plan->bytes, name);
  REQUIRE_MESSAGE(ref, (ref ? "" : ref.error().message));
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto exe = runtime::Executable::bind(*ref, **dev);
  REQUIRE_MESSAGE(exe, (exe ? "" : exe.error().message));
  auto got = (*exe)->run(inputs);
  REQUIRE_MESSAGE(got, (got ? "" : got.error().message));
  return std::move(got->outputs);
}

/// Lowers StableHLO `text` (named `name` in messages), which must parse and lower.
inline planner::Graph lower_text(const std::string& text, const char* name) {
  auto m = planner::shlo::parse_module(text, name);
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  auto g = planner::shlo::lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  return std::move(*g);
}

/// Runs `g` under `policy` on rank-1 inputs (one per argument, of their own lengths); returns
/// each output's values.
inline std::vector<std::vector<float>> run_rank1(const planner::Graph& g, const char* policy,
                                                 const char* name,
                                                 const std::vector<std::vector<float>>& inputs) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& v : inputs) shapes.push_back({static_cast<int64_t>(v.size())});
  std::vector<runtime::TensorView> views;
  for (size_t i = 0; i < inputs.size(); ++i) views.push_back({shapes[i], inputs[i]});
  std::vector<std::vector<float>> out;
  for (const auto& t : plan_and_run(g, policy, name, views))
    out.emplace_back(t.data.begin(), t.data.end());
  return out;
}

/// The located error of lowering StableHLO `text` (named bad.mlir), which must parse and must
/// fail to lower.
inline std::string lower_error(const std::string& text) {
  auto m = planner::shlo::parse_module(text, "bad.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  auto g = planner::shlo::lower_to_graph(*m);
  REQUIRE_FALSE(g.has_value());
  return g.error().message;
}

}  // namespace meshplan::test
