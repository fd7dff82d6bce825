// meshplan-demo: opens a plan cache the way an inference server does at start-up, runs one plan
// on the emulated chip, checks it against the host reference and prints a short report.
//
//   meshplan-demo CACHE.mpc NAME
#include <mimalloc-new-delete.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "cli.hpp"
#include "meshplan/device/emulator_backend.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "meshplan/runtime/plan_cache.hpp"

using namespace meshplan;
using Clock = std::chrono::steady_clock;

namespace {

double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

Result<int> demo(const std::string& cache_path, const std::string& name) {
  // Start-up: map the cache, find and verify the plan, bind it to the device.
  auto t0 = Clock::now();
  runtime::PlanCache cache = MESHPLAN_TRY(runtime::PlanCache::open(cache_path));
  runtime::PlanRef plan = MESHPLAN_TRY(cache.find(name));
  device::ChipDesc chip =
      MESHPLAN_TRY(device::builtin_chip(plan.plan().header()->device()->name()->string_view()));
  MESHPLAN_TRY(device::register_emulator_backend());
  auto mesh = MESHPLAN_TRY(runtime::open_plan_mesh(plan, chip, device::kEmulatorBackend));
  auto t_bind = Clock::now();
  auto exe = MESHPLAN_TRY(runtime::Executable::bind(plan, *mesh));
  double startup_us = us_since(t0), bind_us = us_since(t_bind);

  // A request: random inputs, run, compare with the f32 host reference.
  std::vector<runtime::Tensor> inputs = runtime::random_inputs(plan, 42);
  auto views = runtime::views_of(inputs);
  auto t_run = Clock::now();
  runtime::RunResult result = MESHPLAN_TRY(exe->run(views));
  double run_us = us_since(t_run);
  std::vector<runtime::Tensor> ref = MESHPLAN_TRY(runtime::run_reference(plan, views));
  runtime::CheckReport check =
      runtime::check_outputs(result.outputs, ref, runtime::kDefaultTolerance);

  const fb::PlanHeader* h = plan.plan().header();
  std::printf("meshplan demo: plan '%s' from %s\n", name.c_str(), cache_path.c_str());
  std::printf("  key %s, policy %s, device %s (%ux%u cores), planner %s, format %u.%u\n",
              plan.key().hex().c_str(), h->options()->policy()->c_str(), chip.name.c_str(),
              chip.grid_x, chip.grid_y, h->planner_version()->c_str(), h->format_major(),
              h->format_minor());
  std::printf(
      "  start-up (open + find + verify + bind): %.1f us (bind %.1f us), %zu plan(s) in the "
      "cache\n",
      startup_us, bind_us, cache.size());
  if (const fb::PlanMetrics* m = h->metrics())
    std::printf("  plan: %u ops, %u L1 outputs, %u spills, %u reshards, L1 high water %llu bytes\n",
                m->ops(), m->l1_outputs(), m->spills(), m->reshards(),
                static_cast<unsigned long long>(m->l1_high_water()));
  std::printf("\n  %-10s %-8s %6s %14s\n", "op", "kind", "cores", "simulated us");
  for (const runtime::OpProfile& op : result.ops)
    std::printf("  %-10.*s %-8.*s %6u %14.3f\n", static_cast<int>(op.name.size()), op.name.data(),
                static_cast<int>(device::op_name(op.kind).size()), device::op_name(op.kind).data(),
                op.cores, op.device_ns / 1000.0);
  std::printf(
      "\n  simulated device time %.3f us (planner estimate %.3f us); host run time %.1f us\n",
      result.device_ns / 1000.0, h->metrics()->estimated_ns() / 1000.0, run_us);
  for (size_t i = 0; i < result.outputs.size(); ++i) {
    const runtime::Tensor& t = result.outputs[i];
    std::printf("  output %.*s: [", static_cast<int>(exe->output_name(i).size()),
                exe->output_name(i).data());
    for (size_t d = 0; d < t.shape.size(); ++d)
      std::printf("%s%lld", d ? "x" : "", static_cast<long long>(t.shape[d]));
    std::printf("] first values %.4f %.4f %.4f\n", t.data[0], t.data[1], t.data[2]);
  }
  std::printf(
      "  check against the f32 host reference: max abs error %.5f, relative %.5f (tolerance %.2f): "
      "%s\n",
      check.max_abs_error, check.relative_error, runtime::kDefaultTolerance,
      check.ok ? "VERIFIED" : "FAILED");
  return check.ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  meshplan::tools::Cli cli("meshplan-demo",
                           "meshplan-demo CACHE.mpc NAME\n\n"
                           "Opens a plan cache as an inference server would, binds plan NAME to "
                           "an emulated chip and runs it.");
  std::string cache, name;
  cli.app().add_option("cache", cache, "The plan cache")->required()->type_name("CACHE.mpc");
  cli.app().add_option("name", name, "The plan's name")->required()->type_name("NAME");
  if (auto exit = cli.parse(argc, argv)) return *exit;
  auto rc = demo(cache, name);
  if (!rc) {
    std::fprintf(stderr, "meshplan-demo: error: %s\n", rc.error().to_string().c_str());
    return meshplan::tools::kExitError;
  }
  return *rc;
}
