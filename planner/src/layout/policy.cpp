// The layout pipeline around the policies: materializing moves, L1 spill management, fitting.
#include "meshplan/planner/policy.hpp"

#include <algorithm>
#include <functional>
#include <sstream>
#include <unordered_set>

#include "layout/plan_packed.hpp"
#include "meshplan/planner/df_sharding.hpp"
#include "meshplan/planner/memory_plan.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/schedule.hpp"
#include "meshplan/planner/spill_dp.hpp"

namespace meshplan::planner {

namespace {

// Appends a value named after `base` with `suffix`, unique among `taken`.
ValueId add_value(Graph& g, std::unordered_set<std::string>& taken, const Value& like,
                  const std::string& suffix) {
  Value v;
  v.name = like.name + suffix;
  for (int k = 2; taken.count(v.name); ++k) v.name = like.name + suffix + std::to_string(k);
  taken.insert(v.name);
  v.shape = like.shape;
  v.dtype = like.dtype;
  g.values.push_back(std::move(v));
  return static_cast<ValueId>(g.values.size() - 1);
}

std::string unique_op_name(std::unordered_set<std::string>& taken, const std::string& want) {
  std::string name = want;
  for (int k = 2; taken.count(name); ++k) name = want + std::to_string(k);
  taken.insert(name);
  return name;
}

// Names taken in a graph being extended with moves, collected on the first move only: most plans
// insert none, and hashing 20,000 names per pass showed in the planning profile.
class TakenNames {
 public:
  using FillOps = std::function<void(std::unordered_set<std::string>&)>;
  explicit TakenNames(const Graph& g)
      : values_of_(g.values), fill_ops_([&g](std::unordered_set<std::string>& ops) {
          for (const Op& op : g.ops) ops.insert(op.name);
        }) {}
  /// Value names from `values`, op names from `fill_ops` (called once, on the first move).
  TakenNames(const std::vector<Value>& values, FillOps fill_ops)
      : values_of_(values), fill_ops_(std::move(fill_ops)) {}
  std::unordered_set<std::string>& values() {
    fill();
    return values_;
  }
  std::unordered_set<std::string>& ops() {
    fill();
    return ops_;
  }

