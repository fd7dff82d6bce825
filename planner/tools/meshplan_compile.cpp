// meshplan-compile: plans a graph for a device and adds the plan to a plan cache.
//
//   meshplan-compile MODEL.json -o CACHE.mpc [--name NAME] [--policy NAME] [--beam-width K]
//                    [--beam-score cost|heuristic] [--override-output-layout OP=LAYOUT,...]
//                    [--override-conv2d-config OP=PARAM#VALUE:...,...]
//                    [--memreconfig OP:I=l1|dram]
//                    [--device NAME|FILE.json] [--emit=plan-json|graph-json|dot]
//                    [--report=PLAN.html] [--spill=belady|dp] [--no-prepare-weights]
//                    [--no-flatten-spatial] [--weight-dtype=bf16|bfp8_b|bfp4_b]
//                    [--weight-dtype-override=PATTERN=DTYPE,...]
//   meshplan-compile A.json B.json C.mlir ... -o CACHE.mpc [--jobs N] [--fail-fast] [...]
//   meshplan-compile MODEL.mlir --mesh RxC --emit=sdy|stablehlo [--stop-after=STAGE]
//                    [--arg-types=input,parameter,...] [-o OUT.mlir]
//   meshplan-compile MODEL.mlir --emit=sdy --stop-after=sdy-propagation
//                    [--propagation=basic|aggressive|op-priority|user-priority|pipeline]
//   meshplan-compile MODEL.json --mesh RxC|n300|t3k|galaxy[:ring|:linear]|MESH.json
//                    [--emit=sdy|stablehlo ...] [-o ...]
//   meshplan-compile -o CACHE.mpc --remove NAME [--remove NAME...]
#include <mimalloc-new-delete.h>  // mimalloc is the tool's process allocator.

#include <flatbuffers/idl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "cli.hpp"
#include "compile_batch.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/mesh_spec.hpp"
#include "meshplan/planner/dot.hpp"
#include "meshplan/planner/explain.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/layout.hpp"
#include "meshplan/planner/plan_file.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/prepare_weights.hpp"
#include "meshplan/planner/report.hpp"
#include "meshplan/runtime/cache_edit.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "meshplan/schemas/schemas.hpp"

