// DFShardingPolicy: L1 chains, ShardSolver per chain, chain-output spills, concat (N-way) merges,
// fork L1 reservations and A->B / 3-way chain merges checked against the L1 reservation timeline
// (seed 001 §4.1), then the L1-interleaved fallback for DRAM results read right after them.
#include "meshplan/planner/df_sharding.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "layout/row_broadcast.hpp"
#include "meshplan/planner/candidates.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/shard_solver.hpp"

namespace meshplan::planner {

std::string_view chain_state_name(ChainState s) {
  switch (s) {
    case ChainState::in_build:
      return "in_build";
    case ChainState::built:
      return "built";
    case ChainState::resolved:
      return "resolved";
    case ChainState::failed:
      return "failed";
    case ChainState::completed:
      return "completed";
  }
  return "?";
}

namespace {

uint32_t cores_of(const TensorLayout& t) {
  if (t.memory == device::MemLayout::interleaved) return 0;
  return static_cast<uint32_t>(t.shard.grid.x1 - t.shard.grid.x0 + 1) *
         static_cast<uint32_t>(t.shard.grid.y1 - t.shard.grid.y0 + 1);
}

bool is_sharded(const TensorLayout& t) {
  return t.memory != device::MemLayout::interleaved;
}

// tt-mlir's generateMatmulProgramConfig: the program a sharded result implies (block sharded:
// the 2-D multicast; width sharded: 1-D multicasting in0, cores split N; height sharded: 1-D
// multicasting in1, cores split M), default blocks on the result's grid.
std::optional<device::OpConfig> legacy_matmul_program(device::OpConfig c,
                                                      const TensorLayout& layout) {
  switch (layout.memory) {
    case device::MemLayout::block_sharded:
      c.program = device::MatmulProgram::mcast_2d;
      c.mcast_in0 = true;
      break;
    case device::MemLayout::width_sharded:
      c.program = device::MatmulProgram::mcast_1d;
      c.mcast_in0 = true;
      break;
    case device::MemLayout::height_sharded:
      c.program = device::MatmulProgram::mcast_1d;
      c.mcast_in0 = false;
      break;
    default:
      return std::nullopt;
  }
  c.transpose_mcast = false;
  c.in0_block_w = 0;
  c.out_subblock_h = c.out_subblock_w = 1;
  return c;
}

// One solver config: a sharded result layout and the op-specific config that goes with it.
struct SolverConfig {
  TensorLayout layout;
  std::optional<device::OpConfig> op;
};

// The op-specific part of a config, for dumps ("mcast_1d in1", "h 4 div 1"); empty without.
std::string op_config_string(const std::optional<device::OpConfig>& c) {
  if (!c) return "";
  if (c->program != device::MatmulProgram::none) {
    std::string s = str(" ", device::program_name(c->program));
    if (c->program == device::MatmulProgram::mcast_1d) s += c->mcast_in0 ? " in0" : " in1";
    return s;
  }
  return str(" h ", c->act_block_h, " div ", c->act_block_w_div);
}

// A failed solve in op names: the edge (producer -> consumer, the value between them), the
// chain's entry, or the op left without a config.
std::string describe_failure(const Graph& g, const L1Chain& chain,
                             const std::optional<ShardSolver::Failure>& f) {
  if (!f) return "the solver failed";
  const OpId consumer = chain.ops[f->edge.consumer];
  const Op& op = g.ops[consumer];
  const std::string& value = g.values[op.operands[f->edge.operand]].name;
  if (f->at == ShardSolver::Failure::At::entry)
    return str("entry of ", op.name, " (operand ", f->edge.operand, " %", value, "): ", f->why);
  if (f->at == ShardSolver::Failure::At::node) return str("op ", op.name, ": ", f->why);
  return str("edge ", g.ops[chain.ops[f->edge.producer]].name, " -> ", op.name, " (operand ",
             f->edge.operand, " %", value, "): ", f->why);
}

class OpModelChecker final : public ShardChecker {
 public:
  OpModelChecker(const Graph& g, const device::ChipDesc& chip, const PlannerOptions& options)
      : g_(g), chip_(chip), q_(g, chip, options.mesh), max_(options.max_legal_layouts) {
    // Attribute configs parsed once: the solver asks about each op thousands of times.
    base_.reserve(g.ops.size());
    for (const Op& op : g.ops) base_.push_back(op_config(op, g.mesh).value_or(device::OpConfig{}));
  }

