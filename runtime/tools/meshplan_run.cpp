// meshplan-run: runs a plan from a plan cache on a backend's chips (default: the emulator).
//
//   meshplan-run CACHE.mpc --name NAME | --key HEX [--check] [--seed N] [--tolerance T] [--print]
//                [--device NAME|FILE.json] [--mesh RxC|n300|t3k|galaxy[:ring|:linear]|MESH.json]
//                [--backend NAME]
//   meshplan-run CACHE.mpc ls
//   meshplan-run inspect CACHE.mpc (--name NAME | --key HEX) [--json]
//   ... [--input=2x3xf32=[[1,2,3],[4,5,6]] | --input=@x.npy]... [--output=@y.npy]...
//   [--trace=trace.json] meshplan-run cache ls|verify|gc CACHE.mpc [...]   (see cache_commands.cpp)
#include <mimalloc-new-delete.h>  // mimalloc is the tool's process allocator.

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <new>
#include <string>

#include "cache_commands.hpp"
#include "cli.hpp"
#include "inspect_trace.hpp"
#include "mesh_run.hpp"
#include "mesh_run_mpi.hpp"
#include "meshplan/device/backend.hpp"
#include "meshplan/device/descriptor_json.hpp"
#include "meshplan/device/emulator_backend.hpp"
#include "meshplan/device/mesh_spec.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "meshplan/runtime/program_checks.hpp"
#include "tensor_io.hpp"