namespace {

using namespace meshplan;

/// -q: the compile summary, the pipeline's notes and the report/remove messages are not printed.
bool g_quiet = false;

constexpr const char* kSynopsis =
    "meshplan-compile MODEL.json|MODEL.mlir -o CACHE.mpc [options]\n"
    "  meshplan-compile A.json B.mlir ... -o CACHE.mpc [--jobs N] [--fail-fast] [options]\n"
    "  meshplan-compile MODEL.mlir|MODEL.json [--mesh RxC] --emit=sdy|stablehlo [-o OUT.mlir]\n"
    "  meshplan-compile -o CACHE.mpc --remove NAME [--remove NAME...]\n\n"
    "Plans a graph (meshplan graph.json or StableHLO with Shardy annotations) for a device or\n"
    "mesh and adds the plan to a plan cache, or prints it.";

constexpr const char* kFooter =
    "  POLICY: greedy (default: within 1% of beam's simulated time over the model zoo, planned\n"
    "  8x faster), beam, l1-interleaved, df-sharding, dram (every tensor in DRAM: 1.28x slower).\n"
    "  --override-output-layout (or --override) constrains an op's result layout in tt-mlir's\n"
    "  syntax, OP=PARAM:PARAM:... with PARAM a grid RxC, l1|dram, interleaved|height_sharded|\n"
    "  width_sharded|block_sharded, tile|row_major or a data type (OP=l1:block_sharded:8x8:tile);\n"
    "  every policy plans within it. --override-conv2d-config=OP=act_block_h_override#ROWS:\n"
    "  act_block_w_div#N:shard_layout#LAYOUT fixes a conv2d's blocking (tt-mlir's syntax).\n"
    "  --memreconfig forces a move before an operand.\n"
    "  --beam-max-combinations: operand-option combinations beam scores per op (default\n"
    "  (K + 2)^2, a binary op's); --beam-max-evaluations: OpModel evaluations per op past which\n"
    "  beam plans the op greedily and says so (default 65536, 0 = no cap).\n"
    "  --spill: L1 spill selection, farthest next use (belady, default) or optimal (dp).\n"
    "  --no-prepare-weights: plan conv2d weight arguments as given, [O, KH, KW, I/groups];\n"
    "  by default they are planned prepared, [KH*KW*I/groups, O], and the runtime prepares the\n"
    "  host tensor the caller passes (plan input transform conv_weight).\n"
    "  --no-flatten-spatial: plan conv2d / pool activations NHWC as given; by default regions\n"
    "  of conv2d, pools and elementwise ops run on flattened [1, 1, N*H*W, C] activations (as\n"
    "  TTNN runs them, no per-image-row tile padding) with reshapes at the region edges; an\n"
    "  NHWC input only they use is planned flat (plan input transform reshape: same bytes).\n"
    "  --weight-dtype: storage of the weight parameters of matmul and linear ops: bf16 (as\n"
    "  given, default), bfp8_b or bfp4_b (block floats; the runtime quantizes them at upload,\n"
    "  the device computes with the quantized values). --weight-dtype-override=PATTERN=DTYPE\n"
    "  (repeatable, comma-separated, the last match wins) sets the weights whose name, or the\n"
    "  name of a matmul/linear using them, PATTERN matches (`*`: any characters). The summary\n"
    "  then gives the simulated time next to that of bf16 weights.\n"
    "  Plans MODEL.json for DEVICE (default wormhole_b0) and adds the plan to CACHE.mpc under "
    "NAME\n"
    "  (default: the graph's name), replacing an entry with the same name; the same plan\n"
    "  already cached under another name keeps both names (aliases of one stored plan).\n"
    "  --emit=plan-json prints the plan as JSON; --emit=graph-json prints the validated graph;\n"
    "  --emit=dot prints the planned graph for Graphviz (reshards and spills marked).\n"
    "  --emit=plan-json --stop-after=STAGE prints the per-chip pipeline's state after STAGE as\n"
    "  JSON: candidates (candidate layouts per op), layout (the policy's layouts, moves\n"
    "  inserted), spills (after spill management), memory (packed: addresses), emit (the plan).\n"
    "  --explain OP prints OP's operand layouts, each candidate result layout with OpModel's\n"
    "  cost or reason for rejecting it and its L1 need against the budget, df-sharding's chain\n"
    "  state for it, and the layout chosen. --dump-solver prints df-sharding's chains, states,\n"
    "  reservations and each chain's ShardSolver configs, bitsets and paths, naming the edge\n"
    "  with no valid path when a chain fails. Both print instead of writing a cache.\n"
    "  --device takes a built-in chip (wormhole_b0, n150, n300, blackhole_p150) or a device\n"
    "  JSON file (schemas/device.fbs).\n"
    "       meshplan-compile A.json B.mlir ... -o CACHE.mpc [--jobs N] [--fail-fast] [options]\n"
    "  Plans several models (N threads, default 1) and writes the cache once, atomically; each\n"
    "  is named after its file (a/mlp.json -> mlp). A model that fails is reported by name and\n"
    "  the others' plans are still written (exit 1); --fail-fast writes nothing on a failure.\n"
    "       meshplan-compile MODEL.mlir [--mesh RxC] --emit=sdy|stablehlo [--stop-after=STAGE]\n"
    "                        [--arg-types=input,parameter,...] [--presharded] [-o OUT.mlir]\n"
    "  Runs the mesh pipeline on a StableHLO/Shardy module and prints it (to OUT.mlir or stdout).\n"
    "  The module's own sdy.mesh is the mesh; --mesh names the system it runs on (as many chips;\n"
    "  it is the mesh, as [\"model\"=R, \"batch\"=C], of a module that declares none).\n"
    "  Arguments and results are global host arrays, split and assembled by the runtime;\n"
    "  --presharded: arguments with an sdy.sharding arrive split, one piece per chip (identity).\n"
    "  --emit=sdy stops after STAGE (default: close); --emit=stablehlo prints the imported module\n"
    "  unless --stop-after is given. Stages: import, tt-arguments, shard-status, "
    "argument-sharding,\n"
    "  propagation, constraint-to-reshard, explicit-reshards, wrap, collectives, local-shapes, "
    "close.\n"
    "  --stop-after=sdy-propagation prints the module as Shardy's propagation prints it (no\n"
    "  manual computation, no reshards added); --propagation=basic|aggressive|op-priority|\n"
    "  user-priority|pipeline picks the strategy (default pipeline: shardings closed).\n"
    "  --stop-after=sdy-PASS runs one of Shardy's export passes alone on the module as written\n"
    "  and prints it: sdy-sharding-constraint-to-reshard, sdy-remove-sharding-groups,\n"
    "  sdy-drop-sharding-rules, sdy-close-shardings, sdy-insert-explicit-reshards,\n"
    "  sdy-reshard-to-collectives. --explicit-reshards=partial runs the partial version of\n"
    "  sdy-insert-explicit-reshards (Shardy's enable-full-version=false; default full).\n"
    "  Without --emit, the per-device program is lowered to the graph IR and planned as above.\n"
    "  A MODEL.json with sharding annotations (mesh_axes, Argument.sharding) or a --mesh larger\n"
    "  than 1x1 takes the same path: the graph is exported to StableHLO/Shardy first. --mesh also\n"
    "  takes n300 (1x2), t3k (2x4) and galaxy (8x4), each form optionally followed by :ring\n"
    "  (wrap-around links on every row and column; collectives are costed on them) or :linear\n"
    "  (the default), or a device JSON file with a mesh table (schemas/device.fbs: rows, cols,\n"
    "  topology, links, hop_latency_ns, chip), whose chip is the planning chip. The plan records\n"
    "  the mesh (meshplan-run builds it); a ring plan's key differs from a linear one's.\n"
    "  --report writes a self-contained HTML report; --compare adds plans by other policies to "
    "it.\n"
    "       meshplan-compile -o CACHE.mpc --remove NAME [--remove NAME...]\n"
    "  Removes entries from CACHE.mpc (atomically, under the cache's writer lock).\n";

struct Args {
  std::string model, output, name, device = "wormhole_b0", emit;
  std::string policy = planner::PlannerOptions{}.policy;  // the library's default (greedy)
  bool device_given = false;  // --device was written (a mesh JSON file's chip must agree)
  std::string mesh, stop_after, arg_types;  // mesh "" = not given (1x1)
  std::string propagation;                  // --propagation=STRATEGY (sdy-propagation stage)
  std::string explicit_reshards;  // --explicit-reshards=full|partial (sdy-insert-explicit-reshards)
  std::string report;                       // --report=FILE.html
  std::vector<std::string>
      compare;  // --compare=POLICY,POLICY: also plan with these, for the report
  planner::PlannerOptions options;
  std::vector<std::string> remove;  // --remove NAME: drop cache entries
  std::vector<std::string> models;  // every positional MODEL; `model` is the one being planned
  uint32_t jobs = 1;                // --jobs N: planning threads for several models
  bool fail_fast = false;           // --fail-fast: one failed model writes nothing
  bool presharded = false;          // --presharded: sharded arguments arrive split per chip
  // The per-chip pipeline made visible (explain.hpp).
  std::string explain;                        // --explain OP
  bool dump_solver = false;                   // --dump-solver
  std::vector<std::string> conv2d_overrides;  // --override-conv2d-config (tt-mlir's syntax)
};

Result<uint32_t> positive(const std::string& flag, const std::string& text) {
  bool digits = !text.empty() && text.size() < 10 &&
                std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::stoul(text) == 0)
    return fail(ErrorCode::invalid_argument, flag, " takes a positive integer, not '", text, "'");
  return static_cast<uint32_t>(std::stoul(text));
}

