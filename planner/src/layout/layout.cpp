// LayoutPlan's deterministic text dump.
#include "meshplan/planner/layout.hpp"

#include <sstream>

namespace meshplan::planner {

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
    if (configs[o].deallocate_activation) out << " deallocate_activation";
    if (configs[o].input_n != 0)
      out << " flat " << configs[o].input_n << "x" << configs[o].input_h << "x"
          << configs[o].input_w;
    out << "\n";
  }
  return out.str();
}

}  // namespace meshplan::planner
