// Test helpers for StableHLO mesh programs: the mesh pipeline and lowering of a module, and a
// plan of the lowered graph run on emulated chips with one global input.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/mesh_spec.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"

namespace meshplan::test {

/// The mesh pipeline and lowering of `text`, whose mesh must have `devices` devices; the graph.
inline planner::Graph mesh_graph(const std::string& text, int64_t devices) {
  auto m = planner::shlo::parse_module(text, "mesh.mlir");
  REQUIRE_MESSAGE(m, (m ? "" : m.error().message));
  planner::shlo::PipelineOptions options;
  options.mesh_rows = 0;
  options.mesh_cols = 0;
  auto st = planner::shlo::run_pipeline(*m, options);
  REQUIRE_MESSAGE(st, (st ? "" : st.error().message));
  auto g = planner::shlo::lower_to_graph(*m);
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  REQUIRE(g->mesh.rows * g->mesh.cols == devices);
  return std::move(*g);
}

/// `g` compiled (greedy) and run on its mesh of emulated chips with one global input of `shape`;
/// its one output.
inline std::vector<float> run_on_mesh(const planner::Graph& g, std::vector<int64_t> shape,
                                      const std::vector<float>& input) {
  auto desc = device::resolve_mesh_spec(
      std::to_string(g.mesh.rows) + "x" + std::to_string(g.mesh.cols), device::wormhole_b0());
  REQUIRE_MESSAGE(desc, (desc ? "" : desc.error().message));
  auto mesh = device::EmulatedMesh::create(*desc);
  REQUIRE(mesh);
  auto plan = planner::compile(g, (*mesh)->descriptor().chip,
                               planner::PlannerOptions::with_policy("greedy"));
  REQUIRE_MESSAGE(plan, (plan ? "" : plan.error().message));
  auto ref = runtime::verify_plan(plan->bytes, "mesh");
  REQUIRE_MESSAGE(ref, (ref ? "" : ref.error().message));
  auto exe = runtime::Executable::bind(*ref, **mesh);
  REQUIRE_MESSAGE(exe, (exe ? "" : exe.error().message));
  std::vector<runtime::TensorView> views = {{shape, input}};
  auto run = (*exe)->run(views);
  REQUIRE_MESSAGE(run, (run ? "" : run.error().message));
  REQUIRE(run->outputs.size() == 1);
  return {run->outputs[0].data.begin(), run->outputs[0].data.end()};
}

}  // namespace meshplan::test
