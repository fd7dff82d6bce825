// Every collective on the emulated mesh against a host reference written from its definition,
// on 1x2, 2x4 and 8x4 meshes, both cluster axes, ragged (non-tile-multiple) shapes.
#include <doctest/doctest.h>

#include "mesh_fixture.hpp"
#include "meshplan/device/emulated_mesh.hpp"

using namespace meshplan;
using namespace meshplan::device;
using namespace meshplan::test;

namespace {

constexpr uint64_t kIn = 0;
constexpr uint64_t kOut = 64ull << 20;

std::unique_ptr<Mesh> make_mesh(std::string_view name) {
  auto desc = builtin_mesh(name);
  REQUIRE(desc);
  auto mesh = EmulatedMesh::create(*desc);
  REQUIRE(mesh);
  return std::move(*mesh);
}

/// Writes distinct values into every chip's input and returns them by chip index.
std::vector<std::vector<float>> fill(Mesh& mesh, const ChipTensors& t, uint32_t salt) {
  std::vector<std::vector<float>> v;
  for (int i = 0; i < mesh.size(); ++i) {
    v.push_back(
        chip_values(t.shape(static_cast<size_t>(i)), salt * 1000 + static_cast<uint32_t>(i)));
    REQUIRE(mesh.chip(i).write(t[static_cast<size_t>(i)], v.back()));
  }
  return v;
}

std::vector<float> read(Mesh& mesh, const ChipTensors& t, int i) {
  std::vector<float> v(static_cast<size_t>(volume(t.shape(static_cast<size_t>(i)))));
  REQUIRE(mesh.chip(i).read(t[static_cast<size_t>(i)], v));
  return v;
}

/// Chip index of position p along `axis` in the group of chip `i`.
int member(const Mesh& m, int i, int axis, int p) {
  MeshCoord c = m.descriptor().coord(i);
  return axis == 0 ? p * m.cols() + c.col : c.row * m.cols() + p;
}
int position(const Mesh& m, int i, int axis) {
  MeshCoord c = m.descriptor().coord(i);
  return axis == 0 ? c.row : c.col;
}

const char* const kMeshes[] = {"n300", "t3k", "galaxy"};

}  // namespace

TEST_CASE("all_gather matches the reference on every mesh and axis") {
  for (const char* name : kMeshes) {
    auto mesh = make_mesh(name);
    for (int axis : {0, 1})
      for (int dim : {0, 1, -1}) {
        std::string mesh_name = name;
        CAPTURE(mesh_name);
        CAPTURE(axis);
        CAPTURE(dim);
        mesh->reset();
        std::vector<int64_t> shape{3, 37, 45};
        int d = dim < 0 ? dim + 3 : dim;
        int n = mesh->descriptor().axis_size(axis);
        std::vector<int64_t> out_shape = shape;
        out_shape[static_cast<size_t>(d)] *= n;
        ChipTensors in(*mesh, "x", same_shape(*mesh, shape), DType::f32, kIn);
        ChipTensors out(*mesh, "y", same_shape(*mesh, out_shape), DType::f32, kOut);
        auto values = fill(*mesh, in, 1);
        auto run = mesh->all_gather(in.all(), out.all(), dim, axis);
        if (n == 1) {  // n300's columns: tt-metal's all_gather refuses a group of one chip
          REQUIRE_FALSE(run);
          CHECK(run.error().message.find("\"all_gather op will only work for num_devices > 1\"") !=
                std::string::npos);
          continue;
        }
        REQUIRE(run);
        CHECK(run->groups == static_cast<uint32_t>(mesh->size() / n));
        for (int i = 0; i < mesh->size(); ++i) {
          auto got = read(*mesh, out, i);
          bool same = true;
          for (int64_t f = 0; f < volume(out_shape) && same; ++f) {
            auto m = unravel(f, out_shape);
            int p = static_cast<int>(m[static_cast<size_t>(d)] / shape[static_cast<size_t>(d)]);
            m[static_cast<size_t>(d)] %= shape[static_cast<size_t>(d)];
            same = got[static_cast<size_t>(f)] ==
                   values[static_cast<size_t>(member(*mesh, i, axis, p))]
                         [static_cast<size_t>(ravel(m, shape))];
          }
          CHECK(same);
        }
      }
  }
}