  std::vector<TensorLayout> legal_configs(OpId o) const override {
    const Op& op = g_.ops[o];
    const Value& r = g_.values[op.results[0]];
    std::vector<TensorLayout> out;
    for (const TensorLayout& c : layout_candidates(r, chip_, max_))
      if (is_sharded(c) && legal_config(o, c)) out.push_back(c);
    return out;
  }
  bool legal_config(OpId o, const TensorLayout& c) const override {
    const Op& op = g_.ops[o];
    std::vector<TensorLayout> in = dram_operands(op);
    bool ok = valid_all(o, in, c, nullptr);
    if (!ok && !op.operands.empty() &&
        g_.values[op.operands[0]].shape == g_.values[op.results[0]].shape) {
      in[0] = c;
      ok = valid_all(o, in, c, nullptr);
    }
    return ok;
  }
  bool valid(OpId o, uint32_t operand, const TensorLayout& in,
             const TensorLayout& out) const override {
    std::vector<TensorLayout> ins = dram_operands(g_.ops[o]);
    ins[operand] = in;
    return valid_all(o, ins, out, nullptr);
  }
  bool valid_all(OpId o, const std::vector<TensorLayout>& in, const TensorLayout& out,
                 uint64_t* l1) const override {
    const Op& op = g_.ops[o];
    std::vector<const TensorLayout*> ptrs;
    for (const TensorLayout& t : in) ptrs.push_back(&t);
    device::OpValidation v = q_.validate(op.kind, op.name, op.operands, ptrs, op.results[0], out,
                                         config_for(base_[o], out, chip_));
    if (l1) *l1 = v.cb_bytes_per_core + v.output_l1_bytes_per_core;
    return v.ok;
  }
  std::vector<device::OpConfig> op_configs(OpId o, const TensorLayout& layout) const override {
    const Op& op = g_.ops[o];
    device::OpConfig base = config_for(base_[o], layout, chip_);
    if (is_auto_matmul(op.kind, base_[o])) {
      if (auto c = legacy_matmul_program(base, layout)) return {*c};
      return {};
    }
    if (!is_auto_conv(op.kind, base_[o])) return {};
    std::vector<device::TensorPlacement> ins;
    ins.reserve(op.operands.size());
    for (ValueId v : op.operands)
      ins.push_back(placement_of(g_.values[v], interleaved_layout(g_.values[v], device::BufferType::dram)));
    std::vector<const device::TensorPlacement*> inp;
    for (const device::TensorPlacement& t : ins) inp.push_back(&t);
    device::TensorPlacement out = placement_of(g_.values[op.results[0]], layout);
    const device::TensorPlacement* outp[1] = {&out};
    return legacy_conv_configs(device::OpLaunch{op.kind, op.name, inp, outp, base}, chip_);
  }
  bool valid_config(OpId o, uint32_t operand, const TensorLayout& in, const TensorLayout& out,
                    const device::OpConfig& config) const override {
    std::vector<TensorLayout> ins = dram_operands(g_.ops[o]);
    ins[operand] = in;
    return valid_all_config(o, ins, out, config, nullptr);
  }
  bool valid_all_config(OpId o, const std::vector<TensorLayout>& in, const TensorLayout& out,
                        const device::OpConfig& config, uint64_t* l1) const override {
    const Op& op = g_.ops[o];
    std::vector<const TensorLayout*> ptrs;
    for (const TensorLayout& t : in) ptrs.push_back(&t);
    device::OpValidation v = q_.validate(op.kind, op.name, op.operands, ptrs, op.results[0], out,
                                         config_for(config, out, chip_));
    if (l1) *l1 = v.cb_bytes_per_core + v.output_l1_bytes_per_core;
    return v.ok;
  }
  std::vector<TensorLayout> reshard_targets(ValueId v) const override {
    std::vector<TensorLayout> out;
    for (const TensorLayout& c : layout_candidates(g_.values[v], chip_, max_))
      if (is_sharded(c)) out.push_back(c);
    return out;
  }
  bool move_valid(ValueId v, const TensorLayout& from, const TensorLayout& to) const override {
    return q_.validate_move(v, from, to).ok;
  }

