// Overrides and greedy layout propagation (policies `l1-interleaved` and `greedy`).
#include <algorithm>
#include <charconv>
#include <map>

#include "meshplan/planner/policies.hpp"

namespace meshplan::planner {

namespace {

Result<device::BufferType> memory_of(std::string_view text, std::string_view entry) {
  if (text == "l1") return device::BufferType::l1;
  if (text == "dram") return device::BufferType::dram;
  return fail(ErrorCode::invalid_argument, "override '", entry, "': memory '", text,
              "' is not l1 or dram");
}

Result<OpId> op_named(const Graph& g, std::string_view name, std::string_view entry) {
  for (OpId o = 0; o < g.ops.size(); ++o)
    if (g.ops[o].name == name) return o;
  return fail(ErrorCode::invalid_argument, "override '", entry, "': graph '", g.name,
              "' has no op named '", name, "'");
}

}  // namespace

Result<Overrides> parse_overrides(const Graph& g, const PlannerOptions& options) {
  Overrides out;
  out.output.assign(g.ops.size(), std::nullopt);
  for (const std::string& e : options.output_overrides) {
    size_t eq = e.rfind('=');
    if (eq == std::string::npos)
      return fail(ErrorCode::invalid_argument, "override '", e, "' is not of the form op=l1|dram");
    OpId o = MESHPLAN_TRY(op_named(g, std::string_view(e).substr(0, eq), e));
    out.output[o] = MESHPLAN_TRY(memory_of(std::string_view(e).substr(eq + 1), e));
  }
  for (const std::string& e : options.memreconfig) {
    size_t colon = e.rfind(':'), eq = e.rfind('=');
    if (colon == std::string::npos || eq == std::string::npos || eq < colon)
      return fail(ErrorCode::invalid_argument, "memreconfig '", e,
                  "' is not of the form op:operand=l1|dram");
    OpId o = MESHPLAN_TRY(op_named(g, std::string_view(e).substr(0, colon), e));
    std::string index(e.substr(colon + 1, eq - colon - 1));
    uint32_t i = 0;
    auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), i);
    bool digits = !index.empty() && ec == std::errc() && end == index.data() + index.size();
    if (!digits || i >= g.ops[o].operands.size())
      return fail(ErrorCode::invalid_argument, "memreconfig '", e, "': op '", g.ops[o].name,
                  "' has no operand '", index, "'");
    out.moves.push_back(
        Overrides::Move{o, i, MESHPLAN_TRY(memory_of(std::string_view(e).substr(eq + 1), e))});
  }
  return out;
}

namespace {

// Operand layouts of op `o` after its forced moves (recorded as reshards in `d`).
Result<std::vector<TensorLayout>> operand_layouts(const Graph& g, const OpQuery& q,
                                                  const Overrides& ov, OpId o, LayoutDecision& d) {
  const Op& op = g.ops[o];
  std::vector<TensorLayout> in;
  for (ValueId v : op.operands) in.push_back(d.tensors[v]);
  for (const Overrides::Move& m : ov.moves) {
    if (m.op != o) continue;
    ValueId v = op.operands[m.operand];
    TensorLayout to = interleaved_layout(g.values[v], m.to);
    device::OpValidation ok = q.validate_move(v, in[m.operand], to);
    if (!ok.ok)
      return fail(ErrorCode::invalid_argument, "memreconfig for op '", op.name, "' operand ",
                  m.operand, " is illegal: ", q.explain_move(v, in[m.operand], to).reason);
    in[m.operand] = to;
    d.reshards.push_back(LayoutDecision::Reshard{o, m.operand, to});
  }
  return in;
}

device::OpValidation check(const OpQuery& q, const Op& op, const std::vector<TensorLayout>& in,
                           const TensorLayout& result, const device::OpConfig& config) {
  std::vector<const TensorLayout*> ptrs;
  for (const TensorLayout& t : in) ptrs.push_back(&t);
  return q.validate(op.kind, op.name, op.operands, ptrs, op.results[0], result, config);
}

// OpModel's reason, naming this op (the memo's may name another op with the same signature).
std::string why(const OpQuery& q, const Op& op, const std::vector<TensorLayout>& in,
                const TensorLayout& result, const device::OpConfig& config) {
  std::vector<const TensorLayout*> ptrs;
  for (const TensorLayout& t : in) ptrs.push_back(&t);
  return q.explain(op.kind, op.name, op.operands, ptrs, op.results[0], result, config).reason;
}

}  // namespace

