// Layout policies. `dram`: every tensor DRAM-interleaved, tiled, in its value's dtype (bf16 for
// bf8b), every op on the full grid.
#include "meshplan/planner/layout.hpp"

#include <sstream>

#include "meshplan/planner/policy.hpp"

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

std::string LayoutPlan::print(const Graph& g) const {
  std::ostringstream out;
  for (ValueId v = 0; v < tensors.size(); ++v) {
    const TensorLayout& t = tensors[v];
    out << "%" << g.values[v].name << ": " << device::buffer_name(t.buffer) << " "
        << device::memory_name(t.memory) << " "
        << (t.layout == device::TileLayout::tile ? "tile" : "row_major") << " "
        << device::dtype_name(t.dtype) << "\n";
  }
  for (OpId o = 0; o < configs.size(); ++o) {
    out << g.ops[o].name << ": grid " << configs[o].grid_x << "x" << configs[o].grid_y << " "
        << device::fidelity_name(configs[o].fidelity);
    if (configs[o].act_block_h != 0) out << " act_block_h " << configs[o].act_block_h;
    if (configs[o].act_block_w_div > 1) out << " act_block_w_div " << configs[o].act_block_w_div;
    if (configs[o].stream_weights) out << " stream_weights";
    if (configs[o].input_n != 0)
      out << " flat " << configs[o].input_n << "x" << configs[o].input_h << "x"
          << configs[o].input_w;
    out << "\n";
  }
  return out.str();
}

}  // namespace meshplan::planner
