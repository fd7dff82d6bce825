// The per-chip pipeline made visible: stage dumps as JSON, one op explained, df-sharding's
// solver state.
#include "meshplan/planner/explain.hpp"

#include <sstream>

#include "meshplan/planner/candidates.hpp"
#include "meshplan/planner/df_sharding.hpp"
#include "meshplan/planner/flatten_spatial.hpp"
#include "meshplan/planner/memory_plan.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/prepare_weights.hpp"
#include "meshplan/planner/schedule.hpp"

namespace meshplan::planner {

namespace {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string_view origin_name(OpOrigin o) {
  switch (o) {
    case OpOrigin::graph:
      return "graph";
    case OpOrigin::reshard:
      return "reshard";
    case OpOrigin::spill:
      return "spill";
  }
  return "?";
}

std::optional<OpId> find_op(const Graph& g, std::string_view name) {
  for (OpId o = 0; o < g.ops.size(); ++o)
    if (g.ops[o].name == name) return o;
  return std::nullopt;
}

// candidates: per op of the planning graph, the candidate layouts of its result.
std::string candidates_json(const Graph& g, const device::ChipDesc& chip,
                            const PlannerOptions& options) {
  std::ostringstream o;
  o << "{\n  \"stage\": \"candidates\",\n  \"max_legal_layouts\": " << options.max_legal_layouts
    << ",\n  \"ops\": [";
  for (OpId id = 0; id < g.ops.size(); ++id) {
    const Op& op = g.ops[id];
    const Value& r = g.values[op.results[0]];
    o << (id ? "," : "") << "\n    {\"name\": " << json_string(op.name)
      << ", \"kind\": " << json_string(device::op_name(op.kind))
      << ", \"result\": " << json_string(r.name) << ", \"candidates\": [";
    std::vector<TensorLayout> cands = layout_candidates(r, chip, options.max_legal_layouts);
    for (size_t i = 0; i < cands.size(); ++i)
      o << (i ? ", " : "") << "{\"layout\": " << json_string(layout_string(cands[i]))
        << ", \"l1_bytes_per_core\": " << l1_bytes_per_core(r, cands[i], chip) << "}";
    o << "]}";
  }
  o << "\n  ]\n}\n";
  return o.str();
}

// layout, spills, memory: the planned graph, op by op, and its tensors.
std::string planned_json(std::string_view stage, const LayoutResult& r,
                         const PlannerOptions& options, const MemoryPlan* memory) {
  const Graph& g = r.graph;
  std::ostringstream o;
  o << "{\n  \"stage\": " << json_string(stage)
    << ",\n  \"policy\": " << json_string(options.policy) << ",\n  \"reshards\": " << r.reshards
    << ",\n  \"spills\": " << r.spills;
  if (memory)
    o << ",\n  \"l1_high_water\": " << memory->l1_high_water
      << ",\n  \"dram_high_water\": " << memory->dram_high_water;
  o << ",\n  \"ops\": [";
  for (OpId id = 0; id < g.ops.size(); ++id) {
    const Op& op = g.ops[id];
    const device::OpConfig& c = r.layout.configs[id];
    o << (id ? "," : "") << "\n    {\"name\": " << json_string(op.name)
      << ", \"kind\": " << json_string(device::op_name(op.kind))
      << ", \"origin\": " << json_string(origin_name(r.origin[id])) << ", \"operands\": [";
    for (size_t i = 0; i < op.operands.size(); ++i)
      o << (i ? ", " : "") << json_string(g.values[op.operands[i]].name);
    o << "], \"result\": " << json_string(g.values[op.results[0]].name)
      << ", \"layout\": " << json_string(layout_string(r.layout.tensors[op.results[0]]))
      << ", \"grid\": [" << c.grid_x << ", " << c.grid_y << "]}";
  }
  o << "\n  ],\n  \"tensors\": [";
  for (ValueId v = 0; v < g.values.size(); ++v) {
    o << (v ? "," : "") << "\n    {\"name\": " << json_string(g.values[v].name)
      << ", \"layout\": " << json_string(layout_string(r.layout.tensors[v]));
    if (memory)
      o << ", \"address\": " << memory->address[v]
        << ", \"bytes_per_bank\": " << memory->bytes_per_bank[v];
    o << "}";
  }
  o << "\n  ]\n}\n";
  return o.str();
}

// Bytes per core of the L1 tensors live across position `pos` of `g` (defined before it and read
// at or after it), other than `except`'s results.
uint64_t live_l1_bytes(const LayoutResult& r, const Schedule& s, int pos, OpId except,
                       const device::ChipDesc& chip) {
  uint64_t bytes = 0;
  const Graph& g = r.graph;
  for (ValueId v = 0; v < g.values.size(); ++v) {
    if (!r.layout.tensors[v].in_l1() || g.values[v].producer == except) continue;
    if (s.defined_at(v) < pos && s.last_use(v) >= pos)
      bytes += l1_bytes_per_core(g.values[v], r.layout.tensors[v], chip);
  }
  return bytes;
}

std::string_view policy_rule(std::string_view policy) {
  if (policy == "greedy")
    return "the cheapest valid L1 layout by OpModel's cost, then kept unless a reader-friendlier "
           "layout lowers its readers' cost";
  if (policy == "l1-interleaved") return "L1 interleaved when valid, else DRAM";
  if (policy == "beam") return "the beam's cheapest plan through this op";
  if (policy == "df-sharding") return "the chain's ShardSolver (most cores), else DRAM";
  if (policy == "dram") return "every tensor in DRAM";
  return "";
}

}  // namespace

std::optional<PlanStage> plan_stage_from_name(std::string_view name) {
  if (name == "candidates") return PlanStage::candidates;
  if (name == "layout") return PlanStage::layout;
  if (name == "spills") return PlanStage::spills;
  if (name == "memory") return PlanStage::memory;
  if (name == "emit") return PlanStage::emit;
  return std::nullopt;
}

Result<Graph> planning_graph(const Graph& graph, const PlannerOptions& options) {
  // As compile() does, in its order: weights first, then the spatial regions.
  Graph g = graph;
  if (options.prepare_weights &&
      (!conv_weight_candidates(g).empty() || !conv_constant_candidates(g).empty()))
    MESHPLAN_TRY(prepare_conv_weights(g));
  if (options.flatten_spatial && find_spatial_regions(g).count > 0)
    MESHPLAN_TRY(flatten_spatial(g));
  return g;
}

Result<std::string> stage_json(const Graph& g, const device::ChipDesc& chip,
                               const PlannerOptions& options, PlanStage stage) {
  switch (stage) {
    case PlanStage::candidates:
      return candidates_json(g, chip, options);
    case PlanStage::layout:
      return planned_json("layout",
                          MESHPLAN_TRY(plan_layout_until(g, chip, options, LayoutStage::decided)),
                          options, nullptr);
    case PlanStage::spills:
      return planned_json("spills",
                          MESHPLAN_TRY(plan_layout_until(g, chip, options, LayoutStage::spilled)),
                          options, nullptr);
    case PlanStage::memory: {
      LayoutResult r = MESHPLAN_TRY(plan_layout(g, chip, options));
      Schedule s = Schedule::build(r.graph);
      MemoryPlan memory = MESHPLAN_TRY(plan_memory(r.graph, s, r.layout, chip));
      MESHPLAN_TRY(verify_memory(r.graph, s, r.layout, memory, chip));
      return planned_json("memory", r, options, &memory);
    }
    case PlanStage::emit:
      break;
  }
  return fail(ErrorCode::invalid_argument,
              "stage emit is the plan itself: compile() gives it, not stage_json()");
}

namespace {
// The graph the policies plan in compile(): the weights in their storage dtype
// (PlannerOptions::weight_dtype, weight_dtype_overrides), so that an op is explained, and the
// solver dumped, with the costs the compile weighed.
Result<Graph> stored_weights_graph(const Graph& graph, const PlannerOptions& options) {
  Graph g = graph;
  for (const WeightStorage& w : MESHPLAN_TRY(
           weight_storage(graph, options.weight_dtype, options.weight_dtype_overrides)))
    g.values[w.value].dtype = w.dtype;
  return g;
}
}  // namespace

Result<std::string> explain_op(const Graph& planning, const device::ChipDesc& chip,
                               const PlannerOptions& options, std::string_view name) {
  const Graph graph = MESHPLAN_TRY(stored_weights_graph(planning, options));
  if (!find_op(graph, name))
    return fail(ErrorCode::not_found, "--explain: graph '", graph.name, "' has no op named '", name,
                "'");
  LayoutResult decided =
      MESHPLAN_TRY(plan_layout_until(graph, chip, options, LayoutStage::decided));
  LayoutResult r = MESHPLAN_TRY(plan_layout(graph, chip, options));
  const Graph& g = r.graph;
  const OpId o = *find_op(g, name);
  const Op& op = g.ops[o];
  const ValueId result = op.results[0];
  const Value& rv = g.values[result];
  Schedule s = Schedule::build(g);
  int pos = 0;
  while (s.order()[pos] != o) ++pos;
  OpQuery q(g, chip, r.mesh);
  std::ostringstream out;
  out << "op " << op.name << " (" << device::op_name(op.kind) << ") -> %" << rv.name << " "
      << shape_string(rv.shape) << ", policy " << options.policy << "\n";
  std::vector<const TensorLayout*> in;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    ValueId v = op.operands[i];
    in.push_back(&r.layout.tensors[v]);
    out << "  operand " << i << " %" << g.values[v].name << ": "
        << layout_string(r.layout.tensors[v]);
    OpId p = g.values[v].producer;
    if (p != kNoOp && r.origin[p] != OpOrigin::graph)
      out << " (" << origin_name(r.origin[p]) << " " << g.ops[p].name << " from "
          << layout_string(r.layout.tensors[g.ops[p].operands[0]]) << ")";
    out << "\n";
  }
  const uint64_t usable = chip.l1_usable_top() - chip.l1_unreserved_base;
  const uint64_t live = live_l1_bytes(r, s, pos, o, chip);
  out << "  L1: " << live << " B/core held by tensors live across the op, " << usable
      << " B/core usable\n";
  const device::OpConfig base = MESHPLAN_TRY(op_config(op, g.mesh));
  const TensorLayout& chosen = r.layout.tensors[result];
  bool listed = false;
  out << "  candidates:\n";
  for (const TensorLayout& cand : layout_candidates(rv, chip, options.max_legal_layouts)) {
    device::OpConfig c = config_for(base, cand, chip);
    out << "    " << layout_string(cand) << ": ";
    device::OpValidation v = q.validate(op.kind, op.name, op.operands, in, result, cand, c);
    if (!v.ok) {
      out << "rejected by OpModel: "
          << q.explain(op.kind, op.name, op.operands, in, result, cand, c).reason;
    } else {
      uint64_t ns = q.timing(op.kind, op.name, op.operands, in, result, cand, c).duration_ns;
      uint64_t need = v.cb_bytes_per_core + v.output_l1_bytes_per_core;
      out << "valid, " << ns << " ns, L1 " << v.cb_bytes_per_core << " CB + "
          << v.output_l1_bytes_per_core << " result B/core";
      if (need + live > usable)
        out << ", over the L1 budget (" << need << " + " << live << " live > " << usable << ")";
    }
    if (cand == chosen) {
      out << "  <- chosen";
      listed = true;
    }
    out << "\n";
  }
  if (!listed) out << "    (the chosen layout is not among the candidates above)\n";
  if (options.policy == "df-sharding") {
    const Graph dfs = dfs_ordered(graph);  // As plan_layout() hands it to df-sharding.
    std::unique_ptr<ShardChecker> checker = make_opmodel_checker(dfs, chip, options);
    DfShardingResult df = MESHPLAN_TRY(run_df_sharding(dfs, chip, options, *checker, true));
    const OpId at = *find_op(dfs, name);
    const L1Chain* in_chain = nullptr;
    for (const L1Chain& c : df.chains)
      for (OpId k : c.ops)
        if (k == at) in_chain = &c;
    if (!in_chain) {
      out << "  chain: none (no legal sharded result layout: DRAM interleaved)\n";
    } else {
      out << "  chain: [";
      for (size_t i = 0; i < in_chain->ops.size(); ++i)
        out << (i ? " " : "") << dfs.ops[in_chain->ops[i]].name;
      out << "] " << chain_state_name(in_chain->state);
      if (!in_chain->failure.empty()) out << ": " << in_chain->failure;
      out << "\n";
    }
  }
  if (auto d = find_op(decided.graph, name);
      d && !(decided.layout.tensors[decided.graph.ops[*d].results[0]] == chosen))
    out << "  the policy chose "
        << layout_string(decided.layout.tensors[decided.graph.ops[*d].results[0]])
        << "; spill management and L1 packing moved it\n";
  uint64_t ns =
      q.timing(op.kind, op.name, op.operands, in, result, chosen, r.layout.configs[o]).duration_ns;
  out << "  choice: " << layout_string(chosen) << " on " << r.layout.configs[o].grid_x << "x"
      << r.layout.configs[o].grid_y << " cores, " << ns << " ns (" << policy_rule(options.policy)
      << ")\n";
  return out.str();
}

Result<std::string> dump_solver(const Graph& graph, const device::ChipDesc& chip,
                                const PlannerOptions& options) {
  // As plan_layout() hands it to df-sharding, weights in their storage dtype.
  const Graph dfs = dfs_ordered(MESHPLAN_TRY(stored_weights_graph(graph, options)));
  std::unique_ptr<ShardChecker> checker = make_opmodel_checker(dfs, chip, options);
  DfShardingResult df = MESHPLAN_TRY(run_df_sharding(dfs, chip, options, *checker, true));
  return df.print_solver(dfs);
}

}  // namespace meshplan::planner
