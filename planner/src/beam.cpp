// Beam search over layouts (seed 002 §5.8.1). Forward: per op in schedule order, candidates
// from every combination of the operands' kept candidates (K x K for binary ops) plus a bounded
// number of reshards of the best one, times the op's result layouts OpModel accepts; keep the K
// best with back-pointers. Backward: from the last op to the first, each op takes the candidate
// its consumers' requests cost least to satisfy (fork resolution), inserting reshards for the
// consumers whose wanted layout differs.
#include <algorithm>
#include <limits>
#include <optional>

#include "meshplan/planner/policies.hpp"

namespace meshplan::planner {

namespace {

constexpr uint32_t kReshardsPerOperand = 2;  // reshard targets explored per operand per op
constexpr uint64_t kInf = std::numeric_limits<uint64_t>::max() / 4;

struct Option {
  TensorLayout reads;
  int32_t parent = -1;
  uint64_t score = 0;
  uint32_t min_cores = UINT32_MAX;
  uint32_t reshards = 0;
  bool forced = false;  ///< A user memreconfig: the move is kept even if the layouts agree.
  TensorLayout from;    ///< Forced moves: the layout the producer is asked for.
};

struct Cand {
  TensorLayout layout;
  device::OpConfig config;
  uint64_t score = 0;
  uint32_t min_cores = UINT32_MAX;
  uint32_t reshards = 0;
  std::vector<int32_t> parent;
  std::vector<TensorLayout> reads;
  std::vector<std::optional<TensorLayout>>
      forced;  ///< Per operand: pre-move layout of a forced move.
};

std::optional<TensorLayout> forced_from(const std::vector<Option>& list,
                                        const TensorLayout& reads) {
  for (const Option& x : list)
    if (x.forced && x.reads == reads) return x.from;
  return std::nullopt;
}

}  // namespace

Result<LayoutDecision> beam_search(const Graph& g, const device::ChipDesc& chip,
                                   const PlannerOptions& options, const Overrides& ov) {
  LayoutDecision d = MESHPLAN_TRY(LayoutDecision::all_dram(g, chip));
  OpQuery q(g, chip);
  const size_t k_width = std::max<uint32_t>(1, options.beam_width);
  const bool cost_mode = options.beam_cost_mode;
  auto better = [&](const Cand& a, const Cand& b) {
    if (cost_mode) return a.score < b.score;
    if (a.min_cores != b.min_cores) return a.min_cores > b.min_cores;
    if (a.reshards != b.reshards) return a.reshards < b.reshards;
    return a.score < b.score;
  };
  std::vector<std::vector<Cand>> beam(g.ops.size());
  for (OpId o = 0; o < g.ops.size(); ++o) {
    const Op& op = g.ops[o];
    const Value& result = g.values[op.results[0]];
    // Options per operand.
    std::vector<std::vector<Option>> opts(op.operands.size());
    for (uint32_t i = 0; i < op.operands.size(); ++i) {
      ValueId v = op.operands[i];
      OpId p = g.values[v].producer;
      std::vector<Option>& list = opts[i];
      if (p == kNoOp) {
        list.push_back(Option{d.tensors[v], -1, 0, UINT32_MAX, 0, false, {}});
      } else {
        for (int32_t k = 0; k < static_cast<int32_t>(beam[p].size()); ++k) {
          const Cand& c = beam[p][k];
          if (std::any_of(list.begin(), list.end(),
                          [&](const Option& x) { return x.reads == c.layout; }))
            continue;
          list.push_back(Option{c.layout, k, c.score, c.min_cores, c.reshards, false, {}});
        }
      }
      const Option base = list.front();
      auto forced = std::find_if(ov.moves.begin(), ov.moves.end(),
                                 [&](const auto& m) { return m.op == o && m.operand == i; });
      if (forced != ov.moves.end()) {
        TensorLayout to = interleaved_layout(g.values[v], forced->to);
        device::OpValidation ok = q.validate_move(v, base.reads, to);
        if (!ok.ok)
          return fail(ErrorCode::invalid_argument, "memreconfig for op '", op.name, "' operand ", i,
                      " is illegal: ", q.explain_move(v, base.reads, to).reason);
        list = {Option{to, base.parent, base.score + q.move_cost(v, base.reads, to), base.min_cores,
                       base.reshards + 1, true, base.reads}};
        continue;
      }
      if (p == kNoOp) continue;
      uint32_t explored = 0;
      for (const TensorLayout& t :
           layout_candidates(g.values[v], chip, options.max_legal_layouts)) {
        if (explored >= kReshardsPerOperand) break;
        if (std::any_of(list.begin(), list.end(), [&](const Option& x) { return x.reads == t; }))
          continue;
        if (!q.validate_move(v, base.reads, t).ok) continue;
        ++explored;
        list.push_back(Option{t,
                              base.parent,
                              base.score + q.move_cost(v, base.reads, t),
                              base.min_cores,
                              base.reshards + 1,
                              false,
                              {}});
      }
    }
    std::vector<TensorLayout> results;
    if (ov.output[o])
      results.push_back(interleaved_layout(result, *ov.output[o]));
    else
      results = layout_candidates(result, chip, options.max_legal_layouts);
    // Every combination of operand options (odometer), times every valid result layout.
    std::vector<Cand> next;
    std::vector<size_t> pick(op.operands.size(), 0);
    for (bool more = true; more;) {
      std::vector<const TensorLayout*> reads;
      uint64_t score = 0;
      uint32_t min_cores = UINT32_MAX, reshards = 0;
      for (uint32_t i = 0; i < pick.size(); ++i) {
        const Option& x = opts[i][pick[i]];
        reads.push_back(&x.reads);
        score += x.score;
        min_cores = std::min(min_cores, x.min_cores);
        reshards += x.reshards;
      }
      auto consider = [&](const TensorLayout& r) {
        device::OpConfig config = config_for(d.configs[o], r, chip);
        device::OpValidation ok =
            q.validate(op.kind, op.name, op.operands, reads, op.results[0], r, config);
        if (!ok.ok) return;
        device::OpTiming t =
            q.timing(op.kind, op.name, op.operands, reads, op.results[0], r, config);
        Cand c;
        c.layout = r;
        c.config = config;
        c.score = score + t.duration_ns;
        c.min_cores = std::min(min_cores, t.cores_used);
        c.reshards = reshards;
        for (uint32_t i = 0; i < pick.size(); ++i) {
          c.parent.push_back(opts[i][pick[i]].parent);
          c.reads.push_back(opts[i][pick[i]].reads);
        }
        next.push_back(std::move(c));
      };
      for (const TensorLayout& r : results) consider(r);
      // A layout OpModel accepts that the pool may not hold (seed 002 §5.4.5): the result sharded
      // exactly like an operand of its shape, as an elementwise op writes it in place.
      if (!ov.output[o])
        for (uint32_t i = 0; i < reads.size(); ++i) {
          TensorLayout same = *reads[i];
          same.dtype = results.back().dtype;
          if (!same.in_l1() || same.memory == device::MemLayout::interleaved ||
              g.values[op.operands[i]].shape != result.shape ||
              std::find(results.begin(), results.end(), same) != results.end() ||
              std::any_of(reads.begin(), reads.begin() + i,
                          [&](const TensorLayout* x) { return *x == *reads[i]; }))
            continue;
          consider(same);
        }
      more = false;
      for (size_t i = 0; i < pick.size(); ++i) {
        if (++pick[i] < opts[i].size()) {
          more = true;
          break;
        }
        pick[i] = 0;
      }
    }
    if (next.empty()) {
      // OpModel's words (naming this op) for the first operand options and the last fallback.
      std::vector<const TensorLayout*> reads;
      for (uint32_t i = 0; i < op.operands.size(); ++i) reads.push_back(&opts[i][0].reads);
      std::string reason = q.explain(op.kind, op.name, op.operands, reads, op.results[0],
                                     results.back(), config_for(d.configs[o], results.back(), chip))
                               .reason;
      if (ov.output[o])
        return fail(ErrorCode::invalid_argument, "output override for op '", op.name,
                    "' is illegal: ", reason);
      return fail(ErrorCode::invalid_argument, "no legal layout for op '", op.name, "': ", reason);
    }
    std::stable_sort(next.begin(), next.end(), better);
    if (next.size() > k_width) next.resize(k_width);
    for (Cand& c : next)
      for (uint32_t i = 0; i < op.operands.size(); ++i)
        c.forced.push_back(forced_from(opts[i], c.reads[i]));
    beam[o] = std::move(next);
  }
  // Trace-back with fork resolution.
  struct Request {
    OpId consumer;
    uint32_t operand;
    TensorLayout wants;
  };
  std::vector<std::vector<Request>> requests(g.ops.size());
  for (OpId o = static_cast<OpId>(g.ops.size()); o-- > 0;) {
    const Op& op = g.ops[o];
    ValueId v = op.results[0];
    size_t chosen = 0;
    if (!requests[o].empty()) {
      uint64_t best = kInf;
      for (size_t k = 0; k < beam[o].size(); ++k) {
        uint64_t total = 0;
        for (const Request& r : requests[o]) {
          if (r.wants == beam[o][k].layout) continue;
          total += q.validate_move(v, beam[o][k].layout, r.wants).ok
                       ? q.move_cost(v, beam[o][k].layout, r.wants)
                       : kInf;
        }
        if (total < best) {
          best = total;
          chosen = k;
        }
      }
      if (best >= kInf)
        return fail(ErrorCode::internal, "beam: no candidate of op '", op.name,
                    "' satisfies its consumers");
    }
    const Cand& c = beam[o][chosen];
    d.tensors[v] = c.layout;
    d.configs[o] = c.config;
    for (const Request& r : requests[o])
      if (!(r.wants == c.layout))
        d.reshards.push_back(LayoutDecision::Reshard{r.consumer, r.operand, r.wants});
    for (uint32_t i = 0; i < op.operands.size(); ++i) {
      ValueId in = op.operands[i];
      OpId p = g.values[in].producer;
      if (c.forced[i]) {
        d.reshards.push_back(LayoutDecision::Reshard{o, i, c.reads[i]});
        if (p != kNoOp) requests[p].push_back(Request{o, i, *c.forced[i]});
      } else if (p != kNoOp)
        requests[p].push_back(Request{o, i, c.reads[i]});
      else if (!(c.reads[i] == d.tensors[in]))
        d.reshards.push_back(LayoutDecision::Reshard{o, i, c.reads[i]});
    }
  }
  std::stable_sort(d.reshards.begin(), d.reshards.end(), [](const auto& a, const auto& b) {
    return a.before != b.before ? a.before < b.before : a.operand < b.operand;
  });
  return d;
}

}  // namespace meshplan::planner
