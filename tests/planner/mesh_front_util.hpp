// Helpers for the mesh front-end tests: a graph's own f32 reference (device::reference op by op),
// inputs for exported modules, and the three-way check global graph == exported module's
// single-device reference == SPMD simulation of the per-device program.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "meshplan/device/op_semantics.hpp"
#include "meshplan/planner/export_stablehlo.hpp"
#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/spmd_host.hpp"

namespace meshplan::test {

using planner::shlo::HostArray;

/// Runs `g` on host with device::reference, op by op, in f32.
inline Result<std::vector<HostArray>> graph_reference(const planner::Graph& g,
                                                      const std::vector<HostArray>& inputs) {
  std::vector<HostArray> env(g.values.size());
  if (inputs.size() != g.arguments.size())
    return fail(ErrorCode::invalid_argument, "graph_reference: ", inputs.size(), " inputs for ",
                g.arguments.size(), " arguments");
  for (size_t i = 0; i < inputs.size(); ++i) env[g.arguments[i]] = inputs[i];
  for (const planner::Op& op : g.ops) {
    device::OpConfig config = MESHPLAN_TRY(planner::op_config(op));
    std::vector<device::HostView> views;
    for (planner::ValueId v : op.operands) views.push_back({env[v].shape, env[v].data});
    HostArray& out = env[op.results[0]];
    out.shape = g.values[op.results[0]].shape;
    int64_t n = 1;
    for (int64_t d : out.shape) n *= d;
    out.data.assign(static_cast<size_t>(n), 0.0f);
    MESHPLAN_TRY(device::reference(op.kind, views, config, out.shape, out.data));
  }
  std::vector<HostArray> outs;
  for (planner::ValueId v : g.outputs) outs.push_back(env[v]);
  return outs;
}

/// Inputs for the exported module of `g`: random values in [-1, 1) (in [0.5, 1.5) when
/// `positive`), the graph's data for constants, valid indices for integer arguments.
inline std::vector<HostArray> graph_inputs(const planner::Graph& g, const planner::shlo::Module& m,
                                           uint64_t seed, bool positive = false) {
  std::vector<HostArray> in = planner::shlo::random_inputs(m, seed);
  for (size_t i = 0; i < in.size() && i < g.arguments.size(); ++i) {
    const planner::Value& v = g.values[g.arguments[i]];
    if (!v.data.empty())
      in[i].data = v.data;
    else if (v.dtype == device::DType::i32 || v.dtype == device::DType::u32)
      for (size_t k = 0; k < in[i].data.size(); ++k) in[i].data[k] = static_cast<float>(k % 3);
    else if (positive)
      for (float& x : in[i].data) x = std::fabs(x) + 0.5f;
  }
  return in;
}

/// Largest |a - b| over each output, relative to 1 + the output's largest |b| (a norm-wise error:
/// the reduced models' activations reach the hundreds, where f32 sums in another order differ
/// by more than an element-wise tolerance allows near zero). Infinity if the shapes disagree.
inline double max_rel_error(const std::vector<HostArray>& a, const std::vector<HostArray>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].shape != b[i].shape || a[i].data.size() != b[i].data.size()) return INFINITY;
    double scale = 0, diff = 0;
    for (size_t k = 0; k < a[i].data.size(); ++k) {
      scale = std::max(scale, std::fabs(static_cast<double>(b[i].data[k])));
      double e = std::fabs(static_cast<double>(a[i].data[k]) - b[i].data[k]);
      if (!(e <= diff)) diff = std::isnan(e) ? INFINITY : std::max(diff, e);
    }
    worst = std::max(worst, diff / (1.0 + scale));
  }
  return worst;
}

/// Exports `g`, runs the mesh pipeline on a copy, and checks that the SPMD simulation, the
/// exported module's reference and the graph's own reference agree. Returns the per-device
/// program (empty module on failure, after a failed CHECK).
inline planner::shlo::Module check_mesh_equivalence(const planner::Graph& g,
                                                    const planner::MeshAnnotations& ann,
                                                    int64_t rows, int64_t cols,
                                                    bool positive = false) {
  auto global = planner::export_stablehlo(g, ann);
  REQUIRE_MESSAGE(global.has_value(), global.error().message);
  planner::shlo::Module local = *global;
  auto st = planner::shlo::run_pipeline(local, planner::pipeline_options(ann, rows, cols));
  REQUIRE_MESSAGE(st.has_value(), st.error().message);
  REQUIRE_MESSAGE(planner::shlo::verify_local_program(local).has_value(), g.name);
  auto inputs = graph_inputs(g, *global, 7, positive);
  auto want = graph_reference(g, inputs);
  REQUIRE_MESSAGE(want.has_value(), want.error().message);
  auto ref = planner::shlo::evaluate_reference(*global, inputs);
  REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
  auto spmd = planner::shlo::evaluate_spmd(local, inputs);
  REQUIRE_MESSAGE(spmd.has_value(), spmd.error().message);
  CHECK_MESSAGE(max_rel_error(*ref, *want) < 1e-4, g.name, ": exported module vs graph");
  CHECK_MESSAGE(max_rel_error(*spmd, *ref) < 1e-4, g.name, " on ", rows, "x", cols,
                ": SPMD vs single device");
  return local;
}

}  // namespace meshplan::test
