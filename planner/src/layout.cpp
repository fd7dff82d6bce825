// Layout policies. `dram`: every tensor DRAM-interleaved, tiled, in its value's dtype (bf16 for
// bf8b), every op on the full grid.
#include "meshplan/planner/layout.hpp"

#include <sstream>

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
    device::OpConfig config = MESHPLAN_TRY(op_config(op));
    config.grid_x = chip.grid_x;
    config.grid_y = chip.grid_y;
    plan.configs.push_back(config);
  }
  return plan;
}

}  // namespace

std::vector<std::string_view> policy_names() { return {"dram"}; }

Result<LayoutPlan> run_layout_policy(const Graph& g, const Schedule&, const device::ChipDesc& chip,
                                     const PlannerOptions& options) {
  if (options.policy == "dram") return dram_policy(g, chip);
  std::string known;
  for (auto n : policy_names()) known += (known.empty() ? "" : ", ") + std::string(n);
  return fail(ErrorCode::invalid_argument, "unknown policy '", options.policy, "' (policies: ", known, ")");
}

std::string LayoutPlan::print(const Graph& g) const {
  std::ostringstream out;
  for (ValueId v = 0; v < tensors.size(); ++v) {
    const TensorLayout& t = tensors[v];
    out << "%" << g.values[v].name << ": " << device::buffer_name(t.buffer) << " " << device::memory_name(t.memory) << " "
        << (t.layout == device::TileLayout::tile ? "tile" : "row_major") << " " << device::dtype_name(t.dtype) << "\n";
  }
  for (OpId o = 0; o < configs.size(); ++o)
    out << g.ops[o].name << ": grid " << configs[o].grid_x << "x" << configs[o].grid_y << " "
        << device::fidelity_name(configs[o].fidelity) << "\n";
  return out.str();
}

}  // namespace meshplan::planner
