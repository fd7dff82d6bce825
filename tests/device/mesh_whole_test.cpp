// cluster_axis = -1 (all chips as one group in chip-index order) and all_slice on the emulated
// mesh, against host references written from the definitions, on 1x2, 2x4 and 8x4; and the
// null backend.
#include <doctest/doctest.h>

#include "mesh_fixture.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/collective_timing.hpp"

using namespace meshplan;
using namespace meshplan::device;
using test::ChipTensors;

namespace {

std::unique_ptr<EmulatedMesh> make(std::string_view name) {
  auto desc = builtin_mesh(name);
  REQUIRE(desc);
  auto mesh = EmulatedMesh::create(*desc);
  REQUIRE(mesh);
  return std::move(*mesh);
}

std::vector<std::vector<float>> fill(Mesh& mesh, const ChipTensors& t, uint32_t salt) {
  std::vector<std::vector<float>> all;
  for (int i = 0; i < mesh.size(); ++i) {
    all.push_back(test::chip_values(t.shape(static_cast<size_t>(i)), salt * 97 + i));
    REQUIRE(mesh.chip(i).write(t[static_cast<size_t>(i)], all.back()));
  }
  return all;
}

std::vector<float> read(Mesh& mesh, const ChipTensors& t, int i) {
  std::vector<float> v(static_cast<size_t>(volume(t.shape(static_cast<size_t>(i)))));
  REQUIRE(mesh.chip(i).read(t[static_cast<size_t>(i)], v));
  return v;
}

}  // namespace

TEST_CASE("cluster_axis -1 gathers and reduces over every chip in chip-index order") {
  for (const char* name : {"n300", "t3k", "galaxy"}) {
    INFO(std::string(name));
    auto mesh = make(name);
    int n = mesh->size();
    std::vector<int64_t> shape{2, 32};
    ChipTensors in(*mesh, "x", test::same_shape(*mesh, shape), DType::f32, 0);
    ChipTensors gathered(*mesh, "g", test::same_shape(*mesh, {2, 32 * n}), DType::f32, 1 << 20);
    ChipTensors summed(*mesh, "s", test::same_shape(*mesh, shape), DType::f32, 2 << 20);
    auto x = fill(*mesh, in, 3);
    auto g = mesh->all_gather(in.all(), gathered.all(), -1, -1);
    REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
    CHECK(g->groups == 1);
    // Time: one line of n chips over the mesh's links, T = the gathered tensor's tiled bytes.
    CollectiveTiming want = estimate_collective(
        mesh->descriptor(), CollectiveKind::all_gather, static_cast<uint32_t>(n),
        static_cast<uint64_t>(page_count(gathered[0])) * gathered[0].page_size);
    CHECK(g->timing.duration_ns == want.duration_ns);
    auto s = mesh->all_reduce(in.all(), summed.all(), -1);
    REQUIRE(s);
    for (int c = 0; c < n; ++c) {
      auto got = read(*mesh, gathered, c);
      bool ok = true;
      for (int64_t r = 0; r < 2; ++r)
        for (int p = 0; p < n; ++p)
          for (int64_t k = 0; k < 32; ++k)
            ok = ok && got[static_cast<size_t>(r * 32 * n + p * 32 + k)] ==
                           x[static_cast<size_t>(p)][static_cast<size_t>(r * 32 + k)];
      CHECK(ok);
      auto sum = read(*mesh, summed, c);
      double err = 0;
      for (size_t k = 0; k < sum.size(); ++k) {
        double e = 0;
        for (int p = 0; p < n; ++p) e += x[static_cast<size_t>(p)][k];
        err = std::max(err, std::abs(e - sum[k]));
      }
      CHECK(err < 1e-3);
    }
  }
}

TEST_CASE("all_slice keeps slice i on the chip at group position i, along each cluster axis") {
  for (const char* name : {"n300", "t3k", "galaxy"}) {
    auto mesh = make(name);
    for (int axis : {0, 1, -1}) {
      INFO(std::string(name), " axis ", axis);
      auto groups = collective_groups(mesh->rows(), mesh->cols(), axis);
      int n = static_cast<int>(groups[0].size());
      ChipTensors in(*mesh, "x", test::same_shape(*mesh, {4, 8 * n}), DType::f32, 0);
      ChipTensors out(*mesh, "y", test::same_shape(*mesh, {4, 8}), DType::f32, 1 << 20);
      auto x = fill(*mesh, in, 5 + static_cast<uint32_t>(axis + 1));
      uint64_t before = mesh->now_ns();
      auto r = mesh->all_slice(in.all(), out.all(), -1, axis);
      REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
      CHECK(mesh->now_ns() > before);  // a local copy takes time
      for (const auto& group : groups)
        for (int p = 0; p < n; ++p) {
          int c = group[static_cast<size_t>(p)];
          auto got = read(*mesh, out, c);
          bool ok = true;
          for (int64_t row = 0; row < 4; ++row)
            for (int64_t k = 0; k < 8; ++k)
              ok =
                  ok && got[static_cast<size_t>(row * 8 + k)] ==
                            x[static_cast<size_t>(c)][static_cast<size_t>(row * 8 * n + p * 8 + k)];
          CHECK(ok);
        }
      mesh->reset();
    }
    // A dim that does not split is an error naming it; the mesh stays usable.
    ChipTensors in(*mesh, "x", test::same_shape(*mesh, {4, 7}), DType::f32, 0);
    ChipTensors out(*mesh, "y", test::same_shape(*mesh, {4, 7}), DType::f32, 1 << 20);
    auto bad = mesh->all_slice(in.all(), out.all(), 1, -1);
    REQUIRE(!bad);
    CHECK(bad.error().message.find("does not split") != std::string::npos);
    mesh->reset();
  }
}

TEST_CASE("run_collective_op dispatches configs; the null mesh implements nothing") {
  auto mesh = make("t3k");
  ChipTensors in(*mesh, "x", test::same_shape(*mesh, {2, 16}), DType::f32, 0);
  ChipTensors out(*mesh, "y", test::same_shape(*mesh, {2, 16}), DType::f32, 1 << 20);
  auto x = fill(*mesh, in, 11);
  OpConfig c;
  c.mesh_rows = 2;
  c.mesh_cols = 4;
  c.pairs = {0, 7, 7, 0};
  auto r = run_collective_op(*mesh, OpKind::collective_permute, c, in.all(), out.all());
  REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
  CHECK(read(*mesh, out, 7) == x[0]);
  CHECK(read(*mesh, out, 0) == x[7]);
  OpConfig wrong = c;
  wrong.mesh_cols = 2;
  CHECK(!run_collective_op(*mesh, OpKind::collective_permute, wrong, in.all(), out.all()));
  CHECK(!run_collective_op(*mesh, OpKind::relu, c, in.all(), out.all()));

  NullMesh null_mesh(mesh->descriptor());
  CHECK(null_mesh.size() == 8);
  auto g = null_mesh.all_gather(in.all(), out.all(), 0, 1);
  REQUIRE(!g);
  CHECK(g.error().code == ErrorCode::unimplemented);
  CHECK(!null_mesh.chip(3).allocate(in[0]));
}
