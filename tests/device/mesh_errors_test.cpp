// Bad input to the mesh collectives and mesh_shard: clear errors naming the collective and the
// chip coordinates, nothing modified, and the mesh usable afterwards.
#include <doctest/doctest.h>

#include "mesh_fixture.hpp"
#include "meshplan/device/emulated_mesh.hpp"

using namespace meshplan;
using namespace meshplan::device;
using namespace meshplan::test;

namespace {

constexpr uint64_t kIn = 0;
constexpr uint64_t kOut = 64ull << 20;

std::unique_ptr<Mesh> t3k() {
  auto mesh = EmulatedMesh::create(*builtin_mesh("t3k"));
  REQUIRE(mesh);
  return std::move(*mesh);
}

bool has(const Error& e, const std::string& text) {
  bool found = e.message.find(text) != std::string::npos;
  if (!found) MESSAGE("message: " << e.message << " lacks: " << text);
  return found;
}

/// The mesh still runs a correct all_gather along axis 1.
void check_usable(Mesh& mesh) {
  ChipTensors in(mesh, "ok_in", same_shape(mesh, {4, 6}), DType::f32, 256ull << 20);
  ChipTensors out(mesh, "ok_out", same_shape(mesh, {4, 6 * mesh.cols()}), DType::f32, 320ull << 20);
  std::vector<float> v(24, 1.5f);
  for (int i = 0; i < mesh.size(); ++i) REQUIRE(mesh.chip(i).write(in[static_cast<size_t>(i)], v));
  REQUIRE(mesh.all_gather(in.all(), out.all(), 1, 1));
  std::vector<float> got(static_cast<size_t>(24 * mesh.cols()));
  REQUIRE(mesh.chip(mesh.size() - 1).read(out[static_cast<size_t>(mesh.size() - 1)], got));
  CHECK(got == std::vector<float>(got.size(), 1.5f));
}

}  // namespace

TEST_CASE("cluster_axis out of range and wrong placement counts") {
  auto mesh = t3k();
  ChipTensors in(*mesh, "x", same_shape(*mesh, {8, 8}), DType::f32, kIn);
  ChipTensors out(*mesh, "y", same_shape(*mesh, {8, 8}), DType::f32, kOut);
  for (int axis : {2, -2}) {  // -1 is the whole mesh
    auto r = mesh->all_reduce(in.all(), out.all(), axis);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::invalid_argument);
    CHECK(has(r.error(), str("cluster_axis ", axis, " is not 0, 1 or -1")));
  }
  auto few = mesh->all_gather(in.all().first(3), out.all(), 0, 0);
  REQUIRE_FALSE(few);
  CHECK(has(few.error(), "3 input placements for a 2x4 mesh of 8 chips"));
  auto dim = mesh->all_gather(in.all(), out.all(), 2, 0);
  REQUIRE_FALSE(dim);
  CHECK(has(dim.error(), "dim 2 is out of range for the rank-2 operand [8x8]"));
  check_usable(*mesh);
}

TEST_CASE("wrong shapes per chip name the chips") {
  auto mesh = t3k();
  auto shapes = same_shape(*mesh, {8, 8});
  shapes[6] = {8, 9};  // chip (1,2)
  ChipTensors in(*mesh, "x", shapes, DType::f32, kIn);
  ChipTensors out(*mesh, "y", same_shape(*mesh, {8, 32}), DType::f32, kOut);
  auto r = mesh->all_gather(in.all(), out.all(), 1, 1);
  REQUIRE_FALSE(r);
  CHECK(has(r.error(), "all_gather(dim=1, cluster_axis=1)"));
  CHECK(has(r.error(), "chip (1,2): input 'x' has shape [8,9], chip (1,0) has [8,8]"));

  ChipTensors good(*mesh, "g", same_shape(*mesh, {8, 8}), DType::f32, 128ull << 20);
  auto out_shapes = same_shape(*mesh, {16, 8});
  out_shapes[3] = {8, 16};  // chip (0,3)
  ChipTensors bad_out(*mesh, "z", out_shapes, DType::f32, 192ull << 20);
  auto o = mesh->all_gather(good.all(), bad_out.all(), 0, 0);
  REQUIRE_FALSE(o);
  CHECK(has(o.error(),
            "chip (0,3): op 'all_gather(dim=0, cluster_axis=0)' (all_gather): result "
            "'z' has shape [8x16], its operands give [16x8]"));

  ChipTensors bf(*mesh, "b", same_shape(*mesh, {16, 8}), DType::bf16, 224ull << 20);
  auto d = mesh->all_gather(good.all(), bf.all(), 0, 0);
  REQUIRE_FALSE(d);
  CHECK(has(d.error(), "collectives do not cast"));

  ChipTensors odd(*mesh, "o", same_shape(*mesh, {6, 8}), DType::f32, 240ull << 20);
  ChipTensors part(*mesh, "p", same_shape(*mesh, {1, 8}), DType::f32, 248ull << 20);
  auto rs = mesh->reduce_scatter(odd.all(), part.all(), 0, 1);
  REQUIRE_FALSE(rs);
  CHECK(has(rs.error(), "dim 0 of [6x8] (size 6) does not split into 4 pieces"));
  auto a2a = mesh->all_to_all(odd.all(), odd.all(), 0, 1, 1);
  REQUIRE_FALSE(a2a);
  CHECK(has(a2a.error(), "split_dim 0 of [6x8] (size 6) does not split into 4 pieces"));
  check_usable(*mesh);
}