TEST_CASE("reduce_scatter and all_reduce sum in coordinate order on every mesh and axis") {
  for (const char* name : kMeshes) {
    auto mesh = make_mesh(name);
    for (int axis : {0, 1}) {
      std::string mesh_name = name;
      CAPTURE(mesh_name);
      CAPTURE(axis);
      int n = mesh->descriptor().axis_size(axis);
      // dim 1 (8 tiles of rows: tt-metal scatters the last two dims in whole tiles) splits over
      // 1, 2, 4 and 8 chips.
      std::vector<int64_t> shape{2, 256, 45};
      std::vector<int64_t> part = shape;
      part[1] /= n;
      mesh->reset();
      ChipTensors in(*mesh, "x", same_shape(*mesh, shape), DType::f32, kIn);
      ChipTensors rs(*mesh, "rs", same_shape(*mesh, part), DType::f32, kOut);
      ChipTensors ar(*mesh, "ar", same_shape(*mesh, shape), DType::f32, 2 * kOut);
      auto values = fill(*mesh, in, 2);
      REQUIRE(mesh->reduce_scatter(in.all(), rs.all(), 1, axis));
      REQUIRE(mesh->all_reduce(in.all(), ar.all(), axis));
      for (int i = 0; i < mesh->size(); ++i) {
        auto sum_at = [&](const std::vector<int64_t>& m) {
          float s = 0.0f;
          for (int p = 0; p < n; ++p)
            s += values[static_cast<size_t>(member(*mesh, i, axis, p))]
                       [static_cast<size_t>(ravel(m, shape))];
          return s;
        };
        auto got_rs = read(*mesh, rs, i);
        auto got_ar = read(*mesh, ar, i);
        double err = 0;
        for (int64_t f = 0; f < volume(part); ++f) {
          auto m = unravel(f, part);
          m[1] += position(*mesh, i, axis) * part[1];
          err = std::max(
              err, static_cast<double>(std::fabs(got_rs[static_cast<size_t>(f)] - sum_at(m))));
        }
        for (int64_t f = 0; f < volume(shape); ++f)
          err = std::max(err, static_cast<double>(std::fabs(got_ar[static_cast<size_t>(f)] -
                                                            sum_at(unravel(f, shape)))));
        CHECK(err < 1e-5);
      }
    }
  }
}

TEST_CASE("reduce_scatter max and min") {
  auto mesh = make_mesh("t3k");
  std::vector<int64_t> shape{128, 33};  // 4 tiles of rows, one per chip of a row
  ChipTensors in(*mesh, "x", same_shape(*mesh, shape), DType::f32, kIn);
  ChipTensors out(*mesh, "y", same_shape(*mesh, {32, 33}), DType::f32, kOut);
  auto values = fill(*mesh, in, 3);
  for (ReduceOp op : {ReduceOp::max, ReduceOp::min}) {
    REQUIRE(mesh->reduce_scatter(in.all(), out.all(), 0, 1, op));
    for (int i = 0; i < mesh->size(); ++i) {
      auto got = read(*mesh, out, i);
      for (int64_t f = 0; f < 32 * 33; ++f) {
        int64_t src = position(*mesh, i, 1) * 32 * 33 + f;
        float want = values[static_cast<size_t>(member(*mesh, i, 1, 0))][static_cast<size_t>(src)];
        for (int p = 1; p < 4; ++p) {
          float x = values[static_cast<size_t>(member(*mesh, i, 1, p))][static_cast<size_t>(src)];
          want = op == ReduceOp::max ? std::max(want, x) : std::min(want, x);
        }
        REQUIRE(got[static_cast<size_t>(f)] == want);
      }
    }
  }
}

TEST_CASE("all_to_all matches the reference on every mesh and axis") {
  for (const char* name : kMeshes) {
    auto mesh = make_mesh(name);
    for (int axis : {0, 1})
      for (auto [sd, cd] : {std::pair{0, 2}, std::pair{2, 0}, std::pair{0, 0}}) {
        std::string mesh_name = name;
        CAPTURE(mesh_name);
        CAPTURE(axis);
        CAPTURE(sd);
        CAPTURE(cd);
        int n = mesh->descriptor().axis_size(axis);
        // Dims 0 and 2 split over up to 8 chips; dim 2 (the last) keeps whole tiles, as
        // tt-metal's all_to_all wants (docs/hardware-rules.md).
        std::vector<int64_t> shape{8, 5, 256};
        std::vector<int64_t> piece = shape;
        piece[static_cast<size_t>(sd)] /= n;
        std::vector<int64_t> out_shape = piece;
        out_shape[static_cast<size_t>(cd)] *= n;
        mesh->reset();
        ChipTensors in(*mesh, "x", same_shape(*mesh, shape), DType::f32, kIn);
        ChipTensors out(*mesh, "y", same_shape(*mesh, out_shape), DType::f32, kOut);
        auto values = fill(*mesh, in, 4);
        auto run = mesh->all_to_all(in.all(), out.all(), sd, cd, axis);
        if (n == 1) {
          // n300's axis 0 groups one chip, which tt-metal's all_to_all refuses.
          REQUIRE_FALSE(run);
          CHECK(run.error().message.find("requires more than 1 device") != std::string::npos);
          continue;
        }
        REQUIRE(run);
        for (int j = 0; j < mesh->size(); ++j) {
          auto got = read(*mesh, out, j);
          bool same = true;
          for (int64_t f = 0; f < volume(out_shape) && same; ++f) {
            auto m = unravel(f, out_shape);
            int i = static_cast<int>(m[static_cast<size_t>(cd)] / piece[static_cast<size_t>(cd)]);
            m[static_cast<size_t>(cd)] %= piece[static_cast<size_t>(cd)];
            m[static_cast<size_t>(sd)] += position(*mesh, j, axis) * piece[static_cast<size_t>(sd)];
            same = got[static_cast<size_t>(f)] ==
                   values[static_cast<size_t>(member(*mesh, j, axis, i))]
                         [static_cast<size_t>(ravel(m, shape))];
          }
          CHECK(same);
        }
      }
  }
}

