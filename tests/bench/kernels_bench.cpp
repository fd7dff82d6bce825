// Emulator kernels on the core pool against the same kernels run serially (one thread), for a
// large eltwise, softmax (last and first dim), conv2d and matmul; the pool's crossover on an
// eltwise add of growing size (pool forced on at every size), which sets kPoolMinWorkNs; and the
// launch cost of tiny ops, which must stay inline. Ratios are printed by bench_main.cpp.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "meshplan/device/placement.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

/// One op ready to launch on its own device: bf16 operands and result in DRAM.
struct KernelSetup {
  std::unique_ptr<EmulatedDevice> dev;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int64_t> out_shape;
  std::vector<TensorPlacement> ins;
  TensorPlacement out;
  std::vector<const TensorPlacement*> in_ptrs, out_ptrs;
  OpKind kind;
  OpConfig config;
  bool ok = false;

  /// threads: core pool threads (1 = serial); pool_min_ns: the pool threshold (-1 = default).
  KernelSetup(OpKind k, std::vector<std::vector<int64_t>> in_shapes, OpConfig c, unsigned threads,
              int64_t pool_min_ns = -1)
      : shapes(std::move(in_shapes)), kind(k), config(c) {
    auto d = EmulatedDevice::create(wormhole_b0());
    if (!d) return;
    dev = std::move(*d);
    dev->set_core_threads(threads);
    dev->set_pool_min_work_ns(pool_min_ns);
    std::vector<std::span<const int64_t>> spans(shapes.begin(), shapes.end());
    auto s = infer_shape(kind, spans, config);
    if (!s) return;
    out_shape.assign(s->begin(), s->end());
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    uint64_t address = 0;
    ins.reserve(shapes.size());
    for (const auto& shape : shapes) {
      ins.push_back(make_interleaved("in", shape, DType::bf16, BufferType::dram, address));
      address += 64ull << 20;
      std::vector<float> values(static_cast<size_t>(volume(shape)));
      for (float& v : values) v = dist(rng);
      if (!dev->allocate(ins.back()) || !dev->write(ins.back(), values)) return;
    }
    out = make_interleaved("out", out_shape, DType::bf16, BufferType::dram, address);
    if (!dev->allocate(out)) return;
    for (auto& t : ins) in_ptrs.push_back(&t);
    out_ptrs.push_back(&out);
    ok = true;
  }
  void run(benchmark::State& state) {
    if (!ok) {
      state.SkipWithError("setup failed");
      return;
    }
    OpLaunch op{kind, "op", in_ptrs, out_ptrs, config};
    for (auto _ : state) {
      auto r = dev->launch(op);
      if (!r) {
        state.SkipWithError(r.error().message.c_str());
        break;
      }
      benchmark::DoNotOptimize(r);
    }
  }
};

OpConfig grid8() {
  OpConfig c;
  c.grid_x = 8;
  c.grid_y = 8;
  return c;
}

OpConfig dim_config(int d) {
  OpConfig c = grid8();
  c.num_dims = 1;
  c.dims[0] = static_cast<int8_t>(d);
  return c;
}

OpConfig conv_config() {
  OpConfig c = grid8();
  c.kernel[0] = c.kernel[1] = 3;
  c.padding[0] = c.padding[1] = c.padding[2] = c.padding[3] = 1;
  return c;
}

/// The large ops, by name: pooled (default threads and threshold) vs serial.
void large_op(benchmark::State& state, const std::string& name, unsigned threads) {
  if (name == "add") {
    KernelSetup(OpKind::add, {{8, 256, 256}, {8, 256, 256}}, grid8(), threads).run(state);
  } else if (name == "gelu") {
    KernelSetup(OpKind::gelu, {{8, 256, 256}}, grid8(), threads).run(state);
  } else if (name == "softmax_last") {
    KernelSetup(OpKind::softmax, {{8, 256, 256}}, dim_config(-1), threads).run(state);
  } else if (name == "softmax_dim0") {
    KernelSetup(OpKind::softmax, {{8, 256, 256}}, dim_config(0), threads).run(state);
  } else if (name == "conv2d") {
    KernelSetup(OpKind::conv2d, {{1, 32, 32, 64}, {64, 3, 3, 64}}, conv_config(), threads)
        .run(state);
  } else if (name == "matmul") {
    KernelSetup(OpKind::matmul, {{512, 512}, {512, 512}}, grid8(), threads).run(state);
  }
}

void BM_KernelPooled(benchmark::State& state, const char* name) {
  large_op(state, name, 2);
}
void BM_KernelSerial(benchmark::State& state, const char* name) {
  large_op(state, name, 1);
}

/// Eltwise add of [32 * tiles, 32] bf16: the pool forced on (threshold 0) vs serial.
void BM_PoolCrossoverPooled(benchmark::State& state) {
  int64_t rows = 32 * state.range(0);
  KernelSetup(OpKind::add, {{rows, 32}, {rows, 32}}, grid8(), 2, 0).run(state);
}
void BM_PoolCrossoverSerial(benchmark::State& state) {
  int64_t rows = 32 * state.range(0);
  KernelSetup(OpKind::add, {{rows, 32}, {rows, 32}}, grid8(), 1).run(state);
}

/// One launch of a tiny op with the default pool (two threads) and threshold: must run inline.
void BM_TinyLaunch(benchmark::State& state, const char* name) {
  std::string n = name;
  if (n == "relu") KernelSetup(OpKind::relu, {{32, 32}}, grid8(), 2).run(state);
  if (n == "add") KernelSetup(OpKind::add, {{32, 32}, {32, 32}}, grid8(), 2).run(state);
  if (n == "softmax") KernelSetup(OpKind::softmax, {{32, 32}}, dim_config(-1), 2).run(state);
  if (n == "matmul") KernelSetup(OpKind::matmul, {{32, 32}, {32, 32}}, grid8(), 2).run(state);
}
/// The same tiny relu with the pool forced on: what the threshold saves.
void BM_TinyLaunchForcedPool(benchmark::State& state) {
  KernelSetup(OpKind::relu, {{64, 32}}, grid8(), 2, 0).run(state);
}
void BM_TinyLaunchInline64x32(benchmark::State& state) {
  KernelSetup(OpKind::relu, {{64, 32}}, grid8(), 2).run(state);
}

}  // namespace

BENCHMARK_CAPTURE(BM_KernelPooled, add, "add")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_KernelSerial, add, "add")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_KernelPooled, gelu, "gelu")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_KernelSerial, gelu, "gelu")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_KernelPooled, softmax_last, "softmax_last")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_KernelSerial, softmax_last, "softmax_last")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_KernelPooled, softmax_dim0, "softmax_dim0")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_KernelSerial, softmax_dim0, "softmax_dim0")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_KernelPooled, conv2d, "conv2d")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_KernelSerial, conv2d, "conv2d")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_KernelPooled, matmul, "matmul")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_KernelSerial, matmul, "matmul")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PoolCrossoverPooled)
    ->RangeMultiplier(2)
    ->Range(8, 512)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_PoolCrossoverSerial)
    ->RangeMultiplier(2)
    ->Range(8, 512)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_TinyLaunch, relu, "relu");
BENCHMARK_CAPTURE(BM_TinyLaunch, add, "add");
BENCHMARK_CAPTURE(BM_TinyLaunch, softmax, "softmax");
BENCHMARK_CAPTURE(BM_TinyLaunch, matmul, "matmul");
BENCHMARK(BM_TinyLaunchForcedPool)->UseRealTime();
BENCHMARK(BM_TinyLaunchInline64x32)->UseRealTime();