 private:
  void fill() {
    if (filled_) return;
    filled_ = true;
    for (const Value& v : values_of_) values_.insert(v.name);
    fill_ops_(ops_);
  }
  const std::vector<Value>& values_of_;
  FillOps fill_ops_;
  bool filled_ = false;
  std::unordered_set<std::string> values_, ops_;
};

// The check a planned graph needs instead of validate(): its ops are built in schedule order from
// a validated graph (shapes copied, names made unique), so what remains is to set producers and
// prove every operand is defined before it is read. validate() re-infers every shape through
// name maps and was a third of greedy's planning time on 10,000 ops.
Status check_planned(Graph& g) {
  for (Value& v : g.values) v.producer = kNoOp;
  for (OpId o = 0; o < g.ops.size(); ++o) {
    for (ValueId v : g.ops[o].operands)
      if (v >= g.values.size() || (g.values[v].producer == kNoOp && g.values[v].argument < 0))
        return fail(ErrorCode::internal, "planned graph '", g.name, "': op '", g.ops[o].name,
                    "' reads a value not defined before it");
    for (ValueId r : g.ops[o].results) {
      if (r >= g.values.size() || g.values[r].producer != kNoOp || g.values[r].argument >= 0)
        return fail(ErrorCode::internal, "planned graph '", g.name, "': op '", g.ops[o].name,
                    "' defines a value already defined");
      g.values[r].producer = o;
    }
  }
  for (ValueId v : g.outputs)
    if (v >= g.values.size() || (g.values[v].producer == kNoOp && g.values[v].argument < 0))
      return fail(ErrorCode::internal, "planned graph '", g.name, "': an output is not defined");
  return {};
}

device::OpConfig move_config(const TensorLayout& from, const TensorLayout& to,
                             const device::ChipDesc& chip) {
  return config_for(device::OpConfig{}, to.in_l1() ? to : from, chip);
}

// materialize(); `configs`, when given, holds d.configs for the result to take instead of a copy
// (every op's 440-byte config, fresh pages on 100,000 ops) when no move is inserted among them.
Result<LayoutResult> materialize_taking(const Graph& g, const LayoutDecision& d,
                                        std::vector<device::OpConfig>* configs) {
  LayoutResult r;
  r.graph.name = g.name;
  r.graph.values = g.values;
  r.graph.arguments = g.arguments;
  r.graph.outputs = g.outputs;
  r.graph.mesh = g.mesh;
  r.graph.argument_shards = g.argument_shards;
  r.graph.output_shards = g.output_shards;
  r.layout.tensors = d.tensors;
  TakenNames names(g);
  std::vector<std::vector<const LayoutDecision::Reshard*>> before(g.ops.size());
  for (const auto& rs : d.reshards) before[rs.before].push_back(&rs);
  device::ChipDesc chip_grid;  // only grid_x/grid_y of the decision's configs matter for moves
  std::vector<bool> spilled(g.values.size(), false);
  for (ValueId v : d.spills) spilled[v] = true;
  std::vector<ValueId> current(g.values.size());
  for (ValueId v = 0; v < g.values.size(); ++v) current[v] = v;
  size_t planned_ops = g.ops.size() + d.reshards.size() + d.spills.size();
  r.graph.ops.reserve(planned_ops);
  r.graph.values.reserve(g.values.size() + d.reshards.size() + d.spills.size());
  const bool taken = configs && d.reshards.empty() && d.spills.empty();
  if (taken)
    r.layout.configs = std::move(*configs);  // d.configs is not read below: no move to size
  else
    r.layout.configs.reserve(planned_ops);
  r.layout.tensors.reserve(g.values.size() + d.reshards.size() + d.spills.size());
  r.origin.reserve(planned_ops);
  for (OpId o = 0; o < g.ops.size(); ++o) {
    Op op = g.ops[o];
    for (ValueId& v : op.operands) v = current[v];
    for (const auto* rs : before[o]) {
      ValueId src = op.operands[rs->operand];  // a spill's copy when the value was spilled
      ValueId dst = add_value(r.graph, names.values(), r.graph.values[src], ".reshard");
      r.layout.tensors.push_back(rs->to);
      Op move;
      move.name = unique_op_name(names.ops(), op.name + ".reshard" + std::to_string(rs->operand));
      move.kind = device::OpKind::to_memory_config;
      move.operands = {src};
      move.results = {dst};
      device::OpConfig c;
      const TensorLayout& from = r.layout.tensors[src];
      const TensorLayout& l1 = rs->to.in_l1() ? rs->to : from;
      c = config_for(device::OpConfig{}, l1, chip_grid);
      if (l1.memory == device::MemLayout::interleaved) {
        c.grid_x = d.configs[o].grid_x;
        c.grid_y = d.configs[o].grid_y;
      }
      r.graph.ops.push_back(std::move(move));
      r.layout.configs.push_back(c);
      r.origin.push_back(OpOrigin::reshard);
      ++r.reshards;
      op.operands[rs->operand] = dst;
    }
    ValueId result = op.results[0];
    if (!d.kept_configs.empty()) {
      r.kept_configs.resize(r.graph.ops.size(), false);
      r.kept_configs.push_back(d.kept_configs[o]);
    }
    r.graph.ops.push_back(std::move(op));
    if (!taken) r.layout.configs.push_back(d.configs[o]);
    r.origin.push_back(OpOrigin::graph);
    if (spilled[result] && d.tensors[result].in_l1()) {
      ValueId copy = add_value(r.graph, names.values(), g.values[result], ".spill");
      r.layout.tensors.push_back(interleaved_layout(g.values[result], device::BufferType::dram));
      Op move;
      move.name = unique_op_name(names.ops(), g.values[result].name + ".spill");
      move.kind = device::OpKind::to_memory_config;
      move.operands = {result};
      move.results = {copy};
      r.graph.ops.push_back(std::move(move));
      r.layout.configs.push_back(config_for(device::OpConfig{}, d.tensors[result], chip_grid));
      if (d.tensors[result].memory == device::MemLayout::interleaved)
        r.layout.configs.back() = d.configs[o];
      r.origin.push_back(OpOrigin::spill);
      ++r.spills;
      current[result] = copy;
    }
  }
  for (ValueId& v : r.graph.outputs) v = current[v];
  if (!r.kept_configs.empty()) r.kept_configs.resize(r.graph.ops.size(), false);
  MESHPLAN_TRY(check_planned(r.graph));
  return r;
}

}  // namespace

Result<LayoutResult> materialize(const Graph& g, const LayoutDecision& d) {
  return materialize_taking(g, d, nullptr);
}

uint32_t LayoutResult::l1_outputs() const {
  uint32_t n = 0;
  for (OpId o = 0; o < graph.ops.size(); ++o)
    if (origin[o] == OpOrigin::graph && layout.tensors[graph.ops[o].results[0]].in_l1()) ++n;
  return n;
}

uint64_t LayoutResult::estimated_ns(const device::ChipDesc& chip) const {
  OpQuery q(graph, chip, mesh);
  uint64_t total = 0;
  for (OpId o = 0; o < graph.ops.size(); ++o) {
    const Op& op = graph.ops[o];
    std::vector<const TensorLayout*> in;
    for (ValueId v : op.operands) in.push_back(&layout.tensors[v]);
    total += q.cost(op.kind, op.name, op.operands, in, op.results[0], layout.tensors[op.results[0]],
                    layout.configs[o]);
  }
  return total;
}

std::string LayoutResult::print() const {
  std::ostringstream out;
  constexpr const char* kOrigin[] = {"op", "reshard", "spill"};
  for (OpId o = 0; o < graph.ops.size(); ++o) {
    const Op& op = graph.ops[o];
    out << o << ": " << kOrigin[static_cast<int>(origin[o])] << " " << op.name << " -> %"
        << graph.values[op.results[0]].name << " " << layout_string(layout.tensors[op.results[0]])
        << " grid " << layout.configs[o].grid_x << "x" << layout.configs[o].grid_y << "\n";
  }
  out << "spills " << spills << " reshards " << reshards << "\n";
  return out.str();
}

Result<LayoutResult> manage_spills(LayoutResult in, const device::ChipDesc& chip,
                                   bool results_first) {
  const Graph& g = in.graph;
  Schedule s = Schedule::build(g);
  int n = static_cast<int>(g.ops.size());
  const size_t nv = g.values.size();
  const uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  // Uses of every value, by position, ascending; graph outputs are used at n (the end).
  std::vector<std::vector<int>> uses(g.values.size());
  for (int p = 0; p < n; ++p)
    for (ValueId v : g.ops[p].operands)
      if (uses[v].empty() || uses[v].back() != p) uses[v].push_back(p);
  for (ValueId v : g.outputs) uses[v].push_back(n);
  auto next_use = [&](ValueId v, int from) {
    auto it = std::lower_bound(uses[v].begin(), uses[v].end(), from);
    return it == uses[v].end() ? n + 1 : *it;
  };
  std::vector<uint64_t> size(g.values.size(), 0);
  for (ValueId v = 0; v < g.values.size(); ++v)
    size[v] = l1_bytes_per_core(g.values[v], in.layout.tensors[v], chip);

  LayoutResult out;
  out.mesh = in.mesh;
  out.graph.name = g.name;
  // The values and ops move to the result (spill copies are appended to them); from here on
  // the original values are out.graph.values[v] for v < nv and op p is in.graph.ops[p] until
  // it is moved.
  out.graph.values = std::move(in.graph.values);
  const std::vector<Value>& values = out.graph.values;
  OpQuery q(out.graph, chip, in.mesh);
  out.graph.arguments = g.arguments;
  out.graph.mesh = g.mesh;
  out.graph.argument_shards = g.argument_shards;
  out.graph.output_shards = g.output_shards;
  out.layout.tensors = std::move(in.layout.tensors);
  out.spills = in.spills;
  out.reshards = in.reshards;
  out.graph.ops.reserve(g.ops.size());
  out.origin.reserve(g.ops.size());
  // The ops' configs stay in their vector, changed in place, and the spill moves' configs go to
  // their own: out.layout.configs is assembled at the end, and is the ops' vector itself when no
  // move was added (a fresh copy of every op's 440-byte config was a tenth of this pass on 100,000
  // ops, most of it first touches of new pages). slot[e]: where out.graph.ops[e]'s config is.
  std::vector<device::OpConfig> op_configs = std::move(in.layout.configs);
  std::vector<device::OpConfig> move_configs;
  constexpr uint32_t kMoveSlot = 0x80000000u;  // slot bit: index into move_configs
  std::vector<uint32_t> slot;
  slot.reserve(g.ops.size());
  auto config_at = [&](OpId e) -> device::OpConfig& {
    return slot[e] & kMoveSlot ? move_configs[slot[e] & ~kMoveSlot] : op_configs[slot[e]];
  };
  int at = 0;                   // the op being placed; ops before it were moved to out.graph
  const Op* placing = nullptr;  // that op, once moved out of in.graph
  TakenNames names(values, [&](std::unordered_set<std::string>& ops) {
    for (const Op& op : out.graph.ops) ops.insert(op.name);
    if (placing) ops.insert(placing->name);
    for (int p = placing ? at + 1 : at; p < n; ++p) ops.insert(in.graph.ops[p].name);
  });
  std::vector<ValueId> current(nv);
  for (ValueId v = 0; v < nv; ++v) current[v] = v;
  std::vector<ValueId> live;  // original ids of live L1 tensors
  uint64_t live_bytes = 0;
  auto drop = [&](ValueId v) {
    auto it = std::find(live.begin(), live.end(), v);
    if (it != live.end()) {
      live.erase(it);
      live_bytes -= size[v];
    }
  };
  for (ValueId a : g.arguments)
    if (out.layout.tensors[a].in_l1()) {
      live.push_back(a);
      live_bytes += size[a];
    }
  // Moves original value `v` to DRAM before the op being placed; later readers read the copy.
  auto move_to_dram = [&](ValueId v) {
    ValueId copy = add_value(out.graph, names.values(), values[v], ".spill");
    out.layout.tensors.push_back(interleaved_layout(values[v], device::BufferType::dram));
    Op move;
    move.name = unique_op_name(names.ops(), values[v].name + ".spill");
    move.kind = device::OpKind::to_memory_config;
    move.operands = {current[v]};
    move.results = {copy};
    out.graph.ops.push_back(std::move(move));
    slot.push_back(static_cast<uint32_t>(move_configs.size()) | kMoveSlot);
    move_configs.push_back(
        move_config(out.layout.tensors[current[v]], out.layout.tensors[copy], chip));
    out.origin.push_back(OpOrigin::spill);
    current[v] = copy;
    drop(v);
  };
  std::vector<const TensorLayout*> in_layouts;  // reused across ops
  for (int p = 0; p < n; ++p) {
    at = p;
    Op op = std::move(in.graph.ops[p]);
    placing = &op;
    device::OpConfig& config = op_configs[p];
    ValueId result = op.results[0];
    in_layouts.clear();
    for (ValueId v : op.operands) in_layouts.push_back(&out.layout.tensors[current[v]]);
    device::OpValidation val = q.validate(op.kind, op.name, op.operands, in_layouts, result,
                                          out.layout.tensors[result], config);
    if (!val.ok) {
      // An earlier spill or demotion moved one operand to DRAM where the op needs its operands
      // alike (tt-metal's concat takes all of them sharded or all interleaved): the operands it
      // reads from L1 move to DRAM too, and if that is not enough it writes DRAM.
      for (ValueId v : op.operands)
        if (out.layout.tensors[current[v]].in_l1()) {
          ++out.spills;
          move_to_dram(v);
        }
      in_layouts.clear();
      for (ValueId v : op.operands) in_layouts.push_back(&out.layout.tensors[current[v]]);
      val = q.validate(op.kind, op.name, op.operands, in_layouts, result,
                       out.layout.tensors[result], config);
      if (!val.ok && out.layout.tensors[result].in_l1()) {
        ++out.spills;
        out.layout.tensors[result] = interleaved_layout(values[result], device::BufferType::dram);
        config = config_for(config, out.layout.tensors[result], chip);
        size[result] = 0;
        val = q.validate(op.kind, op.name, op.operands, in_layouts, result,
                         out.layout.tensors[result], config);
      }
    }
    if (!val.ok)
      return fail(ErrorCode::internal, "spill management: ",
                  q.explain(op.kind, op.name, op.operands, in_layouts, result,
                            out.layout.tensors[result], config)
                      .reason);
    uint64_t cb = val.cb_bytes_per_core;
    bool result_l1 = out.layout.tensors[result].in_l1();
    uint64_t need = cb + live_bytes + (result_l1 ? size[result] : 0);
    while (need > usable) {
      // Victim: the L1 tensor whose next use is farthest; ties: larger, then newer.
      ValueId victim = kNoOp;
      int victim_use = -1;
      auto consider = [&](ValueId v, int use) {
        if (victim == kNoOp || use > victim_use ||
            (use == victim_use &&
             (size[v] > size[victim] || (size[v] == size[victim] && v > victim)))) {
          victim = v;
          victim_use = use;
        }
      };
      if (result_l1) consider(result, next_use(result, p + 1));
      if (!results_first || victim == kNoOp)
        for (ValueId v : live) consider(v, next_use(v, p));
      if (victim == kNoOp) break;
      ++out.spills;
      if (victim == result) {
        // Evicted at birth: the op writes DRAM directly.
        out.layout.tensors[result] = interleaved_layout(values[result], device::BufferType::dram);
        if (config.grid_x != chip.grid_x || config.grid_y != chip.grid_y)
          config = config_for(config, out.layout.tensors[result], chip);
        result_l1 = false;
        need -= size[result];
        size[result] = 0;
        continue;
      }
      // Not read since it was produced, or read but cheaper to have lived in DRAM all along than
      // to move now (OpModel's costs of its producer and readers so far against the move's):
      // its producer writes DRAM directly (no move).
      OpId producer = values[victim].producer;
      auto demote_is_cheaper = [&] {
        OpQuery qo(out.graph, chip, out.mesh);
        auto cost_of_touching = [&] {
          uint64_t total = 0;
          for (OpId e = 0; e < out.graph.ops.size(); ++e) {
            const Op& x = out.graph.ops[e];
            if (x.results[0] != victim &&
                std::find(x.operands.begin(), x.operands.end(), victim) == x.operands.end())
              continue;
            std::vector<const TensorLayout*> in;
            for (ValueId v : x.operands) in.push_back(&out.layout.tensors[v]);
            total += qo.cost(x.kind, x.name, x.operands, in, x.results[0],
                             out.layout.tensors[x.results[0]], config_at(e));
          }
          return total;
        };
        uint64_t now = cost_of_touching();
        TensorLayout saved = out.layout.tensors[victim];
        out.layout.tensors[victim] = interleaved_layout(values[victim], device::BufferType::dram);
        uint64_t demoted = cost_of_touching();
        out.layout.tensors[victim] = saved;
        return demoted - std::min(demoted, now) <=
               qo.move_cost(victim, saved,
                            interleaved_layout(values[victim], device::BufferType::dram));
      };
      if (producer != kNoOp &&
          (next_use(victim, s.defined_at(victim) + 1) >= p || demote_is_cheaper())) {
        out.layout.tensors[victim] = interleaved_layout(values[victim], device::BufferType::dram);
        for (OpId e = 0; e < out.graph.ops.size(); ++e)
          if (out.graph.ops[e].results[0] == victim)
            config_at(e) = config_for(config_at(e), out.layout.tensors[victim], chip);
        drop(victim);
        need -= size[victim];
        size[victim] = 0;
        continue;
      }
      // Move the victim to DRAM before this op; later readers read the copy.
      move_to_dram(victim);
      need -= size[victim];
    }
    for (ValueId& v : op.operands) v = current[v];
    placing = nullptr;
    at = p + 1;
    out.graph.ops.push_back(std::move(op));
    slot.push_back(static_cast<uint32_t>(p));
    out.origin.push_back(in.origin[p]);
    if (result_l1) {
      live.push_back(result);
      live_bytes += size[result];
    }
    for (ValueId v : s.dying_at(p)) drop(v);
  }
  if (move_configs.empty()) {
    out.layout.configs = std::move(op_configs);
  } else {
    out.layout.configs.reserve(slot.size());
    for (OpId e = 0; e < slot.size(); ++e) out.layout.configs.push_back(std::move(config_at(e)));
  }
  out.graph.outputs = g.outputs;
  for (ValueId& v : out.graph.outputs) v = current[v];
  MESHPLAN_TRY(check_planned(out.graph));
  return out;
}

namespace {

// fit_and_validate(); `last` receives the packing of the fitted plan on its schedule `s`.
Status fit_packed(LayoutResult& r, const device::ChipDesc& chip, L1Packing& last, Schedule& s) {
  for (;;) {
    // Matmul programs on the layouts as they now stand (demotions below can change them).
    MESHPLAN_TRY(choose_matmul_programs(r.graph, r.layout, chip, r.kept_configs));
    MESHPLAN_TRY(choose_conv_blocks(r.graph, r.layout, chip, r.kept_configs));
    s = Schedule::build(r.graph);
    last = MESHPLAN_TRY(pack_l1(r.graph, s, r.layout, chip));
    if (last.unplaced.empty()) break;
    // Demote what did not pack; results of sharded-grid ops go back to the full grid.
    bool frees_inside =
        std::any_of(r.layout.configs.begin(), r.layout.configs.end(),
                    [](const device::OpConfig& c) { return c.deallocate_activation; });
    for (ValueId v : last.unplaced) {
      r.layout.tensors[v] = interleaved_layout(r.graph.values[v], device::BufferType::dram);
      OpId producer = r.graph.values[v].producer;
      if (producer != kNoOp) {
        r.layout.configs[producer] =
            config_for(r.layout.configs[producer], r.layout.tensors[v], chip);
        // Its kept program or blocks were chosen for the layout it loses: chosen again.
        if (producer < r.kept_configs.size()) r.kept_configs[producer] = false;
      }
      // A conv2d frees only an L1 input inside itself: one that chose to (no attribute states
      // it) keeps a demoted input to its end.
      for (OpId o = 0; frees_inside && o < r.graph.ops.size(); ++o) {
        const Op& op = r.graph.ops[o];
        if (r.layout.configs[o].deallocate_activation && !op.operands.empty() &&
            op.operands[0] == v && !op.attribute("deallocate_activation"))
          r.layout.configs[o].deallocate_activation = false;
      }
      ++r.spills;
    }
  }
  // pack_l1() validated every op on the chip's own model: without a mesh to cost collectives
  // on, that is this query's model, so its verdicts stand.
  if (!r.mesh) return {};
  OpQuery q(r.graph, chip, r.mesh);
  for (OpId o = 0; o < r.graph.ops.size(); ++o) {
    const Op& op = r.graph.ops[o];
    std::vector<const TensorLayout*> in;
    for (ValueId v : op.operands) in.push_back(&r.layout.tensors[v]);
    device::OpValidation v = q.validate(op.kind, op.name, op.operands, in, op.results[0],
                                        r.layout.tensors[op.results[0]], r.layout.configs[o]);
    if (!v.ok)
      return fail(ErrorCode::internal, "layout plan: ",
                  q.explain(op.kind, op.name, op.operands, in, op.results[0],
                            r.layout.tensors[op.results[0]], r.layout.configs[o])
                      .reason);
  }
  return {};
}

}  // namespace

Status fit_and_validate(LayoutResult& r, const device::ChipDesc& chip) {
  L1Packing packing;
  Schedule schedule;
  return fit_packed(r, chip, packing, schedule);
}

std::vector<std::string_view> policy_names() {
  return {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"};
}

Result<LayoutResult> plan_layout(const Graph& g, const device::ChipDesc& chip,
                                 const PlannerOptions& options) {
  return plan_layout_until(g, chip, options, LayoutStage::fitted);
}

namespace {

Result<LayoutResult> plan_layout_stage(const Graph& g, const device::ChipDesc& chip,
                                       const PlannerOptions& options, LayoutStage stop,
                                       L1Packing& packing, Schedule& schedule) {
  // A tensor larger than all of L1 and DRAM cannot be planned by any policy.
  for (const Value& v : g.values) {
    TensorLayout dram = interleaved_layout(v, device::BufferType::dram);
    device::TensorPlacement p = placement_of(v, dram);
    uint64_t per_bank = device::interleaved_bytes_per_bank(device::page_count(p), p.page_size,
                                                           chip.dram_banks, chip.dram_alignment);
    if (per_bank > chip.dram_bank_size)
      return fail(ErrorCode::resource_exhausted, "tensor '", v.name, "' ", shape_string(v.shape),
                  " needs ", per_bank, " bytes per DRAM bank, more than the ", chip.dram_bank_size,
                  " of each of ", chip.dram_banks,
                  " banks (and more than all of L1): no policy can place it");
  }
  if (options.spill != "belady" && options.spill != "dp")
    return fail(ErrorCode::invalid_argument, "unknown spill selection '", options.spill,
                "' (belady, dp)");
  Overrides overrides = MESHPLAN_TRY(parse_overrides(g, chip, options));
  // --spill=dp also keeps Belady's plan: the DP scores conv2d at the block heights OpQuery picks
  // on its own, while fit_and_validate() below picks them again around the L1 tensors each spill
  // choice leaves live, so the two fitted plans are compared once more at the end.
  std::optional<LayoutResult> belady;
  auto spill = [&](LayoutResult planned, bool results_first) -> Result<LayoutResult> {
    if (options.spill == "dp") {
      SpillDpOptions dp;
      dp.belady_results_first = results_first;
      dp.keep_belady = true;
      SpillDpStats stats;
      LayoutResult chosen = MESHPLAN_TRY(manage_spills_dp(planned, chip, &stats, dp));
      belady = std::move(stats.belady_plan);
      return chosen;
    }
    return manage_spills(std::move(planned), chip, results_first);
  };
  // Every result carries the mesh its collectives are costed on through spills and fitting.
  // The policy's notes are set on the final result (spill passes build new results).
  std::vector<std::string> notes;
  auto materialized = [&](const LayoutDecision& d,
                          std::vector<device::OpConfig>* take = nullptr) -> Result<LayoutResult> {
    LayoutResult m = MESHPLAN_TRY(materialize_taking(g, d, take));
    m.mesh = options.mesh;
    notes = d.notes;
    return m;
  };
  // A result returned before fitting (plan_layout_until) carries the notes as well.
  auto with_notes = [&](LayoutResult m) {
    m.notes = notes;
    return m;
  };
  // After fitting a plan the DP chose: Belady's plan instead, fitted, when it is cheaper.
  auto keep_belady_if_cheaper = [&](LayoutResult& r, L1Packing& p, Schedule& s) -> Status {
    if (!belady || r.spill_selection != SpillSelection::dp_exact) return {};
    L1Packing belady_packing;
    Schedule belady_schedule;
    MESHPLAN_TRY(fit_packed(*belady, chip, belady_packing, belady_schedule));
    if (belady->estimated_ns(chip) < r.estimated_ns(chip)) {
      uint64_t states = r.spill_dp_states;
      r = std::move(*belady);
      p = std::move(belady_packing);
      s = std::move(belady_schedule);
      r.spill_selection = SpillSelection::dp_kept_belady;
      r.spill_dp_states = states;
    }
    return {};
  };
  LayoutResult r;
  if (options.policy == "dram") {
    LayoutDecision d = MESHPLAN_TRY(LayoutDecision::all_dram(g, chip));
    MESHPLAN_TRY(apply_overrides(g, chip, overrides, d));
    r = MESHPLAN_TRY(materialized(d));
  } else if (options.policy == "l1-interleaved" || options.policy == "greedy") {
    bool sharded = options.policy == "greedy";
    LayoutDecision d = MESHPLAN_TRY(greedy_propagation(g, chip, options, overrides, sharded));
    r = MESHPLAN_TRY(materialized(d, &d.configs));
    if (stop == LayoutStage::decided) return with_notes(std::move(r));
    r = MESHPLAN_TRY(spill(std::move(r), /*results_first=*/!sharded));
  } else if (options.policy == "beam") {
    LayoutDecision d = MESHPLAN_TRY(beam_search(g, chip, options, overrides));
    repair_readers(g, chip, options, overrides, d);
    // Beam contains greedy's choice (seed 002 §5): its K entries per op can still lose greedy's
    // whole plan (an op's cheapest entry whose readers then need reshards, or spills that only the
    // fitted plan shows), so greedy's decision is planned too and the cheaper fitted plan kept.
    LayoutDecision greedy = MESHPLAN_TRY(greedy_propagation(g, chip, options, overrides, true));
    auto same_reshards = [](const LayoutDecision& a, const LayoutDecision& b) {
      return std::equal(a.reshards.begin(), a.reshards.end(), b.reshards.begin(), b.reshards.end(),
                        [](const LayoutDecision::Reshard& x, const LayoutDecision::Reshard& y) {
                          return x.before == y.before && x.operand == y.operand && x.to == y.to;
                        });
    };
    if (!(greedy.tensors == d.tensors && same_reshards(greedy, d))) {
      // Both fitted (into `packing` and `schedule` for beam's, as the common tail below does).
      auto fitted = [&](const LayoutDecision& x, L1Packing& p, Schedule& s) -> Result<LayoutResult> {
        LayoutResult f = MESHPLAN_TRY(materialized(x));
        f = MESHPLAN_TRY(spill(std::move(f), /*results_first=*/false));
        MESHPLAN_TRY(fit_packed(f, chip, p, s));
        MESHPLAN_TRY(keep_belady_if_cheaper(f, p, s));
        return f;
      };
      LayoutResult beam_fit = MESHPLAN_TRY(fitted(d, packing, schedule));
      L1Packing greedy_packing;
      Schedule greedy_schedule;
      LayoutResult greedy_fit = MESHPLAN_TRY(fitted(greedy, greedy_packing, greedy_schedule));
      const uint64_t beam_ns = beam_fit.estimated_ns(chip), greedy_ns = greedy_fit.estimated_ns(chip);
      const bool keep_greedy = greedy_ns < beam_ns;
      if (keep_greedy) {
        greedy.notes.insert(greedy.notes.begin(), d.notes.begin(), d.notes.end());
        greedy.notes.push_back(str("beam: greedy's plan (", greedy_ns,
                                   " ns) is cheaper than beam's (", beam_ns, " ns): kept"));
        d = std::move(greedy);
      }
      notes = d.notes;
      if (stop == LayoutStage::fitted) {
        if (keep_greedy) {
          packing = std::move(greedy_packing);
          schedule = std::move(greedy_schedule);
        }
        r = std::move(keep_greedy ? greedy_fit : beam_fit);
        MESHPLAN_TRY(check_overrides_held(g, overrides, r));
        r.notes = std::move(notes);
        return r;
      }
    }
    r = MESHPLAN_TRY(materialized(d));
    if (stop == LayoutStage::decided) return with_notes(std::move(r));
    r = MESHPLAN_TRY(spill(std::move(r), /*results_first=*/false));
  } else if (options.policy == "df-sharding") {
    // The legacy pipeline builds its chains on a DFS schedule and runs the ops in that order.
    Graph dfs = dfs_ordered(g);
    Overrides dfs_overrides = MESHPLAN_TRY(parse_overrides(dfs, chip, options));
    LayoutDecision d = MESHPLAN_TRY(df_sharding(dfs, chip, options, dfs_overrides));
    r = MESHPLAN_TRY(materialize(dfs, d));
    r.mesh = options.mesh;
    set_deallocate_activation(r, chip);
    notes = d.notes;
  } else {
    std::string known;
    for (auto name : policy_names()) known += (known.empty() ? "" : ", ") + std::string(name);
    return fail(ErrorCode::invalid_argument, "unknown policy '", options.policy,
                "' (policies: ", known, ")");
  }
  if (stop != LayoutStage::fitted) return with_notes(std::move(r));
  MESHPLAN_TRY(fit_packed(r, chip, packing, schedule));
  MESHPLAN_TRY(keep_belady_if_cheaper(r, packing, schedule));
  MESHPLAN_TRY(check_overrides_held(g, overrides, r));
  r.notes = std::move(notes);
  return r;
}

}  // namespace

Result<LayoutResult> plan_layout_until(const Graph& g, const device::ChipDesc& chip,
                                       const PlannerOptions& options, LayoutStage stop) {
  L1Packing packing;
  Schedule schedule;
  return plan_layout_stage(g, chip, options, stop, packing, schedule);
}

Result<LayoutResult> plan_layout_packed(const Graph& g, const device::ChipDesc& chip,
                                        const PlannerOptions& options, L1Packing& packing,
                                        Schedule& schedule) {
  return plan_layout_stage(g, chip, options, LayoutStage::fitted, packing, schedule);
}

}  // namespace meshplan::planner
