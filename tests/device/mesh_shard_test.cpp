// mesh_shard FullToShard / ShardToFull: each chip holds exactly its block (checked by index
// arithmetic), and ShardToFull gives the host tensor back; identity and replicate too.
#include <doctest/doctest.h>

#include "mesh_fixture.hpp"
#include "meshplan/device/emulated_mesh.hpp"

using namespace meshplan;
using namespace meshplan::device;
using namespace meshplan::test;

TEST_CASE("devices sharding puts each block on its chip and reassembles") {
  for (const char* name : {"n300", "t3k", "galaxy"}) {
    auto mesh = std::move(*EmulatedMesh::create(*builtin_mesh(name)));
    int R = mesh->rows(), C = mesh->cols();
    std::vector<int64_t> full{16, 3, 64};  // dims 0 and 2 split over 1, 2, 4, 8 and 32
    std::vector<float> host = chip_values(full, 11);
    for (std::array<int32_t, 2> dims :
         {std::array<int32_t, 2>{0, 2}, {2, 0}, {0, -1}, {-1, 2}, {2, 2}}) {
      std::string mesh_name = name;
      CAPTURE(mesh_name);
      CAPTURE(dims[0]);
      CAPTURE(dims[1]);
      MeshShardSpec spec{MeshShardType::devices, dims};
      auto local = mesh_shard_local_shape(mesh->descriptor(), full, spec);
      REQUIRE(local);
      mesh->reset();
      ChipTensors t(*mesh, "w", same_shape(*mesh, *local), DType::f32, 0);
      REQUIRE(mesh->full_to_shard(host, full, spec, t.all()));
      for (int i = 0; i < mesh->size(); ++i) {
        MeshCoord c = mesh->descriptor().coord(i);
        std::vector<float> got(static_cast<size_t>(volume(*local)));
        REQUIRE(mesh->chip(i).read(t[static_cast<size_t>(i)], got));
        bool same = true;
        for (int64_t f = 0; f < volume(*local) && same; ++f) {
          auto m = unravel(f, *local);
          for (int d = 0; d < 3; ++d) {
            int64_t piece = 0;
            if (dims[0] == d && dims[1] == d)
              piece = c.row * C + c.col;
            else if (dims[0] == d)
              piece = c.row;
            else if (dims[1] == d)
              piece = c.col;
            m[static_cast<size_t>(d)] += piece * (*local)[static_cast<size_t>(d)];
          }
          same = got[static_cast<size_t>(f)] == host[static_cast<size_t>(ravel(m, full))];
        }
        CHECK(same);
      }
      std::vector<float> back(host.size(), -99.0f);
      REQUIRE(mesh->shard_to_full(t.all(), spec, full, back));
      CHECK(back == host);
      (void)R;
    }
  }
}

TEST_CASE("replicate and identity") {
  auto mesh = std::move(*EmulatedMesh::create(*builtin_mesh("t3k")));
  std::vector<int64_t> full{5, 33};
  std::vector<float> host = chip_values(full, 12);
  ChipTensors t(*mesh, "r", same_shape(*mesh, full), DType::bf16, 0);
  MeshShardSpec rep{MeshShardType::replicate, {-1, -1}};
  REQUIRE(mesh->full_to_shard(host, full, rep, t.all()));
  for (int i = 0; i < mesh->size(); ++i) {
    std::vector<float> got(host.size());
    REQUIRE(mesh->chip(i).read(t[static_cast<size_t>(i)], got));
    CHECK(got == host);
  }
  std::vector<float> back(host.size());
  REQUIRE(mesh->shard_to_full(t.all(), rep, full, back));
  CHECK(back == host);

  // Identity: the host holds every chip's own tensor, back to back in chip order.
  std::vector<float> all = chip_values({8, 5, 33}, 13);
  MeshShardSpec id{MeshShardType::identity, {-1, -1}};
  REQUIRE(mesh->full_to_shard(all, full, id, t.all()));
  for (int i = 0; i < mesh->size(); ++i) {
    std::vector<float> got(host.size());
    REQUIRE(mesh->chip(i).read(t[static_cast<size_t>(i)], got));
    CHECK(
        std::equal(got.begin(), got.end(), all.begin() + i * static_cast<ptrdiff_t>(host.size())));
  }
  std::vector<float> again(all.size());
  REQUIRE(mesh->shard_to_full(t.all(), id, full, again));
  CHECK(again == all);
}
