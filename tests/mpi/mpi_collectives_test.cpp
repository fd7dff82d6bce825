// Every collective and host transfer on an MpiMesh spread over this job's ranks, against the
// in-process EmulatedMesh with the same inputs: the same bits on every chip, the same clocks and
// the same CollectiveRun. Each rank also checks that it holds exactly its own chips' bytes.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cstring>

#include "device/mesh_fixture.hpp"
#include "meshplan/device/backend.hpp"
#include "meshplan/device/mpi_backend.hpp"
#include "meshplan/device/mpi_mesh.hpp"

using namespace meshplan;
using namespace meshplan::device;
using namespace meshplan::test;

namespace {

constexpr uint64_t kIn = 0;
constexpr uint64_t kOut = 64ull << 20;

/// The same mesh in-process and over MPI.
struct Pair {
  std::unique_ptr<EmulatedMesh> ref;
  std::unique_ptr<MpiMesh> mpi;
};

Pair make_pair(std::string_view name) {
  auto desc = builtin_mesh(name);
  REQUIRE(desc);
  auto ref = EmulatedMesh::create(*desc);
  REQUIRE(ref);
  auto mpi = MpiMesh::create(*desc, MPI_COMM_WORLD, 30.0);
  REQUIRE_MESSAGE(mpi, mpi.error().message);
  return {std::move(*ref), std::move(*mpi)};
}

/// Bitwise equality of two float vectors (NaN-safe, -0 != +0).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// One collective case: inputs of `in_shape` on every chip, outputs of `out_shape`; `op` runs
/// the collective on a mesh. Checks the MPI mesh against the in-process one.
template <typename Op>
void check_case(std::string_view mesh_name, std::vector<int64_t> in_shape,
                std::vector<int64_t> out_shape, DType dtype, Op op) {
  CAPTURE(mesh_name);
  Pair m = make_pair(mesh_name);
  ChipTensors ri(*m.ref, "in", same_shape(*m.ref, in_shape), dtype, kIn);
  ChipTensors ro(*m.ref, "out", same_shape(*m.ref, out_shape), dtype, kOut);
  ChipTensors mi(*m.mpi, "in", same_shape(*m.mpi, in_shape), dtype, kIn);
  ChipTensors mo(*m.mpi, "out", same_shape(*m.mpi, out_shape), dtype, kOut);
  for (int i = 0; i < m.ref->size(); ++i) {
    std::vector<float> v = chip_values(in_shape, 7000 + static_cast<uint32_t>(i));
    REQUIRE(m.ref->chip(i).write(ri[static_cast<size_t>(i)], v));
    REQUIRE(m.mpi->chip(i).write(mi[static_cast<size_t>(i)], v));
  }
  auto want = op(static_cast<Mesh&>(*m.ref), ri.all(), ro.all());
  auto got = op(static_cast<Mesh&>(*m.mpi), mi.all(), mo.all());
  REQUIRE_MESSAGE(want, want.error().message);
  REQUIRE_MESSAGE(got, got.error().message);
  CHECK(got->timing.duration_ns == want->timing.duration_ns);
  CHECK(got->end_ns == want->end_ns);
  CHECK(got->bytes_moved == want->bytes_moved);
  CHECK(got->groups == want->groups);
  uint64_t own_bytes = 0;
  for (int i = 0; i < m.ref->size(); ++i) {
    CAPTURE(i);
    CHECK(m.mpi->now_ns(m.ref->descriptor().coord(i)) ==
          m.ref->now_ns(m.ref->descriptor().coord(i)));
    std::vector<float> a(static_cast<size_t>(volume(out_shape))), b(a.size());
    REQUIRE(m.ref->chip(i).read(ro[static_cast<size_t>(i)], a));
    if (EmulatedDevice* d = m.mpi->local_chip(i)) {
      REQUIRE(d->read(mo[static_cast<size_t>(i)], b));
      CHECK(same_bits(a, b));
      CHECK(d->resident_bytes() == m.ref->chip(i).resident_bytes());
      own_bytes += m.ref->chip(i).resident_bytes();
    } else {
      // Another rank's chip: no device here, and reading it outside an exchange is refused.
      auto r = m.mpi->chip(i).read(mo[static_cast<size_t>(i)], b);
      REQUIRE_FALSE(r);
      CHECK(r.error().message.find("lives on MPI rank") != std::string::npos);
    }
  }
  CHECK(m.mpi->resident_bytes() == own_bytes);
  // Every chip's output, gathered to every rank through the exchange path (identity shards).
  MeshShardSpec identity{MeshShardType::identity, {-1, -1}, {}};
  std::vector<float> all_ref(static_cast<size_t>(volume(out_shape) * m.ref->size()));
  std::vector<float> all_mpi(all_ref.size());
  REQUIRE(m.ref->shard_to_full(ro.all(), identity, out_shape, all_ref));
  auto s = m.mpi->shard_to_full(mo.all(), identity, out_shape, all_mpi);
  REQUIRE_MESSAGE(s, s.error().message);
  CHECK(same_bits(all_ref, all_mpi));
}

/// The meshes and axes swept: every axis of the T3000 (4 chips per rank on 2 ranks, 2 on 4), the
/// n300's rows and whole mesh (on 4 ranks, two ranks own no chip). The Galaxy is left out: 32
/// emulated chips twice per rank cost seconds of host memory traffic per case.
struct MeshAxis {
  const char* mesh;
  int axis;
};
const MeshAxis kCases[] = {{"t3k", 0}, {"t3k", 1}, {"t3k", -1}, {"n300", 1}, {"n300", -1}};

int64_t group_size(const MeshAxis& c) {
  auto desc = builtin_mesh(c.mesh);
  REQUIRE(desc);
  return c.axis == 0 ? desc->rows : c.axis == 1 ? desc->cols : desc->chips();
}

}  // namespace

