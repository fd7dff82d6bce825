// Building planner graphs in code for tests, and running a compiled plan end to end on the
// emulator against the host reference.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"

namespace meshplan::test {

/// Adds arguments and ops to a graph by name; finish() validates it.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name) { g_.name = std::move(name); }

  /// Sets an argument's dtype (arguments default to bf16).
  void set_dtype(planner::ValueId v, planner::DType dtype) { g_.values[v].dtype = dtype; }

  planner::ValueId input(const std::string& name, std::vector<int64_t> shape,
                         planner::ArgKind kind = planner::ArgKind::input) {
    planner::Value v;
    v.name = name;
    v.shape = std::move(shape);
    v.argument = static_cast<int>(g_.arguments.size());
    v.kind = kind;
    g_.values.push_back(std::move(v));
    g_.arguments.push_back(static_cast<planner::ValueId>(g_.values.size() - 1));
    return g_.arguments.back();
  }
  planner::ValueId param(const std::string& name, std::vector<int64_t> shape) {
    return input(name, std::move(shape), planner::ArgKind::parameter);
  }
  planner::ValueId constant(const std::string& name, std::vector<int64_t> shape,
                            std::vector<float> data) {
    planner::ValueId v = input(name, std::move(shape), planner::ArgKind::constant);
    g_.values[v].data = std::move(data);
    return v;
  }
  planner::ValueId op(device::OpKind kind, const std::string& name,
                      std::vector<planner::ValueId> operands,
                      std::vector<planner::Attribute> attributes = {}) {
    planner::Value v;
    v.name = name;
    g_.values.push_back(std::move(v));
    planner::ValueId r = static_cast<planner::ValueId>(g_.values.size() - 1);
    g_.ops.push_back(planner::Op{name, kind, std::move(operands), {r}, std::move(attributes)});
    return r;
  }
  planner::ValueId matmul(const std::string& name, planner::ValueId a, planner::ValueId b,
                          bool transpose_b = false) {
    std::vector<planner::Attribute> attrs;
    if (transpose_b) attrs.push_back(planner::Attribute{"transpose_b", true});
    return op(device::OpKind::matmul, name, {a, b}, attrs);
  }
  planner::ValueId add(const std::string& name, planner::ValueId a, planner::ValueId b) {
    return op(device::OpKind::add, name, {a, b});
  }
  planner::ValueId relu(const std::string& name, planner::ValueId a) {
    return op(device::OpKind::relu, name, {a});
  }
  void output(planner::ValueId v) { g_.outputs.push_back(v); }

  planner::Graph finish() {
    auto ok = planner::validate(g_);
    REQUIRE_MESSAGE(ok, (ok ? std::string() : ok.error().message));
    return g_;
  }

 private:
  planner::Graph g_;
};

/// Wormhole B0 cut to one Tensix core, so L1 pressure appears with small tensors (usable L1
/// per core is unchanged: ~1296 KiB). Its NoC and eltwise unit get the whole grid's throughput
/// (64 x 32 B/cycle, 64 x 32 elements/cycle; the per-core DRAM read, multicast and L1 rates
/// likewise x 64) so that, as on the full chip, the timing model rates L1 above DRAM; with one
/// core at 32 B/cycle, DRAM (267 GB/s) would be cheaper and cost-driven policies would rightly
/// avoid L1.
inline device::ChipDesc one_core_chip() {
  device::ChipDesc c = device::wormhole_b0();
  c.name = "wormhole_b0_1x1";
  c.grid_x = 1;
  c.grid_y = 1;
  c.noc_bytes_per_cycle = 64 * 32;
  c.dram_read_bytes_per_cycle = 64 * c.dram_read_bytes_per_cycle;
  c.mcast_bytes_per_cycle = 64 * c.mcast_bytes_per_cycle;
  c.l1_bytes_per_cycle = 64 * c.l1_bytes_per_cycle;
  c.eltwise_elems_per_cycle = 64 * 32;
  return c;
}

/// What an end-to-end run found.
struct E2E {
  uint32_t spills = 0, reshards = 0, l1_outputs = 0, ops = 0;
  uint64_t estimated_ns = 0, device_ns = 0;
  double relative_error = 0;
};

/// Compiles `g` with `options`, verifies the plan, runs it on an EmulatedDevice (every L1 and
/// DRAM allocation at its planned address) and checks the outputs against the host reference.
inline E2E run_e2e(const planner::Graph& g, const device::ChipDesc& chip,
                   const planner::PlannerOptions& options) {
  E2E out;
  auto compiled = planner::compile(g, chip, options);
  REQUIRE_MESSAGE(compiled, (compiled ? std::string() : compiled.error().message));
  auto plan = runtime::verify_plan(compiled->bytes, g.name);
  REQUIRE_MESSAGE(plan, (plan ? std::string() : plan.error().message));
  auto dev = device::EmulatedDevice::create(chip);
  REQUIRE(dev);
  auto exe = runtime::Executable::bind(*plan, **dev);
  REQUIRE(exe);
  auto inputs = runtime::random_inputs(*plan, 7);
  auto views = runtime::views_of(inputs);
  auto run = (*exe)->run(views);
  REQUIRE_MESSAGE(run, (run ? std::string() : run.error().message));
  auto ref = runtime::run_reference(*plan, views);
  REQUIRE(ref);
  runtime::CheckReport report =
      runtime::check_outputs(run->outputs, *ref, runtime::kDefaultTolerance);
  CHECK_MESSAGE(report.ok, "policy ", options.policy, " on ", g.name, ": relative error ",
                report.relative_error);
  const fb::PlanMetrics* m = plan->plan().header()->metrics();
  out.spills = m->spills();
  out.reshards = m->reshards();
  out.l1_outputs = m->l1_outputs();
  out.ops = m->ops();
  out.estimated_ns = m->estimated_ns();
  out.device_ns = run->device_ns;
  out.relative_error = report.relative_error;
  return out;
}

}  // namespace meshplan::test
