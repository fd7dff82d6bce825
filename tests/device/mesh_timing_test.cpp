// The collective timing model (formula values, monotone in bytes, ring below linear) and the
// per-chip clocks of the Mesh; an idle 32-chip mesh stays cheap.
#include <doctest/doctest.h>

#include "mesh_fixture.hpp"
#include "meshplan/device/collective_timing.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/timing.hpp"

using namespace meshplan;
using namespace meshplan::device;
using namespace meshplan::test;

TEST_CASE("collective timing follows the DEVICE-FACTS formula") {
  MeshDesc t3k = *builtin_mesh("t3k");
  const uint64_t T = 1 << 20;
  // all_gather over the 4 chips of a row: 3/4 T over the bottleneck link, 2 links x 12.5 GB/s.
  CollectiveTiming ag = estimate_collective(t3k, CollectiveKind::all_gather, 4, T);
  CHECK(ag.link_bytes == 786432);
  CHECK(ag.transfer_ns == 31458);  // ceil(786432 / 25)
  CHECK(ag.hops == 3);
  CHECK(ag.latency_ns == 3 * 711);
  CHECK(ag.duration_ns == 31458 + 2133);
  CollectiveTiming rs = estimate_collective(t3k, CollectiveKind::reduce_scatter, 4, T);
  CHECK(rs.duration_ns == ag.duration_ns);
  CollectiveTiming ar = estimate_collective(t3k, CollectiveKind::all_reduce, 4, T);
  CHECK(ar.link_bytes == 2 * 786432);
  CHECK(ar.hops == 6);
  CollectiveTiming a2a = estimate_collective(t3k, CollectiveKind::all_to_all, 4, T);
  CHECK(a2a.link_bytes == T);  // 2 * 2 / 4 of T crosses the middle link
  CHECK(estimate_collective(t3k, CollectiveKind::all_reduce, 1, T).duration_ns == 0);

  MeshDesc ring = t3k;
  ring.topology = Topology::ring;
  CollectiveTiming rag = estimate_collective(ring, CollectiveKind::all_gather, 4, T);
  CHECK(rag.link_bytes == 393216);
  CHECK(rag.hops == 2);
  // Two chips: a ring is the same wire as a line.
  CHECK(estimate_collective(ring, CollectiveKind::all_gather, 2, T).duration_ns ==
        estimate_collective(t3k, CollectiveKind::all_gather, 2, T).duration_ns);
}

TEST_CASE("collective timing is monotone in bytes and a ring beats a line") {
  for (const char* name : {"n300", "t3k", "galaxy"}) {
    MeshDesc lin = *builtin_mesh(name);
    MeshDesc ring = lin;
    ring.topology = Topology::ring;
    for (CollectiveKind k : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter,
                             CollectiveKind::all_reduce, CollectiveKind::all_to_all}) {
      for (uint32_t n : {2u, 3u, 4u, 8u}) {
        uint64_t prev = 0;
        for (uint64_t bytes = 1024; bytes <= (64ull << 20); bytes *= 2) {
          CollectiveTiming t = estimate_collective(lin, k, n, bytes);
          CHECK(t.duration_ns > prev);
          prev = t.duration_ns;
          if (n >= 3) CHECK(estimate_collective(ring, k, n, bytes).duration_ns < t.duration_ns);
        }
      }
    }
  }
}

TEST_CASE("collective_permute timing routes over the links") {
  MeshDesc m = *builtin_mesh("t3k");
  using P = std::pair<MeshCoord, MeshCoord>;
  std::vector<P> neighbour{{MeshCoord{0, 0}, MeshCoord{0, 1}}};
  std::vector<P> far{{MeshCoord{0, 0}, MeshCoord{1, 3}}};
  std::vector<P> shared{{MeshCoord{0, 0}, MeshCoord{0, 2}}, {MeshCoord{0, 1}, MeshCoord{0, 3}}};
  CollectiveTiming a = estimate_permute(m, neighbour, 1000);
  CollectiveTiming b = estimate_permute(m, far, 1000);
  CollectiveTiming c = estimate_permute(m, shared, 1000);
  CHECK(a.hops == 1);
  CHECK(b.hops == 4);
  CHECK(a.link_bytes == 1000);
  CHECK(c.link_bytes == 2000);  // both routes cross the (0,1)->(0,2) link
  CHECK(a.duration_ns < b.duration_ns);
  CHECK(a.duration_ns < c.duration_ns);
  std::vector<P> self{{MeshCoord{1, 1}, MeshCoord{1, 1}}};
  CHECK(estimate_permute(m, self, 1000).duration_ns == 0);
  MeshDesc ring = m;
  ring.topology = Topology::ring;
  std::vector<P> wrap{{MeshCoord{0, 0}, MeshCoord{0, 3}}};
  CHECK(estimate_permute(ring, wrap, 1000).hops == 1);
  CHECK(estimate_permute(m, wrap, 1000).hops == 3);
}

