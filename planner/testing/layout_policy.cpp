// run_layout_policy: a policy's LayoutPlan for a graph it inserts no moves into. `dram`: every
// tensor DRAM-interleaved, tiled, in its value's dtype (bf16 for bf8b), every op on the full
// grid.
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/testing.hpp"

namespace meshplan::planner {

namespace {

Result<LayoutPlan> dram_policy(const Graph& g, const device::ChipDesc& chip) {
  LayoutPlan plan;
  plan.tensors.assign(g.values.size(), TensorLayout{});
  // Each tensor keeps its value's dtype (integer indices stay integers; bf8b is not emulated).
  for (ValueId v = 0; v < g.values.size(); ++v)
    if (g.values[v].dtype != device::DType::bf8b) plan.tensors[v].dtype = g.values[v].dtype;
  plan.configs.reserve(g.ops.size());
  for (const Op& op : g.ops) {
    device::OpConfig config = MESHPLAN_TRY(op_config(op, g.mesh));
    config.grid_x = chip.grid_x;
    config.grid_y = chip.grid_y;
    plan.configs.push_back(config);
  }
  return plan;
}

}  // namespace

Result<LayoutPlan> run_layout_policy(const Graph& g, const Schedule&, const device::ChipDesc& chip,
                                     const PlannerOptions& options) {
  if (options.policy == "dram" && options.output_overrides.empty() && options.memreconfig.empty())
    return dram_policy(g, chip);
  LayoutResult r = MESHPLAN_TRY(plan_layout(g, chip, options));
  if (r.graph.ops.size() != g.ops.size())
    return fail(ErrorCode::invalid_argument, "policy '", options.policy, "' inserted ",
                r.graph.ops.size() - g.ops.size(), " moves into graph '", g.name,
                "': use plan_layout(), which returns the planned graph");
  return std::move(r.layout);
}

}  // namespace meshplan::planner
