// DFShardingPolicy: L1 chains, ShardSolver per chain, chain-output spills, fork L1 reservations
// and A->B / 3-way chain merges checked against the L1 reservation timeline (seed 001).
#include "meshplan/planner/df_sharding.hpp"

#include <algorithm>
#include <sstream>

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

class OpModelChecker final : public ShardChecker {
 public:
  OpModelChecker(const Graph& g, const device::ChipDesc& chip, const PlannerOptions& options)
      : g_(g), chip_(chip), q_(g, chip), max_(options.max_legal_layouts) {}

  std::vector<TensorLayout> legal_configs(OpId o) const override {
    const Op& op = g_.ops[o];
    const Value& r = g_.values[op.results[0]];
    std::vector<TensorLayout> out;
    for (const TensorLayout& c : layout_candidates(r, chip_, max_)) {
      if (!is_sharded(c)) continue;
      std::vector<TensorLayout> in = dram_operands(op);
      bool ok = valid_all(o, in, c, nullptr);
      if (!ok && g_.values[op.operands[0]].shape == r.shape) {
        in[0] = c;
        ok = valid_all(o, in, c, nullptr);
      }
      if (ok) out.push_back(c);
    }
    return out;
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
    device::OpConfig base = op_config(op, g_.mesh).value_or(device::OpConfig{});
    device::OpValidation v = q_.validate(op.kind, op.name, op.operands, ptrs, op.results[0], out,
                                         config_for(base, out, chip_));
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
};

}  // namespace

std::unique_ptr<ShardChecker> make_opmodel_checker(const Graph& g, const device::ChipDesc& chip,
                                                   const PlannerOptions& options) {
  return std::make_unique<OpModelChecker>(g, chip, options);
}