 private:
  std::vector<TensorLayout> dram_operands(const Op& op) const {
    std::vector<TensorLayout> in;
    for (ValueId v : op.operands)
      in.push_back(interleaved_layout(g_.values[v], device::BufferType::dram));
    return in;
  }
  const Graph& g_;
  device::ChipDesc chip_;  // A copy: callers may pass a temporary descriptor.
  OpQuery q_;
  uint32_t max_;
  std::vector<device::OpConfig> base_;
};

}  // namespace

std::vector<OpId> dfs_schedule(const Graph& g) {
  const size_t n = g.ops.size();
  std::vector<uint32_t> pending(n, 0);
  std::vector<std::vector<OpId>> readers(g.values.size());
  for (OpId o = 0; o < n; ++o)
    for (ValueId v : g.ops[o].operands)
      if (g.values[v].producer != kNoOp) {
        ++pending[o];
        readers[v].push_back(o);
      }
  std::set<OpId> ready;
  for (OpId o = 0; o < n; ++o)
    if (pending[o] == 0) ready.insert(o);
  std::vector<OpId> order;
  order.reserve(n);
  std::optional<OpId> prev;
  while (!ready.empty()) {
    OpId next = *ready.begin();
    if (prev)
      for (ValueId r : g.ops[*prev].results) {
        bool found = false;
        for (OpId u : readers[r])  // graph order: readers were collected by OpId
          if (ready.count(u) && g.ops[u].operands[0] == r) {
            next = u;
            found = true;
            break;
          }
        if (found) break;
      }
    ready.erase(next);
    order.push_back(next);
    prev = next;
    for (ValueId r : g.ops[next].results)
      for (OpId u : readers[r])
        if (--pending[u] == 0) ready.insert(u);
  }
  return order;
}

Graph dfs_ordered(const Graph& g) {
  std::vector<OpId> order = dfs_schedule(g);
  Graph out = g;
  out.ops.clear();
  out.ops.reserve(order.size());
  for (OpId o : order) {
    for (ValueId r : g.ops[o].results) out.values[r].producer = static_cast<OpId>(out.ops.size());
    out.ops.push_back(g.ops[o]);
  }
  return out;
}

std::unique_ptr<ShardChecker> make_opmodel_checker(const Graph& g, const device::ChipDesc& chip,
                                                   const PlannerOptions& options) {
  return std::make_unique<OpModelChecker>(g, chip, options);
}

Result<DfShardingResult> run_df_sharding(const Graph& g, const device::ChipDesc& chip,
                                         const PlannerOptions& options, const ShardChecker& checker,
                                         bool record_solver) {
  const Overrides overrides = MESHPLAN_TRY(parse_overrides(g, chip, options));
  DfShardingResult out;
  out.decision = MESHPLAN_TRY(LayoutDecision::all_dram(g, chip));
  LayoutDecision& d = out.decision;
  const std::vector<device::OpConfig> attribute_configs = d.configs;
  d.kept_configs.assign(g.ops.size(), false);
  // The config a completed chain selected per op: later checks of the op with that result layout
  // validate it with its op-specific config; an op whose result leaves that layout goes back to
  // its attribute config (tt-mlir derives a matmul's program from a sharded result only).
  std::vector<std::optional<SolverConfig>> chosen(g.ops.size());
  auto chosen_for = [&](OpId o, const TensorLayout& out) -> const device::OpConfig* {
    if (!chosen[o] || !chosen[o]->op || !(chosen[o]->layout == out)) return nullptr;
    return &*chosen[o]->op;
  };
  auto valid_op = [&](OpId o, uint32_t operand, const TensorLayout& in, const TensorLayout& out) {
    const device::OpConfig* c = chosen_for(o, out);
    return c ? checker.valid_config(o, operand, in, out, *c) : checker.valid(o, operand, in, out);
  };
  auto valid_all_op = [&](OpId o, const std::vector<TensorLayout>& in, const TensorLayout& out,
                          uint64_t* l1) {
    const device::OpConfig* c = chosen_for(o, out);
    return c ? checker.valid_all_config(o, in, out, *c, l1) : checker.valid_all(o, in, out, l1);
  };
  // `o`'s result moves off its chain layout to `t`: its op-specific config goes with it.
  auto leave_chain_layout = [&](OpId o, const TensorLayout& t) {
    if (chosen[o] && chosen[o]->op) {
      d.kept_configs[o] = false;
      d.configs[o] = attribute_configs[o];
    }
    d.configs[o] = config_for(d.configs[o], t, chip);
  };
  const int n = static_cast<int>(g.ops.size());
  const uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  // Uses of every value: (op, operand); graph outputs count as a use.
  std::vector<std::vector<std::pair<OpId, uint32_t>>> uses(g.values.size());
  std::vector<bool> is_output(g.values.size(), false);
  for (OpId o = 0; o < g.ops.size(); ++o)
    for (uint32_t i = 0; i < g.ops[o].operands.size(); ++i)
      uses[g.ops[o].operands[i]].push_back({o, i});
  for (ValueId v : g.outputs) is_output[v] = true;

  // 1. Chains: ops with legal sharded configs, continued while the op's only use is operand 0 of
  // the next op in the schedule.
  std::vector<std::vector<TensorLayout>> configs(g.ops.size());
  std::vector<std::vector<std::optional<device::OpConfig>>> op_cfgs(g.ops.size());
  // LegalOpConfigAnalysis: every legal layout paired with every op-specific config of the search
  // space, config-major as tt-mlir builds them (all layouts with the space's first config, then
  // with its second, ...); a layout without op-specific configs appears once, with none.
  auto expand = [&](OpId o, std::vector<TensorLayout> layouts) {
    std::vector<std::vector<device::OpConfig>> per(layouts.size());
    size_t most = 0;
    for (size_t i = 0; i < layouts.size(); ++i) {
      per[i] = checker.op_configs(o, layouts[i]);
      most = std::max(most, per[i].size());
    }
    configs[o].clear();
    op_cfgs[o].clear();
    for (size_t k = 0; k < std::max<size_t>(most, 1); ++k)
      for (size_t i = 0; i < layouts.size(); ++i) {
        if (k < per[i].size()) {
          configs[o].push_back(layouts[i]);
          op_cfgs[o].push_back(per[i][k]);
        } else if (k == 0) {
          configs[o].push_back(layouts[i]);
          op_cfgs[o].push_back(std::nullopt);
        }
      }
  };
  L1Chain current;
  auto finalize = [&] {
    if (current.ops.empty()) return;
    current.state = ChainState::built;
    out.chains.push_back(std::move(current));
    current = L1Chain{};
  };
  for (OpId o = 0; o < g.ops.size(); ++o) {
    std::vector<TensorLayout> layouts;
    if (const OutputOverride* w = overrides.output_for(o)) {
      // The override narrows the op's legal configs to its sharded layouts (the solver's bitset
      // for this op holds only those).
      for (const TensorLayout& t : w->layouts)
        if (is_sharded(t) && checker.legal_config(o, t)) layouts.push_back(t);
    } else {
      layouts = checker.legal_configs(o);
    }
    expand(o, std::move(layouts));
    if (configs[o].size() > ShardSolver::kMaxConfigs) {
      configs[o].resize(ShardSolver::kMaxConfigs);
      op_cfgs[o].resize(ShardSolver::kMaxConfigs);
    }
    if (g.ops[o].kind == device::OpKind::concat) {
      // Concats get single-op chains of their own, resolved after the regular chains (§4.1.6).
      finalize();
      current.ops.push_back(o);
      current.concat = true;
      finalize();
      continue;
    }
    if (configs[o].empty()) {
      finalize();
      continue;
    }
    current.ops.push_back(o);
    ValueId r = g.ops[o].results[0];
    bool single_use = uses[r].size() == 1 && !is_output[r];
    if (!(single_use && uses[r][0].first == o + 1 && uses[r][0].second == 0)) finalize();
  }
  finalize();
  if (record_solver) {
    out.configs = configs;
    out.op_configs = op_cfgs;
  }

  // Chains by their first and last op (regular chains only for `last_of`).
  std::vector<int> chain_first(g.ops.size(), -1), chain_last(g.ops.size(), -1);
  for (size_t c = 0; c < out.chains.size(); ++c) {
    chain_first[out.chains[c].ops.front()] = static_cast<int>(c);
    if (!out.chains[c].concat) chain_last[out.chains[c].ops.back()] = static_cast<int>(c);
  }
  // setConcatChainPreferences (§4.1.6): a width concat (last dim) needs height-sharded inputs, a
  // height concat (second-to-last dim) width-sharded ones; other axes (and block sharding) are
  // not supported. The inputs' chains and the consumer's chain prefer that memory layout.
  auto concat_layout = [&](OpId o) -> std::optional<device::MemLayout> {
    const Op& op = g.ops[o];
    auto config = op_config(op, g.mesh);
    if (!config) return std::nullopt;
    int rank = static_cast<int>(g.values[op.results[0]].shape.size());
    int axis = config->axis < 0 ? config->axis + rank : config->axis;
    if (rank >= 1 && axis == rank - 1) return device::MemLayout::height_sharded;
    if (rank >= 2 && axis == rank - 2) return device::MemLayout::width_sharded;
    return std::nullopt;
  };
  for (const L1Chain& chain : out.chains) {
    if (!chain.concat) continue;
    auto want = concat_layout(chain.ops[0]);
    if (!want) continue;
    for (ValueId v : g.ops[chain.ops[0]].operands) {
      OpId p = g.values[v].producer;
      if (p != kNoOp && chain_last[p] >= 0) out.chains[chain_last[p]].preferred = want;
    }
    ValueId r = g.ops[chain.ops[0]].results[0];
    if (uses[r].size() == 1 && chain_first[uses[r][0].first] >= 0 &&
        !out.chains[chain_first[uses[r][0].first]].concat)
      out.chains[chain_first[uses[r][0].first]].preferred = want;
  }

  // The first interleaved layout an output override allows that OpModel accepts with the
  // operands as decided becomes the op's result; false when there is none.
  auto take_interleaved = [&](OpId o, const OutputOverride& w) {
    std::vector<TensorLayout> in;
    for (ValueId v : g.ops[o].operands) in.push_back(d.tensors[v]);
    for (const TensorLayout& t : w.layouts)
      if (!is_sharded(t) && checker.valid_all(o, in, t, nullptr)) {
        d.tensors[g.ops[o].results[0]] = t;
        leave_chain_layout(o, t);
        return true;
      }
    return false;
  };
  // Overridden ops in no chain take their first allowed interleaved layout OpModel accepts (their
  // readers' chains then see it at their entry).
  std::vector<int> chain_index(g.ops.size(), -1);
  for (size_t c = 0; c < out.chains.size(); ++c)
    for (OpId o : out.chains[c].ops) chain_index[o] = static_cast<int>(c);
  for (const auto& [o, w] : overrides.output) {
    if (chain_index[o] >= 0 && !out.chains[chain_index[o]].concat) continue;
    bool set = take_interleaved(o, w);
    if (!set && !(chain_index[o] >= 0))
      return fail(ErrorCode::invalid_argument, "output override for op '", g.ops[o].name,
                  "' is illegal: no layout it allows is valid for the op (override '", w.entry,
                  "'; sharded ones: OpModel rejects them with DRAM operands)");
  }

  // A memreconfig on operand 0 of a chain op (the chain's entry or the edge from the op before)
  // makes that edge a reshard edge in the solver (tt-mlir's insert-memreconfig); the policy
  // applies the other moves to its result.
  auto forced_move = [&](OpId o) -> const Overrides::Move* {
    for (const Overrides::Move& m : overrides.moves)
      if (m.op == o && m.operand == 0) return &m;
    return nullptr;
  };
  // 2. Resolve each regular chain with a ShardSolver; any failure fails the whole chain (it stays
  // DRAM). A preferred output layout narrows the last op's configs to that layout when it has
  // any; if the chain then fails it is solved again without the preference.
  for (L1Chain& chain : out.chains) {
    if (chain.concat) continue;
    auto solve = [&](bool use_preference) -> std::optional<ShardSolver::Solution> {
      std::vector<std::vector<SolverConfig>> node_configs;
      std::vector<uint32_t> counts;
      std::vector<ShardSolver::Edge> edges;
      for (uint32_t k = 0; k < chain.ops.size(); ++k) {
        OpId o = chain.ops[k];
        node_configs.emplace_back();
        for (size_t i = 0; i < configs[o].size(); ++i)
          node_configs.back().push_back(SolverConfig{configs[o][i], op_cfgs[o][i]});
        if (k > 0) edges.push_back(ShardSolver::Edge{k - 1, k, 0});
      }
      if (use_preference) {
        std::vector<SolverConfig>& last = node_configs.back();
        std::vector<SolverConfig> kept;
        for (const SolverConfig& t : last)
          if (t.layout.memory == *chain.preferred) kept.push_back(t);
        if (kept.empty()) {
          chain.failure = str("last op ", g.ops[chain.ops.back()].name,
                              " has no config of the preferred memory layout");
          return std::nullopt;
        }
        last = std::move(kept);
      }
      for (const auto& c : node_configs) counts.push_back(static_cast<uint32_t>(c.size()));
      auto layout = [&](uint32_t node, uint32_t c) -> const TensorLayout& {
        return node_configs[node][c].layout;
      };
      // Config `c` of `node` valid with operand 0 in `in` (its op-specific config included).
      auto accepts = [&](uint32_t node, uint32_t c, const TensorLayout& in) {
        OpId o = chain.ops[node];
        const SolverConfig& x = node_configs[node][c];
        return x.op ? checker.valid_config(o, 0, in, x.layout, *x.op)
                    : checker.valid(o, 0, in, x.layout);
      };
      ShardSolver::Callbacks cb;
      cb.edge_ok = [&](const ShardSolver::Edge& e, uint32_t p, uint32_t c) {
        return accepts(e.consumer, c, layout(e.producer, p));
      };
      cb.entry_ok = [&](uint32_t node, uint32_t c) {
        OpId o = chain.ops[node];
        return accepts(node, c, d.tensors[g.ops[o].operands[0]]);
      };
      cb.forced_reshard = [&](const ShardSolver::Edge& e) {
        return forced_move(chain.ops[e.consumer]) != nullptr;
      };
      // Every reshard layout that lets config `c` run (the reshard map keeps them all); a move
      // at the chain's entry must also be one OpModel accepts from the input's layout.
      cb.reshards_for = [&](const ShardSolver::Edge& e, uint32_t c) {
        OpId o = chain.ops[e.consumer];
        ValueId v = g.ops[o].operands[0];
        bool entry = e.producer == e.consumer;
        std::vector<TensorLayout> out;
        auto take = [&](const TensorLayout& t) {
          if (accepts(e.consumer, c, t) && (!entry || checker.move_valid(v, d.tensors[v], t)))
            out.push_back(t);
        };
        if (const Overrides::Move* m = forced_move(o)) {
          // The memreconfig's move is the edge's only reshard: to interleaved in its memory.
          take(interleaved_layout(g.values[v], m->to));
          return out;
        }
        for (const TensorLayout& t : checker.reshard_targets(v)) take(t);
        return out;
      };
      // The chain's input goes through a reshard the plan inserts, so its layout is searched
      // with the first op's configs (seed 000's first-op input search).
      cb.search_first_input = true;
      cb.cores = [&](uint32_t node, uint32_t c) { return cores_of(layout(node, c)); };
      ShardSolver solver(counts, edges, cb);
      bool ok = solver.resolve();
      if (record_solver) chain.solver = "resolved:\n" + solver.print();
      if (ok) {
        ok = solver.pick_max_core_usage();
        if (record_solver) chain.solver += "selected:\n" + solver.print();
      }
      if (!ok) {
        chain.failure = describe_failure(g, chain, solver.failure());
        return std::nullopt;
      }
      chain.failure.clear();
      ShardSolver::Solution sol = solver.finish();
      chain.layouts.clear();
      chain.op_configs.clear();
      for (uint32_t k = 0; k < chain.ops.size(); ++k) {
        chain.layouts.push_back(layout(k, sol.config[k]));
        chain.op_configs.push_back(node_configs[k][sol.config[k]].op);
      }
      // A forced move inside the chain leaves the producer's selected layout.
      for (const auto& [edge, target] : sol.reshards) {
        OpId o = chain.ops[edge.consumer];
        ValueId v = g.ops[o].operands[0];
        if (edge.producer != edge.consumer && forced_move(o) &&
            !checker.move_valid(v, chain.layouts[edge.producer], target)) {
          chain.failure =
              str("edge ", g.ops[chain.ops[edge.producer]].name, " -> ", g.ops[o].name,
                  " (operand 0 %", g.values[v].name, "): the memreconfig cannot move ",
                  layout_string(chain.layouts[edge.producer]), " to ", layout_string(target));
          return std::nullopt;
        }
      }
      return sol;
    };
    std::optional<ShardSolver::Solution> sol;
    if (chain.preferred) sol = solve(true);
    if (!sol) sol = solve(false);
    if (!sol) {
      chain.state = ChainState::failed;
      continue;
    }
    chain.state = ChainState::resolved;
    for (uint32_t k = 0; k < chain.ops.size(); ++k) {
      OpId o = chain.ops[k];
      d.tensors[g.ops[o].results[0]] = chain.layouts[k];
      const std::optional<device::OpConfig>& x = chain.op_configs[k];
      d.configs[o] = config_for(x ? *x : d.configs[o], chain.layouts[k], chip);
      chosen[o] = SolverConfig{chain.layouts[k], x};
      if (x) d.kept_configs[o] = true;
    }
    for (const auto& [edge, target] : sol->reshards)
      d.reshards.push_back(LayoutDecision::Reshard{chain.ops[edge.consumer], 0, target});
    chain.state = ChainState::completed;
  }
  for (const Overrides::Move& m : overrides.moves) {
    int c = m.operand == 0 ? chain_index[m.op] : -1;
    if (c < 0 || out.chains[c].concat || out.chains[c].state != ChainState::completed)
      out.moves_after.push_back(m);
  }

  // L1 reservation timeline and schedule-range validation (seed 001 §4.1.3, §4.1.5).
  // Reserved bytes per schedule position, kept in step with out.reservations (reserve/unreserve)
  // so a query is O(1): the timeline is asked once per op of every validated range.
  std::vector<uint64_t> reserved(std::max(n, 1), 0);
  auto reserve = [&](const L1Reservation& r) {
    out.reservations.push_back(r);
    for (int p = std::max(r.first, 0); p <= std::min(r.last, n - 1); ++p) reserved[p] += r.bytes;
  };
  auto unreserve_to = [&](size_t count) {
    while (out.reservations.size() > count) {
      const L1Reservation& r = out.reservations.back();
      for (int p = std::max(r.first, 0); p <= std::min(r.last, n - 1); ++p) reserved[p] -= r.bytes;
      out.reservations.pop_back();
    }
  };
  auto reserved_at = [&](int pos) { return reserved[pos]; };
  // Values kept in L1 past their chain (the L1 residents layout map of §4.1.5: their layout is
  // d.tensors[v]); every other chain output reaches readers outside its chain from DRAM.
  std::vector<bool> resident(g.values.size(), false);
  std::vector<int> chain_of(g.ops.size(), -1);
  for (size_t c = 0; c < out.chains.size(); ++c)
    for (OpId o : out.chains[c].ops) chain_of[o] = static_cast<int>(c);
  // The layouts an op reads (validateScheduleRangeWithReservation): operands from its own chain
  // as resolved, residents as the map has them, any other L1 value from DRAM.
  auto inputs_of = [&](OpId o) {
    std::vector<TensorLayout> in;
    for (ValueId v : g.ops[o].operands) {
      OpId p = g.values[v].producer;
      bool same_chain = p != kNoOp && chain_of[p] >= 0 && chain_of[p] == chain_of[o];
      if (d.tensors[v].in_l1() && !same_chain && !resident[v])
        in.push_back(interleaved_layout(g.values[v], device::BufferType::dram));
      else
        in.push_back(d.tensors[v]);
    }
    return in;
  };
  auto op_fits = [&](OpId o, uint64_t extra) {
    std::vector<TensorLayout> in = inputs_of(o);
    uint64_t need = 0;
    if (!valid_all_op(o, in, d.tensors[g.ops[o].results[0]], &need)) return false;
    return need + extra + reserved_at(static_cast<int>(o)) <= usable;
  };
  auto range_fits = [&](int from, int to, uint64_t extra) {
    for (int p = std::max(from, 0); p <= std::min(to, n - 1); ++p)
      if (!op_fits(static_cast<OpId>(p), extra)) return false;
    return true;
  };
  auto last_use = [&](ValueId v) {
    int last = is_output[v] ? n - 1 : -1;
    for (auto [o, i] : uses[v]) last = std::max(last, static_cast<int>(o));
    return last;
  };
  auto first_op_of_completed_chain = [&](OpId o) {
    return chain_first[o] >= 0 && out.chains[chain_first[o]].state == ChainState::completed;
  };

  std::vector<bool> decided(out.chains.size(), false);

  // resolveConcatChains (§4.1.6, N-way merge): every input is the single-use output of a
  // completed regular chain, all in the layout the concat axis needs on one core grid; the concat
  // accepts them all sharded with a sharded result of the same kind; and the schedule fits with
  // cumulative pressure: ops after input i (up to the concat) carry inputs 1..i, the concat all N.
  for (L1Chain& chain : out.chains) {
    if (!chain.concat) continue;
    OpId c = chain.ops[0];
    const Op& op = g.ops[c];
    chain.state = ChainState::failed;
    auto want = concat_layout(c);
    if (!want) continue;
    std::vector<std::pair<int, ValueId>> inputs;  // (producing position, value)
    bool ok = true;
    for (ValueId v : op.operands) {
      OpId p = g.values[v].producer;
      if (p == kNoOp || chain_last[p] < 0 ||
          out.chains[chain_last[p]].state != ChainState::completed || uses[v].size() != 1 ||
          is_output[v] || d.tensors[v].memory != *want ||
          !(d.tensors[v].shard.grid == d.tensors[op.operands[0]].shard.grid)) {
        ok = false;
        break;
      }
      inputs.emplace_back(static_cast<int>(p), v);
    }
    if (!ok) continue;
    std::vector<TensorLayout> in;
    for (ValueId v : op.operands) in.push_back(d.tensors[v]);
    std::optional<TensorLayout> result;
    for (const TensorLayout& t : configs[c])
      if (t.memory == *want && t.shard.grid == in[0].shard.grid &&
          valid_all_op(c, in, t, nullptr)) {
        result = t;
        break;
      }
    if (!result) continue;
    ValueId r = op.results[0];
    TensorLayout saved = d.tensors[r];
    device::OpConfig saved_config = d.configs[c];
    d.tensors[r] = *result;
    d.configs[c] = config_for(d.configs[c], *result, chip);
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    size_t before = out.reservations.size();
    for (auto [pos, v] : inputs) {
      uint64_t bytes = l1_bytes_per_core(g.values[v], d.tensors[v], chip);
      resident[v] = true;
      if (!range_fits(pos + 1, static_cast<int>(c) - 1, bytes)) {
        ok = false;
        break;
      }
      reserve(L1Reservation{v, pos, static_cast<int>(c), bytes});
    }
    if (ok) ok = op_fits(c, 0);
    if (!ok) {
      for (auto [pos, v] : inputs) resident[v] = false;
      unreserve_to(before);
      d.tensors[r] = saved;
      d.configs[c] = saved_config;
      continue;
    }
    for (auto [pos, v] : inputs) {
      int k = chain_last[static_cast<OpId>(pos)];
      out.chains[k].spill = SpillLocation::none;
      decided[k] = true;
      resident[v] = true;
    }
    chain.layouts = {*result};
    chain.state = ChainState::completed;
  }

  // Whether every reader of `v` accepts it in `t` (their results as decided), a reshard before
  // a reader included (it then moves from `t`).
  auto readers_accept = [&](ValueId v, const TensorLayout& t) {
    for (auto [o, i] : uses[v]) {
      if (!valid_op(o, i, t, d.tensors[g.ops[o].results[0]])) return false;
      for (const LayoutDecision::Reshard& m : d.reshards)
        if (m.before == o && m.operand == i && !checker.move_valid(v, t, m.to)) return false;
    }
    return true;
  };
  auto user_moves = [&](ValueId v) {
    return std::any_of(
        overrides.moves.begin(), overrides.moves.end(),
        [&](const Overrides::Move& m) { return g.ops[m.op].operands[m.operand] == v; });
  };

  // applyL1ReservationsForReshapes (seed 001 §4.1.7, step 5): a reshape outside completed chains
  // (no graph output, no output override) keeps its result L1 interleaved, reserved from the
  // reshape to its last reader, when it and every op up to that reader fit beside it and its
  // readers accept it. When it runs right after the last op of a completed chain whose output only
  // it reads, that output goes to L1 interleaved instead of spilling to DRAM (reserved up to the
  // reshape), when the op and the reshape accept it and fit.
  for (OpId p = 0; p < g.ops.size(); ++p) {
    const Op& op = g.ops[p];
    if (op.kind != device::OpKind::reshape || op.results.size() != 1) continue;
    if (chain_of[p] >= 0 && out.chains[chain_of[p]].state == ChainState::completed) continue;
    ValueId v = op.operands[0];
    OpId q = g.values[v].producer;
    if (q != kNoOp && q + 1 == p && chain_last[q] >= 0 && !decided[chain_last[q]] &&
        out.chains[chain_last[q]].state == ChainState::completed && uses[v].size() == 1 &&
        !is_output[v] && !user_moves(v)) {
      L1Chain& chain = out.chains[chain_last[q]];
      TensorLayout l1 = interleaved_layout(g.values[v], device::BufferType::l1);
      uint64_t bytes = l1_bytes_per_core(g.values[v], l1, chip);
      TensorLayout sharded = d.tensors[v];
      d.tensors[v] = l1;
      resident[v] = true;
      size_t before = out.reservations.size();
      reserve(L1Reservation{v, static_cast<int>(q), static_cast<int>(p), bytes});
      // The chain's last op is checked without the reservation it carries itself.
      bool ok = readers_accept(v, l1) && op_fits(p, 0);
      if (ok) {
        uint64_t need = 0;
        ok = valid_all_op(q, inputs_of(q), l1, &need) &&
             need + reserved_at(static_cast<int>(q)) - bytes <= usable;
      }
      if (ok) {
        chain.layouts.back() = l1;
        chain.op_configs.back().reset();
        chain.spill = SpillLocation::l1_interleaved;
        leave_chain_layout(q, l1);
        decided[chain_last[q]] = true;
      } else {
        unreserve_to(before);
        d.tensors[v] = sharded;
        resident[v] = false;
      }
    }
    ValueId r = op.results[0];
    if (d.tensors[r].buffer != device::BufferType::dram || is_output[r] || uses[r].empty() ||
        overrides.output_for(p) || user_moves(r))
      continue;
    TensorLayout l1 = interleaved_layout(g.values[r], device::BufferType::l1);
    uint64_t bytes = l1_bytes_per_core(g.values[r], l1, chip);
    TensorLayout dram = d.tensors[r];
    d.tensors[r] = l1;
    resident[r] = true;
    if (op_fits(p, 0) && readers_accept(r, l1) &&
        range_fits(static_cast<int>(p) + 1, last_use(r), bytes)) {
      d.configs[p] = config_for(d.configs[p], l1, chip);
      reserve(L1Reservation{r, static_cast<int>(p), last_use(r), bytes});
      continue;
    }
    d.tensors[r] = dram;
    resident[r] = false;
  }

  for (size_t ci = 0; ci < out.chains.size(); ++ci) {
    L1Chain& chain = out.chains[ci];
    if (chain.state != ChainState::completed || decided[ci]) continue;
    OpId last = chain.ops.back();
    ValueId v = g.ops[last].results[0];
    TensorLayout sharded = d.tensors[v];
    int end = last_use(v);
    bool fork = uses[v].size() > 1 || (is_output[v] && !uses[v].empty());
    auto consumers_accept = [&](const TensorLayout& t) {
      for (auto [o, i] : uses[v])
        if (!valid_op(o, i, t, d.tensors[g.ops[o].results[0]])) return false;
      return true;
    };
    // The chain's last op writes its output L1 interleaved, reserved up to the last reader, when
    // it and every reader accept that and it fits.
    auto to_l1_interleaved = [&] {
      TensorLayout l1 = interleaved_layout(g.values[v], device::BufferType::l1);
      std::vector<TensorLayout> in;
      for (ValueId x : g.ops[last].operands) in.push_back(d.tensors[x]);
      uint64_t l1_bytes = l1_bytes_per_core(g.values[v], l1, chip);
      d.tensors[v] = l1;  // tentatively, so the range is validated with readers seeing it
      resident[v] = true;
      bool kept = valid_all_op(last, in, l1, nullptr) && consumers_accept(l1) &&
                  range_fits(static_cast<int>(last) + 1, end, l1_bytes);
      d.tensors[v] = sharded;
      resident[v] = false;
      if (kept) {
        d.tensors[v] = l1;
        leave_chain_layout(last, l1);
        chain.layouts.back() = l1;
        chain.op_configs.back().reset();
        chain.spill = SpillLocation::l1_interleaved;
        reserve(L1Reservation{v, static_cast<int>(last), end, l1_bytes});
        resident[v] = true;
      }
      return kept;
    };
    // 3. Fork L1 reservations (§4.1.4): sharded if every consumer takes it, else L1 interleaved.
    if (fork && !is_output[v]) {
      uint64_t bytes = l1_bytes_per_core(g.values[v], sharded, chip);
      resident[v] = true;
      if (consumers_accept(sharded) && range_fits(static_cast<int>(last) + 1, end, bytes)) {
        chain.spill = SpillLocation::none;
        reserve(L1Reservation{v, static_cast<int>(last), end, bytes});
        resident[v] = true;
        continue;
      }
      resident[v] = false;
      if (to_l1_interleaved()) continue;
    }
    // 4. Chain merges (§4.1.2): a single-use output consumed (on any operand) by the first op of a
    // completed chain stays in L1 if every op scheduled in between, and the join op with this
    // input, fit beside it. Merges are applied in chain order, so a second input of the same
    // join (3-way merge) is validated with the first one's reservation active (Chain C runs with
    // Chain A's output in L1), and the join op is validated again with both sharded inputs
    // (validateThreeWayMergeJoinOp): its other operands as the residents map has them, DRAM
    // otherwise.
    if (!fork && uses[v].size() == 1) {
      auto [join, operand] = uses[v][0];
      uint64_t bytes = l1_bytes_per_core(g.values[v], sharded, chip);
      const TensorLayout& join_out = d.tensors[g.ops[join].results[0]];
      auto join_accepts = [&] {
        if (!valid_op(join, operand, sharded, join_out)) return false;
        std::vector<TensorLayout> in;
        bool three_way = false;
        for (uint32_t i = 0; i < g.ops[join].operands.size(); ++i) {
          ValueId x = g.ops[join].operands[i];
          if (i == operand || x == v) {
            in.push_back(sharded);
          } else if (resident[x]) {
            in.push_back(d.tensors[x]);
            three_way = true;
          } else {
            in.push_back(interleaved_layout(g.values[x], device::BufferType::dram));
          }
        }
        return !three_way || valid_all_op(join, in, join_out, nullptr);
      };
      resident[v] = true;
      if (first_op_of_completed_chain(join) && join_accepts() &&
          range_fits(static_cast<int>(last) + 1, static_cast<int>(join), bytes)) {
        chain.spill = SpillLocation::none;
        reserve(L1Reservation{v, static_cast<int>(last), static_cast<int>(join), bytes});
        resident[v] = true;
        continue;
      }
    }
    // 4b. An output read by a binary op that broadcasts across rows, which binary_ng reads only
    // interleaved: L1 interleaved rather than spilled to DRAM. A chain of that one op then
    // shards nothing: it reads its operand as its producer left it (to_l1_interleaved validated
    // it so), without the move to the chain's entry layout.
    if (!fork && !is_output[v] &&
        std::any_of(uses[v].begin(), uses[v].end(),
                    [&](const auto& u) { return broadcasts_across_rows(g, g.ops[u.first]); }) &&
        to_l1_interleaved()) {
      if (chain.ops.size() == 1 && !forced_move(last))
        d.reshards.erase(std::remove_if(d.reshards.begin(), d.reshards.end(),
                                        [&](const LayoutDecision::Reshard& m) {
                                          return m.before == last && m.operand == 0;
                                        }),
                         d.reshards.end());
      continue;
    }
    // 5. Otherwise the chain output spills to DRAM right after the chain.
    resident[v] = false;
    chain.spill = SpillLocation::dram;
    d.spills.push_back(v);
  }

  // 6. L1-interleaved fallback (tt-mlir's L1 interleaved fallback analysis), after the chains, in
  // schedule order: an op whose result is still DRAM interleaved, that is no graph output, has no
  // output override and is read by exactly one op, scheduled right after it, gets an L1
  // interleaved result when OpModel accepts the op with it (operands as decided, earlier
  // fallbacks in L1), the reader accepts it with its own result as decided (and a reshard at the
  // reader's entry can move it from L1), and each of the two fits under 80% of usable L1 with its
  // L1 operands and the reservations active at its position.
  const uint64_t fallback_cap = usable / 5 * 4;
  auto fits_with_inputs = [&](OpId o, const std::vector<TensorLayout>& in,
                              const TensorLayout& result) {
    uint64_t need = 0;
    if (!valid_all_op(o, in, result, &need)) return false;
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].in_l1()) need += l1_bytes_per_core(g.values[g.ops[o].operands[i]], in[i], chip);
    return need + reserved_at(static_cast<int>(o)) < fallback_cap;
  };
  for (OpId o = 0; o + 1 < g.ops.size(); ++o) {
    if (g.ops[o].results.size() != 1 || overrides.output_for(o)) continue;
    ValueId r = g.ops[o].results[0];
    if (d.tensors[r].buffer != device::BufferType::dram || is_output[r] || uses[r].size() != 1 ||
        uses[r][0].first != o + 1)
      continue;
    auto [reader, operand] = uses[r][0];
    if (std::any_of(overrides.moves.begin(), overrides.moves.end(), [&](const Overrides::Move& m) {
          return m.op == reader && m.operand == operand;
        }))
      continue;  // the user placed the reader's operand
    TensorLayout l1 = interleaved_layout(g.values[r], device::BufferType::l1);
    if (!fits_with_inputs(o, inputs_of(o), l1)) continue;
    TensorLayout dram = d.tensors[r];
    d.tensors[r] = l1;
    resident[r] = true;
    bool ok = fits_with_inputs(reader, inputs_of(reader), d.tensors[g.ops[reader].results[0]]);
    for (const LayoutDecision::Reshard& m : d.reshards)
      if (ok && m.before == reader && m.operand == operand) ok = checker.move_valid(r, l1, m.to);
    if (!ok) {
      d.tensors[r] = dram;
      resident[r] = false;
      continue;
    }
    d.configs[o] = config_for(d.configs[o], l1, chip);
    out.l1_fallbacks.push_back(r);
  }

  // Overrides the chains did not hold: an interleaved layout the override allows when OpModel
  // accepts it with the operands as decided, else a located error.
  for (const auto& [o, w] : overrides.output) {
    const TensorLayout& got = d.tensors[g.ops[o].results[0]];
    if (std::find(w.layouts.begin(), w.layouts.end(), got) != w.layouts.end()) continue;
    bool set = take_interleaved(o, w);
    if (set) continue;
    int c = chain_index[o];
    std::string why = c < 0 ? std::string("the op joins no chain")
                      : out.chains[c].failure.empty()
                          ? str("its chain ends ", chain_state_name(out.chains[c].state),
                                " with the result ", layout_string(got))
                          : str("its chain failed: ", out.chains[c].failure);
    return fail(ErrorCode::invalid_argument, "output override '", w.entry, "' for op '",
                g.ops[o].name, "' cannot hold under df-sharding: ", why);
  }
  return out;
}

