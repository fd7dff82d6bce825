// Optimal L1 spill selection by dynamic programming over the schedule (seed 002 §5.8.2).
//
// Steps:
//  1. The L1 tensors of the planned graph get a slot each while they live (at most 64 at once);
//     a DP state is the bitmask of live slots still in L1, before an op runs.
//  2. At op p, from every state: the op's result stays in L1 or its producer writes DRAM; the
//     op's operands read L1 or the DRAM copy as the state says; OpModel validates the launch and
//     gives its circular buffers and cost; the state survives if circular buffers plus the L1
//     tensors live at p fit the usable L1. After the op, each L1 tensor the op read and that
//     lives on may be moved to DRAM (moving right after a read is never worse than moving later:
//     the move costs the same and frees the space sooner).
//  3. The cheapest state after the last op is traced back through back-pointers into a
//     SpillChoice and applied. Total cost = sum of OpModel::cost over every op and move: the
//     simulated time LayoutResult::estimated_ns() reports.
#include "meshplan/planner/spill_dp.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <unordered_set>

#include "meshplan/planner/schedule.hpp"

namespace meshplan::planner {

namespace {

// Reading positions of every value, ascending and unique; graph outputs read at n.
std::vector<std::vector<uint32_t>> reads_of(const Graph& g) {
  uint32_t n = static_cast<uint32_t>(g.ops.size());
  std::vector<std::vector<uint32_t>> reads(g.values.size());
  for (uint32_t p = 0; p < n; ++p)
    for (ValueId v : g.ops[p].operands)
      if (reads[v].empty() || reads[v].back() != p) reads[v].push_back(p);
  for (ValueId v : g.outputs)
    if (reads[v].empty() || reads[v].back() != n) reads[v].push_back(n);
  return reads;
}

ValueId add_value(Graph& g, std::unordered_set<std::string>& taken, const Value& like) {
  Value v;
  v.name = like.name + ".spill";
  for (int k = 2; taken.count(v.name); ++k) v.name = like.name + ".spill" + std::to_string(k);
  taken.insert(v.name);
  v.shape = like.shape;
  v.dtype = like.dtype;
  g.values.push_back(std::move(v));
  return static_cast<ValueId>(g.values.size() - 1);
}

// The config of an op whose L1 result is demoted to DRAM (as manage_spills() adjusts it).
device::OpConfig demoted_config(const device::OpConfig& c, const TensorLayout& dram,
                                const device::ChipDesc& chip) {
  if (c.grid_x != chip.grid_x || c.grid_y != chip.grid_y) return config_for(c, dram, chip);
  return c;
}

}  // namespace

SpillChoice spill_choice_space(const LayoutResult& planned) {
  SpillChoice c;
  auto reads = reads_of(planned.graph);
  for (ValueId v = 0; v < planned.graph.values.size(); ++v) {
    if (!planned.layout.tensors[v].in_l1()) continue;
    c.tensors.push_back(v);
    c.reads.push_back(static_cast<uint32_t>(reads[v].size()));
    c.l1_reads.push_back(static_cast<int32_t>(reads[v].size()));
  }
  return c;
}

Result<LayoutResult> apply_spill_choice(const LayoutResult& in, const SpillChoice& choice,
                                        const device::ChipDesc& chip) {
  const Graph& g = in.graph;
  const uint32_t n = static_cast<uint32_t>(g.ops.size());
  auto reads = reads_of(g);
  LayoutResult out;
  out.graph.name = g.name;
  out.graph.values = g.values;
  out.graph.arguments = g.arguments;
  out.layout.tensors = in.layout.tensors;
  out.spills = in.spills;
  out.reshards = in.reshards;
  std::vector<device::OpConfig> configs = in.layout.configs;
  // Moves to place before op 0 (arguments) and after op p.
  std::vector<ValueId> at_start;
  std::vector<std::vector<ValueId>> after(n);
  for (size_t i = 0; i < choice.tensors.size(); ++i) {
    ValueId v = choice.tensors[i];
    int32_t k = choice.l1_reads[i];
    const Value& val = g.values[v];
    if (!in.layout.tensors[v].in_l1() || k < -1 || k > static_cast<int32_t>(reads[v].size()))
      return fail(ErrorCode::invalid_argument, "spill choice: tensor '", val.name, "' choice ", k,
                  " is outside its ", reads[v].size(), " reads or it is not in L1");
    if (k == static_cast<int32_t>(reads[v].size())) continue;
    ++out.spills;
    if (k == -1) {
      if (val.producer == kNoOp)
        return fail(ErrorCode::invalid_argument, "spill choice: argument '", val.name,
                    "' has no producer to write DRAM");
      out.layout.tensors[v] = interleaved_layout(val, device::BufferType::dram);
      configs[val.producer] = demoted_config(configs[val.producer], out.layout.tensors[v], chip);
      continue;
    }
    if (k == 0 && val.producer == kNoOp)
      at_start.push_back(v);
    else
      after[k == 0 ? val.producer : reads[v][k - 1]].push_back(v);
  }
  std::unordered_set<std::string> value_names, op_names;
  for (const Value& v : g.values) value_names.insert(v.name);
  for (const Op& op : g.ops) op_names.insert(op.name);
  std::vector<ValueId> current(g.values.size());
  for (ValueId v = 0; v < g.values.size(); ++v) current[v] = v;
  auto move = [&](ValueId v) {
    ValueId copy = add_value(out.graph, value_names, g.values[v]);
    out.layout.tensors.push_back(interleaved_layout(g.values[v], device::BufferType::dram));
    Op m;
    std::string want = g.values[v].name + ".spill";
    m.name = want;
    for (int k = 2; op_names.count(m.name); ++k) m.name = want + std::to_string(k);
    op_names.insert(m.name);
    m.kind = device::OpKind::to_memory_config;
    m.operands = {current[v]};
    m.results = {copy};
    out.graph.ops.push_back(std::move(m));
    out.layout.configs.push_back(config_for(device::OpConfig{}, out.layout.tensors[v], chip));
    out.origin.push_back(OpOrigin::spill);
    current[v] = copy;
  };
  for (ValueId v : at_start) move(v);
  for (uint32_t p = 0; p < n; ++p) {
    Op op = g.ops[p];
    for (ValueId& v : op.operands) v = current[v];
    out.graph.ops.push_back(std::move(op));
    out.layout.configs.push_back(configs[p]);
    out.origin.push_back(in.origin[p]);
    std::sort(after[p].begin(), after[p].end());
    for (ValueId v : after[p]) move(v);
  }
  out.graph.outputs = g.outputs;
  for (ValueId& v : out.graph.outputs) v = current[v];
  MESHPLAN_TRY(validate(out.graph));
  return out;
}

namespace {

constexpr uint64_t kMaxStates = uint64_t{1} << 16;

struct Entry {
  uint64_t cost;
  uint32_t spills;   // ties in cost go to fewer spills
  uint64_t prev;     // state before the previous op
  uint64_t evicted;  // slots moved to DRAM after the previous op
  bool demoted;      // the previous op's result went to DRAM
};

}  // namespace

Result<LayoutResult> manage_spills_dp(const LayoutResult& in, const device::ChipDesc& chip,
                                      SpillDpStats* stats, uint32_t max_live) {
  SpillDpStats local;
  SpillDpStats& st = stats ? *stats : local;
  st = SpillDpStats{};
  const Graph& g = in.graph;
  const uint32_t n = static_cast<uint32_t>(g.ops.size());
  const uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  max_live = std::min<uint32_t>(max_live, 64);
  auto fallback = [&]() -> Result<LayoutResult> {
    st.exact = false;
    LayoutResult r = MESHPLAN_TRY(manage_spills(in, chip));
    st.cost_ns = r.estimated_ns(chip);
    return r;
  };
  SpillChoice space = spill_choice_space(in);
  auto reads = reads_of(g);
  // Candidate index per value, slots per position.
  std::vector<int> cand(g.values.size(), -1);
  for (size_t i = 0; i < space.tensors.size(); ++i) cand[space.tensors[i]] = static_cast<int>(i);
  std::vector<int> slot(space.tensors.size(), -1);
  std::vector<uint64_t> size(space.tensors.size());
  for (size_t i = 0; i < space.tensors.size(); ++i)
    size[i] =
        l1_bytes_per_core(g.values[space.tensors[i]], in.layout.tensors[space.tensors[i]], chip);
  // Last position a candidate is live at (n for outputs; its definition when unread).
  auto last_pos = [&](size_t i) {
    ValueId v = space.tensors[i];
    if (!reads[v].empty()) return reads[v].back();
    OpId producer = g.values[v].producer;
    return producer == kNoOp ? 0u : producer;
  };
  std::vector<std::vector<uint32_t>> dies_after(n + 1);
  uint64_t free_slots = max_live == 64 ? ~uint64_t{0} : (uint64_t{1} << max_live) - 1;
  auto take_slot = [&](size_t i) {
    if (!free_slots) return false;
    slot[i] = std::countr_zero(free_slots);
    free_slots &= free_slots - 1;
    return true;
  };
  // owner[p][s] = candidate in slot s at position p, computed on the fly below.
  std::vector<int> owner(64, -1);
  std::vector<uint32_t> args;
  for (size_t i = 0; i < space.tensors.size(); ++i)
    if (g.values[space.tensors[i]].producer == kNoOp) {
      if (!take_slot(i)) return fallback();
      owner[slot[i]] = static_cast<int>(i);
      args.push_back(static_cast<uint32_t>(i));
    }
  for (size_t i = 0; i < space.tensors.size(); ++i) dies_after[last_pos(i)].push_back(i);

  OpQuery q(g, chip);
  // Layout views for one state.
  auto bytes_of = [&](uint64_t mask) {
    uint64_t total = 0;
    for (uint64_t m = mask; m; m &= m - 1) total += size[owner[std::countr_zero(m)]];
    return total;
  };
  std::vector<std::map<uint64_t, Entry>> states(n + 1);
  {
    // Start: each L1 argument kept or moved to DRAM before the first op.
    uint32_t a = static_cast<uint32_t>(args.size());
    if (a > 16) return fallback();
    for (uint64_t sub = 0; sub < (uint64_t{1} << a); ++sub) {
      uint64_t mask = 0, cost = 0, evicted = 0;
      for (uint32_t j = 0; j < a; ++j) {
        uint64_t bit = uint64_t{1} << slot[args[j]];
        if (sub >> j & 1) {
          ValueId v = space.tensors[args[j]];
          cost += q.move_cost(v, in.layout.tensors[v],
                              interleaved_layout(g.values[v], device::BufferType::dram));
          evicted |= bit;
        } else {
          mask |= bit;
        }
      }
      states[0].emplace(
          mask, Entry{cost, static_cast<uint32_t>(std::popcount(evicted)), 0, evicted, false});
    }
  }
  std::vector<TensorLayout> operand_layouts;
  std::vector<const TensorLayout*> in_ptrs;
  for (uint32_t p = 0; p < n; ++p) {
    const Op& op = g.ops[p];
    ValueId r = op.results[0];
    int rc = cand[r];
    if (rc >= 0) {
      if (!take_slot(rc)) return fallback();
      owner[slot[rc]] = rc;
    }
    // Candidates this op reads that live on after it: eviction choices.
    std::vector<uint32_t> readers;
    for (ValueId v : op.operands)
      if (cand[v] >= 0 && last_pos(cand[v]) > p &&
          std::find(readers.begin(), readers.end(), cand[v]) == readers.end())
        readers.push_back(cand[v]);
    uint64_t dying = 0;
    for (uint32_t i : dies_after[p]) dying |= uint64_t{1} << slot[i];
    TensorLayout r_dram = interleaved_layout(g.values[r], device::BufferType::dram);
    device::OpConfig r_dram_config = demoted_config(in.layout.configs[p], r_dram, chip);
    std::vector<uint64_t> read_moves(readers.size());
    for (size_t j = 0; j < readers.size(); ++j) {
      ValueId v = space.tensors[readers[j]];
      read_moves[j] = q.move_cost(v, in.layout.tensors[v],
                                  interleaved_layout(g.values[v], device::BufferType::dram));
    }
    auto& next = states[p + 1];
    for (const auto& [mask, entry] : states[p]) {
      operand_layouts.clear();
      for (ValueId v : op.operands)
        operand_layouts.push_back(cand[v] >= 0 && !(mask >> slot[cand[v]] & 1)
                                      ? interleaved_layout(g.values[v], device::BufferType::dram)
                                      : in.layout.tensors[v]);
      in_ptrs.clear();
      for (const TensorLayout& t : operand_layouts) in_ptrs.push_back(&t);
      uint64_t live = bytes_of(mask);
      for (int option = 0; option < (rc >= 0 ? 2 : 1); ++option) {
        bool demote = option == 1;
        const TensorLayout& rl = demote ? r_dram : in.layout.tensors[r];
        const device::OpConfig& config = demote ? r_dram_config : in.layout.configs[p];
        device::OpValidation val =
            q.validate(op.kind, op.name, op.operands, in_ptrs, r, rl, config);
        if (!val.ok) continue;
        uint64_t need = val.cb_bytes_per_core + live + (rc >= 0 && !demote ? size[rc] : 0);
        if (need > usable) continue;
        uint64_t cost = entry.cost + q.cost(op.kind, op.name, op.operands, in_ptrs, r, rl, config);
        uint64_t after = mask | (rc >= 0 && !demote ? uint64_t{1} << slot[rc] : 0);
        after &= ~dying;
        for (uint64_t sub = 0; sub < (uint64_t{1} << readers.size()); ++sub) {
          uint64_t evicted = 0, moves = 0;
          bool possible = true;
          for (size_t j = 0; j < readers.size(); ++j)
            if (sub >> j & 1) {
              uint64_t bit = uint64_t{1} << slot[readers[j]];
              if (!(after & bit)) possible = false;
              evicted |= bit;
              moves += read_moves[j];
            }
          if (!possible) continue;
          uint64_t key = after & ~evicted;
          Entry e{cost + moves,
                  entry.spills + (demote ? 1u : 0u) + static_cast<uint32_t>(std::popcount(evicted)),
                  mask, evicted, demote};
          auto [it, inserted] = next.emplace(key, e);
          if (!inserted &&
              std::pair(e.cost, e.spills) < std::pair(it->second.cost, it->second.spills))
            it->second = e;
        }
      }
    }
    st.max_states = std::max<uint64_t>(st.max_states, next.size());
    if (next.empty() || next.size() > kMaxStates) return fallback();
    // Free the slots of the tensors that died here (the result too if nothing reads it).
    for (uint32_t i : dies_after[p]) {
      free_slots |= uint64_t{1} << slot[i];
      owner[slot[i]] = -1;
    }
  }
  // Trace back the cheapest final state (ties: fewer spills, then the smallest mask).
  auto best = states[n].begin();
  for (auto it = states[n].begin(); it != states[n].end(); ++it)
    if (std::pair(it->second.cost, it->second.spills) <
        std::pair(best->second.cost, best->second.spills))
      best = it;
  st.cost_ns = best->second.cost;
  SpillChoice choice = space;
  // Slot -> candidate is position dependent: rebuild it walking backwards from the recorded
  // slot assignment (each candidate kept its slot for its whole life).
  uint64_t mask = best->first;
  for (uint32_t p = n; p-- > 0;) {
    const Entry& e = states[p + 1].at(mask);
    ValueId r = g.ops[p].results[0];
    if (e.demoted) choice.l1_reads[cand[r]] = -1;
    for (uint64_t m = e.evicted; m; m &= m - 1) {
      int s = std::countr_zero(m);
      // The evicted candidate is the one in slot s that this op reads.
      for (ValueId v : g.ops[p].operands)
        if (cand[v] >= 0 && slot[cand[v]] == s) {
          auto& rv = reads[v];
          choice.l1_reads[cand[v]] =
              static_cast<int32_t>(std::upper_bound(rv.begin(), rv.end(), p) - rv.begin());
        }
    }
    mask = e.prev;
  }
  const Entry& start = states[0].at(mask);
  for (uint32_t i : args)
    if (start.evicted >> slot[i] & 1) choice.l1_reads[i] = 0;
  return apply_spill_choice(in, choice, chip);
}

}  // namespace meshplan::planner