/// Numeric option values as text, checked after parsing so the messages name the option.
struct NumberArgs {
  std::string beam_width, beam_max_combinations, beam_max_evaluations, max_legal_layouts, jobs;
  std::string beam_score, spill, compare;
  std::string weight_dtype;
  std::vector<std::string> weight_dtype_overrides;
  bool no_prepare_weights = false, no_flatten_spatial = false;
};

/// Declares meshplan-compile's options on `cli` (the values land in `a` and `n`).
void add_options(tools::Cli& cli, Args& a, NumberArgs& n) {
  CLI::App& app = cli.app();
  app.footer(kFooter);
  app.add_option("models", a.models, "The models to plan")->type_name("");
  app.add_option("-o,--output", a.output, "The plan cache to add to (or the .mlir to write)")
      ->type_name("CACHE.mpc");
  app.add_option("--name", a.name, "The plan's name in the cache (default: the graph's)")
      ->type_name("NAME");
  app.add_option("--policy", a.policy, "Memory policy (default greedy; see below)")
      ->type_name("POLICY");
  app.add_option("--device", a.device, "Planning chip: built-in name or device JSON file")
      ->type_name("NAME|FILE.json");
  app.add_option("--mesh", a.mesh, "The mesh the plan runs on")
      ->type_name("RxC|n300|t3k|galaxy[:ring|:linear]|MESH.json");
  app.add_option("--beam-width", n.beam_width, "beam: plans kept per op")->type_name("K");
  app.add_option("--beam-score", n.beam_score, "beam: how candidates are scored")
      ->type_name("cost|heuristic");
  app.add_option("--max-legal-layouts", n.max_legal_layouts, "Layouts considered per op")
      ->type_name("N");
  app.add_option("--beam-max-combinations", n.beam_max_combinations,
                 "beam: operand combinations scored per op")
      ->type_name("N");
  app.add_option("--beam-max-evaluations", n.beam_max_evaluations,
                 "beam: OpModel evaluations per op (0: no cap)")
      ->type_name("N");
  app.add_option("--override-output-layout,--override", a.options.output_overrides,
                 "Constrain an op's result layout (tt-mlir's override-output-layout)")
      ->type_name("OP=PARAM:...,...")
      ->allow_extra_args(false);
  app.add_option("--override-conv2d-config", a.conv2d_overrides,
                 "Fix conv2d blocking (tt-mlir's override-conv2d-config)")
      ->type_name("OP=PARAM#VALUE:...,...")
      ->allow_extra_args(false);
  app.add_option("--memreconfig", a.options.memreconfig, "Force a move before an operand")
      ->type_name("OP:OPERAND=l1|dram")
      ->allow_extra_args(false);
  app.add_option("--spill", n.spill, "L1 spill selection (default belady)")->type_name("belady|dp");
  app.add_flag("--no-prepare-weights", n.no_prepare_weights,
               "Plan conv2d weights as given, [O, KH, KW, I/groups]");
  app.add_flag("--no-flatten-spatial", n.no_flatten_spatial,
               "Plan conv2d / pool activations NHWC as given");
  app.add_option("--weight-dtype", n.weight_dtype, "Storage of matmul/linear weights")
      ->type_name("bf16|bfp8_b|bfp4_b");
  app.add_option("--weight-dtype-override", n.weight_dtype_overrides,
                 "Storage of the weights a pattern names (repeatable)")
      ->type_name("PATTERN=DTYPE,...")
      ->allow_extra_args(false);
  app.add_option("--emit", a.emit, "Print the plan, the graph or the module instead")
      ->type_name("plan-json|graph-json|dot|sdy|stablehlo");
  app.add_option("--report", a.report, "Write an HTML report of the plan")->type_name("PLAN.html");
  app.add_option("--compare", n.compare, "Add plans by these policies to the report")
      ->type_name("POLICY,...");
  app.add_option("--stop-after", a.stop_after,
                 "The last pipeline stage (--emit=sdy: mesh; --emit=plan-json: per-chip)")
      ->type_name("STAGE");
  app.add_option("--propagation", a.propagation,
                 "--stop-after=sdy-propagation: the propagation strategy (default pipeline)")
      ->type_name("basic|aggressive|op-priority|user-priority|pipeline");
  app.add_option("--explicit-reshards", a.explicit_reshards,
                 "--stop-after=sdy-insert-explicit-reshards: the pass's version (default full)")
      ->type_name("full|partial");
  app.add_option("--arg-types", a.arg_types, "Argument kinds of a StableHLO module")
      ->type_name("input,parameter,...");
  app.add_flag("--presharded", a.presharded, "Sharded arguments arrive split, one per chip");
  app.add_option("--remove", a.remove, "Remove an entry from the cache (repeatable)")
      ->type_name("NAME")
      ->allow_extra_args(false);
  app.add_option("--jobs", n.jobs, "Planning threads for several models (default 1)")
      ->type_name("N");
  app.add_flag("--fail-fast", a.fail_fast, "Several models: one failure writes nothing");
}