Status apply_overrides(const Graph& g, const device::ChipDesc& chip, const Overrides& ov,
                       LayoutDecision& d) {
  if (ov.empty()) return {};
  OpQuery q(g, chip);
  for (OpId o = 0; o < g.ops.size(); ++o) {
    std::vector<TensorLayout> in = MESHPLAN_TRY(operand_layouts(g, q, ov, o, d));
    if (!ov.output[o]) continue;
    const Op& op = g.ops[o];
    TensorLayout t = interleaved_layout(g.values[op.results[0]], *ov.output[o]);
    device::OpConfig c = config_for(d.configs[o], t, chip);
    device::OpValidation ok = check(q, op, in, t, c);
    if (!ok.ok)
      return fail(ErrorCode::invalid_argument, "output override for op '", op.name,
                  "' is illegal: ", why(q, op, in, t, c));
    d.tensors[op.results[0]] = t;
    d.configs[o] = c;
  }
  return {};
}

Result<LayoutDecision> greedy_propagation(const Graph& g, const device::ChipDesc& chip,
                                          const PlannerOptions& options, const Overrides& ov,
                                          bool sharded) {
  LayoutDecision d = MESHPLAN_TRY(LayoutDecision::all_dram(g, chip));
  OpQuery q(g, chip);
  // Candidate pools depend on the value's shape and dtype only (layout_candidates): transformer
  // layers repeat a handful of shapes, so each pool is built once (a tenth of greedy's time on
  // 10,000 ops went to rebuilding them).
  std::map<std::pair<std::vector<int64_t>, DType>, std::vector<TensorLayout>> pools;
  auto candidates = [&](const Value& v) -> const std::vector<TensorLayout>& {
    auto [it, fresh] = pools.try_emplace({v.shape, v.dtype});
    if (!fresh) return it->second;
    std::vector<TensorLayout> c = layout_candidates(v, chip, options.max_legal_layouts);
    if (!sharded)
      c.erase(std::remove_if(
                  c.begin(), c.end(),
                  [](const TensorLayout& t) { return t.memory != device::MemLayout::interleaved; }),
              c.end());
    it->second = std::move(c);
    return it->second;
  };
  for (OpId o = 0; o < g.ops.size(); ++o) {
    const Op& op = g.ops[o];
    const Value& result = g.values[op.results[0]];
    std::vector<TensorLayout> in = MESHPLAN_TRY(operand_layouts(g, q, ov, o, d));
    std::vector<TensorLayout> fixed;
    if (ov.output[o]) fixed.push_back(interleaved_layout(result, *ov.output[o]));
    const std::vector<TensorLayout>& cands = ov.output[o] ? fixed : candidates(result);
    auto pick = [&](const std::vector<TensorLayout>& operands,
                    std::string* reason) -> std::optional<TensorLayout> {
      // The cheapest valid L1 layout by OpModel's cost (ties: the pool's order), else the first
      // valid fallback (DRAM).
      const TensorLayout* best = nullptr;
      uint64_t best_ns = 0;
      std::vector<const TensorLayout*> ptrs;
      for (const TensorLayout& t : operands) ptrs.push_back(&t);
      for (const TensorLayout& c : cands) {
        device::OpConfig config = config_for(d.configs[o], c, chip);
        if (!c.in_l1()) {
          if (best) continue;
          if (check(q, op, operands, c, config).ok) return c;
          continue;
        }
        std::optional<uint64_t> ns =
            q.cost_if_valid(op.kind, op.name, op.operands, ptrs, op.results[0], c, config);
        if (ns && (!best || *ns < best_ns)) {
          best = &c;
          best_ns = *ns;
        }
      }
      if (best) return *best;
      if (reason && !cands.empty())  // OpModel's words for the last fallback (DRAM)
        *reason = why(q, op, operands, cands.back(), config_for(d.configs[o], cands.back(), chip));
      return std::nullopt;
    };
    std::string reason;
    std::optional<TensorLayout> chosen = pick(in, &reason);
    if (!chosen && ov.output[o])
      return fail(ErrorCode::invalid_argument, "output override for op '", op.name,
                  "' is illegal: ", reason);
    // No valid result with the operands as they are: reshard one operand (bounded exploration).
    for (uint32_t i = 0; !chosen && i < op.operands.size(); ++i) {
      std::vector<TensorLayout> targets = candidates(g.values[op.operands[i]]);  // a copy
      if (targets.size() > 8) targets.erase(targets.begin(), targets.end() - 8);
      for (const TensorLayout& t : targets) {
        if (t == in[i] || !q.validate_move(op.operands[i], in[i], t).ok) continue;
        std::vector<TensorLayout> moved = in;
        moved[i] = t;
        if ((chosen = pick(moved, nullptr))) {
          d.reshards.push_back(LayoutDecision::Reshard{o, i, t});
          break;
        }
      }
    }
    if (!chosen)
      return fail(ErrorCode::invalid_argument, "no legal layout for op '", op.name, "': ", reason);
    d.tensors[op.results[0]] = *chosen;
    d.configs[o] = config_for(d.configs[o], *chosen, chip);
  }
  return d;
}

}  // namespace meshplan::planner