namespace {

using namespace meshplan;
using Clock = std::chrono::steady_clock;

constexpr const char* kSynopsis =
    "Runs a plan of a plan cache on a backend's chips (default: the emulator) with random\n"
    "inputs (seed N) or the given ones, and prints timing.\n"
    "  meshplan-run CACHE.mpc (--name NAME | --key HEX) [options]\n"
    "  meshplan-run CACHE.mpc ls\n"
    "  meshplan-run inspect CACHE.mpc (--name NAME | --key HEX) [--json]\n"
    "  meshplan-run cache ls|verify|gc CACHE.mpc [...]   (meshplan-run cache --help)\n";

constexpr const char* kFooter =
    "Inputs: --input takes SHAPExf32=VALUES (IREE style: --input=2x3xf32=[[1,2,3],[4,5,6]], or\n"
    "one value that fills the tensor) or @file.npy (any numeric dtype meshplan reads), one per\n"
    "plan input in plan order, or each named: --input x=@x.npy --input w=4x4xf32=0.5.\n"
    "Pre-sharded mesh inputs: @w.chip{c}.npy reads chip c's piece from its own file (under\n"
    "mpirun each rank reads its chips' files; docs/mpi.md).\n"
    "Outputs: --output @y.npy writes output i (in order); --output - prints it.\n"
    "Exit codes: 0 success, 1 error (the message names what and where), 2 --check or one of the\n"
    "program's own checks (StableHLO check.expect_*) failed.\n";

struct Args {
  std::string cache, name, key;
  bool check = false, print = false, list = false, inspect = false, json = false;
  std::vector<std::string> inputs, outputs;
  std::string trace;
  std::string device;  // --device NAME|FILE.json; empty: the chip named in the plan
  std::string mesh;    // --mesh SPEC (device/mesh_spec.hpp); empty: the mesh the plan records
  std::string backend{device::kEmulatorBackend};  // --backend NAME (device/backend.hpp)
  uint64_t seed = 1;
  double tolerance = runtime::kDefaultTolerance;
};

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

/// Declares meshplan-run's options on `cli` (the values land in `a`).
void add_options(tools::Cli& cli, Args& a, std::vector<std::string>& words) {
  CLI::App& app = cli.app();
  app.footer(kFooter);
  app.add_option("CACHE.mpc", words, "The plan cache ('ls' after it lists it; 'inspect' before it)")
      ->type_name("");
  app.add_option("--name", a.name, "The plan's name in the cache")->type_name("NAME");
  app.add_option("--key", a.key, "The plan's key (32 hex digits)")->type_name("HEX");
  app.add_option("--input", a.inputs, "An input (repeatable; see below)")
      ->type_name("[NAME=]VALUE")
      ->allow_extra_args(false);
  app.add_option("--output", a.outputs, "Write output i to a .npy file or print it (repeatable)")
      ->type_name("@FILE.npy|-")
      ->allow_extra_args(false);
  app.add_option("--seed", a.seed, "Seed of the random inputs (default 1)")->type_name("N");
  app.add_flag("--check", a.check,
               "Compare with the host f32 reference; exit 2 past the tolerance");
  app.add_option("--tolerance", a.tolerance, "Relative error --check accepts (default 0.03)")
      ->type_name("T")
      ->check(CLI::NonNegativeNumber.description(""));
  app.add_flag("--print", a.print, "Print the outputs (first values)");
  app.add_option("--trace", a.trace, "Write a Chrome trace of the simulated timeline")
      ->type_name("FILE.json");
  app.add_option("--device", a.device,
                 "Run on this chip (default: the plan's); another chip's plan is refused")
      ->type_name("NAME|FILE.json");
  app.add_option("--mesh", a.mesh,
                 "Run a mesh plan on this mesh (default: the plan's); another's is refused")
      ->type_name("RxC|n300|t3k|galaxy[:ring|:linear]|MESH.json");
  app.add_option("--backend", a.backend,
                 "Run on this backend's chips (default: emulator; under mpirun mesh plans run on "
                 "backend mpi)")
      ->type_name("NAME");
  app.add_flag("--json", a.json, "inspect: print JSON");
}

/// The positional words: [inspect] CACHE.mpc [ls].
Result<Args> finish_args(Args a, const std::vector<std::string>& words) {
  for (const std::string& s : words) {
    if (s == "inspect" && !a.inspect && a.cache.empty())
      a.inspect = true;
    else if (a.cache.empty())
      a.cache = s;
    else if (s == "ls" && !a.list)
      a.list = true;
    else
      return fail(ErrorCode::invalid_argument, "unexpected argument '", s, "'");
  }
  if (a.cache.empty()) return fail(ErrorCode::invalid_argument, "no plan cache given");
  if (!a.list && a.name.empty() == a.key.empty())
    return fail(ErrorCode::invalid_argument, "give exactly one of --name and --key");
  return a;
}

void print_tensor(std::string_view name, const runtime::Tensor& t) {
  std::printf("  %.*s [", static_cast<int>(name.size()), name.data());
  for (size_t i = 0; i < t.shape.size(); ++i)
    std::printf("%s%lld", i ? "x" : "", static_cast<long long>(t.shape[i]));
  std::printf("] =");
  for (size_t i = 0; i < t.data.size() && i < 8; ++i) std::printf(" %.5g", t.data[i]);
  std::printf("%s\n", t.data.size() > 8 ? " ..." : "");
}

/// --input values in plan input order (positional or named), or seeded random inputs when none
/// is given.
Result<std::vector<runtime::Tensor>> load_inputs(const Args& args, const runtime::PlanRef& plan,
                                                 const runtime::Executable& exe) {
  if (args.inputs.empty()) return runtime::random_inputs(plan, args.seed);
  std::vector<std::string> names;
  for (size_t i = 0; i < exe.input_count(); ++i) names.emplace_back(exe.input_name(i));
  return tools::parse_inputs(plan.name(), args.inputs, names);
}

/// --output=@file.npy writes output i to a file; --output=- prints it in IREE form.
Status save_outputs(const Args& args, const runtime::Executable& exe,
                    const runtime::RunResult& result) {
  if (args.outputs.size() > result.outputs.size())
    return fail(ErrorCode::invalid_argument, args.outputs.size(), " --output given, the plan has ",
                result.outputs.size(), " outputs");
  for (size_t i = 0; i < args.outputs.size(); ++i) {
    const std::string& o = args.outputs[i];
    if (o == "-") {
      std::printf("%.*s = %s\n", static_cast<int>(exe.output_name(i).size()),
                  exe.output_name(i).data(), tools::format_tensor(result.outputs[i]).c_str());
    } else if (!o.empty() && o[0] == '@') {
      MESHPLAN_TRY(tools::write_npy(o.substr(1), result.outputs[i]));
    } else {
      return fail(ErrorCode::invalid_argument, "--output takes @file.npy or -, not '", o, "'");
    }
  }
  return {};
}

/// The chip to run on: --device (built-in name or device JSON file), checked against the plan's
/// key material so a mismatch says which facts differ; else the built-in chip the plan names.
Result<device::ChipDesc> chip_for(const Args& args, const runtime::PlanRef& plan) {
  const fb::DeviceInfo* want = plan.plan().header()->device();
  std::string_view planned = want->name() ? want->name()->string_view() : "";
  if (args.device.empty()) {
    auto chip = device::builtin_chip(planned);
    if (!chip)
      return fail(ErrorCode::not_found, "plan '", plan.name(), "' was made for device '", planned,
                  "', which is not built in: give its descriptor with --device FILE.json");
    return chip;
  }
  device::ChipDesc chip =
      MESHPLAN_TRY(args.device.ends_with(".json") ? device::load_chip_file(args.device)
                                                  : device::builtin_chip(args.device));
  runtime::PlanQuery query;
  query.device = &chip;
  query.planner_version = {};
  MESHPLAN_TRY(runtime::check_plan_matches(plan, query));
  return chip;
}

/// The mesh to run a mesh plan on: --mesh (on --device's chips, or a JSON file's own), checked
/// against the plan's key material so a mismatch says which facts differ; else the mesh the
/// plan's header records, on its chip.
Result<device::MeshDesc> mesh_for(const Args& args, const runtime::PlanRef& plan) {
  if (args.mesh.empty()) return runtime::plan_mesh_desc(plan, MESHPLAN_TRY(chip_for(args, plan)));
  device::MeshDesc mesh;
  if (args.mesh.ends_with(".json")) {
    auto file = device::load_mesh_file(args.mesh);
    if (!file) return std::unexpected(with_context(file.error(), "--mesh"));
    mesh = *file;
  } else {
    auto given = device::resolve_mesh_spec(args.mesh, MESHPLAN_TRY(chip_for(args, plan)));
    if (!given) return std::unexpected(with_context(given.error(), "--mesh"));
    mesh = *given;
  }
  runtime::PlanQuery query;
  query.device = &mesh.chip;
  query.mesh = &mesh;
  query.planner_version = {};
  MESHPLAN_TRY(runtime::check_plan_matches(plan, query));
  return mesh;
}

Result<int> run(const Args& args) {
  MESHPLAN_TRY(tools::register_run_backends());
  auto t_open = Clock::now();
  runtime::PlanCache cache = MESHPLAN_TRY(runtime::PlanCache::open(args.cache));
  double open_ms = ms_since(t_open);
  if (args.list) {
    std::printf("%-24s %-32s %-14s %-10s %10s\n", "name", "key", "device", "policy", "bytes");
    for (size_t i = 0; i < cache.size(); ++i) {
      auto e = cache.entry(i);
      std::printf("%-24.*s %-32s %-14.*s %-10.*s %10llu\n", static_cast<int>(e.name.size()),
                  e.name.data(), e.key.hex().c_str(), static_cast<int>(e.device.size()),
                  e.device.data(), static_cast<int>(e.policy.size()), e.policy.data(),
                  static_cast<unsigned long long>(e.size));
    }
    return 0;
  }
  auto t_find = Clock::now();
  runtime::PlanRef plan;
  if (!args.key.empty()) {
    Hash128 key;
    if (!Hash128::parse(args.key, &key))
      return fail(ErrorCode::invalid_argument, "--key takes 32 hex digits, not '", args.key, "'");
    plan = MESHPLAN_TRY(cache.find(key));
  } else {
    plan = MESHPLAN_TRY(cache.find(args.name));
  }
  double find_ms = ms_since(t_find);
  if (runtime::is_mesh_plan(plan))  // On a mesh of the backend, of the shape the plan was made for.
    return tools::run_mesh_plan(
        plan, MESHPLAN_TRY(mesh_for(args, plan)),
        tools::MeshRunOptions{args.inputs, args.outputs, args.trace, args.seed, args.tolerance,
                              args.check, args.print, args.inspect, args.json, args.backend});
  if (!args.mesh.empty())
    return fail(ErrorCode::incompatible, "plan '", plan.name(),
                "' is a single-chip plan: --mesh is for mesh plans");
  device::ChipDesc chip = MESHPLAN_TRY(chip_for(args, plan));
  // One chip is a 1x1 mesh of the backend.
  auto mesh = MESHPLAN_TRY(device::open_backend(args.backend, device::single_chip_mesh(chip)));
  auto t_bind = Clock::now();
  auto exe = MESHPLAN_TRY(runtime::Executable::bind(plan, *mesh));
  double bind_ms = ms_since(t_bind);

  if (args.inspect) {
    if (args.json)
      std::cout << MESHPLAN_TRY(tools::inspect_json(plan));
    else
      std::cout << tools::inspect_table(plan);
    return 0;
  }
  std::vector<runtime::Tensor> inputs = MESHPLAN_TRY(load_inputs(args, plan, *exe));
  auto views = runtime::views_of(inputs);
  auto t_run = Clock::now();
  runtime::RunResult result = MESHPLAN_TRY(exe->run(views));
  double run_ms = ms_since(t_run);

  std::printf("plan '%.*s' (%s, %u ops) on %s\n", static_cast<int>(plan.name().size()),
              plan.name().data(), plan.key().hex().c_str(), plan.plan().ops()->size(),
              chip.name.c_str());
  std::printf(
      "open %.3f ms, find+verify %.3f ms, bind %.3f ms, run %.3f ms (host), %.3f us simulated "
      "device time\n",
      open_ms, find_ms, bind_ms, run_ms, result.device_ns / 1000.0);
  if (args.print)
    for (size_t i = 0; i < result.outputs.size(); ++i)
      print_tensor(exe->output_name(i), result.outputs[i]);
  MESHPLAN_TRY(save_outputs(args, *exe, result));
  if (!args.trace.empty()) {
    std::ofstream out(args.trace, std::ios::trunc);
    out << tools::chrome_trace(plan, result, chip.name);
    if (!out) return fail(ErrorCode::io, "cannot write trace '", args.trace, "'");
    std::printf("trace: %s (%zu ops)\n", args.trace.c_str(), result.ops.size());
  }
  // The program's own checks (StableHLO's check.expect_*): each one's line, and exit 2 if any
  // fails.
  std::vector<runtime::ProgramCheck> checks = MESHPLAN_TRY(runtime::program_checks(*exe));
  size_t failed = 0;
  for (const runtime::CheckOutcome& o : runtime::evaluate_checks(checks, result.outputs)) {
    std::printf("%s\n", o.text().c_str());
    failed += o.ok ? 0 : 1;
  }
  if (failed) {
    std::fprintf(stderr, "meshplan-run: %zu of %zu checks of plan '%.*s' failed\n", failed,
                 checks.size(), static_cast<int>(plan.name().size()), plan.name().data());
    return 2;
  }
  if (args.check) {
    std::vector<runtime::Tensor> ref = MESHPLAN_TRY(runtime::run_reference(plan, views));
    runtime::CheckReport rep = runtime::check_outputs(result.outputs, ref, args.tolerance);
    std::printf(
        "check: max abs error %.6g, output scale %.6g, relative error %.6g (tolerance %.3g): %s\n",
        rep.max_abs_error, rep.scale, rep.relative_error, args.tolerance, rep.ok ? "PASS" : "FAIL");
    return rep.ok ? 0 : 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Host tensors are sized from verified plans (at most 2^32 elements each); a host that cannot
  // hold them is an error, not an abort.
  try {
    if (argc >= 2 && std::string(argv[1]) == "cache")
      return meshplan::tools::cache_command(argc - 1, argv + 1);
    meshplan::tools::Cli cli("meshplan-run", kSynopsis);
    Args parsed;
    std::vector<std::string> words;
    add_options(cli, parsed, words);
    if (auto exit = cli.parse(argc, argv)) return *exit;
    auto args = finish_args(std::move(parsed), words);
    if (!args) return cli.usage_error(args.error().message);
    auto code = run(*args);
    if (!code) {
      std::fprintf(stderr, "meshplan-run: error: %s\n", code.error().to_string().c_str());
      return meshplan::tools::kExitError;
    }
    return *code;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "meshplan-run: error: resource_exhausted: out of host memory\n");
    return meshplan::tools::kExitError;
  }
}