/// The per-chip pipeline's views: --stop-after's per-chip stages (with --emit=plan-json),
/// --explain OP and --dump-solver (explain.hpp).
void add_explain_options(CLI::App& app, Args& a) {
  app.add_option("--explain", a.explain,
                 "Print one op's candidates, their costs, why each was rejected, and the choice")
      ->type_name("OP");
  app.add_flag("--dump-solver", a.dump_solver,
               "Print df-sharding's chains, reservations and ShardSolver bitsets and paths");
}

/// Checks the per-chip views' options: a per-chip --stop-after prints JSON (--emit=plan-json),
/// and the views print instead of writing a cache.
Status check_explain_args(const Args& a) {
  bool per_chip_stage = planner::plan_stage_from_name(a.stop_after).has_value();
  if (per_chip_stage && a.emit != "plan-json")
    return fail(ErrorCode::invalid_argument, "--stop-after=", a.stop_after,
                " (a per-chip stage: candidates, layout, spills, memory, emit) needs "
                "--emit=plan-json");
  if ((!a.explain.empty() || a.dump_solver) && (!a.emit.empty() || a.models.size() > 1))
    return fail(ErrorCode::invalid_argument,
                "--explain and --dump-solver print for one model and take no --emit");
  return {};
}

/// --stop-after=STAGE --emit=plan-json (STAGE before emit), --explain, --dump-solver: prints the
/// view of `graph` as planned with `options`; true when one was asked for (nothing else runs).
Result<bool> print_explain_views(const Args& a, const planner::Graph& graph,
                                 const device::ChipDesc& chip,
                                 const planner::PlannerOptions& options) {
  auto stage = planner::plan_stage_from_name(a.stop_after);
  bool early = stage && *stage != planner::PlanStage::emit;
  if (!early && a.explain.empty() && !a.dump_solver) return false;
  planner::Graph planning = MESHPLAN_TRY(planner::planning_graph(graph, options));
  if (early) std::cout << MESHPLAN_TRY(planner::stage_json(planning, chip, options, *stage));
  if (a.dump_solver) std::cout << MESHPLAN_TRY(planner::dump_solver(planning, chip, options));
  if (!a.explain.empty())
    std::cout << MESHPLAN_TRY(planner::explain_op(planning, chip, options, a.explain));
  return true;
}