TEST_CASE("a tensor missing on one chip is named and changes nothing") {
  auto mesh = t3k();
  ChipTensors in(*mesh, "x", same_shape(*mesh, {8, 8}), DType::f32, kIn, /*allocate=*/false);
  for (int i = 0; i < mesh->size(); ++i)
    if (i != 5) REQUIRE(mesh->chip(i).allocate(in[static_cast<size_t>(i)]));  // (1,1) lacks it
  ChipTensors out(*mesh, "y", same_shape(*mesh, {16, 8}), DType::f32, kOut);
  std::vector<float> before(128, 7.0f);
  for (int i = 0; i < mesh->size(); ++i)
    REQUIRE(mesh->chip(i).write(out[static_cast<size_t>(i)], before));
  auto r = mesh->all_gather(in.all(), out.all(), 0, 0);
  REQUIRE_FALSE(r);
  CHECK(has(r.error(), "chip (1,1)"));
  CHECK(has(r.error(), "reading tensor 'x'"));
  // Inputs are all read before any output is written: the outputs are untouched.
  for (int i = 0; i < mesh->size(); ++i) {
    std::vector<float> now(128);
    REQUIRE(mesh->chip(i).read(out[static_cast<size_t>(i)], now));
    CHECK(now == before);
  }
  CHECK(mesh->now_ns() == 0);

  ChipTensors missing_out(*mesh, "m", same_shape(*mesh, {8, 8}), DType::f32, 128ull << 20, false);
  ChipTensors full(*mesh, "f", same_shape(*mesh, {8, 8}), DType::f32, 192ull << 20);
  auto w = mesh->all_reduce(full.all(), missing_out.all(), 1);
  REQUIRE_FALSE(w);
  CHECK(has(w.error(), "chip (0,0)"));
  CHECK(has(w.error(), "writing tensor 'm'"));
  check_usable(*mesh);
}

TEST_CASE("collective_permute rejects bad pairs") {
  auto mesh = t3k();
  ChipTensors in(*mesh, "x", same_shape(*mesh, {4, 4}), DType::f32, kIn);
  ChipTensors out(*mesh, "y", same_shape(*mesh, {4, 4}), DType::f32, kOut);
  using P = std::pair<MeshCoord, MeshCoord>;
  std::vector<P> outside{{MeshCoord{0, 0}, MeshCoord{2, 0}}};
  auto a = mesh->collective_permute(in.all(), out.all(), outside);
  REQUIRE_FALSE(a);
  CHECK(has(a.error(), "chip (2,0) is outside the 2x4 mesh"));
  std::vector<P> twice{{MeshCoord{0, 0}, MeshCoord{1, 1}}, {MeshCoord{0, 1}, MeshCoord{1, 1}}};
  auto b = mesh->collective_permute(in.all(), out.all(), twice);
  REQUIRE_FALSE(b);
  CHECK(has(b.error(), "chip (1,1) is the target of two pairs"));
  std::vector<P> source{{MeshCoord{0, 0}, MeshCoord{1, 1}}, {MeshCoord{0, 0}, MeshCoord{1, 2}}};
  auto c = mesh->collective_permute(in.all(), out.all(), source);
  REQUIRE_FALSE(c);
  CHECK(has(c.error(), "chip (0,0) is the source of two pairs"));
  check_usable(*mesh);
}

TEST_CASE("mesh_shard errors") {
  auto mesh = t3k();
  std::vector<int64_t> full{6, 8};
  std::vector<float> host(48, 1.0f);
  ChipTensors t(*mesh, "s", same_shape(*mesh, {3, 2}), DType::f32, kIn);
  auto odd =
      mesh->full_to_shard(host, full, MeshShardSpec{MeshShardType::devices, {1, 0}}, t.all());
  REQUIRE_FALSE(odd);
  CHECK(has(odd.error(), "dim 0 of [6,8] (size 6) does not split evenly into 4 pieces"));
  auto dims =
      mesh->full_to_shard(host, full, MeshShardSpec{MeshShardType::devices, {2, -1}}, t.all());
  REQUIRE_FALSE(dims);
  CHECK(has(dims.error(), "shard_dims[0] = 2 is not -1 or a dim of the rank-2 tensor"));
  auto none =
      mesh->full_to_shard(host, full, MeshShardSpec{MeshShardType::devices, {-1, -1}}, t.all());
  REQUIRE_FALSE(none);
  CHECK(has(none.error(), "use replicate"));
  CHECK(mesh->full_to_shard(host, full, MeshShardSpec{MeshShardType::devices, {0, 1}}, t.all()));
  MeshShardSpec explicit_shape{MeshShardType::devices, {0, 1}, {2, 4}};
  CHECK(mesh->full_to_shard(host, full, explicit_shape, t.all()));
  explicit_shape.shard_shape = {4, 2};
  auto disagree = mesh->full_to_shard(host, full, explicit_shape, t.all());
  REQUIRE_FALSE(disagree);
  CHECK(has(disagree.error(),
            "shard_shape [4,2] says 4 pieces along dim 0, shard_dims on the 2x4 mesh give 2"));
  std::vector<float> small(47);
  auto size =
      mesh->full_to_shard(small, full, MeshShardSpec{MeshShardType::devices, {0, 1}}, t.all());
  REQUIRE_FALSE(size);
  CHECK(has(size.error(), "host buffer holds 47 values, [6,8] needs 48"));
  ChipTensors wrong(*mesh, "w", same_shape(*mesh, {6, 4}), DType::f32, kOut);
  auto w =
      mesh->full_to_shard(host, full, MeshShardSpec{MeshShardType::devices, {0, 1}}, wrong.all());
  REQUIRE_FALSE(w);
  CHECK(has(w.error(), "chip (0,0): output 'w' has shape [6,4], the shard has [3,2]"));
  check_usable(*mesh);
}
