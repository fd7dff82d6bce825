// Cost of emulating the op set: running the example transformer block and CNN on the emulated
// chip (tiled kernels, bf16 storage, address maps) against the plain f32 host reference.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"

using namespace meshplan;

namespace {

struct ModelFixture {
  std::vector<uint8_t> bytes;
  runtime::PlanRef plan;
  std::unique_ptr<device::EmulatedDevice> dev;
  std::unique_ptr<runtime::Executable> exe;
  std::vector<runtime::Tensor> inputs;
  bool ok = false;

  explicit ModelFixture(const std::string& model) {
    auto g = planner::load_graph_file(std::string(MESHPLAN_SOURCE_DIR) + "/examples/models/" +
                                      model + ".json");
    if (!g) {
      std::fprintf(stderr, "%s\n", g.error().message.c_str());
      return;
    }
    auto compiled =
        planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
    if (!compiled) return;
    bytes = std::move(compiled->bytes);
    auto ref = runtime::verify_plan(bytes, model);
    auto d = device::EmulatedDevice::create(device::wormhole_b0());
    if (!ref || !d) return;
    plan = *ref;
    dev = std::move(*d);
    auto e = runtime::Executable::bind(plan, *dev);
    if (!e) return;
    exe = std::move(*e);
    inputs = runtime::random_inputs(plan, 1);
    ok = true;
  }
};

ModelFixture& fixture(const std::string& model) {
  static std::map<std::string, std::unique_ptr<ModelFixture>> all;
  auto& f = all[model];
  if (!f) f = std::make_unique<ModelFixture>(model);
  return *f;
}

void run_emulated(benchmark::State& state, const std::string& model) {
  ModelFixture& f = fixture(model);
  if (!f.ok) return state.SkipWithError("model did not plan");
  auto views = runtime::views_of(f.inputs);
  for (auto _ : state) benchmark::DoNotOptimize(f.exe->run(views));
}

void run_reference(benchmark::State& state, const std::string& model) {
  ModelFixture& f = fixture(model);
  if (!f.ok) return state.SkipWithError("model did not plan");
  auto views = runtime::views_of(f.inputs);
  for (auto _ : state) benchmark::DoNotOptimize(runtime::run_reference(f.plan, views));
}

void BM_EmulateTransformerBlock(benchmark::State& s) {
  run_emulated(s, "transformer_block");
}
void BM_ReferenceTransformerBlock(benchmark::State& s) {
  run_reference(s, "transformer_block");
}
void BM_EmulateSmallCnn(benchmark::State& s) {
  run_emulated(s, "small_cnn");
}
void BM_ReferenceSmallCnn(benchmark::State& s) {
  run_reference(s, "small_cnn");
}
BENCHMARK(BM_EmulateTransformerBlock)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReferenceTransformerBlock)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EmulateSmallCnn)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReferenceSmallCnn)->Unit(benchmark::kMillisecond);

}  // namespace