/// The checks CLI11 cannot express: numbers, choices and which options go together.
Result<Args> finish_args(Args a, const NumberArgs& n, const CLI::App& app) {
  a.device_given = app.count("--device") > 0;
  if (n.no_prepare_weights) a.options.prepare_weights = false;
  if (n.no_flatten_spatial) a.options.flatten_spatial = false;
  if (!n.beam_width.empty())
    a.options.beam_width = MESHPLAN_TRY(positive("--beam-width", n.beam_width));
  if (!n.beam_max_combinations.empty())
    a.options.beam_max_combinations =
        MESHPLAN_TRY(positive("--beam-max-combinations", n.beam_max_combinations));
  if (!n.beam_max_evaluations.empty())
    a.options.beam_max_evaluations =
        n.beam_max_evaluations == "0"
            ? 0
            : MESHPLAN_TRY(positive("--beam-max-evaluations", n.beam_max_evaluations));
  if (!n.max_legal_layouts.empty())
    a.options.max_legal_layouts =
        MESHPLAN_TRY(positive("--max-legal-layouts", n.max_legal_layouts));
  if (!n.jobs.empty()) a.jobs = MESHPLAN_TRY(positive("--jobs", n.jobs));
  if (!n.weight_dtype.empty()) {
    auto dtype = planner::parse_weight_dtype(n.weight_dtype);
    if (!dtype) return std::unexpected(with_context(dtype.error(), "--weight-dtype"));
    a.options.weight_dtype = *dtype;
  }
  for (const std::string& list : n.weight_dtype_overrides)
    for (const std::string& o : tools::split_commas(list)) {
      if (o.find('=') == std::string::npos)
        return fail(ErrorCode::invalid_argument,
                    "--weight-dtype-override takes PATTERN=DTYPE, not '", o, "'");
      auto dtype = planner::parse_weight_dtype(o.substr(o.rfind('=') + 1));
      if (!dtype) return std::unexpected(with_context(dtype.error(), "--weight-dtype-override"));
      a.options.weight_dtype_overrides.push_back(o);
    }
  if (!n.beam_score.empty()) {
    if (n.beam_score != "cost" && n.beam_score != "heuristic")
      return fail(ErrorCode::invalid_argument, "--beam-score takes cost or heuristic, not '",
                  n.beam_score, "'");
    a.options.beam_cost_mode = n.beam_score == "cost";
  }
  if (!n.spill.empty()) {
    if (n.spill != "belady" && n.spill != "dp")
      return fail(ErrorCode::invalid_argument, "--spill takes belady or dp, not '", n.spill, "'");
    a.options.spill = n.spill;
  }
  a.compare = tools::split_commas(n.compare);
  if (!a.models.empty()) a.model = a.models.front();
  if (a.models.size() > 1) {
    if (!a.remove.empty() || a.output.empty() || !a.emit.empty() || !a.report.empty() ||
        !a.name.empty())
      return fail(ErrorCode::invalid_argument,
                  "several models take -o CACHE.mpc and no --name, --emit, --report or --remove "
                  "(names come from the file names)");
  }
  if (!a.remove.empty()) {
    if (!a.model.empty() || a.output.empty())
      return fail(ErrorCode::invalid_argument, "--remove takes -o CACHE.mpc and no model");
    return a;
  }
  if (a.model.empty()) return fail(ErrorCode::invalid_argument, "no model given");
  MESHPLAN_TRY(check_explain_args(a));
  if (a.output.empty() && a.emit.empty() && a.report.empty() && a.explain.empty() && !a.dump_solver)
    return fail(ErrorCode::invalid_argument, "no output: give -o CACHE.mpc, --emit or --report");
  bool mlir_emit = a.emit == "sdy" || a.emit == "stablehlo";
  if (!a.emit.empty() && a.emit != "plan-json" && a.emit != "graph-json" && a.emit != "dot" &&
      !mlir_emit)
    return fail(ErrorCode::invalid_argument,
                "--emit takes plan-json, graph-json, dot, sdy or stablehlo, not '", a.emit, "'");
  if (mlir_emit && !a.model.ends_with(".mlir") && !a.model.ends_with(".json"))
    return fail(ErrorCode::invalid_argument, "--emit=", a.emit, " needs a .mlir or .json model");
  return a;
}

