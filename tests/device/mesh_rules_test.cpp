// The OpModel/mesh contract for collectives, as layout_sweep.hpp's for single-chip ops: a
// collective OpModel::validate refuses, a launch on an emulated mesh (run_collective_op, the
// runtime's path) refuses with the same reason, after the chip; one it accepts runs and matches
// values written out here from the op's definition.
#include <doctest/doctest.h>

#include <deque>
#include <functional>

#include "mesh_fixture.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/op_model.hpp"

using namespace meshplan;
using namespace meshplan::device;
using namespace meshplan::test;

namespace {

/// Chip i's input holds i * 1000 + its flat index: exact in f32 and bf16-free (f32 tensors).
float input_value(int chip, int64_t flat) {
  return static_cast<float>(chip * 1000 + flat);
}

/// The expected output of chip `chip` at flat index `flat`.
using Expected = std::function<float(int chip, int64_t flat)>;

struct MeshRules {
  std::unique_ptr<Mesh> mesh;
  OpModel model;
  int accepted = 0, rejected = 0;

  explicit MeshRules(std::string_view name) : mesh(make(name)), model(mesh->descriptor()) {}

  static std::unique_ptr<Mesh> make(std::string_view name) {
    auto desc = builtin_mesh(name);
    REQUIRE(desc);
    auto m = EmulatedMesh::create(*desc);
    REQUIRE(m);
    return std::move(*m);
  }

  /// `label` is the mesh's name for the call (its attributes), `why` a part of tt-metal's reason
  /// (empty: validate accepts). Every chip holds `in` and `out` placements of these shapes.
  void check(OpKind kind, OpConfig config, const TensorPlacement& in_t,
             const TensorPlacement& out_t, const std::string& label, const std::string& why,
             const Expected& expected) {
    CAPTURE(label);
    config.mesh_rows = static_cast<uint16_t>(mesh->rows());
    config.mesh_cols = static_cast<uint16_t>(mesh->cols());
    const TensorPlacement* ins[] = {&in_t};
    const TensorPlacement* outs[] = {&out_t};
    OpValidation v = model.validate(OpLaunch{kind, label, ins, outs, config});
    if (why.empty())
      CHECK_MESSAGE(v.ok, v.reason);
    else
      CHECK_MESSAGE(v.reason.find(why) != std::string::npos, v.reason);
    mesh->reset();
    std::vector<TensorPlacement> in(static_cast<size_t>(mesh->size()), in_t),
        out(static_cast<size_t>(mesh->size()), out_t);
    const ChipDesc& chip = mesh->descriptor().chip;
    for (auto& t : out)  // DRAM above the inputs, L1 from the usable top down
      t.address = t.buffer == BufferType::dram
                      ? 256ull << 20
                      : (chip.l1_usable_top() - AddressMap(t, chip).bytes_per_bank()) / 64 * 64;
    for (int i = 0; i < mesh->size(); ++i) {
      for (const TensorPlacement* t : {&in[static_cast<size_t>(i)], &out[static_cast<size_t>(i)]}) {
        auto a = mesh->chip(i).allocate(*t);
        if (!a) FAIL(a.error().message);
      }
      std::vector<float> x(static_cast<size_t>(volume(in_t.shape)));
      for (size_t k = 0; k < x.size(); ++k) x[k] = input_value(i, static_cast<int64_t>(k));
      REQUIRE(mesh->chip(i).write(in[static_cast<size_t>(i)], x));
    }
    auto run = run_collective_op(*mesh, kind, config, in, out);
    if (!v.ok) {
      ++rejected;
      REQUIRE_FALSE(run);
      CHECK(run.error().message == "chip (0,0): " + v.reason);
      return;
    }
    ++accepted;
    if (!run) FAIL_CHECK(run.error().message);
    REQUIRE(run);
    for (int i = 0; i < mesh->size(); ++i) {
      std::vector<float> got(static_cast<size_t>(volume(out_t.shape)));
      REQUIRE(mesh->chip(i).read(out[static_cast<size_t>(i)], got));
      bool same = true;
      for (size_t k = 0; k < got.size() && same; ++k) {
        same = got[k] == expected(i, static_cast<int64_t>(k));
        if (!same) MESSAGE("chip ", i, " element ", k, ": ", got[k]);
      }
      CHECK(same);
    }
  }
};

/// A DRAM-interleaved placement; placements view their shapes, kept here for the test's run.
TensorPlacement dram(std::string_view name, std::vector<int64_t> shape, DType dt = DType::f32) {
  static std::deque<std::vector<int64_t>> shapes;
  shapes.push_back(std::move(shape));
  return make_interleaved(name, shapes.back(), dt, BufferType::dram, 0);
}

OpConfig axis(int cluster_axis, int dim = 0) {
  OpConfig c;
  c.cluster_axis = static_cast<int8_t>(cluster_axis);
  c.collective_dim = dim;
  return c;
}

}  // namespace

