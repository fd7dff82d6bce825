// Mesh plans run SPMD over MPI: rank 0 plans the reduced mesh zoo into one plan cache, every
// rank maps that cache, binds the same plan to an MpiMesh and runs it; the outputs and every
// chip's clock equal the in-process EmulatedMesh's bit for bit, and each rank backs exactly its
// own chips' memory (so the per-rank peak falls with the number of ranks).
#include <doctest/doctest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "meshplan/device/mpi_mesh.hpp"
#include "meshplan/planner/export_stablehlo.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "zoo.hpp"

using namespace meshplan;

namespace {

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

/// The per-device program of an annotated graph, as meshplan-compile makes it.
Result<planner::Graph> mesh_program(const planner::AnnotatedGraph& a, int64_t rows, int64_t cols) {
  planner::shlo::Module module = MESHPLAN_TRY(planner::export_stablehlo(a.graph, a.annotations));
  MESHPLAN_TRY(
      planner::shlo::run_pipeline(module, planner::pipeline_options(a.annotations, rows, cols)));
  planner::Graph g = MESHPLAN_TRY(planner::shlo::lower_to_graph(module));
  g.name = a.graph.name;
  return g;
}

/// The reduced model's mesh plan, as meshplan-compile makes it.
Result<std::vector<uint8_t>> plan_bytes(const models::MeshModelSpec& spec) {
  planner::AnnotatedGraph annotated = MESHPLAN_TRY(spec.reduced());
  planner::Graph graph = MESHPLAN_TRY(mesh_program(annotated, spec.rows, spec.cols));
  auto plan = MESHPLAN_TRY(
      planner::compile(graph, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram")));
  return std::move(plan.bytes);
}

/// Rank 0 plans the reduced mesh zoo into a cache under the build tree; every rank gets its path.
std::string zoo_cache(const std::vector<models::MeshModelSpec>& zoo) {
  std::string path;
  int ok = 1;
  if (world_rank() == 0) {
    std::filesystem::path dir = std::filesystem::path(MESHPLAN_BINARY_DIR) / "tests" / "mpi";
    std::filesystem::create_directories(dir);
    path = (dir / ("zoo-" + std::to_string(getpid()) + ".mpc")).string();
    std::vector<runtime::CacheEntryData> entries;
    for (const models::MeshModelSpec& spec : zoo) {
      auto bytes = plan_bytes(spec);
      if (!bytes) {
        MESSAGE(spec.name, ": ", bytes.error().message);
        ok = 0;
        break;
      }
      entries.push_back({spec.name, std::move(*bytes)});
    }
    if (ok && !runtime::write_cache(path, std::move(entries))) ok = 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  REQUIRE(ok == 1);
  uint64_t len = path.size();
  MPI_Bcast(&len, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  path.resize(static_cast<size_t>(len));
  MPI_Bcast(path.data(), static_cast<int>(len), MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

bool same_bits(const runtime::Tensor& a, const runtime::Tensor& b) {
  return a.shape == b.shape && a.data.size() == b.data.size() &&
         std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("mesh zoo (reduced) on an MpiMesh: bit-identical to EmulatedMesh, own chips only") {
  std::vector<models::MeshModelSpec> zoo;
  for (const models::MeshModelSpec& spec : models::mesh_zoo())
    if (spec.mesh != "galaxy") zoo.push_back(spec);  // 32 chips twice per rank: too slow here
  REQUIRE(!zoo.empty());
  std::string path = zoo_cache(zoo);
  auto cache = runtime::PlanCache::open(path);
  REQUIRE_MESSAGE(cache, cache.error().message);
  for (const models::MeshModelSpec& spec : zoo) {
    CAPTURE(spec.name);
    auto plan = cache->find(spec.name);
    REQUIRE(plan);
    auto desc = runtime::plan_mesh_desc(*plan, device::wormhole_b0());
    REQUIRE(desc);
    auto ref = device::EmulatedMesh::create(*desc);
    auto mpi = device::MpiMesh::create(*desc, MPI_COMM_WORLD, 30.0);
    REQUIRE(ref);
    REQUIRE_MESSAGE(mpi, mpi.error().message);
    auto ref_exe = runtime::Executable::bind(*plan, **ref);
    auto mpi_exe = runtime::Executable::bind(*plan, **mpi);
    REQUIRE(ref_exe);
    REQUIRE(mpi_exe);
    auto inputs = runtime::random_inputs(*plan, 5);
    auto views = runtime::views_of(inputs);
    auto want = (*ref_exe)->run(views);
    // Only rank 0's host inputs count (full_to_shard scatters them): the others pass NaNs.
    if (world_rank() != 0)
      for (runtime::Tensor& t : inputs) std::fill(t.data.begin(), t.data.end(), std::nanf(""));
    auto got = (*mpi_exe)->run(views);
    REQUIRE_MESSAGE(want, want.error().message);
    REQUIRE_MESSAGE(got, got.error().message);
    REQUIRE(got->outputs.size() == want->outputs.size());
    for (size_t i = 0; i < want->outputs.size(); ++i)
      CHECK(same_bits(got->outputs[i], want->outputs[i]));
    CHECK(got->chip_ns == want->chip_ns);
    CHECK(got->chip_collective_ns == want->chip_collective_ns);
    CHECK(got->bytes_moved == want->bytes_moved);
    // Memory: this rank backs exactly its own chips, the same bytes as those chips in-process.
    uint64_t own = 0;
    for (int c = 0; c < desc->chips(); ++c)
      if ((*mpi)->owns(c)) {
        REQUIRE((*mpi)->local_chip(c) != nullptr);
        CHECK((*mpi)->local_chip(c)->resident_bytes() == (*ref)->chip(c).resident_bytes());
        own += (*ref)->chip(c).resident_bytes();
      } else {
        CHECK((*mpi)->local_chip(c) == nullptr);
      }
    CHECK((*mpi)->resident_bytes() == own);
    uint64_t mine = (*mpi)->resident_bytes(), peak = 0;
    MPI_Allreduce(&mine, &peak, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    uint64_t total = (*ref)->resident_bytes();
    MESSAGE(spec.name, ": ", world_size(), " ranks, largest rank backs ", peak, " of ", total,
            " emulated bytes");
    CHECK(total > 0);
    // The busiest rank owns ceil(chips / ranks) chips: its share of the in-process bytes.
    int n = std::min(world_size(), desc->chips());
    if (n > 1) CHECK(peak < total);
    CHECK(peak <= total * static_cast<uint64_t>((desc->chips() + n - 1) / n) /
                          static_cast<uint64_t>(desc->chips()) +
                      total / static_cast<uint64_t>(desc->chips()));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) std::filesystem::remove(path);
}