Result<std::string> plan_json(const std::vector<uint8_t>& bytes) {
  flatbuffers::IDLOptions opts;
  opts.output_default_scalars_in_json = true;
  opts.strict_json = true;  // Quoted keys: jq and every JSON parser read it.
  flatbuffers::Parser parser(opts);
  std::string schema(schemas::kPlanSchemaText);
  if (!parser.Parse(schema.c_str(), nullptr, "plan.fbs"))
    return fail(ErrorCode::internal, "embedded plan schema does not parse: ", parser.error_);
  std::string text;
  if (!flatbuffers::GenerateText(parser, bytes.data() + sizeof(flatbuffers::uoffset_t), &text))
    return fail(ErrorCode::internal, "cannot print the plan as JSON");
  return text;
}

/// Writes the HTML report for `plan` (and one plan per --compare policy) to args.report.
Status write_report(const Args& args, const planner::Graph& graph, const device::ChipDesc& chip,
                    const planner::PlannerOptions& planned, const planner::CompiledPlan& plan) {
  std::vector<planner::CompiledPlan> others;
  for (const std::string& policy : args.compare) {
    planner::PlannerOptions options = planned;
    options.policy = policy;
    auto other = planner::compile(graph, chip, options);
    if (!other) return std::unexpected(with_context(other.error(), "--compare " + policy));
    others.push_back(std::move(*other));
  }
  std::vector<planner::ReportPlan> plans;
  plans.push_back({fb::GetSizePrefixedPlan(plan.bytes.data()), args.policy});
  for (size_t i = 0; i < others.size(); ++i)
    plans.push_back({fb::GetSizePrefixedPlan(others[i].bytes.data()), args.compare[i]});
  std::string html = MESHPLAN_TRY(planner::render_report(plans));
  std::ofstream out(args.report, std::ios::binary | std::ios::trunc);
  out << html;
  out.close();
  if (!out) return fail(ErrorCode::io, "cannot write report '", args.report, "'");
  if (!g_quiet)
    std::fprintf(stderr, "meshplan-compile: report written to %s\n", args.report.c_str());
  return {};
}

