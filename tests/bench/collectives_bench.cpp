// Collectives on the emulated mesh: emulated throughput (bytes that arrived at another chip per
// second of host time) and the simulated duration the timing model gives, for all_gather and
// all_reduce on t3k (2x4) and galaxy (8x4, also as a ring), both cluster axes.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "meshplan/device/emulated_mesh.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

constexpr int64_t kRows = 128;
constexpr int64_t kCols = 512;  // 128 KiB of bf16 per chip

struct MeshFixture {
  std::unique_ptr<Mesh> mesh;
  std::vector<int64_t> in_shape{kRows, kCols};
  std::vector<int64_t> out_shape;
  std::vector<TensorPlacement> in, out;

  MeshFixture(MeshDesc desc, bool gather, int axis) {
    mesh = std::move(*EmulatedMesh::create(std::move(desc)));
    out_shape = in_shape;
    if (gather) out_shape[0] *= mesh->descriptor().axis_size(axis);
    std::vector<float> values(static_cast<size_t>(kRows * kCols));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 251) * 0.25f;
    for (int c = 0; c < mesh->size(); ++c) {
      in.push_back(make_interleaved("x", in_shape, DType::bf16, BufferType::dram, 0));
      out.push_back(make_interleaved("y", out_shape, DType::bf16, BufferType::dram, 64ull << 20));
      (void)mesh->chip(c).allocate(in.back());
      (void)mesh->chip(c).allocate(out.back());
      (void)mesh->chip(c).write(in.back(), values);
    }
  }
};

MeshDesc mesh_named(const std::string& name) {
  if (name == "galaxy_ring") {
    MeshDesc m = *builtin_mesh("galaxy");
    m.name = "galaxy_ring";
    m.topology = Topology::ring;
    return m;
  }
  return *builtin_mesh(name);
}

void run(benchmark::State& state, const std::string& mesh_name, bool gather) {
  int axis = static_cast<int>(state.range(0));
  MeshFixture f(mesh_named(mesh_name), gather, axis);
  uint64_t bytes = 0, sim_ns = 0;
  for (auto _ : state) {
    auto r =
        gather ? f.mesh->all_gather(f.in, f.out, 0, axis) : f.mesh->all_reduce(f.in, f.out, axis);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    bytes += r->bytes_moved;
    sim_ns = r->timing.duration_ns;
  }
  state.counters["emulated_B/s"] =
      benchmark::Counter(static_cast<double>(bytes), benchmark::Counter::kIsRate);
  state.counters["simulated_us"] = static_cast<double>(sim_ns) / 1e3;
  state.counters["chips"] = f.mesh->size();
  state.counters["N"] = f.mesh->descriptor().axis_size(axis);
}

void BM_AllGather_t3k(benchmark::State& s) {
  run(s, "t3k", true);
}
void BM_AllGather_galaxy(benchmark::State& s) {
  run(s, "galaxy", true);
}
void BM_AllGather_galaxy_ring(benchmark::State& s) {
  run(s, "galaxy_ring", true);
}
void BM_AllReduce_t3k(benchmark::State& s) {
  run(s, "t3k", false);
}
void BM_AllReduce_galaxy(benchmark::State& s) {
  run(s, "galaxy", false);
}
void BM_AllReduce_galaxy_ring(benchmark::State& s) {
  run(s, "galaxy_ring", false);
}

BENCHMARK(BM_AllGather_t3k)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllGather_galaxy)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllGather_galaxy_ring)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllReduce_t3k)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllReduce_galaxy)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllReduce_galaxy_ring)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