Result<LayoutDecision> df_sharding(const Graph& g, const device::ChipDesc& chip,
                                   const PlannerOptions& options, const Overrides& overrides) {
  std::unique_ptr<ShardChecker> checker = make_opmodel_checker(g, chip, options);
  DfShardingResult r = MESHPLAN_TRY(run_df_sharding(g, chip, options, *checker));
  // Output overrides and the memreconfigs on chain edges constrained the solver (run_df_sharding);
  // the other forced moves are applied to its result.
  // run_df_sharding parsed these same overrides from `options`.
  Overrides moves = overrides;
  moves.output.clear();
  moves.moves = r.moves_after;
  MESHPLAN_TRY(apply_overrides(g, chip, moves, r.decision));
  return std::move(r.decision);
}

void set_deallocate_activation(LayoutResult& r, const device::ChipDesc& chip) {
  const Graph& g = r.graph;
  // Uses of every value (a graph output counts one: the program keeps it).
  std::vector<uint32_t> uses(g.values.size(), 0);
  for (const Op& op : g.ops)
    for (ValueId v : op.operands) ++uses[v];
  for (ValueId v : g.outputs) ++uses[v];
  OpQuery q(g, chip, r.mesh);
  for (OpId o = 0; o < g.ops.size(); ++o) {
    const Op& op = g.ops[o];
    // The override's value (the op's attribute) stands.
    if (op.kind != device::OpKind::conv2d || op.operands.empty() ||
        op.attribute("deallocate_activation"))
      continue;
    ValueId x = op.operands[0];
    if (!r.layout.tensors[x].in_l1() || g.values[x].producer == kNoOp || uses[x] != 1) continue;
    device::OpConfig c = r.layout.configs[o];
    c.deallocate_activation = true;
    std::vector<const TensorLayout*> in;
    for (ValueId v : op.operands) in.push_back(&r.layout.tensors[v]);
    ValueId res = op.results[0];
    // With its halo buffer the op's blocks may no longer fit: then it keeps its input.
    if (q.validate(op.kind, op.name, op.operands, in, res, r.layout.tensors[res], c).ok)
      r.layout.configs[o] = c;
  }
}

