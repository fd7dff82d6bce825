// Mesh execution: a tensor-parallel MLP on a T3000 (2x4, all 8 chips as one group) against the
// same global MLP on one chip, both planned with greedy and run on the emulator. Counters, all
// measured in one run: simulated time of the mesh run and of the single-chip run, their ratio
// (the simulated speed-up), and the host wall time of one mesh run (the benchmark's time).
#include <benchmark/benchmark.h>

#include <random>

#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"

using namespace meshplan;

namespace {

planner::Graph mlp(int chips, int64_t scale) {
  const int64_t kM = 64, kK = 512 * scale, kH = 2048 * scale, kN = 512;
  planner::GraphBuilder b("mlp");
  if (chips > 1) b.mesh(2, chips / 2);
  auto x = b.input("x", {kM, kK});
  auto w1 = b.parameter("w1", {kK, kH / chips});
  auto w2 = b.parameter("w2", {kH / chips, kN});
  if (chips > 1) {
    b.shard(w1, device::MeshShardSpec{device::MeshShardType::devices, {1, 1}, {}});
    b.shard(w2, device::MeshShardSpec{device::MeshShardType::devices, {0, 0}, {}});
  }
  auto h = b.op("matmul", {x, w1}, {planner::attr("activation", "relu")}, "fc1");
  auto y = b.matmul(h, w2, "fc2");
  if (chips > 1) y = b.op("all_reduce", {y}, {planner::attr("cluster_axis", int64_t{-1})}, "ar");
  b.output(y);
  return std::move(*b.build());
}

std::vector<uint8_t> plan_bytes(const planner::Graph& g, const device::ChipDesc& chip) {
  planner::PlannerOptions o;
  o.policy = "greedy";
  return std::move(planner::compile(g, chip, o)->bytes);
}

void BM_TpMlpT3k(benchmark::State& state) {
  device::MeshDesc desc = *device::builtin_mesh("t3k");
  auto mesh_bytes = plan_bytes(mlp(8, state.range(0)), desc.chip);
  auto single_bytes = plan_bytes(mlp(1, state.range(0)), desc.chip);
  auto mesh_plan = runtime::verify_plan(mesh_bytes, "tp_mlp");
  auto single_plan = runtime::verify_plan(single_bytes, "mlp");
  auto mesh = device::EmulatedMesh::create(desc);
  auto chip = device::EmulatedDevice::create(desc.chip);
  if (!mesh_plan || !single_plan || !mesh || !chip) {
    state.SkipWithError("setup failed");
    return;
  }
  auto mesh_exe = runtime::Executable::bind(*mesh_plan, **mesh);
  auto single_exe = runtime::Executable::bind(*single_plan, **chip);
  if (!mesh_exe || !single_exe) {
    state.SkipWithError("bind failed");
    return;
  }
  auto inputs = runtime::random_inputs(*mesh_plan, 1);  // host (global) shapes
  auto views = runtime::views_of(inputs);
  auto single = (*single_exe)->run(views);
  if (!single) {
    state.SkipWithError(single.error().message.c_str());
    return;
  }
  uint64_t mesh_ns = 0;
  for (auto _ : state) {
    auto r = (*mesh_exe)->run(views);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    mesh_ns = r->device_ns;
    benchmark::DoNotOptimize(r);
  }
  state.counters["mesh_sim_us"] = static_cast<double>(mesh_ns) / 1000.0;
  state.counters["single_sim_us"] = static_cast<double>(single->device_ns) / 1000.0;
  state.counters["sim_speedup"] =
      mesh_ns ? static_cast<double>(single->device_ns) / static_cast<double>(mesh_ns) : 0.0;
}
// Arg: size scale (K = 512 * s, hidden = 2048 * s): the all_reduce stays the same size while
// the matmuls grow, so the speed-up grows with s.
BENCHMARK(BM_TpMlpT3k)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
