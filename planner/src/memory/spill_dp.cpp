// Exact L1 spill selection: dynamic programming over the schedule with branch-and-bound against
// Belady's plan (seed 002 §5.8.2).
//
// Steps:
//  1. Belady's plan (manage_spills) is made first. If it satisfies check_spill_fit(), its
//     simulated time is the initial upper bound U (and the answer if nothing in the space beats
//     it).
//  2. The L1 tensors of the planned graph get a slot each while they live (at most
//     SpillDpOptions::max_live at once); a DP state is the set of live slots still in L1, before an
//     op runs. States at one position with the same set merge (memoisation on (position,
//     resident set)), keeping the cheaper (then fewer spills).
//  3. At op p, from every state: the op's result stays in L1 or its producer writes DRAM; the
//     op's operands read L1 or the DRAM copy as the state says; OpModel validates the launch and
//     gives its circular buffers and cost; the state survives if the circular buffers plus the L1
//     tensors live at p fit the usable L1. After the op, each L1 tensor the op read and that lives
//     on may be moved to DRAM; the moves run in ascending tensor id (as apply_spill_choice()
//     inserts them), and each must fit its own circular buffers beside the L1 tensors still live
//     at its position; each costs its OpModel time.
//  4. Branch-and-bound: a state whose cost so far exceeds U is dropped, and once one position holds
//     more than kBoundAfter states, so is a state whose cost so far plus a lower bound on the
//     remaining ops (per op, its cheapest valid option with memory ignored) exceeds U.
//  5. The cheapest final state is traced back through back-pointers into a SpillChoice and
//     applied. No final state with U finite proves Belady's plan at least as good as every choice
//     of the space: it is returned. Past the limits (live tensors, readers per op, total states),
//     Belady's plan is returned unproven, with the reason.
#include "meshplan/planner/spill_dp.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <unordered_map>
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