TEST_CASE(
    "collectives on an emulated mesh: what validate() refuses launch refuses with the same "
    "reason; what it accepts runs and matches the definition") {
  MeshRules t3k("t3k");  // 2x4: chip r*4 + c; axis 1 groups a row (4 chips), axis 0 a column (2)
  Expected none = [](int, int64_t) { return 0.0f; };

  // all_gather along dim 0 over a row: chip (r, q) holds the row's four [64x64] blocks in order.
  t3k.check(OpKind::all_gather, axis(1, 0), dram("x", {64, 64}), dram("y", {256, 64}),
            "all_gather(dim=0, cluster_axis=1)", "", [](int chip, int64_t f) {
              int r = chip / 4;
              int64_t row = f / 64, col = f % 64;
              return input_value(r * 4 + static_cast<int>(row / 64), (row % 64) * 64 + col);
            });
  t3k.check(OpKind::all_gather, axis(1, 0), dram("x", {64}), dram("y", {256}),
            "all_gather(dim=0, cluster_axis=1)",
            "operand 'x' has rank 1; tt-metal: \"AllGather requires tensor of rank 2 or greater\"",
            none);
  // Over a column (2 chips) along the last dim: [32x32] blocks side by side.
  t3k.check(OpKind::all_gather, axis(0, 1), dram("x", {32, 32}), dram("y", {32, 64}),
            "all_gather(dim=1, cluster_axis=0)", "", [](int chip, int64_t f) {
              int c = chip % 4;
              int64_t row = f / 64, col = f % 64;
              return input_value(static_cast<int>(col / 32) * 4 + c, row * 32 + col % 32);
            });

  // reduce_scatter of the last dim over a row: 8 tiles of columns, 2 per chip; chip (r, q) keeps
  // columns [64q, 64q + 64) of the row's sum.
  t3k.check(OpKind::reduce_scatter, axis(1, 1), dram("x", {64, 256}), dram("y", {64, 64}),
            "reduce_scatter(dim=1, cluster_axis=1, sum)", "", [](int chip, int64_t f) {
              int r = chip / 4, q = chip % 4;
              int64_t row = f / 64, col = f % 64, src = row * 256 + 64 * q + col;
              float s = 0;
              for (int p = 0; p < 4; ++p) s += input_value(r * 4 + p, src);
              return s;
            });
  // 64 columns are 2 tiles: 16 columns per chip would split a tile.
  t3k.check(OpKind::reduce_scatter, axis(1, 1), dram("x", {64, 64}), dram("y", {64, 16}),
            "reduce_scatter(dim=1, cluster_axis=1, sum)",
            "tt-metal: \"Number of tiles at dimension 1 must be divisible by ring_size\"", none);
  t3k.check(OpKind::reduce_scatter, axis(1, 0), dram("x", {128}), dram("y", {32}),
            "reduce_scatter(dim=0, cluster_axis=1, sum)",
            "tt-metal: \"reduce_scatter currently supports rank 2 tensors at minimum\"", none);

  // all_reduce over a column: both chips of column c get the column's sum.
  t3k.check(OpKind::all_reduce, axis(0), dram("x", {1, 40}), dram("y", {1, 40}),
            "all_reduce(cluster_axis=0, sum)", "", [](int chip, int64_t f) {
              int c = chip % 4;
              return input_value(c, f) + input_value(4 + c, f);
            });
  // tt-metal's all_reduce wants rank 2 or more and sums only.
  t3k.check(OpKind::all_reduce, axis(0), dram("x", {40}), dram("y", {40}),
            "all_reduce(cluster_axis=0, sum)",
            "operand 'x' has rank 1; tt-metal's all_reduce: \"Expected input tensor to be of at "
            "least rank 2\"",
            none);
  OpConfig max = axis(0);
  max.reduce = ReduceOp::max;
  t3k.check(OpKind::all_reduce, max, dram("x", {1, 40}), dram("y", {1, 40}),
            "all_reduce(cluster_axis=0, max)",
            "all_reduce by max; tt-metal's all_reduce reduces by sum only", none);

  // meshplan's own collective rules: interleaved tensors, no cast.
  TensorPlacement sharded = dram("y", {256, 64});
  {
    auto spec = even_shard_spec(sharded.shape, MemLayout::height_sharded, CoreRange{0, 0, 7, 0},
                                ShardOrientation::row_major, TileLayout::tile);
    REQUIRE(spec);
    sharded = make_sharded("y", sharded.shape, DType::f32, MemLayout::height_sharded, *spec, 0);
  }
  t3k.check(OpKind::all_gather, axis(1, 0), dram("x", {64, 64}), sharded,
            "all_gather(dim=0, cluster_axis=1)", "collectives give interleaved DRAM or L1 tensors",
            none);
  t3k.check(OpKind::all_gather, axis(1, 0), dram("x", {64, 64}), dram("y", {256, 64}, DType::bf16),
            "all_gather(dim=0, cluster_axis=1)", "collectives do not cast", none);

  // all_to_all over a row: split dim 1 (128 columns) in 4, concatenate along dim 0; chip (r, j)
  // gets block j of every chip of its row, stacked in order.
  OpConfig a2a = axis(1);
  a2a.split_dim = 1;
  a2a.concat_dim = 0;
  t3k.check(OpKind::all_to_all, a2a, dram("x", {16, 128}), dram("y", {64, 32}),
            "all_to_all(split_dim=1, concat_dim=0, cluster_axis=1)", "", [](int chip, int64_t f) {
              int r = chip / 4, j = chip % 4;
              int64_t row = f / 32, col = f % 32;
              return input_value(r * 4 + static_cast<int>(row / 16),
                                 (row % 16) * 128 + j * 32 + col);
            });
  // tt-metal's all_to_all wants the last dim in whole tiles: 64 columns split in 4 leave 16.
  t3k.check(OpKind::all_to_all, a2a, dram("x", {16, 64}), dram("y", {64, 16}),
            "all_to_all(split_dim=1, concat_dim=0, cluster_axis=1)",
            "all_to_all's result of 'x' has 16 at dim 1 (the last); tt-metal: \"1 dimension "
            "doesn't support padding, so must be divisible by 32\"",
            none);
  // collective_permute: chip 0 -> 5, 5 -> 0; the others get zeros.
  OpConfig perm;
  perm.pairs = {0, 5, 5, 0};
  t3k.check(OpKind::collective_permute, perm, dram("x", {32, 32}), dram("y", {32, 32}),
            "collective_permute(2 pairs)", "", [](int chip, int64_t f) {
              return chip == 5 ? input_value(0, f) : chip == 0 ? input_value(5, f) : 0.0f;
            });
  // point_to_point refuses a chip sending to itself.
  perm.pairs = {0, 5, 5, 0, 2, 2};
  t3k.check(OpKind::collective_permute, perm, dram("x", {32, 32}), dram("y", {32, 32}),
            "collective_permute(3 pairs)",
            "pair (2, 2) sends chip 2 to itself; tt-metal's point_to_point: \"Can't send/receive "
            "to the same device\"",
            none);
  // all_slice along dim 0 over a row: chip (r, q) keeps rows [16q, 16q + 16).
  t3k.check(OpKind::all_slice, axis(1, 0), dram("x", {64, 8}), dram("y", {16, 8}),
            "all_slice(dim=0, cluster_axis=1)", "",
            [](int chip, int64_t f) { return input_value(chip, (chip % 4) * 16 * 8 + f); });

  // n300 (1x2): axis 0 groups one chip, which tt-metal's all_gather refuses; axis 1 gathers two.
  MeshRules n300("n300");
  n300.check(OpKind::all_gather, axis(0, 0), dram("x", {32, 32}), dram("y", {32, 32}),
             "all_gather(dim=0, cluster_axis=0)",
             "tt-metal: \"all_gather op will only work for num_devices > 1\"", none);
  n300.check(OpKind::all_gather, axis(1, 0), dram("x", {32, 32}), dram("y", {64, 32}),
             "all_gather(dim=0, cluster_axis=1)", "", [](int, int64_t f) {
               return input_value(static_cast<int>(f / (32 * 32)), f % (32 * 32));
             });
  MESSAGE("collective rule cases: ", t3k.accepted + n300.accepted, " accepted, ",
          t3k.rejected + n300.rejected, " rejected");
  CHECK(t3k.accepted + n300.accepted == 8);
  CHECK(t3k.rejected + n300.rejected == 10);
}