/// --remove: drops entries by name from the cache, nothing else.
Status remove_entries(const Args& args) {
  runtime::CacheEditReport report =
      MESHPLAN_TRY(runtime::remove_from_cache(args.output, args.remove));
  for (const auto& d : report.dropped)
    if (!g_quiet)
      std::fprintf(stderr, "meshplan-compile: removed '%s' from %s\n", d.name.c_str(),
                   args.output.c_str());
  if (!g_quiet)
    std::fprintf(stderr, "meshplan-compile: %zu entries left in %s\n", report.kept.size(),
                 args.output.c_str());
  return {};
}

/// The front door's options for args.model (plan_file.hpp); notes go to stderr unless -q.
planner::FileOptions file_options(const Args& args) {
  planner::FileOptions o;
  if (args.device_given) o.device = args.device;
  o.mesh = args.mesh;
  o.presharded = args.presharded;
  for (size_t at = 0; !args.arg_types.empty() && at <= args.arg_types.size();) {
    size_t comma = args.arg_types.find(',', at);
    if (comma == std::string::npos) comma = args.arg_types.size();
    o.argument_types.push_back(args.arg_types.substr(at, comma - at));
    at = comma + 1;
  }
  o.stop_after = args.stop_after;
  o.propagation = args.propagation;
  o.explicit_reshards = args.explicit_reshards;
  o.print_module = args.emit == "sdy"         ? planner::ModuleOutput::sdy
                   : args.emit == "stablehlo" ? planner::ModuleOutput::stablehlo
                                              : planner::ModuleOutput::none;
  o.conv2d_overrides = args.conv2d_overrides;
  o.planner = args.options;
  o.planner.policy = args.policy;
  o.name = tools::name_from_path(args.model);
  o.on_note = [](planner::NoteKind kind, const std::string& text) {
    if (g_quiet) return;
    if (kind == planner::NoteKind::located)
      std::fprintf(stderr, "%s\n", text.c_str());
    else
      std::fprintf(stderr, "meshplan-compile: %s\n", text.c_str());
  };
  return o;
}

