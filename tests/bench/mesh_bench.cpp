// Mesh planner benchmarks: propagation + explicit reshards + collective insertion + local shapes
// on a 10,000-op tensor-parallel MLP stack, against parsing the same module in the same run;
// and the communication bytes per step the planner chose vs the hand-computed Megatron figure.
#include <sstream>

#include "bench_util.hpp"
#include "meshplan/planner/spmd.hpp"

namespace {

using namespace meshplan::planner::shlo;

/// `layers` Megatron MLP blocks (column-parallel dot, bias, relu, row-parallel dot, residual):
/// 8 ops each, on a 1 x tp mesh. Weights carry Shardy annotations; activations do not.
std::string tp_mlp_stack(int layers, int tp, int64_t rows, int64_t width, int64_t hidden) {
  std::ostringstream s;
  auto t = [](int64_t a, int64_t b) {
    return "tensor<" + std::to_string(a) + "x" + std::to_string(b) + "xf32>";
  };
  std::string x = t(rows, width), h = t(rows, hidden);
  s << "sdy.mesh @mesh = <[\"x\"=1, \"tp\"=" << tp << "]>\n";
  s << "func.func public @main(%x: " << x;
  for (int l = 0; l < layers; ++l)
    s << ", %w" << l << ": " << t(width, hidden)
      << " {sdy.sharding = #sdy.sharding<@mesh, [{}, {\"tp\"}]>}, %b" << l << ": tensor<" << hidden
      << "xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"tp\"}]>}, %v" << l << ": "
      << t(hidden, width) << " {sdy.sharding = #sdy.sharding<@mesh, [{\"tp\"}, {}]>}";
  s << ") -> " << x << " {\n";
  std::string cur = "%x";
  for (int l = 0; l < layers; ++l) {
    std::string p = "%l" + std::to_string(l) + "_";
    s << "  " << p << "0 = stablehlo.dot_general " << cur << ", %w" << l
      << ", contracting_dims = [1] x [0] : (" << x << ", " << t(width, hidden) << ") -> " << h
      << "\n";
    s << "  " << p << "1 = stablehlo.broadcast_in_dim %b" << l << ", dims = [1] : (tensor<"
      << hidden << "xf32>) -> " << h << "\n";
    s << "  " << p << "2 = stablehlo.add " << p << "0, " << p << "1 : " << h << "\n";
    s << "  " << p << "3 = stablehlo.constant dense<0.0> : tensor<f32>\n";
    s << "  " << p << "4 = stablehlo.broadcast_in_dim " << p << "3, dims = [] : (tensor<f32>) -> "
      << h << "\n";
    s << "  " << p << "5 = stablehlo.maximum " << p << "2, " << p << "4 : " << h << "\n";
    s << "  " << p << "6 = stablehlo.dot_general " << p << "5, %v" << l
      << ", contracting_dims = [1] x [0] : (" << h << ", " << t(hidden, width) << ") -> " << x
      << "\n";
    s << "  " << p << "7 = stablehlo.add " << p << "6, " << cur << " : " << x << "\n";
    cur = p + "7";
  }
  s << "  return " << cur << " : " << x << "\n}\n";
  return s.str();
}

Module parsed(int ops) {
  auto m = parse_module(tp_mlp_stack(ops / 8, 8, 64, 128, 256), "stack.mlir");
  if (!m) std::fprintf(stderr, "tp_mlp_stack: %s\n", m.error().message.c_str());
  return m ? std::move(*m) : Module{};
}

void BM_MeshParse(benchmark::State& state) {
  std::string text = tp_mlp_stack(static_cast<int>(state.range(0)) / 8, 8, 64, 128, 256);
  for (auto _ : state) {
    auto m = parse_module(text, "stack.mlir");
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_MeshParse)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_MeshPipeline(benchmark::State& state) {
  const Module original = parsed(static_cast<int>(state.range(0)));
  PipelineOptions o;
  o.mesh_rows = 1;
  o.mesh_cols = 8;
  int64_t visits = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Module m = original;
    state.ResumeTiming();
    auto s = run_pipeline(m, o);
    if (!s) state.SkipWithError(s.error().message.c_str());
    benchmark::DoNotOptimize(m);
  }
  Module m = original;
  auto stats = propagate(m);
  if (stats) visits = stats->op_visits;
  state.counters["ops"] = static_cast<double>(original.entry()->body.ops.size());
  state.counters["op_visits"] = static_cast<double>(visits);
}
BENCHMARK(BM_MeshPipeline)->Arg(10000)->Unit(benchmark::kMillisecond);

/// lower_to_graph (with validate) of the same stack's per-device program on 1x8.
void BM_MeshLower(benchmark::State& state) {
  Module m = parsed(static_cast<int>(state.range(0)));
  PipelineOptions o;
  o.mesh_rows = 1;
  o.mesh_cols = 8;
  if (auto s = run_pipeline(m, o); !s) state.SkipWithError(s.error().message.c_str());
  size_t ops = 0;
  for (auto _ : state) {
    auto g = lower_to_graph(m);
    if (!g) {
      state.SkipWithError(g.error().message.c_str());
      break;
    }
    ops = g->ops.size();
    benchmark::DoNotOptimize(g);
  }
  state.counters["graph_ops"] = static_cast<double>(ops);
}
BENCHMARK(BM_MeshLower)->Arg(10000)->Unit(benchmark::kMillisecond);

/// Bytes per step of the planner's collectives vs Megatron's one all_reduce of the [rows, width]
/// activations per MLP block: 2 (N-1)/N * rows * width * 4 bytes each.
void BM_TpMlpCommunication(benchmark::State& state) {
  const int layers = static_cast<int>(state.range(0)), tp = 8;
  const Module original = parsed(layers * 8);
  PipelineOptions o;
  o.mesh_cols = tp;
  double planned = 0;
  int all_reduces = 0;
  for (auto _ : state) {
    Module m = original;
    auto s = run_pipeline(m, o);
    if (!s) {
      state.SkipWithError(s.error().message.c_str());
      break;
    }
    auto comm = communication(m);
    if (!comm) {
      state.SkipWithError(comm.error().message.c_str());
      break;
    }
    planned = comm->bytes;
    all_reduces = comm->count("all_reduce");
  }
  double megatron = layers * 2.0 * (tp - 1) / tp * 64 * 128 * 4;
  state.counters["bytes_planned"] = planned;
  state.counters["bytes_megatron"] = megatron;
  state.counters["planned_over_megatron"] = planned / megatron;
  state.counters["all_reduces"] = all_reduces;
}
BENCHMARK(BM_TpMlpCommunication)->Arg(1)->Arg(16)->Unit(benchmark::kMillisecond);

}  // namespace
