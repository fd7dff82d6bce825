// conv2d activation block heights as op configs: the heights tried per launch and the final
// choice on a plan's layouts (see candidates.hpp).
#include <algorithm>

#include "meshplan/device/conv_blocking.hpp"
#include "meshplan/planner/candidates.hpp"

namespace meshplan::planner {

bool is_auto_conv(device::OpKind kind, const device::OpConfig& config) {
  return kind == device::OpKind::conv2d && config.act_block_h == 0;
}

std::vector<device::OpConfig> conv_block_configs(const device::OpLaunch& launch,
                                                 const device::ChipDesc& chip) {
  device::OpLaunch l = launch;
  l.config.act_block_h = 0;
  auto b = device::resolve_conv(l, chip);
  if (!b) return {};
  std::vector<device::OpConfig> out;
  for (uint32_t h : device::conv_block_heights(b->rows_per_core, kMaxConvBlockHeights)) {
    device::OpConfig c = launch.config;
    c.act_block_h = h;
    out.push_back(c);
  }
  return out;
}

namespace {

/// L1 bytes per core of the tensors live across the op at schedule position `pos`, its result
/// aside (OpModel counts that as the op's L1 output).
uint64_t live_l1_bytes(const Graph& g, const Schedule& s, const LayoutPlan& plan, int pos,
                       ValueId result, const device::ChipDesc& chip) {
  uint64_t bytes = 0;
  for (ValueId v = 0; v < g.values.size(); ++v) {
    if (v == result || !plan.tensors[v].in_l1()) continue;
    if (s.defined_at(v) < pos && s.last_use(v) >= pos)
      bytes += l1_bytes_per_core(g.values[v], plan.tensors[v], chip);
  }
  return bytes;
}

}  // namespace

Status choose_conv_blocks(const Graph& g, LayoutPlan& plan, const device::ChipDesc& chip) {
  OpQuery q(g, chip);
  Schedule s = Schedule::build(g);
  uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  for (int pos = 0; pos < static_cast<int>(s.order().size()); ++pos) {
    OpId o = s.order()[pos];
    const Op& op = g.ops[o];
    if (op.kind != device::OpKind::conv2d) continue;
    device::OpConfig given = MESHPLAN_TRY(op_config(op, g.mesh));
    if (!is_auto_conv(op.kind, given)) continue;  // The graph fixed the height: keep it.
    device::OpConfig base = plan.configs[o];
    base.act_block_h = 0;
    std::vector<const TensorLayout*> in;
    for (ValueId v : op.operands) in.push_back(&plan.tensors[v]);
    ValueId r = op.results[0];
    const TensorLayout& rl = plan.tensors[r];
    std::vector<device::OpConfig> configs;
    {
      device::TensorPlacement ins[8], out = placement_of(g.values[r], rl);
      const device::TensorPlacement* inp[8];
      size_t n = std::min<size_t>(op.operands.size(), 8);
      for (size_t i = 0; i < n; ++i) {
        ins[i] = placement_of(g.values[op.operands[i]], *in[i]);
        inp[i] = &ins[i];
      }
      const device::TensorPlacement* outp[1] = {&out};
      configs = conv_block_configs(
          device::OpLaunch{op.kind, op.name, std::span(inp, n), std::span(outp, 1), base}, chip);
    }
    uint64_t live = live_l1_bytes(g, s, plan, pos, r, chip);
    struct Ranked {
      uint64_t cost, need;
      device::OpConfig config;
    };
    std::vector<Ranked> ranked;  // valid heights, largest first
    for (const device::OpConfig& c : configs) {
      device::OpValidation v = q.validate(op.kind, op.name, op.operands, in, r, rl, c);
      if (!v.ok) continue;
      ranked.push_back({q.cost(op.kind, op.name, op.operands, in, r, rl, c),
                        v.cb_bytes_per_core + v.output_l1_bytes_per_core + live, c});
    }
    if (ranked.empty()) continue;  // fit_and_validate reports the op OpModel rejects.
    // Cheapest first; ties keep the larger height (earlier in `ranked`).
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const Ranked& a, const Ranked& b) { return a.cost < b.cost; });
    auto fits = std::find_if(ranked.begin(), ranked.end(),
                             [&](const Ranked& x) { return x.need <= usable; });
    if (fits != ranked.end()) {
      plan.configs[o] = fits->config;
    } else {
      plan.configs[o] = std::min_element(ranked.begin(), ranked.end(), [](auto& a, auto& b) {
                          return a.need < b.need;
                        })->config;
    }
  }
  return {};
}

}  // namespace meshplan::planner
