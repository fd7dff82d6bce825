// meshplan-run: runs a plan from a plan cache on the emulated device.
//
//   meshplan-run CACHE.mpc --name NAME | --key HEX [--check] [--seed N] [--tolerance T] [--print]
//   meshplan-run CACHE.mpc ls
//   meshplan-run cache ls|verify|gc CACHE.mpc [...]   (see cache_commands.cpp)
#include <mimalloc-new-delete.h>  // mimalloc is the tool's process allocator.

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "cache_commands.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/plan_cache.hpp"

namespace {

using namespace meshplan;
using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "usage: meshplan-run CACHE.mpc (--name NAME | --key HEX) [--check] [--seed N] [--tolerance T] [--print]\n"
    "       meshplan-run CACHE.mpc ls\n"
    "       meshplan-run cache ls|verify|gc CACHE.mpc [--keep NAMES] [--dry-run]  (cache --help for more)\n"
    "  Runs a plan on the emulated device with random inputs (seed N, default 1) and prints timing.\n"
    "  --check compares with the host f32 reference and fails if the relative error exceeds T\n"
    "  (default 0.03). --print prints the outputs.\n";

struct Args {
  std::string cache, name, key;
  bool check = false, print = false, list = false;
  uint64_t seed = 1;
  double tolerance = runtime::kDefaultTolerance;
};

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

Result<Args> parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&](const std::string& flag) -> Result<std::string> {
      if (s.rfind(flag + "=", 0) == 0) return s.substr(flag.size() + 1);
      if (i + 1 >= argc) return fail(ErrorCode::invalid_argument, flag, " needs a value");
      return std::string(argv[++i]);
    };
    auto is = [&](const std::string& flag) { return s == flag || s.rfind(flag + "=", 0) == 0; };
    if (s == "-h" || s == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (is("--name")) a.name = MESHPLAN_TRY(value("--name"));
    else if (is("--key")) a.key = MESHPLAN_TRY(value("--key"));
    else if (s == "--check") a.check = true;
    else if (s == "--print") a.print = true;
    else if (is("--seed")) {
      std::string v = MESHPLAN_TRY(value("--seed"));
      char* end = nullptr;
      a.seed = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end) return fail(ErrorCode::invalid_argument, "--seed takes a number, not '", v, "'");
    } else if (is("--tolerance")) {
      std::string v = MESHPLAN_TRY(value("--tolerance"));
      char* end = nullptr;
      a.tolerance = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || a.tolerance < 0) return fail(ErrorCode::invalid_argument, "--tolerance takes a number >= 0");
    } else if (!s.empty() && s[0] == '-') return fail(ErrorCode::invalid_argument, "unknown option '", s, "'");
    else if (a.cache.empty()) a.cache = s;
    else if (s == "ls") a.list = true;
    else return fail(ErrorCode::invalid_argument, "unexpected argument '", s, "'");
  }
  if (a.cache.empty()) return fail(ErrorCode::invalid_argument, "no plan cache given");
  if (!a.list && a.name.empty() == a.key.empty()) return fail(ErrorCode::invalid_argument, "give exactly one of --name and --key");
  return a;
}

void print_tensor(std::string_view name, const runtime::Tensor& t) {
  std::printf("  %.*s [", static_cast<int>(name.size()), name.data());
  for (size_t i = 0; i < t.shape.size(); ++i) std::printf("%s%lld", i ? "x" : "", static_cast<long long>(t.shape[i]));
  std::printf("] =");
  for (size_t i = 0; i < t.data.size() && i < 8; ++i) std::printf(" %.5g", t.data[i]);
  std::printf("%s\n", t.data.size() > 8 ? " ..." : "");
}

Result<int> run(int argc, char** argv) {
  Args args = MESHPLAN_TRY(parse_args(argc, argv));
  auto t_open = Clock::now();
  runtime::PlanCache cache = MESHPLAN_TRY(runtime::PlanCache::open(args.cache));
  double open_ms = ms_since(t_open);
  if (args.list) {
    std::printf("%-24s %-32s %-14s %-10s %10s\n", "name", "key", "device", "policy", "bytes");
    for (size_t i = 0; i < cache.size(); ++i) {
      auto e = cache.entry(i);
      std::printf("%-24.*s %-32s %-14.*s %-10.*s %10llu\n", static_cast<int>(e.name.size()), e.name.data(), e.key.hex().c_str(),
                  static_cast<int>(e.device.size()), e.device.data(), static_cast<int>(e.policy.size()), e.policy.data(),
                  static_cast<unsigned long long>(e.size));
    }
    return 0;
  }
  auto t_find = Clock::now();
  runtime::PlanRef plan;
  if (!args.key.empty()) {
    Hash128 key;
    if (!Hash128::parse(args.key, &key)) return fail(ErrorCode::invalid_argument, "--key takes 32 hex digits, not '", args.key, "'");
    plan = MESHPLAN_TRY(cache.find(key));
  } else {
    plan = MESHPLAN_TRY(cache.find(args.name));
  }
  double find_ms = ms_since(t_find);
  const fb::DeviceInfo* want = plan.plan().header()->device();
  device::ChipDesc chip = MESHPLAN_TRY(device::builtin_chip(want->name() ? want->name()->string_view() : ""));
  auto dev = MESHPLAN_TRY(device::EmulatedDevice::create(chip));
  auto t_bind = Clock::now();
  auto exe = MESHPLAN_TRY(runtime::Executable::bind(plan, *dev));
  double bind_ms = ms_since(t_bind);

  std::vector<runtime::Tensor> inputs = runtime::random_inputs(plan, args.seed);
  auto views = runtime::views_of(inputs);
  auto t_run = Clock::now();
  runtime::RunResult result = MESHPLAN_TRY(exe->run(views));
  double run_ms = ms_since(t_run);

  std::printf("plan '%.*s' (%s, %u ops) on %s\n", static_cast<int>(plan.name().size()), plan.name().data(),
              plan.key().hex().c_str(), plan.plan().ops()->size(), chip.name.c_str());
  std::printf("open %.3f ms, find+verify %.3f ms, bind %.3f ms, run %.3f ms (host), %.3f us simulated device time\n", open_ms,
              find_ms, bind_ms, run_ms, result.device_ns / 1000.0);
  if (args.print)
    for (size_t i = 0; i < result.outputs.size(); ++i) print_tensor(exe->output_name(i), result.outputs[i]);
  if (args.check) {
    std::vector<runtime::Tensor> ref = MESHPLAN_TRY(runtime::run_reference(plan, views));
    runtime::CheckReport rep = runtime::check_outputs(result.outputs, ref, args.tolerance);
    std::printf("check: max abs error %.6g, output scale %.6g, relative error %.6g (tolerance %.3g): %s\n", rep.max_abs_error,
                rep.scale, rep.relative_error, args.tolerance, rep.ok ? "PASS" : "FAIL");
    return rep.ok ? 0 : 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "cache") return meshplan::tools::cache_command(argc - 1, argv + 1);
  auto code = run(argc, argv);
  if (!code) {
    std::fprintf(stderr, "meshplan-run: error: %s\n", code.error().to_string().c_str());
    return 1;
  }
  return *code;
}