std::string DfShardingResult::print(const Graph& g) const {
  std::ostringstream o;
  constexpr const char* kSpill[] = {"dram", "l1_interleaved", "none"};
  for (const L1Chain& c : chains) {
    o << "chain [";
    for (size_t i = 0; i < c.ops.size(); ++i) o << (i ? " " : "") << g.ops[c.ops[i]].name;
    o << "] " << chain_state_name(c.state) << " spill " << kSpill[static_cast<int>(c.spill)]
      << "\n";
  }
  for (const L1Reservation& r : reservations)
    o << "reserve %" << g.values[r.value].name << " [" << r.first << ", " << r.last << "] "
      << r.bytes << " B/core\n";
  for (ValueId v : l1_fallbacks) o << "fallback %" << g.values[v].name << " l1_interleaved\n";
  return o.str();
}

std::string DfShardingResult::print_solver(const Graph& g) const {
  std::ostringstream o;
  o << print(g);
  for (const L1Chain& c : chains) {
    if (c.concat) continue;
    o << "solver [";
    for (size_t i = 0; i < c.ops.size(); ++i) o << (i ? " " : "") << g.ops[c.ops[i]].name;
    o << "]\n";
    for (size_t k = 0; k < c.ops.size(); ++k) {
      o << "  node " << k << " " << g.ops[c.ops[k]].name << ":";
      if (c.ops[k] < configs.size())
        for (size_t i = 0; i < configs[c.ops[k]].size(); ++i)
          o << (i ? "," : "") << " " << i << "=" << layout_string(configs[c.ops[k]][i])
            << (c.ops[k] < op_configs.size() && i < op_configs[c.ops[k]].size()
                    ? op_config_string(op_configs[c.ops[k]][i])
                    : std::string());
      o << "\n";
    }
    std::istringstream lines(c.solver);
    for (std::string line; std::getline(lines, line);) o << "  " << line << "\n";
    if (!c.failure.empty()) o << "  failed: " << c.failure << "\n";
  }
  return o.str();
}

}  // namespace meshplan::planner