Result<DfShardingResult> run_df_sharding(const Graph& g, const device::ChipDesc& chip,
                                         const PlannerOptions&, const ShardChecker& checker) {
  DfShardingResult out;
  out.decision = MESHPLAN_TRY(LayoutDecision::all_dram(g, chip));
  LayoutDecision& d = out.decision;
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
  L1Chain current;
  auto finalize = [&] {
    if (current.ops.empty()) return;
    current.state = ChainState::built;
    out.chains.push_back(std::move(current));
    current = L1Chain{};
  };
  for (OpId o = 0; o < g.ops.size(); ++o) {
    configs[o] = checker.legal_configs(o);
    if (configs[o].size() > ShardSolver::kMaxConfigs) configs[o].resize(ShardSolver::kMaxConfigs);
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

  // 2. Resolve each chain with a ShardSolver; any failure fails the whole chain (it stays DRAM).
  for (L1Chain& chain : out.chains) {
    std::vector<uint32_t> counts;
    std::vector<ShardSolver::Edge> edges;
    for (uint32_t k = 0; k < chain.ops.size(); ++k) {
      counts.push_back(static_cast<uint32_t>(configs[chain.ops[k]].size()));
      if (k > 0) edges.push_back(ShardSolver::Edge{k - 1, k, 0});
    }
    auto layout = [&](uint32_t node, uint32_t c) -> const TensorLayout& {
      return configs[chain.ops[node]][c];
    };
    ShardSolver::Callbacks cb;
    cb.edge_ok = [&](const ShardSolver::Edge& e, uint32_t p, uint32_t c) {
      return checker.valid(chain.ops[e.consumer], 0, layout(e.producer, p), layout(e.consumer, c));
    };
    cb.entry_ok = [&](uint32_t node, uint32_t c) {
      OpId o = chain.ops[node];
      return checker.valid(o, 0, d.tensors[g.ops[o].operands[0]], layout(node, c));
    };
    cb.reshard_for = [&](const ShardSolver::Edge& e, uint32_t c) -> std::optional<TensorLayout> {
      OpId o = chain.ops[e.consumer];
      ValueId v = g.ops[o].operands[0];
      bool entry = e.producer == e.consumer;
      for (const TensorLayout& t : checker.reshard_targets(v))
        if (checker.valid(o, 0, t, layout(e.consumer, c)) &&
            (!entry || checker.move_valid(v, d.tensors[v], t)))
          return t;
      return std::nullopt;
    };
    cb.cores = [&](uint32_t node, uint32_t c) { return cores_of(layout(node, c)); };
    ShardSolver solver(counts, edges, cb);
    if (!solver.resolve()) {
      chain.state = ChainState::failed;
      continue;
    }
    chain.state = ChainState::resolved;
    if (!solver.pick_max_core_usage()) {
      chain.state = ChainState::failed;
      continue;
    }
    ShardSolver::Solution sol = solver.finish();
    for (uint32_t k = 0; k < chain.ops.size(); ++k) {
      OpId o = chain.ops[k];
      chain.layouts.push_back(layout(k, sol.config[k]));
      d.tensors[g.ops[o].results[0]] = chain.layouts.back();
      d.configs[o] = config_for(d.configs[o], chain.layouts.back(), chip);
    }
    for (const auto& [edge, target] : sol.reshards)
      d.reshards.push_back(LayoutDecision::Reshard{chain.ops[edge.consumer], 0, target});
    chain.state = ChainState::completed;
  }

  // L1 reservation timeline and schedule-range validation (seed 001 §4.1.3, §4.1.5).
  auto reserved_at = [&](int pos) {
    uint64_t total = 0;
    for (const L1Reservation& r : out.reservations)
      if (r.first <= pos && pos <= r.last) total += r.bytes;
    return total;
  };
  auto op_fits = [&](OpId o, uint64_t extra) {
    std::vector<TensorLayout> in;
    for (ValueId v : g.ops[o].operands) in.push_back(d.tensors[v]);
    uint64_t need = 0;
    if (!checker.valid_all(o, in, d.tensors[g.ops[o].results[0]], &need)) return false;
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
    return std::any_of(out.chains.begin(), out.chains.end(), [&](const L1Chain& c) {
      return c.state == ChainState::completed && c.ops.front() == o;
    });
  };

  for (L1Chain& chain : out.chains) {
    if (chain.state != ChainState::completed) continue;
    OpId last = chain.ops.back();
    ValueId v = g.ops[last].results[0];
    TensorLayout sharded = d.tensors[v];
    int end = last_use(v);
    bool fork = uses[v].size() > 1 || (is_output[v] && !uses[v].empty());
    auto consumers_accept = [&](const TensorLayout& t) {
      for (auto [o, i] : uses[v])
        if (!checker.valid(o, i, t, d.tensors[g.ops[o].results[0]])) return false;
      return true;
    };
    // 3. Fork L1 reservations (§4.1.4): sharded if every consumer takes it, else L1 interleaved.
    if (fork && !is_output[v]) {
      uint64_t bytes = l1_bytes_per_core(g.values[v], sharded, chip);
      if (consumers_accept(sharded) && range_fits(static_cast<int>(last) + 1, end, bytes)) {
        chain.spill = SpillLocation::none;
        out.reservations.push_back(L1Reservation{v, static_cast<int>(last), end, bytes});
        continue;
      }
      TensorLayout l1 = interleaved_layout(g.values[v], device::BufferType::l1);
      std::vector<TensorLayout> in;
      for (ValueId x : g.ops[last].operands) in.push_back(d.tensors[x]);
      uint64_t l1_bytes = l1_bytes_per_core(g.values[v], l1, chip);
      if (checker.valid_all(last, in, l1, nullptr) && consumers_accept(l1) &&
          range_fits(static_cast<int>(last) + 1, end, l1_bytes)) {
        d.tensors[v] = l1;
        d.configs[last] = config_for(d.configs[last], l1, chip);
        chain.layouts.back() = l1;
        chain.spill = SpillLocation::l1_interleaved;
        out.reservations.push_back(L1Reservation{v, static_cast<int>(last), end, l1_bytes});
        continue;
      }
    }
    // 4. Chain merges (§4.1.2): a single-use output consumed (on any operand) by the first op of a
    // completed chain stays in L1 if every op scheduled in between, and the join op with this
    // input, fit beside it. Merges are applied in chain order, so a second input of the same
    // join (3-way merge) is validated with the first one's reservation active.
    if (!fork && uses[v].size() == 1) {
      auto [join, operand] = uses[v][0];
      uint64_t bytes = l1_bytes_per_core(g.values[v], sharded, chip);
      if (first_op_of_completed_chain(join) &&
          checker.valid(join, operand, sharded, d.tensors[g.ops[join].results[0]]) &&
          range_fits(static_cast<int>(last) + 1, static_cast<int>(join), bytes)) {
        chain.spill = SpillLocation::none;
        out.reservations.push_back(
            L1Reservation{v, static_cast<int>(last), static_cast<int>(join), bytes});
        continue;
      }
    }
    // 5. Otherwise the chain output spills to DRAM right after the chain.
    chain.spill = SpillLocation::dram;
    d.spills.push_back(v);
  }
  return out;
}

Result<LayoutDecision> df_sharding(const Graph& g, const device::ChipDesc& chip,
                                   const PlannerOptions& options, const Overrides& overrides) {
  std::unique_ptr<ShardChecker> checker = make_opmodel_checker(g, chip, options);
  DfShardingResult r = MESHPLAN_TRY(run_df_sharding(g, chip, options, *checker));
  MESHPLAN_TRY(apply_overrides(g, chip, overrides, r.decision));
  return std::move(r.decision);
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
  return o.str();
}

}  // namespace meshplan::planner
