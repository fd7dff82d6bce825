// meshplan-compile: plans a graph for a device and adds the plan to a plan cache.
//
//   meshplan-compile MODEL.json -o CACHE.mpc [--name NAME] [--policy dram] [--device NAME]
//                    [--emit=plan-json|graph-json]
//   meshplan-compile -o CACHE.mpc --remove NAME [--remove NAME...]
#include <mimalloc-new-delete.h>  // mimalloc is the tool's process allocator.

#include <flatbuffers/idl.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/layout.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/cache_edit.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "meshplan/schemas/schemas.hpp"

namespace {

using namespace meshplan;

constexpr const char* kUsage =
    "usage: meshplan-compile MODEL.json -o CACHE.mpc [--name NAME] [--policy POLICY] [--device DEVICE]\n"
    "                        [--emit=plan-json|graph-json]\n"
    "  Plans MODEL.json for DEVICE (default wormhole_b0) and adds the plan to CACHE.mpc under NAME\n"
    "  (default: the graph's name), replacing an entry with the same name or key.\n"
    "  --emit=plan-json prints the plan as JSON; --emit=graph-json prints the validated graph.\n"
    "       meshplan-compile -o CACHE.mpc --remove NAME [--remove NAME...]\n"
    "  Removes entries from CACHE.mpc (atomically, under the cache's writer lock).\n";

struct Args {
  std::string model, output, name, policy = "dram", device = "wormhole_b0", emit;
  std::vector<std::string> remove;
};

Result<Args> parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&](const char* flag) -> Result<std::string> {
      std::string f = flag;
      if (s.rfind(f + "=", 0) == 0) return s.substr(f.size() + 1);
      if (i + 1 >= argc) return fail(ErrorCode::invalid_argument, flag, " needs a value");
      return std::string(argv[++i]);
    };
    auto is = [&](const char* flag) { return s == flag || s.rfind(std::string(flag) + "=", 0) == 0; };
    if (s == "-h" || s == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (is("-o") || is("--output")) a.output = MESHPLAN_TRY(value(s.rfind("-o", 0) == 0 && s.size() <= 2 ? "-o" : "--output"));
    else if (is("--name")) a.name = MESHPLAN_TRY(value("--name"));
    else if (is("--policy")) a.policy = MESHPLAN_TRY(value("--policy"));
    else if (is("--device")) a.device = MESHPLAN_TRY(value("--device"));
    else if (is("--emit")) a.emit = MESHPLAN_TRY(value("--emit"));
    else if (is("--remove")) a.remove.push_back(MESHPLAN_TRY(value("--remove")));
    else if (!s.empty() && s[0] == '-') return fail(ErrorCode::invalid_argument, "unknown option '", s, "'");
    else if (a.model.empty()) a.model = s;
    else return fail(ErrorCode::invalid_argument, "unexpected argument '", s, "'");
  }
  if (!a.remove.empty()) {
    if (!a.model.empty() || a.output.empty())
      return fail(ErrorCode::invalid_argument, "--remove takes -o CACHE.mpc and no model");
    return a;
  }
  if (a.model.empty()) return fail(ErrorCode::invalid_argument, "no model given");
  if (a.output.empty() && a.emit.empty()) return fail(ErrorCode::invalid_argument, "no output: give -o CACHE.mpc or --emit");
  if (!a.emit.empty() && a.emit != "plan-json" && a.emit != "graph-json")
    return fail(ErrorCode::invalid_argument, "--emit takes plan-json or graph-json, not '", a.emit, "'");
  return a;
}

Result<std::string> plan_json(const std::vector<uint8_t>& bytes) {
  flatbuffers::IDLOptions opts;
  opts.output_default_scalars_in_json = true;
  flatbuffers::Parser parser(opts);
  std::string schema(schemas::kPlanSchemaText);
  if (!parser.Parse(schema.c_str(), nullptr, "plan.fbs"))
    return fail(ErrorCode::internal, "embedded plan schema does not parse: ", parser.error_);
  std::string text;
  if (!flatbuffers::GenerateText(parser, bytes.data() + sizeof(flatbuffers::uoffset_t), &text))
    return fail(ErrorCode::internal, "cannot print the plan as JSON");
  return text;
}

/// --remove: drops entries by name from the cache, nothing else.
Status remove_entries(const Args& args) {
  runtime::CacheEditReport report = MESHPLAN_TRY(runtime::remove_from_cache(args.output, args.remove));
  for (const auto& d : report.dropped) std::fprintf(stderr, "meshplan-compile: removed '%s' from %s\n", d.name.c_str(), args.output.c_str());
  std::fprintf(stderr, "meshplan-compile: %zu entries left in %s\n", report.kept.size(), args.output.c_str());
  return {};
}

Status run(int argc, char** argv) {
  Args args = MESHPLAN_TRY(parse_args(argc, argv));
  if (!args.remove.empty()) return remove_entries(args);
  auto t0 = std::chrono::steady_clock::now();
  planner::Graph graph = MESHPLAN_TRY(planner::load_graph_file(args.model));
  if (args.emit == "graph-json") {
    std::cout << MESHPLAN_TRY(planner::export_graph_json(graph));
    if (args.output.empty()) return {};
  }
  device::ChipDesc chip = MESHPLAN_TRY(device::builtin_chip(args.device));
  planner::PlannerOptions options;
  options.policy = args.policy;
  planner::CompiledPlan plan = MESHPLAN_TRY(planner::compile(graph, chip, options));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (args.emit == "plan-json") std::cout << MESHPLAN_TRY(plan_json(plan.bytes));
  if (args.output.empty()) return {};
  std::string name = !args.name.empty() ? args.name : !graph.name.empty() ? graph.name : "main";
  size_t size = plan.bytes.size();
  MESHPLAN_TRY(runtime::add_to_cache(args.output, runtime::CacheEntryData{name, std::move(plan.bytes)}));
  std::fprintf(stderr, "meshplan-compile: %s -> %s as '%s' (policy %s, device %s, %zu ops, %zu bytes, key %s) in %.2f ms\n",
               args.model.c_str(), args.output.c_str(), name.c_str(), args.policy.c_str(), chip.name.c_str(),
               graph.ops.size(), size, plan.key.hex().c_str(), ms);
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  auto status = run(argc, argv);
  if (!status) {
    std::fprintf(stderr, "meshplan-compile: error: %s\n", status.error().to_string().c_str());
    if (status.error().code == meshplan::ErrorCode::invalid_argument && argc < 2) std::fputs(kUsage, stderr);
    return 1;
  }
  return 0;
}