TEST_CASE("MpiMesh all_gather, reduce_scatter, all_reduce are bit-identical to EmulatedMesh") {
  for (const MeshAxis& c : kCases) {
    CAPTURE(c.axis);
    int64_t n = group_size(c);
    int axis = c.axis;
    check_case(c.mesh, {3, 40}, {3 * n, 40}, DType::bf16,
               [&](Mesh& m, PerChip in, PerChip out) { return m.all_gather(in, out, 0, axis); });
    check_case(c.mesh, {2, 32 * n}, {2, 32}, DType::f32, [&](Mesh& m, PerChip in, PerChip out) {
      return m.reduce_scatter(in, out, -1, axis, ReduceOp::sum);
    });
    check_case(c.mesh, {5, 33}, {5, 33}, DType::bf16, [&](Mesh& m, PerChip in, PerChip out) {
      return m.all_reduce(in, out, axis, ReduceOp::sum);
    });
    // A max reduction (tt-metal's all_reduce sums only; reduce_scatter takes max).
    check_case(c.mesh, {4, 32 * n}, {4, 32}, DType::f32, [&](Mesh& m, PerChip in, PerChip out) {
      return m.reduce_scatter(in, out, -1, axis, ReduceOp::max);
    });
  }
}

TEST_CASE("MpiMesh all_to_all, all_slice, collective_permute are bit-identical to EmulatedMesh") {
  for (const MeshAxis& c : kCases) {
    CAPTURE(c.axis);
    int64_t n = group_size(c);
    int axis = c.axis;
    // 16 rows and 32 columns a chip: tt-metal's all_to_all tiling rules.
    check_case(c.mesh, {16, 32 * n}, {16 * n, 32}, DType::f32,
               [&](Mesh& m, PerChip in, PerChip out) { return m.all_to_all(in, out, 1, 0, axis); });
    check_case(c.mesh, {4, 32 * n}, {4, 32}, DType::bf16,
               [&](Mesh& m, PerChip in, PerChip out) { return m.all_slice(in, out, 1, axis); });
  }
  for (const char* name : {"n300", "t3k"}) {
    auto desc = builtin_mesh(name);
    // Every chip sends to the next in chip-index order, except that the last sends nowhere: chip
    // 0 is nobody's target and gets zeros.
    std::vector<std::pair<MeshCoord, MeshCoord>> pairs;
    for (int i = 0; i + 1 < desc->chips(); ++i)
      pairs.emplace_back(desc->coord(i), desc->coord(i + 1));
    check_case(name, {3, 45}, {3, 45}, DType::bf16, [&](Mesh& m, PerChip in, PerChip out) {
      return m.collective_permute(in, out, pairs);
    });
  }
}