// Walks a planned graph under the fit rule of check_spill_fit(), adding up OpModel's costs.
Status walk_fit(const LayoutResult& r, const device::ChipDesc& chip, uint64_t* cost_ns) {
  const Graph& g = r.graph;
  Schedule s = Schedule::build(g);
  OpQuery q(g, chip, r.mesh);
  const uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  std::vector<uint64_t> bytes(g.values.size(), 0);
  uint64_t live = 0, total = 0;
  for (ValueId v = 0; v < g.values.size(); ++v)
    bytes[v] = l1_bytes_per_core(g.values[v], r.layout.tensors[v], chip);
  for (ValueId a : g.arguments) live += bytes[a];
  std::vector<const TensorLayout*> in;
  for (OpId p = 0; p < g.ops.size(); ++p) {
    const Op& op = g.ops[p];
    ValueId res = op.results[0];
    in.clear();
    for (ValueId v : op.operands) in.push_back(&r.layout.tensors[v]);
    device::OpValidation val = q.validate(op.kind, op.name, op.operands, in, res,
                                          r.layout.tensors[res], r.layout.configs[p]);
    if (!val.ok)
      return fail(ErrorCode::internal, "spill fit: ",
                  q.explain(op.kind, op.name, op.operands, in, res, r.layout.tensors[res],
                            r.layout.configs[p])
                      .reason);
    live += bytes[res];
    if (val.cb_bytes_per_core + live > usable)
      return fail(ErrorCode::resource_exhausted, "spill fit: op '", op.name, "' needs ",
                  val.cb_bytes_per_core, " bytes of circular buffers beside ", live,
                  " bytes of live L1 tensors per core, more than the ", usable, " usable");
    total +=
        q.cost(op.kind, op.name, op.operands, in, res, r.layout.tensors[res], r.layout.configs[p]);
    for (ValueId v : s.dying_at(static_cast<int>(p))) live -= bytes[v];
  }
  if (cost_ns) *cost_ns = total;
  return {};
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

Status check_spill_fit(const LayoutResult& planned, const device::ChipDesc& chip) {
  return walk_fit(planned, chip, nullptr);
}

Result<LayoutResult> apply_spill_choice(const LayoutResult& in, const SpillChoice& choice,
                                        const device::ChipDesc& chip) {
  const Graph& g = in.graph;
  const uint32_t n = static_cast<uint32_t>(g.ops.size());
  auto reads = reads_of(g);
  LayoutResult out;
  out.mesh = in.mesh;
  out.graph.name = g.name;
  out.graph.values = g.values;
  out.graph.arguments = g.arguments;
  out.graph.mesh = g.mesh;
  out.graph.argument_shards = g.argument_shards;
  out.graph.output_shards = g.output_shards;
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

// A set of live slots (bit s = the tensor in slot s is in L1).
constexpr uint32_t kMaxSlots = 256;
using Mask = std::array<uint64_t, kMaxSlots / 64>;

bool test(const Mask& m, uint32_t s) {
  return m[s >> 6] >> (s & 63) & 1;
}
void set(Mask& m, uint32_t s) {
  m[s >> 6] |= uint64_t{1} << (s & 63);
}
void clear(Mask& m, uint32_t s) {
  m[s >> 6] &= ~(uint64_t{1} << (s & 63));
}

struct MaskHash {
  size_t operator()(const Mask& m) const {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (uint64_t w : m) {
      h ^= w;
      h *= 0xBF58476D1CE4E5B9ull;
      h ^= h >> 31;
    }
    return static_cast<size_t>(h);
  }
};

// A DP state's record, kept for the trace-back: how it was reached from the previous position.
struct Entry {
  uint64_t cost;    // simulated ns so far (ops and moves)
  uint32_t spills;  // ties in cost go to fewer spills
  uint32_t prev;    // index of the previous state within its position
  uint32_t evict;   // bits over the previous op's movable readers (or the arguments at start)
  bool demoted;     // the previous op's result went to DRAM
};

// States before one position: masks, live bytes and an index from mask to state. State s of
// the position whose entries start at `first` has its record at entries[first + s].
struct Layer {
  std::vector<Mask> masks;
  std::vector<uint64_t> live;
  std::unordered_map<Mask, uint32_t, MaskHash> index;
  size_t first = 0;
  void reset(size_t first_entry) {
    masks.clear();
    live.clear();
    index.clear();
    first = first_entry;
  }
};

// States per position beyond which the lower bound of the remaining ops is computed and used.
constexpr size_t kBoundAfter = 16;
// Operands of one op beyond which its lower bound is taken as 0 (2^k residency combinations).
constexpr size_t kBoundOperands = 6;
constexpr uint64_t kNoBound = std::numeric_limits<uint64_t>::max();

}  // namespace

Result<LayoutResult> manage_spills_dp(const LayoutResult& in, const device::ChipDesc& chip,
                                      SpillDpStats* stats, SpillDpOptions options) {
  SpillDpStats local;
  SpillDpStats& st = stats ? *stats : local;
  st = SpillDpStats{};
  const Graph& g = in.graph;
  const uint32_t n = static_cast<uint32_t>(g.ops.size());
  const uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  const uint32_t max_live = std::min(options.max_live, kMaxSlots);
  const uint32_t max_readers = std::min<uint32_t>(options.max_readers, 31);

  // 1. Belady's plan and the bound.
  Result<LayoutResult> belady = manage_spills(in, chip, options.belady_results_first);
  if (options.keep_belady && belady) st.belady_plan = *belady;
  uint64_t bound = kNoBound;
  if (belady) {
    uint64_t ns = 0;
    if (walk_fit(*belady, chip, &ns)) {
      bound = ns;
      st.belady_ns = ns;
    }
  }
  auto finish = [&](Result<LayoutResult> r, SpillSelection how) -> Result<LayoutResult> {
    if (!r) return r;
    st.selection = how;
    r->spill_selection = how;
    r->spill_dp_states = st.states;
    return r;
  };
  auto fallback = [&](std::string why) -> Result<LayoutResult> {
    st.reason = std::move(why);
    if (belady) st.cost_ns = belady->estimated_ns(chip);
    return finish(belady, SpillSelection::dp_fallback);
  };

  // 2. Candidates, slots and lifetimes.
  SpillChoice space = spill_choice_space(in);
  auto reads = reads_of(g);
  std::vector<int> cand(g.values.size(), -1);
  for (size_t i = 0; i < space.tensors.size(); ++i) cand[space.tensors[i]] = static_cast<int>(i);
  std::vector<uint32_t> slot(space.tensors.size(), 0);
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
  for (size_t i = 0; i < space.tensors.size(); ++i)
    dies_after[last_pos(i)].push_back(static_cast<uint32_t>(i));
  std::vector<uint32_t> free_slots;  // a stack, lowest slot on top
  for (uint32_t s = max_live; s-- > 0;) free_slots.push_back(s);
  auto take_slot = [&](size_t i) {
    if (free_slots.empty()) return false;
    slot[i] = free_slots.back();
    free_slots.pop_back();
    return true;
  };
  std::vector<uint32_t> args;
  for (size_t i = 0; i < space.tensors.size(); ++i)
    if (g.values[space.tensors[i]].producer == kNoOp) {
      if (!take_slot(i)) return fallback(str("more than ", max_live, " L1 arguments"));
      args.push_back(static_cast<uint32_t>(i));
    }
  if (args.size() > max_readers)
    return fallback(str(args.size(), " L1 arguments: more than ", max_readers,
                        " eviction choices at the start"));

  OpQuery q(g, chip, in.mesh);
  std::vector<TensorLayout> dram(space.tensors.size());
  for (size_t i = 0; i < space.tensors.size(); ++i)
    dram[i] = interleaved_layout(g.values[space.tensors[i]], device::BufferType::dram);
  // Validation of moving candidate i to DRAM: cost and circular buffers (nullopt: illegal).
  struct Move {
    uint64_t cost = 0, cb = 0;
    bool ok = false;
  };
  auto move_of = [&](uint32_t i) {
    ValueId v = space.tensors[i];
    Move m;
    device::OpValidation val = q.validate_move(v, in.layout.tensors[v], dram[i]);
    if (!val.ok) return m;
    m.ok = true;
    m.cb = val.cb_bytes_per_core;
    m.cost = q.move_cost(v, in.layout.tensors[v], dram[i]);
    return m;
  };

  // Lower bound on the cost of ops p..n-1 (suffix sums), computed on first need.
  std::vector<uint64_t> rest;
  auto lower_bounds = [&](uint32_t from) {
    rest.assign(n + 1, 0);
    std::vector<uint32_t> co;
    std::vector<TensorLayout> ol;
    std::vector<const TensorLayout*> ptrs;
    for (uint32_t p = n; p-- > from;) {
      const Op& op = g.ops[p];
      ValueId r = op.results[0];
      co.clear();
      for (ValueId v : op.operands)
        if (cand[v] >= 0 && std::find(co.begin(), co.end(), cand[v]) == co.end())
          co.push_back(static_cast<uint32_t>(cand[v]));
      uint64_t lb = 0;
      if (co.size() <= kBoundOperands) {
        lb = kNoBound;
        int rc = cand[r];
        for (uint32_t combo = 0; combo < (1u << co.size()); ++combo) {
          ol.clear();
          for (ValueId v : op.operands) {
            size_t j = cand[v] < 0 ? co.size()
                                   : static_cast<size_t>(std::find(co.begin(), co.end(),
                                                                   static_cast<uint32_t>(cand[v])) -
                                                         co.begin());
            ol.push_back(j < co.size() && (combo >> j & 1) ? dram[co[j]] : in.layout.tensors[v]);
          }
          ptrs.clear();
          for (const TensorLayout& t : ol) ptrs.push_back(&t);
          for (int option = 0; option < (rc >= 0 ? 2 : 1); ++option) {
            const TensorLayout& rl = option ? dram[rc] : in.layout.tensors[r];
            device::OpConfig config =
                option ? demoted_config(in.layout.configs[p], rl, chip) : in.layout.configs[p];
            if (auto c = q.cost_if_valid(op.kind, op.name, op.operands, ptrs, r, rl, config))
              lb = std::min(lb, *c);
          }
        }
        if (lb == kNoBound) lb = 0;
      }
      rest[p] = rest[p + 1] + lb;
    }
  };
  auto rest_from = [&](uint32_t p) { return rest.empty() ? 0 : rest[p]; };

  // 3. The DP.
  std::vector<Entry> entries;
  std::vector<std::vector<uint32_t>> movable(n);  // per op: readers that may move after it
  Layer cur, next;
  std::vector<size_t> first(n + 1, 0);  // per position: its states' first entry
  auto insert = [&](Layer& layer, const Mask& m, uint64_t live, const Entry& e) {
    auto [it, inserted] = layer.index.try_emplace(m, static_cast<uint32_t>(layer.masks.size()));
    if (inserted) {
      layer.masks.push_back(m);
      layer.live.push_back(live);
      entries.push_back(e);
      ++st.states;
      return;
    }
    Entry& old = entries[layer.first + it->second];
    if (std::pair(e.cost, e.spills) < std::pair(old.cost, old.spills)) old = e;
  };
  {
    // Start: each L1 argument kept or moved to DRAM before the first op, in ascending id.
    std::vector<Move> moves;
    Mask all{};
    uint64_t all_live = 0;
    for (uint32_t i : args) {
      moves.push_back(move_of(i));
      set(all, slot[i]);
      all_live += size[i];
    }
    for (uint32_t sub = 0; sub < (1u << args.size()); ++sub) {
      Mask m = all;
      uint64_t live = all_live, cost = 0;
      bool possible = true;
      for (uint32_t j = 0; j < args.size() && possible; ++j) {
        if (!(sub >> j & 1)) continue;
        possible = moves[j].ok && moves[j].cb + live <= usable;
        cost += moves[j].cost;
        live -= size[args[j]];
        clear(m, slot[args[j]]);
      }
      if (!possible || cost > bound) continue;
      insert(cur, m, live, Entry{cost, static_cast<uint32_t>(std::popcount(sub)), 0, sub, false});
    }
  }
  std::vector<TensorLayout> operand_layouts;
  std::vector<const TensorLayout*> in_ptrs;
  std::vector<Move> moves;
  std::vector<uint32_t> resident;
  for (uint32_t p = 0; p < n; ++p) {
    const Op& op = g.ops[p];
    ValueId r = op.results[0];
    int rc = cand[r];
    if (rc >= 0 && !take_slot(rc))
      return fallback(str("more than ", max_live, " L1 tensors live at op '", op.name, "'"));
    // Candidates this op reads that live on after it, ascending by tensor id: the moves.
    std::vector<uint32_t>& readers = movable[p];
    for (ValueId v : op.operands)
      if (cand[v] >= 0 && last_pos(cand[v]) > p &&
          std::find(readers.begin(), readers.end(), cand[v]) == readers.end())
        readers.push_back(static_cast<uint32_t>(cand[v]));
    std::sort(readers.begin(), readers.end());
    if (readers.size() > max_readers)
      return fallback(str("op '", op.name, "' reads ", readers.size(),
                          " L1 tensors that live on: more than ", max_readers));
    moves.clear();
    for (uint32_t i : readers) moves.push_back(move_of(i));
    std::vector<uint32_t> dying = dies_after[p];
    TensorLayout r_dram = interleaved_layout(g.values[r], device::BufferType::dram);
    device::OpConfig r_dram_config = demoted_config(in.layout.configs[p], r_dram, chip);
    if (cur.masks.size() > kBoundAfter && rest.empty() && bound != kNoBound) lower_bounds(p);
    const uint64_t rest_after = rest_from(p + 1);
    next.reset(entries.size());
    first[p + 1] = entries.size();
    for (uint32_t s = 0; s < cur.masks.size(); ++s) {
      const Mask& mask = cur.masks[s];
      const Entry entry = entries[cur.first + s];
      operand_layouts.clear();
      for (ValueId v : op.operands)
        operand_layouts.push_back(
            cand[v] >= 0 && !test(mask, slot[cand[v]]) ? dram[cand[v]] : in.layout.tensors[v]);
      in_ptrs.clear();
      for (const TensorLayout& t : operand_layouts) in_ptrs.push_back(&t);
      const uint64_t live = cur.live[s];
      for (int option = 0; option < (rc >= 0 ? 2 : 1); ++option) {
        bool demote = option == 1;
        const TensorLayout& rl = demote ? r_dram : in.layout.tensors[r];
        const device::OpConfig& config = demote ? r_dram_config : in.layout.configs[p];
        device::OpValidation val =
            q.validate(op.kind, op.name, op.operands, in_ptrs, r, rl, config);
        if (!val.ok) continue;
        bool keep = rc >= 0 && !demote;
        if (val.cb_bytes_per_core + live + (keep ? size[rc] : 0) > usable) continue;
        uint64_t cost = entry.cost + q.cost(op.kind, op.name, op.operands, in_ptrs, r, rl, config);
        Mask after = mask;
        uint64_t after_live = live;
        if (keep) {
          set(after, slot[rc]);
          after_live += size[rc];
        }
        for (uint32_t i : dying)
          if (test(after, slot[i])) {
            clear(after, slot[i]);
            after_live -= size[i];
          }
        // Eviction subsets over the readers still in L1 (bits over `readers`).
        resident.clear();
        for (uint32_t j = 0; j < readers.size(); ++j)
          if (test(after, slot[readers[j]]) && moves[j].ok) resident.push_back(j);
        for (uint32_t sub = 0; sub < (1u << resident.size()); ++sub) {
          Mask m = after;
          uint64_t running = after_live, total = cost;
          uint32_t evict = 0;
          bool possible = true;
          for (uint32_t b = 0; b < resident.size() && possible; ++b) {
            if (!(sub >> b & 1)) continue;
            uint32_t j = resident[b];
            possible = moves[j].cb + running <= usable;
            running -= size[readers[j]];
            total += moves[j].cost;
            clear(m, slot[readers[j]]);
            evict |= 1u << j;
          }
          if (!possible) continue;
          if (total > bound || (bound != kNoBound && total + rest_after > bound)) {
            ++st.pruned;
            continue;
          }
          uint32_t spills =
              entry.spills + (demote ? 1u : 0u) + static_cast<uint32_t>(std::popcount(sub));
          insert(next, m, running, Entry{total, spills, s, evict, demote});
          if (st.states > options.max_states)
            return fallback(
                str("more than ", options.max_states, " DP states (at op '", op.name, "')"));
        }
      }
    }
    st.max_states = std::max<uint64_t>(st.max_states, next.masks.size());
    // Free the slots of the tensors that died here (the result too if nothing reads it).
    for (uint32_t i : dying) free_slots.push_back(slot[i]);
    std::swap(cur, next);
    if (cur.masks.empty()) break;
  }
  if (cur.masks.empty()) {
    if (bound != kNoBound) {
      st.cost_ns = bound;
      return finish(belady, SpillSelection::dp_kept_belady);
    }
    return fallback("no choice of the spill space fits L1");
  }
  // 4. Trace back the cheapest final state (ties: fewer spills, then the first reached).
  uint32_t best = 0;
  for (uint32_t s = 1; s < cur.masks.size(); ++s) {
    const Entry& a = entries[cur.first + s];
    const Entry& b = entries[cur.first + best];
    if (std::pair(a.cost, a.spills) < std::pair(b.cost, b.spills)) best = s;
  }
  st.cost_ns = entries[cur.first + best].cost;
  SpillChoice choice = space;
  uint32_t s = best;
  for (uint32_t p = n; p-- > 0;) {
    const Entry& e = entries[first[p + 1] + s];
    ValueId r = g.ops[p].results[0];
    if (e.demoted) choice.l1_reads[cand[r]] = -1;
    for (uint32_t bits = e.evict; bits; bits &= bits - 1) {
      uint32_t i = movable[p][std::countr_zero(bits)];
      const auto& rv = reads[space.tensors[i]];
      choice.l1_reads[i] =
          static_cast<int32_t>(std::upper_bound(rv.begin(), rv.end(), p) - rv.begin());
    }
    s = e.prev;
  }
  const Entry& start = entries[first[0] + s];
  for (uint32_t bits = start.evict; bits; bits &= bits - 1)
    choice.l1_reads[args[std::countr_zero(bits)]] = 0;
  return finish(apply_spill_choice(in, choice, chip), SpillSelection::dp_exact);
}

}  // namespace meshplan::planner
