// conv2d activation block heights and K splits as op configs: the (act_block_h,
// act_block_w_div) pairs tried per launch and the final choice, with the weights' residency, on
// a plan's layouts (see candidates.hpp).
#include <algorithm>

#include "meshplan/device/conv_blocking.hpp"
#include "meshplan/planner/candidates.hpp"

namespace meshplan::planner {

bool is_auto_conv(device::OpKind kind, const device::OpConfig& config) {
  return kind == device::OpKind::conv2d && (config.act_block_h == 0 || config.act_block_w_div == 0);
}

std::vector<device::OpConfig> conv_block_configs(const device::OpLaunch& launch,
                                                 const device::ChipDesc& chip, uint64_t budget) {
  device::OpLaunch l = launch;
  l.config.act_block_h = 0;
  l.config.act_block_w_div = 0;
  l.config.stream_weights = false;
  auto resolved = device::resolve_conv(l, chip);
  if (!resolved) return {};
  device::ConvBlocking b = *resolved;
  uint32_t given_h = launch.config.act_block_h, given_div = launch.config.act_block_w_div;
  if (given_div != 0 && b.k_tiles % given_div != 0) return {};
  // A given height runs as the divisor of the core's rows the device replaces it by.
  if (given_h != 0)
    given_h = static_cast<uint32_t>(device::conv_block_height(b.rows_per_core, given_h));
  std::vector<uint32_t> heights =
      given_h != 0 ? std::vector<uint32_t>{given_h}
                   : device::conv_block_heights(b.rows_per_core, kMaxConvBlockHeights);
  std::vector<uint32_t> divs;
  for (uint32_t div :
       given_div != 0 ? std::vector<uint32_t>{given_div} : device::conv_k_divisors(b.k_tiles))
    if (device::conv_k_split_rule(l, div).empty()) divs.push_back(div);
  budget = std::min(budget, chip.l1_usable_top() - chip.l1_unreserved_base);
  std::vector<device::OpConfig> out;
  device::OpConfig smallest;
  uint64_t smallest_need = UINT64_MAX;
  auto config = [&](uint32_t h, uint32_t div, bool stream) {
    device::OpConfig c = launch.config;
    c.act_block_h = h;
    c.act_block_w_div = div;
    c.stream_weights = stream;
    return c;
  };
  for (uint32_t h : heights) {
    size_t kept = 0;
    for (uint32_t div : divs) {
      if (kept == kMaxConvKSplits) break;
      for (bool stream : {false, true}) {
        device::set_conv_blocks(b, l, chip, h, div, stream);
        uint64_t need = device::conv_cb_bytes(b, l) + b.output_l1;
        if (need < smallest_need) {
          smallest_need = need;
          smallest = config(h, div, stream);
        }
        if (need <= budget) {
          out.push_back(config(h, div, stream));
          ++kept;
          break;
        }
        if (!b.weights_resident) break;  // Streaming is the smallest this split gets.
      }
    }
  }
  if (out.empty() && smallest_need != UINT64_MAX) out.push_back(smallest);
  return out;
}

std::vector<device::OpConfig> legacy_conv_configs(const device::OpLaunch& launch,
                                                  const device::ChipDesc& chip) {
  device::OpLaunch l = launch;
  l.config.act_block_h = 0;
  l.config.act_block_w_div = 0;
  l.config.stream_weights = false;
  auto resolved = device::resolve_conv(l, chip);
  if (!resolved) return {};
  const int64_t rows = resolved->rows_per_core;
  uint32_t given_h = launch.config.act_block_h, given_div = launch.config.act_block_w_div;
  if (given_div != 0 && resolved->k_tiles % given_div != 0) return {};
  if (given_h != 0) given_h = static_cast<uint32_t>(device::conv_block_height(rows, given_h));
  // act_block_h_override 0 (TTNN: the shard's whole height), 64 and 32 rows, in tiles.
  std::vector<uint32_t> heights;
  if (given_h != 0) {
    heights = {given_h};
  } else {
    for (int64_t h : {rows, int64_t{2}, int64_t{1}})
      if (h >= 1 && rows % h == 0 &&
          std::find(heights.begin(), heights.end(), static_cast<uint32_t>(h)) == heights.end())
        heights.push_back(static_cast<uint32_t>(h));
  }
  std::vector<device::OpConfig> out;
  for (uint32_t h : heights) {
    device::OpConfig c = launch.config;
    c.act_block_h = h;
    c.act_block_w_div = given_div != 0 ? given_div : 1;
    c.stream_weights = false;  // Residency is the device's: resident when it fits.
    out.push_back(c);
  }
  return out;
}

namespace {

/// L1 bytes per core of the tensors live across the op at schedule position `pos`, its result
/// and `freed` (an input the op frees inside itself, or the result) aside (OpModel counts the
/// result as the op's L1 output).
uint64_t live_l1_bytes(const Graph& g, const Schedule& s, const LayoutPlan& plan, int pos,
                       ValueId result, ValueId freed, const device::ChipDesc& chip) {
  uint64_t bytes = 0;
  for (ValueId v = 0; v < g.values.size(); ++v) {
    if (v == result || v == freed || !plan.tensors[v].in_l1()) continue;
    if (s.defined_at(v) < pos && s.last_use(v) >= pos)
      bytes += l1_bytes_per_core(g.values[v], plan.tensors[v], chip);
  }
  return bytes;
}

}  // namespace

Status choose_conv_blocks(const Graph& g, LayoutPlan& plan, const device::ChipDesc& chip,
                          const std::vector<bool>& kept) {
  OpQuery q(g, chip);
  Schedule s = Schedule::build(g);
  uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  for (int pos = 0; pos < static_cast<int>(s.order().size()); ++pos) {
    OpId o = s.order()[pos];
    const Op& op = g.ops[o];
    if (op.kind != device::OpKind::conv2d) continue;
    if (o < kept.size() && kept[o]) continue;  // The policy chose it in its search.
    // What the graph fixed is kept; the rest (and the weights' residency) is chosen here.
    device::OpConfig given = MESHPLAN_TRY(op_config(op, g.mesh));
    device::OpConfig base = plan.configs[o];
    base.act_block_h = given.act_block_h;
    base.act_block_w_div = given.act_block_w_div;
    base.stream_weights = false;
    std::vector<const TensorLayout*> in;
    for (ValueId v : op.operands) in.push_back(&plan.tensors[v]);
    ValueId r = op.results[0];
    const TensorLayout& rl = plan.tensors[r];
    // An input the op frees after its halo step is live with the circular buffers but not with
    // the result: the op needs the larger of the two beside the other live tensors.
    ValueId freed = r;
    uint64_t freed_extra = 0;
    if (base.deallocate_activation && s.last_use(op.operands[0]) == pos &&
        plan.tensors[op.operands[0]].in_l1()) {
      freed = op.operands[0];
      uint64_t x = l1_bytes_per_core(g.values[freed], plan.tensors[freed], chip);
      uint64_t y = rl.in_l1() ? l1_bytes_per_core(g.values[r], rl, chip) : 0;
      freed_extra = x > y ? x - y : 0;
    }
    uint64_t live = live_l1_bytes(g, s, plan, pos, r, freed, chip) + freed_extra;
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
          device::OpLaunch{op.kind, op.name, std::span(inp, n), std::span(outp, 1), base}, chip,
          usable > live ? usable - live : 0);
    }
    struct Ranked {
      uint64_t cost, need;
      device::OpConfig config;
    };
    std::vector<Ranked> ranked;  // valid configs, largest height first, then smallest split
    for (const device::OpConfig& c : configs) {
      device::OpValidation v = q.validate(op.kind, op.name, op.operands, in, r, rl, c);
      if (!v.ok) continue;
      ranked.push_back({q.cost(op.kind, op.name, op.operands, in, r, rl, c),
                        v.cb_bytes_per_core + v.output_l1_bytes_per_core + live, c});
    }
    if (ranked.empty()) continue;  // fit_and_validate reports the op OpModel rejects.
    // Cheapest first; ties keep the larger height and smaller split (earlier in `ranked`).
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