TEST_CASE("chip clocks: a group starts at its slowest chip and ends together") {
  auto mesh = std::move(*EmulatedMesh::create(*builtin_mesh("t3k")));
  std::vector<int64_t> shape{64, 64};
  ChipTensors in(*mesh, "x", same_shape(*mesh, shape), DType::bf16, 0);
  ChipTensors out(*mesh, "y", same_shape(*mesh, {64, 256}), DType::bf16, 64ull << 20);
  // Make chip (0,2) busy first with an op on its own device.
  ChipTensors tmp(*mesh, "t", same_shape(*mesh, shape), DType::bf16, 128ull << 20);
  const TensorPlacement* ops_in[] = {&in[2]};
  const TensorPlacement* ops_out[] = {&tmp[2]};
  auto busy = mesh->chip(MeshCoord{0, 2})
                  .launch(OpLaunch{OpKind::relu, "relu", ops_in, ops_out, OpConfig{}});
  REQUIRE(busy);
  CHECK(mesh->now_ns(MeshCoord{0, 2}) == busy->duration_ns);
  auto run = mesh->all_gather(in.all(), out.all(), 1, 1);
  REQUIRE(run);
  uint64_t d = run->timing.duration_ns;
  CHECK(d == estimate_collective(mesh->descriptor(), CollectiveKind::all_gather, 4, 64 * 256 * 2)
                 .duration_ns);
  for (uint16_t c = 0; c < 4; ++c) {
    CHECK(mesh->now_ns(MeshCoord{0, c}) == busy->duration_ns + d);  // row 0 waited for (0,2)
    CHECK(mesh->now_ns(MeshCoord{1, c}) == d);                      // row 1 did not
  }
  CHECK(run->end_ns == busy->duration_ns + d);
  CHECK(mesh->now_ns() == busy->duration_ns + d);
  mesh->reset();
  CHECK(mesh->now_ns() == 0);
}

TEST_CASE("a bigger collective takes longer on the mesh clock; bytes moved are counted") {
  auto mesh = std::move(*EmulatedMesh::create(*builtin_mesh("galaxy")));
  uint64_t last = 0;
  for (int64_t rows : {32, 64, 128}) {
    mesh->reset();
    ChipTensors in(*mesh, "x", same_shape(*mesh, {rows, 32}), DType::bf16, 0);
    ChipTensors out(*mesh, "y", same_shape(*mesh, {rows * 8, 32}), DType::bf16, 64ull << 20);
    auto run = mesh->all_gather(in.all(), out.all(), 0, 0);
    REQUIRE(run);
    CHECK(run->groups == 4);
    CHECK(run->bytes_moved == static_cast<uint64_t>(32 * 7 * rows * 32 * 2));
    CHECK(mesh->now_ns() > last);
    last = mesh->now_ns();
  }
}

TEST_CASE("an idle galaxy mesh is cheap in host memory") {
  auto mesh = EmulatedMesh::create(*builtin_mesh("galaxy"));
  REQUIRE(mesh);
  CHECK((*mesh)->size() == 32);
  CHECK((*mesh)->resident_bytes() == 0);
  ChipTensors in(**mesh, "x", same_shape(**mesh, {32, 32}), DType::bf16, 0);
  std::vector<float> v(1024, 1.0f);
  for (int i = 0; i < 32; ++i) REQUIRE((*mesh)->chip(i).write(in[static_cast<size_t>(i)], v));
  // One DRAM chunk (1 MiB) per chip, however large the chips' memories are.
  CHECK((*mesh)->resident_bytes() == 32ull << 20);
}