TEST_CASE("MpiMesh all_reduce on n300: chip values summed, written out literally") {
  Pair m = make_pair("n300");
  ChipTensors in(*m.mpi, "in", same_shape(*m.mpi, {1, 4}), DType::f32, kIn);
  ChipTensors out(*m.mpi, "out", same_shape(*m.mpi, {1, 4}), DType::f32, kOut);
  const std::vector<float> values[2] = {{1, 2, 3, 4}, {10, 20, 30, -40}};
  for (int i = 0; i < 2; ++i) REQUIRE(m.mpi->chip(i).write(in[static_cast<size_t>(i)], values[i]));
  REQUIRE(m.mpi->all_reduce(in.all(), out.all(), 1, ReduceOp::sum));
  std::vector<float> host(8);
  MeshShardSpec identity{MeshShardType::identity, {-1, -1}, {}};
  REQUIRE(m.mpi->shard_to_full(out.all(), identity, std::vector<int64_t>{1, 4}, host));
  CHECK(host == std::vector<float>{11, 22, 33, -36, 11, 22, 33, -36});
}

TEST_CASE("MpiMesh: a failing chip's error reaches every rank; the mesh stays usable") {
  Pair m = make_pair("t3k");
  ChipTensors in(*m.mpi, "in", same_shape(*m.mpi, {2, 8}), DType::f32, kIn);
  // The outputs are never allocated: the first write fails on chip (0,0)'s owner (rank 0).
  ChipTensors out(*m.mpi, "out", same_shape(*m.mpi, {2, 8}), DType::f32, kOut, false);
  for (int i = 0; i < m.mpi->size(); ++i)
    REQUIRE(m.mpi->chip(i).write(in[static_cast<size_t>(i)], chip_values({2, 8}, 1)));
  auto r = m.mpi->all_reduce(in.all(), out.all(), 1, ReduceOp::sum);
  REQUIRE_FALSE(r);
  CAPTURE(r.error().message);
  if (m.mpi->rank() != 0) CHECK(r.error().message.starts_with("rank 0: "));
  CHECK(r.error().message.find("chip (0,0)") != std::string::npos);
  // Agreed: every rank returned, and the next collective runs.
  ChipTensors ok(*m.mpi, "ok", same_shape(*m.mpi, {2, 8}), DType::f32, kOut);
  CHECK(m.mpi->all_reduce(in.all(), ok.all(), 1, ReduceOp::sum));
}

TEST_CASE("mpi backend: registered by name, opens an MpiMesh over every rank") {
  REQUIRE(register_mpi_backend());
  REQUIRE(register_mpi_backend());  // idempotent
  CHECK(has_backend("mpi"));
  auto desc = builtin_mesh("t3k");
  REQUIRE(desc);
  auto mesh = open_backend("mpi", *desc, BackendOptions{.host_threads = 2});
  REQUIRE_MESSAGE(mesh, mesh.error().message);
  auto* mpi = dynamic_cast<MpiMesh*>(mesh->get());
  REQUIRE(mpi != nullptr);
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  CHECK(mpi->ranks() == ranks);
  CHECK(mpi->size() == 8);
  // Each owned chip runs its cores on the asked host threads; the others are not this rank's.
  int owned = 0;
  for (int i = 0; i < mpi->size(); ++i)
    if (EmulatedDevice* chip = mpi->local_chip(i)) {
      CHECK(chip->core_threads() == 2);
      ++owned;
    }
  if (8 % ranks == 0) CHECK(owned == 8 / ranks);  // contiguous blocks (CTest runs 1, 2, 4 ranks)
}
