// Emulated device speed: matmul GFLOP/s through the emulator (tiles, address maps, bf16/f32
// packing, program blocks, the core thread pool) against a plain f32 triple loop on the same
// shapes; and the fixed cost of one launch with tiny tensors.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/placement.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

std::vector<float> random_values(size_t n) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

/// A device holding a (n x n) x (n x n) f32 matmul, operands in DRAM, ready to launch.
struct MatmulSetup {
  std::unique_ptr<EmulatedDevice> dev;
  std::vector<int64_t> shape;
  TensorPlacement a, b, c;
  const TensorPlacement* ins[2];
  const TensorPlacement* outs[1];
  OpConfig config;

  MatmulSetup(int64_t n, unsigned threads, DType dtype, BufferType buffer) : shape{n, n} {
    dev = std::move(*EmulatedDevice::create(wormhole_b0()));
    if (threads > 0) dev->set_core_threads(threads);
    uint64_t bytes = static_cast<uint64_t>(n * n) * 4;
    uint64_t l1_top = wormhole_b0().l1_usable_top();
    auto address = [&](int i) {
      return buffer == BufferType::dram ? i * (bytes + 4096) : l1_top - (i + 1) * 65536;
    };
    a = make_interleaved("a", shape, dtype, buffer, address(0));
    b = make_interleaved("b", shape, dtype, buffer, address(1));
    c = make_interleaved("c", shape, dtype, buffer, address(2));
    for (auto* t : {&a, &b, &c}) (void)dev->allocate(*t);
    auto values = random_values(static_cast<size_t>(n * n));
    (void)dev->write(a, values);
    (void)dev->write(b, values);
    ins[0] = &a;
    ins[1] = &b;
    outs[0] = &c;
    config.grid_x = 8;
    config.grid_y = 8;
    if (n >= 256) config.program = MatmulProgram::mcast_2d;
  }
  OpLaunch op() const { return OpLaunch{OpKind::matmul, "mm", ins, outs, config}; }
};

void matmul_on(benchmark::State& state, unsigned threads) {
  int64_t n = state.range(0);
  MatmulSetup s(n, threads, DType::f32, BufferType::dram);
  for (auto _ : state) {
    auto r = s.dev->launch(s.op());
    if (!r) state.SkipWithError(r.error().message.c_str());
    benchmark::DoNotOptimize(r);
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_EmulatedMatmul(benchmark::State& state) {
  matmul_on(state, 4);
}
void BM_EmulatedMatmulSerial(benchmark::State& state) {
  matmul_on(state, 1);
}

/// The textbook triple loop, in the cache-friendly i-k-j order so the comparison is not flattered.
void BM_HostTripleLoop(benchmark::State& state) {
  int64_t n = state.range(0);
  auto a = random_values(static_cast<size_t>(n * n)), b = a;
  std::vector<float> c(static_cast<size_t>(n * n));
  for (auto _ : state) {
    std::fill(c.begin(), c.end(), 0.0f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < n; ++k) {
        float x = a[i * n + k];
        for (int64_t j = 0; j < n; ++j) c[i * n + j] += x * b[k * n + j];
      }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

/// One launch of a one-tile op with L1 operands: validation, liveness and CB checks, timing,
/// dispatch and the (tiny) kernel.
void BM_DispatchRelu32(benchmark::State& state) {
  MatmulSetup s(32, 4, DType::bf16, BufferType::l1);
  OpLaunch op{OpKind::relu, "act", std::span(s.ins, 1), s.outs, s.config};
  for (auto _ : state) benchmark::DoNotOptimize(s.dev->launch(op));
}

void BM_DispatchMatmul32(benchmark::State& state) {
  MatmulSetup s(32, 4, DType::bf16, BufferType::l1);
  for (auto _ : state) benchmark::DoNotOptimize(s.dev->launch(s.op()));
}

/// validate() alone, for the breakdown of the dispatch cost.
void BM_ValidateRelu32(benchmark::State& state) {
  MatmulSetup s(32, 4, DType::bf16, BufferType::l1);
  OpModel model(wormhole_b0());
  OpLaunch op{OpKind::relu, "act", std::span(s.ins, 1), s.outs, s.config};
  for (auto _ : state) benchmark::DoNotOptimize(model.validate(op));
}

}  // namespace

BENCHMARK(BM_EmulatedMatmul)
    ->Arg(128)
    ->Arg(256)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_EmulatedMatmulSerial)
    ->Arg(256)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_HostTripleLoop)
    ->Arg(128)
    ->Arg(256)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_DispatchRelu32);
BENCHMARK(BM_DispatchMatmul32);
BENCHMARK(BM_ValidateRelu32);