TEST_CASE("collective_permute moves each source to its target and zeroes the rest") {
  for (const char* name : kMeshes) {
    std::string mesh_name = name;
    CAPTURE(mesh_name);
    auto mesh = make_mesh(name);
    std::vector<int64_t> shape{19, 70};
    ChipTensors in(*mesh, "x", same_shape(*mesh, shape), DType::bf16, kIn);
    ChipTensors out(*mesh, "y", same_shape(*mesh, shape), DType::bf16, kOut);
    auto values = fill(*mesh, in, 5);
    // Shift every row one chip right (cyclic), and leave the last row out: its chips get zeros.
    std::vector<std::pair<MeshCoord, MeshCoord>> pairs;
    for (int r = 0; r + 1 < mesh->rows() || (mesh->rows() == 1 && r == 0); ++r)
      for (int c = 0; c < mesh->cols(); ++c)
        pairs.push_back(
            {MeshCoord{static_cast<uint16_t>(r), static_cast<uint16_t>(c)},
             MeshCoord{static_cast<uint16_t>(r), static_cast<uint16_t>((c + 1) % mesh->cols())}});
    auto run = mesh->collective_permute(in.all(), out.all(), pairs);
    REQUIRE(run);
    CHECK(run->bytes_moved > 0);
    for (int i = 0; i < mesh->size(); ++i) {
      MeshCoord c = mesh->descriptor().coord(i);
      bool targeted = mesh->rows() == 1 || c.row + 1 < mesh->rows();
      auto got = read(*mesh, out, i);
      if (targeted) {
        int src = c.row * mesh->cols() + (c.col + mesh->cols() - 1) % mesh->cols();
        CHECK(got == values[static_cast<size_t>(src)]);
      } else {
        CHECK(got == std::vector<float>(got.size(), 0.0f));
      }
    }
  }
}

TEST_CASE("a 1x1 mesh and a bf16 all_reduce") {
  auto one = EmulatedMesh::create(single_chip_mesh(blackhole_p150()));
  REQUIRE(one);
  std::vector<int64_t> shape{33, 65};
  ChipTensors in(**one, "x", same_shape(**one, shape), DType::bf16, kIn);
  ChipTensors out(**one, "y", same_shape(**one, shape), DType::bf16, kOut);
  auto values = fill(**one, in, 6);
  // A collective on one chip is refused as the planner refuses it (tt-metal's all_gather: "only
  // work for num_devices > 1"); the output is untouched.
  std::vector<float> before(values[0].size(), 3.0f);
  REQUIRE((*one)->chip(0).write(out[0], before));
  auto run = (*one)->all_gather(in.all(), out.all(), 0, 1);
  REQUIRE_FALSE(run);
  CHECK(run.error().message ==
        "chip (0,0): op 'all_gather(dim=0, cluster_axis=1)' (all_gather): all_gather is a mesh op "
        "but the mesh is 1x1 (a single chip)");
  CHECK(read(**one, out, 0) == before);

  auto mesh = make_mesh("n300");
  ChipTensors a(*mesh, "x", same_shape(*mesh, shape), DType::bf16, kIn);
  ChipTensors b(*mesh, "y", same_shape(*mesh, shape), DType::bf16, kOut);
  auto v = fill(*mesh, a, 7);
  REQUIRE(mesh->all_reduce(a.all(), b.all(), 1));
  for (int i = 0; i < 2; ++i) {
    auto got = read(*mesh, b, i);
    for (size_t k = 0; k < got.size(); ++k) REQUIRE(got[k] == round_bf16(v[0][k] + v[1][k]));
  }
}
