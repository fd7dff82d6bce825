// Exhaustive branch-and-bound over result layouts for small graphs: the optimum the beam search
// is measured against. A plan counts only if its L1 tensors all pack without a spill.
#include <functional>

#include "meshplan/planner/memory_plan.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/schedule.hpp"

namespace meshplan::planner {

Result<SearchResult> exhaustive_search(const Graph& g, const device::ChipDesc& chip,
                                       const PlannerOptions& options, int max_ops) {
  if (static_cast<int>(g.ops.size()) > max_ops)
    return fail(ErrorCode::invalid_argument, "exhaustive search: graph '", g.name, "' has ",
                g.ops.size(), " ops, more than ", max_ops);
  LayoutDecision d = MESHPLAN_TRY(LayoutDecision::all_dram(g, chip));
  OpQuery q(g, chip);
  std::vector<std::vector<TensorLayout>> cands(g.ops.size());
  for (OpId o = 0; o < g.ops.size(); ++o)
    cands[o] = layout_candidates(g.values[g.ops[o].results[0]], chip, options.max_legal_layouts);
  SearchResult best;
  best.estimated_ns = UINT64_MAX;
  Status error;
  // Depth-first over ops in schedule order; the cost so far bounds the branch (op costs depend
  // only on the op's own operand and result layouts, fixed once the op is reached).
  std::function<void(OpId, uint64_t)> visit = [&](OpId o, uint64_t cost) {
    if (!error || cost >= best.estimated_ns) return;
    if (o == g.ops.size()) {
      ++best.plans_tried;
      auto planned = materialize(g, d);
      if (!planned) {
        error = std::unexpected(planned.error());
        return;
      }
      Schedule s = Schedule::build(planned->graph);
      auto packing = pack_l1(planned->graph, s, planned->layout, chip);
      if (!packing) {
        error = std::unexpected(packing.error());
        return;
      }
      if (packing->unplaced.empty()) {
        best.estimated_ns = cost;
        best.decision = d;
      }
      return;
    }
    const Op& op = g.ops[o];
    std::vector<const TensorLayout*> in;
    for (ValueId v : op.operands) in.push_back(&d.tensors[v]);
    device::OpConfig base = d.configs[o];
    for (const TensorLayout& r : cands[o]) {
      device::OpConfig c = config_for(base, r, chip);
      if (!q.validate(op.kind, op.name, op.operands, in, op.results[0], r, c).ok) continue;
      d.tensors[op.results[0]] = r;
      d.configs[o] = c;
      visit(o + 1, cost + q.cost(op.kind, op.name, op.operands, in, op.results[0], r, c));
    }
    d.tensors[op.results[0]] =
        interleaved_layout(g.values[op.results[0]], device::BufferType::dram);
    d.configs[o] = base;
  };
  visit(0, 0);
  MESHPLAN_TRY(error);
  if (best.estimated_ns == UINT64_MAX)
    return fail(ErrorCode::resource_exhausted, "exhaustive search: no plan of graph '", g.name,
                "' fits");
  return best;
}

}  // namespace meshplan::planner
