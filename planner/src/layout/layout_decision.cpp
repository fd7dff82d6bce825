// LayoutDecision (layout_decision.hpp): the all-DRAM decision the policies start from. Apart from
// policy.cpp, so that df_sharding.cpp, which policy.cpp calls, does not call back into it.
#include "meshplan/planner/layout_decision.hpp"

#include <utility>

#include "meshplan/planner/candidates.hpp"

namespace meshplan::planner {

Result<LayoutDecision> LayoutDecision::all_dram(const Graph& g, const device::ChipDesc& chip) {
  LayoutDecision d;
  d.tensors.reserve(g.values.size());
  for (const Value& v : g.values)
    d.tensors.push_back(interleaved_layout(v, device::BufferType::dram));
  d.configs.reserve(g.ops.size());
  for (const Op& op : g.ops) {
    device::OpConfig c = MESHPLAN_TRY(op_config(op, g.mesh));
    c.grid_x = chip.grid_x;
    c.grid_y = chip.grid_y;
    d.configs.push_back(std::move(c));
  }
  return d;
}

}  // namespace meshplan::planner