/// Plans args.model: imports it, runs the emits and the report it asks for, and returns the
/// cache entry to write (nullopt when the model was only printed, e.g. --emit=sdy).
Result<std::optional<tools::PlannedModel>> plan_model(const Args& args) {
  auto t0 = std::chrono::steady_clock::now();
  const planner::FileOptions file = file_options(args);
  planner::ImportedModel imported =
      MESHPLAN_TRY(planner::import_model(planner::ModelSource::file(args.model), file));
  if (imported.module_text) {  // --emit=sdy|stablehlo: the module is the only output.
    if (args.output.empty()) {
      std::cout << *imported.module_text;
    } else {
      std::ofstream out(args.output, std::ios::binary | std::ios::trunc);
      out << *imported.module_text;
      if (!out) return fail(ErrorCode::io, "cannot write '", args.output, "'");
    }
    return std::nullopt;
  }
  const planner::Graph& graph = imported.graph;
  if (args.emit == "graph-json") {
    std::cout << MESHPLAN_TRY(planner::export_graph_json(graph));
    if (args.output.empty()) return std::nullopt;
  }
  MESHPLAN_TRY(planner::prepare_plan(imported, file));
  const device::ChipDesc& chip = imported.chip;
  const planner::PlannerOptions& options = imported.options;
  if (MESHPLAN_TRY(print_explain_views(args, graph, chip, options))) return std::nullopt;
  planner::CompiledPlan plan = MESHPLAN_TRY(planner::compile(graph, chip, options));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Block-float weights: the time they gain, against the same plan with bf16 weights.
  std::string weights;
  if (options.weight_dtype != device::DType::bf16 || !options.weight_dtype_overrides.empty()) {
    planner::PlannerOptions as_given = options;
    as_given.weight_dtype = device::DType::bf16;
    as_given.weight_dtype_overrides.clear();
    planner::CompiledPlan base = MESHPLAN_TRY(planner::compile(graph, chip, as_given));
    auto simulated_us = [](const planner::CompiledPlan& p) {
      return static_cast<double>(
                 fb::GetSizePrefixedPlan(p.bytes.data())->header()->metrics()->estimated_ns()) /
             1000.0;
    };
    double now = simulated_us(plan), before = simulated_us(base);
    size_t stored = MESHPLAN_TRY(planner::weight_storage(graph, options.weight_dtype,
                                                         options.weight_dtype_overrides))
                        .size();
    char times[160];
    std::snprintf(times, sizeof times, "simulated %.1f us vs %.1f us with bf16 weights (%.3fx)",
                  now, before, before > 0 ? now / before : 1.0);
    weights = str(", weights ", planner::weight_dtype_name(options.weight_dtype), " (",
                  options.weight_dtype_overrides.size(), " overrides, ", stored,
                  " weights stored as block floats): ", times);
  }
  if (args.emit == "plan-json") std::cout << MESHPLAN_TRY(plan_json(plan.bytes));
  std::string stem = tools::name_from_path(args.model);
  std::string graph_name = !graph.name.empty() ? graph.name : stem;
  if (args.emit == "dot")
    std::cout << planner::render_dot(*fb::GetSizePrefixedPlan(plan.bytes.data()), graph_name);
  if (!args.report.empty()) MESHPLAN_TRY(write_report(args, graph, chip, options, plan));
  if (args.output.empty()) return std::nullopt;
  // One model: the graph's name (as before); several: the file's name, which is unique.
  std::string name = !args.name.empty() ? args.name : args.models.size() > 1 ? stem : graph_name;
  tools::PlannedModel out;
  std::string on_mesh;
  if (!graph.mesh.single_chip())
    on_mesh = str(", mesh ",
                  device::mesh_summary(MESHPLAN_TRY(planner::planning_mesh(graph, chip, options))));
  out.summary = str("policy ", args.policy, ", device ", chip.name, on_mesh, ", ", graph.ops.size(),
                    " ops, ", plan.bytes.size(), " bytes, key ", plan.key.hex(), weights);
  // Which spill selection the plan records (--spill=dp may fall back to Belady past its limits).
  if (const fb::PlanMetrics* m = fb::GetSizePrefixedPlan(plan.bytes.data())->header()->metrics();
      m && m->spill_selection() != fb::SpillSelection::belady)
    out.summary += str(", spill selection ", fb::EnumNameSpillSelection(m->spill_selection()), " (",
                       m->spill_dp_states(), " DP states)");
  // The policy's notes (beam planned an op greedily past its work cap), the first few in full.
  if (!plan.notes.empty()) {
    out.summary += str(", ", plan.notes.size(), plan.notes.size() == 1 ? " note: " : " notes: ");
    for (size_t i = 0; i < plan.notes.size() && i < 3; ++i)
      out.summary += str(i ? "; " : "", plan.notes[i]);
    if (plan.notes.size() > 3) out.summary += str("; and ", plan.notes.size() - 3, " more");
  }
  out.planning_ms = ms;
  out.entry = runtime::CacheEntryData{name, std::move(plan.bytes)};
  return out;
}

Status run(const Args& args) {
  if (!args.remove.empty()) return remove_entries(args);
  if (args.models.size() > 1) {
    tools::BatchOptions batch{args.output, args.jobs, args.fail_fast};
    return tools::compile_batch(args.models, batch,
                                [&](const std::string& model) -> tools::PlanResult {
                                  Args one = args;
                                  one.model = model;
                                  auto planned = plan_model(one);
                                  if (!planned) return std::unexpected(planned.error());
                                  return std::move(**planned);
                                });
  }
  auto planned = MESHPLAN_TRY(plan_model(args));
  if (!planned) return {};
  std::string name = planned->entry.name;
  MESHPLAN_TRY(runtime::add_to_cache(args.output, std::move(planned->entry)));
  if (!g_quiet)
    std::fprintf(stderr, "meshplan-compile: %s -> %s as '%s' (%s) in %.2f ms\n", args.model.c_str(),
                 args.output.c_str(), name.c_str(), planned->summary.c_str(), planned->planning_ms);
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  meshplan::tools::Cli cli("meshplan-compile", kSynopsis);
  Args parsed;
  NumberArgs numbers;
  add_options(cli, parsed, numbers);
  add_explain_options(cli.app(), parsed);
  if (auto exit = cli.parse(argc, argv)) return *exit;
  auto args = finish_args(std::move(parsed), numbers, cli.app());
  if (!args) return cli.usage_error(args.error().message);
  g_quiet = cli.quiet();
  auto status = run(*args);
  if (!status) {
    std::fprintf(stderr, "meshplan-compile: error: %s\n", status.error().to_string().c_str());
    return meshplan::tools::kExitError;
  }
  return meshplan::tools::kExitOk;
}
