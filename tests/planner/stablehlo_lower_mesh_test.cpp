// Per-device programs with collectives lowered to the graph IR's collective ops (MESH-SPEC §1)
// and the mesh boundary (§3): Graph::mesh from sdy.mesh, one MeshShardSpec per argument and
// output; replica groups that are no whole axis are named errors; meshes of three axes map
// onto the physical 2-D system.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "meshplan/planner/mesh_mapping.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/spmd_host.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;
using K = device::OpKind;
using device::MeshShardSpec;
using device::MeshShardType;

namespace {

Module piped(const std::string& path, int64_t rows, int64_t cols, bool presharded = false) {
  auto m = parse_module_file(test::source_path(path));
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  PipelineOptions o;
  o.mesh_rows = rows;
  o.mesh_cols = cols;
  o.presharded_arguments = presharded;
  auto s = run_pipeline(*m, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return std::move(*m);
}

planner::Graph lowered(const Module& m) {
  auto g = lower_to_graph(m);
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  return std::move(*g);
}

planner::Graph lowered_text(const std::string& text) {
  auto m = parse_module(text, "m.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return lowered(*m);
}

std::string error_text(const std::string& text) {
  auto m = parse_module(text, "m.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto g = lower_to_graph(*m);
  REQUIRE_FALSE(g.has_value());
  CHECK(g.error().code == ErrorCode::unimplemented);
  return g.error().message;
}

std::vector<K> kinds(const planner::Graph& g) {
  std::vector<K> out;
  for (const auto& op : g.ops) out.push_back(op.kind);
  return out;
}

int64_t int_attr(const planner::Op& op, const char* name) {
  const planner::Attribute* a = op.attribute(name);
  REQUIRE_MESSAGE(a != nullptr, name);
  return std::get<int64_t>(a->value);
}

MeshShardSpec devices(int32_t axis0_dim, int32_t axis1_dim) {
  return MeshShardSpec{MeshShardType::devices, {axis0_dim, axis1_dim}, {}};
}
const MeshShardSpec kReplicate{MeshShardType::replicate, {-1, -1}, {}};
const MeshShardSpec kIdentity{MeshShardType::identity, {-1, -1}, {}};

}  // namespace

TEST_CASE("tensor-parallel MLP on 1x8: one all_reduce, none between the two matmuls") {
  planner::Graph g = lowered(piped("examples/models/tp_mlp.mlir", 1, 8));
  CHECK(kinds(g) == std::vector<K>{K::matmul, K::add, K::relu, K::matmul, K::all_reduce});
  const planner::Op& ar = g.ops.back();
  CHECK(int_attr(ar, "cluster_axis") == 1);
  CHECK(std::get<std::string>(ar.attribute("reduce")->value) == "sum");
  CHECK(g.mesh.rows == 1);
  CHECK(g.mesh.cols == 8);
  CHECK(g.mesh.axis_names == std::vector<std::string>{"x", "tp"});
  // x replicated; w1, its bias and w2 carry sdy.sharding: global host arrays split by the
  // runtime over "tp" (mesh axis 1), w1 on dim 1, the bias and w2 on dim 0.
  CHECK(g.argument_shards ==
        std::vector<MeshShardSpec>{kReplicate, devices(-1, 1), devices(-1, 0), devices(-1, 0)});
  CHECK(g.output_shards == std::vector<MeshShardSpec>{kReplicate});
  CHECK(g.values[g.arguments[1]].shape == std::vector<int64_t>{128, 32});
  CHECK(g.values[g.outputs[0]].shape == std::vector<int64_t>{64, 128});
}

TEST_CASE("seed 003 case 3 on 2x4: global inputs split by the runtime, or pre-sharded") {
  planner::Graph global = lowered(piped("tests/planner/golden/case3_input.mlir", 2, 4));
  CHECK(global.argument_shards == std::vector<MeshShardSpec>{devices(0, 1), devices(-1, 0)});
  CHECK(global.output_shards == std::vector<MeshShardSpec>{devices(0, -1)});
  // As the seed's JAX frontend passes them: one piece per chip (identity).
  planner::Graph g = lowered(piped("tests/planner/golden/case3_input.mlir", 2, 4, true));
  CHECK(kinds(g) == std::vector<K>{K::matmul, K::all_reduce});
  CHECK(int_attr(g.ops[1], "cluster_axis") == 1);
  CHECK(g.mesh.rows == 2);
  CHECK(g.mesh.cols == 4);
  CHECK(g.argument_shards == std::vector<MeshShardSpec>{kIdentity, kIdentity});
  CHECK(g.output_shards == std::vector<MeshShardSpec>{devices(0, -1)});
}

TEST_CASE("seed 003 case 5 on 2x4: its all_gather's types disagree with its groups, named") {
  // The document's hand-written all_gather doubles dim 0 on groups of 4 chips: after local
  // shapes 4096 -> 8192 rows, which no all_gather does.
  auto g = lower_to_graph(piped("tests/planner/golden/case5_input.mlir", 2, 4));
  REQUIRE_FALSE(g.has_value());
  CHECK(g.error().message.ends_with(
      "case5_input.mlir:5:3: stablehlo.all_gather on groups of 4 chips turns "
      "tensor<4096x196xf32> into [16384x196], but its result is declared tensor<8192x196xf32>"));
}

TEST_CASE("seed 003 case 6 on 1x2: reshard = all_gather then all_slice, both along axis 1") {
  planner::Graph g = lowered(piped("tests/planner/golden/case6_input.mlir", 1, 2));
  CHECK(kinds(g) == std::vector<K>{K::all_gather, K::all_slice});
  CHECK(int_attr(g.ops[0], "dim") == 1);
  CHECK(int_attr(g.ops[0], "cluster_axis") == 1);
  CHECK(int_attr(g.ops[1], "dim") == 0);
  CHECK(int_attr(g.ops[1], "cluster_axis") == 1);
  CHECK(g.values[g.arguments[0]].shape == std::vector<int64_t>{32, 16});
  CHECK(g.values[g.outputs[0]].shape == std::vector<int64_t>{16, 32});
  CHECK(g.output_shards == std::vector<MeshShardSpec>{devices(-1, 0)});
}

namespace {

/// Block of chip (r, c) of a host tensor under `spec` on a rows x cols mesh: start and size.
std::pair<std::vector<int64_t>, std::vector<int64_t>> block(const std::vector<int64_t>& full,
                                                            const MeshShardSpec& spec, int rows,
                                                            int cols, int r, int c) {
  std::vector<int64_t> start(full.size(), 0), size = full;
  if (spec.type != MeshShardType::devices) return {start, size};
  for (size_t d = 0; d < full.size(); ++d) {
    bool on0 = spec.shard_dims[0] == static_cast<int32_t>(d);
    bool on1 = spec.shard_dims[1] == static_cast<int32_t>(d);
    int64_t pieces = (on0 ? rows : 1) * (on1 ? cols : 1);
    int64_t index = on0 && on1 ? r * cols + c : on0 ? r : on1 ? c : 0;
    size[d] = full[d] / pieces;
    start[d] = index * size[d];
  }
  return {start, size};
}

/// Copies between a host array and a block of it (to_block: host -> block).
void copy_block(HostArray& host, std::vector<float>& piece, const std::vector<int64_t>& start,
                const std::vector<int64_t>& size, bool to_block) {
  int64_t n = device::volume(size);
  piece.resize(static_cast<size_t>(n));
  std::vector<int64_t> idx(size.size());
  for (int64_t f = 0; f < n; ++f) {
    int64_t rest = f, flat = 0;
    for (size_t d = size.size(); d-- > 0;) {
      idx[d] = rest % size[d];
      rest /= size[d];
    }
    for (size_t d = 0; d < size.size(); ++d) flat = flat * host.shape[d] + start[d] + idx[d];
    if (to_block)
      piece[static_cast<size_t>(f)] = host.data[static_cast<size_t>(flat)];
    else
      host.data[static_cast<size_t>(flat)] = piece[static_cast<size_t>(f)];
  }
}

/// Piece `index` of `n` along `dim` of a row-major array.
std::vector<float> piece_of(const std::vector<float>& data, const std::vector<int64_t>& shape,
                            int64_t dim, int64_t index, int64_t n) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  int64_t len = shape[static_cast<size_t>(dim)] / n;
  std::vector<float> out;
  for (int64_t o = 0; o < outer; ++o) {
    auto from = data.begin() + (o * shape[static_cast<size_t>(dim)] + index * len) * inner;
    out.insert(out.end(), from, from + len * inner);
  }
  return out;
}

/// Concatenation along `dim` of equally shaped row-major arrays of `shape`.
std::vector<float> concat_of(const std::vector<const std::vector<float>*>& parts,
                             const std::vector<int64_t>& shape, int64_t dim) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim); d < shape.size(); ++d) inner *= shape[d];
  std::vector<float> out;
  for (int64_t o = 0; o < outer; ++o)
    for (const auto* p : parts)
      out.insert(out.end(), p->begin() + o * inner, p->begin() + (o + 1) * inner);
  return out;
}

/// Runs the per-device graph on every chip in lockstep: ops with device::reference, the graph's
/// collectives by hand on the chips' arrays along device::collective_groups. Inputs are split
/// and outputs assembled by the graph's boundary shards (identity inputs by the sharding the
/// per-device program gives them).
std::vector<HostArray> run_on_mesh(const planner::Graph& g, const Module& local,
                                   const std::vector<HostArray>& inputs,
                                   const std::vector<HostArray>& like) {
  const int rows = g.mesh.rows, cols = g.mesh.cols, chips = rows * cols;
  auto boundary = mesh_shards(local);
  REQUIRE(boundary.has_value());
  std::vector<std::vector<std::vector<float>>> env(
      static_cast<size_t>(chips), std::vector<std::vector<float>>(g.values.size()));
  for (size_t a = 0; a < g.arguments.size(); ++a) {
    const planner::Value& v = g.values[g.arguments[a]];
    MeshShardSpec spec = g.argument_shards[a];
    if (spec.type == MeshShardType::identity) {
      const auto& sd = (*boundary)[a].shard_dims;
      spec = devices(static_cast<int32_t>(sd[0]), static_cast<int32_t>(sd.size() > 1 ? sd[1] : -1));
    }
    for (int chip = 0; chip < chips; ++chip) {
      if (v.kind == planner::ArgKind::constant) {
        env[static_cast<size_t>(chip)][g.arguments[a]] = v.data;
        continue;
      }
      HostArray in = inputs[a];
      auto [start, size] = block(in.shape, spec, rows, cols, chip / cols, chip % cols);
      REQUIRE(size == v.shape);
      copy_block(in, env[static_cast<size_t>(chip)][g.arguments[a]], start, size, true);
    }
  }
  for (const planner::Op& op : g.ops) {
    const planner::Value& out = g.values[op.results[0]];
    planner::ValueId x = op.operands[0], r = op.results[0];
    auto at = [&](int chip) -> std::vector<float>& { return env[static_cast<size_t>(chip)][x]; };
    auto res = [&](int chip) -> std::vector<float>& { return env[static_cast<size_t>(chip)][r]; };
    if (!device::is_collective(op.kind)) {
      auto config = planner::op_config(op, g.mesh);
      REQUIRE(config.has_value());
      for (int chip = 0; chip < chips; ++chip) {
        std::vector<device::HostView> views;
        for (planner::ValueId v : op.operands)
          views.push_back({g.values[v].shape, env[static_cast<size_t>(chip)][v]});
        res(chip).resize(static_cast<size_t>(device::volume(out.shape)));
        REQUIRE(device::reference(op.kind, views, *config, out.shape, res(chip)));
      }
      continue;
    }
    const auto& shape = g.values[x].shape;
    if (op.kind == K::collective_permute) {
      auto pairs = std::get<std::vector<int64_t>>(op.attribute("pairs")->value);
      for (int chip = 0; chip < chips; ++chip) res(chip).assign(at(chip).size(), 0.0f);
      for (size_t p = 0; p + 1 < pairs.size(); p += 2)
        res(static_cast<int>(pairs[p + 1])) = at(static_cast<int>(pairs[p]));
      continue;
    }
    for (const auto& group :
         device::collective_groups(rows, cols, int(int_attr(op, "cluster_axis")))) {
      const int64_t n = static_cast<int64_t>(group.size());
      std::vector<const std::vector<float>*> members;
      for (int chip : group) members.push_back(&at(chip));
      std::vector<float> reduced;
      if (op.kind == K::all_reduce || op.kind == K::reduce_scatter) {
        std::string how = std::get<std::string>(op.attribute("reduce")->value);
        reduced = *members[0];
        for (size_t m = 1; m < members.size(); ++m)
          for (size_t k = 0; k < reduced.size(); ++k)
            reduced[k] = how == "sum"   ? reduced[k] + (*members[m])[k]
                         : how == "max" ? std::max(reduced[k], (*members[m])[k])
                                        : std::min(reduced[k], (*members[m])[k]);
      }
      for (int64_t i = 0; i < n; ++i) {
        std::vector<float>& dst = res(group[static_cast<size_t>(i)]);
        if (op.kind == K::all_reduce) {
          dst = reduced;
        } else if (op.kind == K::reduce_scatter) {
          dst = piece_of(reduced, shape, int_attr(op, "dim"), i, n);
        } else if (op.kind == K::all_gather) {
          dst = concat_of(members, shape, int_attr(op, "dim"));
        } else if (op.kind == K::all_slice) {
          dst = piece_of(*members[static_cast<size_t>(i)], shape, int_attr(op, "dim"), i, n);
        } else if (op.kind == K::all_to_all) {
          int64_t split = int_attr(op, "split_dim"), cat = int_attr(op, "concat_dim");
          std::vector<std::vector<float>> pieces;
          for (const auto* m : members) pieces.push_back(piece_of(*m, shape, split, i, n));
          std::vector<int64_t> piece_shape = shape;
          piece_shape[static_cast<size_t>(split)] /= n;
          std::vector<const std::vector<float>*> ptrs;
          for (const auto& p : pieces) ptrs.push_back(&p);
          dst = concat_of(ptrs, piece_shape, cat);
        }
      }
    }
    for (int chip = 0; chip < chips; ++chip)
      REQUIRE(static_cast<int64_t>(res(chip).size()) == device::volume(out.shape));
  }
  std::vector<HostArray> got = like;
  for (HostArray& h : got) std::fill(h.data.begin(), h.data.end(), NAN);
  for (int chip = 0; chip < chips; ++chip)
    for (size_t o = 0; o < g.outputs.size(); ++o) {
      auto [start, size] =
          block(got[o].shape, g.output_shards[o], rows, cols, chip / cols, chip % cols);
      copy_block(got[o], env[static_cast<size_t>(chip)][g.outputs[o]], start, size, false);
    }
  return got;
}

void check_close(const std::vector<HostArray>& got, const std::vector<HostArray>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    float worst = 0, scale = 0;  // NaN (a piece no chip wrote) fails the check below
    for (size_t k = 0; k < got[o].data.size(); ++k) {
      float d = std::fabs(got[o].data[k] - want[o].data[k]);
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
      scale = std::max(scale, std::fabs(want[o].data[k]));
    }
    CAPTURE(o);
    CHECK(worst <= 1e-4f * (1 + scale));
    CHECK(scale > 0);
  }
}

/// The lowered per-device graph run on the mesh (run_on_mesh) equals evaluate_reference of the
/// global module.
void check_on_mesh(const std::string& path, int rows, int cols) {
  CAPTURE(path);
  auto original = parse_module_file(test::source_path(path));
  REQUIRE(original.has_value());
  Module local = piped(path, rows, cols);
  planner::Graph g = lowered(local);
  REQUIRE(g.mesh.rows == rows);
  REQUIRE(g.mesh.cols == cols);
  auto inputs = random_inputs(*original, 3);
  auto want = evaluate_reference(*original, inputs);
  REQUIRE_MESSAGE(want.has_value(), want.error().message);
  check_close(run_on_mesh(g, local, inputs, *want), *want);
}

}  // namespace

TEST_CASE("lowered per-device graphs run chip by chip give the global reference") {
  check_on_mesh("tests/planner/golden/case1_input.mlir", 1, 2);
  check_on_mesh("examples/models/dp_mlp_relu.mlir", 2, 4);
  check_on_mesh("examples/models/mlp_dp.mlir", 2, 4);
  check_on_mesh("examples/models/mlp_dp.mlir", 8, 4);
  check_on_mesh("examples/models/tp_mlp.mlir", 1, 8);            // with its all_reduce
  check_on_mesh("tests/planner/golden/case6_input.mlir", 1, 2);  // all_gather + all_slice
}

TEST_CASE("data-parallel MLP on 2x4: no collective, batch split over both axes") {
  planner::Graph g = lowered(piped("examples/models/dp_mlp_relu.mlir", 2, 4));
  for (K k : kinds(g)) CHECK_FALSE(device::is_collective(k));
  REQUIRE(!g.argument_shards.empty());
  CHECK(g.argument_shards[0].type == MeshShardType::devices);
  CHECK(g.values[g.arguments[0]].shape == std::vector<int64_t>{8, 128});
}

namespace {

/// A per-device program on a 2x4 mesh: %arg1 is the 8x8 local piece of a 16x32 input split
/// over x and y; `body` ends in %r of type `out` (a replicated result).
std::string on_2x4(const std::string& body, const std::string& out) {
  return R"(sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%arg0: tensor<16x32xf32>) -> )" +
         out + R"( {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {"y"}]>] out_shardings=[<@mesh, [{}, {}]>] manual_axes={"x", "y"} (%arg1: tensor<8x8xf32>) {
)" + body +
         "    sdy.return %r : " + out + R"(
  } : (tensor<16x32xf32>) -> )" +
         out + R"(
  return %0 : )" +
         out + R"(
}
)";
}

}  // namespace

namespace {

/// Every collective on a 2x4 mesh, with `op3` (%3 = f(%2 : tensor<2x4xf32>)) in the middle.
std::string all_collectives(const std::string& op3) {
  return on_2x4(
      R"(    %1 = "stablehlo.all_to_all"(%arg1) <{concat_dimension = 0 : i64, replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>, split_count = 2 : i64, split_dimension = 1 : i64}> : (tensor<8x8xf32>) -> tensor<16x4xf32>
    %2 = "stablehlo.reduce_scatter"(%1) <{replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, scatter_dimension = 0 : i64}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }) : (tensor<16x4xf32>) -> tensor<2x4xf32>
)" + op3 +
          R"(    %4 = "stablehlo.all_gather"(%3) <{all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>}> : (tensor<2x4xf32>) -> tensor<16x4xf32>
    %6 = "stablehlo.all_gather"(%4) <{all_gather_dim = 1 : i64, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>}> : (tensor<16x4xf32>) -> tensor<16x16xf32>
    %r = "stablehlo.all_reduce"(%6) <{replica_groups = dense<[[0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<16x16xf32>) -> tensor<16x16xf32>
)",
      "tensor<16x16xf32>");
}

}  // namespace

TEST_CASE("every StableHLO collective maps to its graph op; replica groups give cluster_axis") {
  planner::Graph g = lowered_text(all_collectives(
      R"(    %3 = "stablehlo.collective_permute"(%2) <{source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
)"));
  // The all_to_all concatenates 8 rows a chip, which tt-metal refuses (the second-last dim in
  // multiples of 16): it is an all_gather along the concat dim and the all_slice of the split dim.
  // The reduce_scatter scatters 16 rows (1 tile) over 8 chips, which tt-metal refuses: it is
  // lowered as an all_reduce and the all_slice of each chip's block; the all_reduce is a max,
  // which tt-metal's all_reduce (sum only) refuses too: every chip's [1, 16, 4] operand is
  // gathered along the unit dim and reduced locally.
  REQUIRE(kinds(g) == std::vector<K>{K::all_gather, K::all_slice, K::reshape, K::all_gather,
                                     K::reduce_max, K::all_slice, K::collective_permute,
                                     K::all_gather, K::all_gather, K::all_reduce});
  CHECK(int_attr(g.ops[0], "cluster_axis") == 0);
  CHECK(int_attr(g.ops[0], "dim") == 0);
  CHECK(g.values[g.ops[0].results[0]].shape == std::vector<int64_t>{16, 8});
  CHECK(int_attr(g.ops[1], "cluster_axis") == 0);
  CHECK(int_attr(g.ops[1], "dim") == 1);
  CHECK(g.values[g.ops[1].results[0]].shape == std::vector<int64_t>{16, 4});
  CHECK(g.values[g.ops[2].results[0]].shape == std::vector<int64_t>{1, 16, 4});
  CHECK(int_attr(g.ops[3], "cluster_axis") == -1);
  CHECK(int_attr(g.ops[3], "dim") == 0);
  CHECK(g.values[g.ops[3].results[0]].shape == std::vector<int64_t>{8, 16, 4});
  CHECK(std::get<std::vector<int64_t>>(g.ops[4].attribute("dims")->value) ==
        std::vector<int64_t>{0});
  CHECK(g.values[g.ops[4].results[0]].shape == std::vector<int64_t>{16, 4});
  CHECK(int_attr(g.ops[5], "cluster_axis") == -1);
  CHECK(int_attr(g.ops[5], "dim") == 0);
  CHECK(std::get<std::vector<int64_t>>(g.ops[6].attribute("pairs")->value) ==
        std::vector<int64_t>{0, 1, 1, 0});
  CHECK(int_attr(g.ops[7], "cluster_axis") == -1);
  CHECK(int_attr(g.ops[8], "cluster_axis") == 1);
  CHECK(int_attr(g.ops[9], "cluster_axis") == 0);
  CHECK(g.argument_shards == std::vector<MeshShardSpec>{devices(0, 1)});
  CHECK(g.output_shards == std::vector<MeshShardSpec>{kReplicate});
}

TEST_CASE("collectives on every cluster_axis, run chip by chip, match the host SPMD simulation") {
  auto m = parse_module(all_collectives("    %3 = stablehlo.exponential %2 : tensor<2x4xf32>\n"),
                        "m.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  planner::Graph g = lowered(*m);
  auto inputs = random_inputs(*m, 9);
  auto want = evaluate_spmd(*m, inputs);
  REQUIRE_MESSAGE(want.has_value(), want.error().message);
  check_close(run_on_mesh(g, *m, inputs, *want), *want);
}

TEST_CASE("replica groups that are no whole axis are named errors") {
  CHECK(
      error_text(on_2x4(
          R"(    %r = "stablehlo.all_gather"(%arg1) <{all_gather_dim = 1 : i64, replica_groups = dense<[[0, 1], [2, 3], [4, 5], [6, 7]]> : tensor<4x2xi64>}> : (tensor<8x8xf32>) -> tensor<8x16xf32>
)",
          "tensor<8x16xf32>")) ==
      "m.mlir:4:5: unimplemented: stablehlo.all_gather with replica groups [[0, 1], [2, 3], "
      "[4, 5], [6, 7]] that are neither one mesh axis nor the whole mesh");
  CHECK(
      error_text(
          on_2x4(
              R"(    %r = "stablehlo.all_gather"(%arg1) <{all_gather_dim = 0 : i64, replica_groups = dense<[[7, 6, 5, 4, 3, 2, 1, 0]]> : tensor<1x8xi64>}> : (tensor<8x8xf32>) -> tensor<64x8xf32>
)",
              "tensor<64x8xf32>"))
          .ends_with("that are neither one mesh axis nor the whole mesh"));
}

namespace {

/// A per-device program on the 8-device mesh @cube = a x b x c: the input enters sharded `in`,
/// the result leaves sharded `out`.
std::string on_cube(const std::string& in, const std::string& out) {
  return R"(sdy.mesh @cube = <["a"=2, "b"=2, "c"=2]>
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@cube, [{)" +
         in + R"(}]>] out_shardings=[<@cube, [{)" + out +
         R"(}]>] manual_axes={"a", "b", "c"} (%arg1: tensor<4xf32>) {
    %1 = stablehlo.negate %arg1 : tensor<4xf32>
    sdy.return %1 : tensor<4xf32>
  } : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
)";
}

}  // namespace

TEST_CASE("a 3-axis mesh maps onto the 2x4 system; one it cannot map onto is a named error") {
  // 8 devices: the t3k 2x4 system; "a" alone fills the rows, "b" x "c" the columns.
  planner::Graph g = lowered_text(on_cube("\"a\"", "\"a\""));
  CHECK(g.mesh.rows == 2);
  CHECK(g.mesh.cols == 4);
  CHECK(g.mesh.axis_names == std::vector<std::string>{"a", "b=2*c=2"});
  CHECK(g.argument_shards == std::vector<MeshShardSpec>{devices(0, -1)});
  CHECK(g.output_shards == std::vector<MeshShardSpec>{devices(0, -1)});
  // "b" and "c" each split a tensor alone: whichever shares the columns with another axis
  // cannot be cut by a mesh_shard.
  CHECK(error_text(on_cube("\"b\"", "\"c\"")) ==
        "m.mlir:3:3: unimplemented: mesh @cube [\"a\"=2, \"b\"=2, \"c\"=2] cannot map onto the "
        "t3k 2x4 system: under every grouping of its axes some step is no physical collective or "
        "mesh_shard; under the first, input 0 is sharded <@cube, [{\"b\"}]>, but physical cols "
        "carry {\"b\", \"c\"} together: no mesh_shard splits dim 0 over part of them");
}

TEST_CASE("data x fsdp x tensor MLP: tensor on the rows, data x fsdp on the columns of t3k") {
  Module m = piped("examples/models/mlp_3axis.mlir", 0, 0);
  auto map = mesh_mapping(m);
  REQUIRE_MESSAGE(map.has_value(), map.error().message);
  CHECK(map->str(*m.main_mesh()) == "2x4 rows=tensor cols=data,fsdp");
  // Logical device (data, fsdp, tensor) = 4*data + 2*fsdp + tensor sits on chip
  // (row tensor, column 2*data + fsdp) = 4*tensor + 2*data + fsdp.
  std::vector<int64_t> chips;
  for (int64_t d = 0; d < 8; ++d) chips.push_back(map->chip(*m.main_mesh(), d));
  CHECK(chips == std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7});
  planner::Graph g = lowered(m);
  CHECK(g.mesh.rows == 2);
  CHECK(g.mesh.cols == 4);
  CHECK(g.mesh.axis_names == std::vector<std::string>{"tensor", "data=2*fsdp=2"});
  // The partial sums over "tensor" are one all_reduce down each column (cluster_axis 0).
  std::vector<K> colls;
  for (const auto& op : g.ops)
    if (device::is_collective(op.kind)) colls.push_back(op.kind);
  REQUIRE(colls == std::vector<K>{K::all_reduce});
  for (const auto& op : g.ops)
    if (op.kind == K::all_reduce) CHECK(int_attr(op, "cluster_axis") == 0);
  // x rows over data x fsdp = the columns; w1 columns and w2 rows over tensor = the rows.
  CHECK(g.argument_shards ==
        std::vector<MeshShardSpec>{devices(-1, 0), devices(1, -1), devices(0, -1)});
  CHECK(g.output_shards == std::vector<MeshShardSpec>{devices(-1, 0)});
  CHECK(g.values[g.arguments[0]].shape == std::vector<int64_t>{4, 32});
  // The all_reduce of the local 4x32 f32 partial (512 bytes) over 2 chips: 2 * 1/2 * 512.
  auto comm = communication(m);
  REQUIRE(comm.has_value());
  CHECK(comm->bytes == 512.0);
}

TEST_CASE("a system the mesh's axes cannot group into is a named error") {
  auto m = parse_module_file(test::source_path("examples/models/mlp_3axis.mlir"));
  REQUIRE(m.has_value());
  PipelineOptions o;
  o.mesh_rows = 1;
  o.mesh_cols = 8;  // the all_reduce over "tensor" would run over part of the one row
  auto s = run_pipeline(*m, o);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().message.find(
            "unimplemented: mesh @mesh [\"data\"=2, \"fsdp\"=2, \"tensor\"=2] cannot map "
            "onto the 1x8 system: under every grouping of its axes some step is no physical "
            "collective or mesh_shard; under the first, the stablehlo.all_reduce at ") !=
        std::string::npos);
  CHECK(s.error().message.ends_with("runs over axis \"tensor\", which is no physical dim"));
}

TEST_CASE("3-axis mesh: an axis moving between dims is one all_to_all down the columns") {
  auto m = parse_module(R"(sdy.mesh @mesh = <["data"=2, "fsdp"=2, "tensor"=2]>
func.func public @main(%arg0: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"tensor"}, {}]>}) -> (tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"tensor"}]>}) {
  %0 = stablehlo.negate %arg0 : tensor<32x64xf32>
  return %0 : tensor<32x64xf32>
}
)",
                        "a2a.mlir");
  REQUIRE(m.has_value());
  PipelineOptions o;
  o.mesh_rows = o.mesh_cols = 0;
  auto s = run_pipeline(*m, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  // Each chip holds 16x64 f32 (4096 bytes) and sends the half the other chip of its pair keeps:
  // 2048 bytes (an all_gather of the 32x64 result then a slice would send 4096). Its 16 rows to
  // concatenate and 32 columns left are tt-metal's all_to_all tiling (docs/hardware-rules.md).
  auto comm = communication(*m);
  REQUIRE(comm.has_value());
  REQUIRE(comm->ops.size() == 1);
  CHECK(comm->ops[0].kind == "all_to_all");
  CHECK(comm->ops[0].bytes == 2048.0);
  planner::Graph g = lowered(*m);
  CHECK(g.mesh.axis_names == std::vector<std::string>{"tensor", "data=2*fsdp=2"});
  REQUIRE(kinds(g) == std::vector<K>{K::neg, K::all_to_all});
  CHECK(int_attr(g.ops[1], "cluster_axis") == 0);
  CHECK(int_attr(g.ops[1], "split_dim") == 1);
  CHECK(int_attr(g.ops[1], "concat_dim") == 0);
  CHECK(g.argument_shards == std::vector<MeshShardSpec>{devices(0, -1)});
  CHECK(g.output_shards == std::vector<MeshShardSpec>{devices(1, -1)});
  // Run chip by chip on the 2x4 placement: the result is -x, element for element.
  HostArray x{{32, 64}, {}};
  for (int i = 0; i < 2048; ++i) x.data.push_back(static_cast<float>(i % 13 - 6));
  HostArray like{{32, 64}, std::vector<float>(2048)};
  auto got = run_on_mesh(g, *m, {x}, {like});
  REQUIRE(got.size() == 1);
  int wrong = 0;
  for (int i = 0; i < 2048; ++i) wrong += got[0].data[i] != -static_cast<float>(i % 13 - 6);
  CHECK(wrong == 0);
}

namespace {

/// -x on mesh ["x"=2, "y"=2] with `device_ids`, x (8x8) split over "x" on dim 0.
Module negate_on_ids(const std::string& ids) {
  auto m = parse_module(R"(sdy.mesh @mesh = <["x"=2, "y"=2], device_ids=[)" + ids + R"(]>
func.func public @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
  %0 = stablehlo.negate %arg0 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)",
                        "ids.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::move(*m);
}

}  // namespace

TEST_CASE("reordered device_ids move the pieces to the chips they name") {
  // In order: "x" runs down the rows, chip (r, c) holds rows 4r..4r+3.
  Module plain = negate_on_ids("0, 1, 2, 3");
  PipelineOptions o;
  o.mesh_rows = o.mesh_cols = 0;
  REQUIRE(run_pipeline(plain, o).has_value());
  planner::Graph g0 = lowered(plain);
  CHECK(g0.argument_shards == std::vector<MeshShardSpec>{devices(0, -1)});
  // device_ids [0, 2, 1, 3]: logical (x=1, y=0) is device 1 = chip (0, 1), so "x" runs along
  // the columns and chip (r, c) holds rows 4c..4c+3.
  Module swapped = negate_on_ids("0, 2, 1, 3");
  REQUIRE(run_pipeline(swapped, o).has_value());
  auto map = mesh_mapping(swapped);
  REQUIRE_MESSAGE(map.has_value(), map.error().message);
  CHECK(map->str(*swapped.main_mesh()) == "2x2 rows=y cols=x");
  planner::Graph g = lowered(swapped);
  CHECK(g.mesh.axis_names == std::vector<std::string>{"y", "x"});
  CHECK(g.argument_shards == std::vector<MeshShardSpec>{devices(-1, 0)});
  CHECK(g.output_shards == std::vector<MeshShardSpec>{devices(-1, 0)});
  HostArray x{{8, 8}, {}};
  for (int i = 0; i < 64; ++i) x.data.push_back(static_cast<float>(i % 7 - 3));
  auto got = run_on_mesh(g, swapped, {x}, {HostArray{{8, 8}, std::vector<float>(64)}});
  int wrong = 0;
  for (int i = 0; i < 64; ++i) wrong += got[0].data[i] != -static_cast<float>(i % 7 - 3);
  CHECK(wrong == 0);
  // An order no grouping of the axes gives is refused, naming the mesh and the system.
  Module odd = negate_on_ids("0, 3, 1, 2");
  auto s = run_pipeline(odd, o);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().message ==
        "ids.mlir:2:11: unimplemented: mesh @mesh [\"x\"=2, \"y\"=2] cannot map onto the 2x2 "
        "system: its device_ids [0, 3, 1, 2] put its devices on chips in an order no grouping of "
        "its axes onto "
        "rows and columns gives");
}

TEST_CASE("a mapping the module states is kept, or refused when the program cannot run on it") {
  Module m = piped("examples/models/mlp_3axis.mlir", 0, 0);
  std::string text = print_module(m);
  const std::string chosen = "meshplan.mesh_mapping = \"2x4 rows=tensor cols=data,fsdp\"";
  REQUIRE(text.find(chosen) != std::string::npos);
  auto again = [&](const std::string& t, int64_t rows, int64_t cols) {
    auto parsed = parse_module(t, "local.mlir");
    REQUIRE_MESSAGE(parsed.has_value(), parsed.error().message);
    PipelineOptions o;
    o.mesh_rows = rows;
    o.mesh_cols = cols;
    auto s = run_pipeline(*parsed, o);
    return s ? std::string() : s.error().message;
  };
  CHECK(again(text, 0, 0).empty());
  std::string edited = text;
  edited.replace(edited.find(chosen), chosen.size(),
                 "meshplan.mesh_mapping = \"2x4 rows=data cols=fsdp,tensor\"");
  std::string e = again(edited, 0, 0);
  CHECK(e.find(": meshplan.mesh_mapping \"2x4 rows=data cols=fsdp,tensor\" cannot run this "
               "program: the stablehlo.all_reduce at ") != std::string::npos);
  CHECK(e.ends_with("runs over axis \"tensor\", which is no physical dim"));
  CHECK(again(text, 4, 2)
            .ends_with(": meshplan.mesh_mapping \"2x4 rows=tensor cols=data,fsdp\" "
                       "is for a 2x4 system, not --mesh 4x2"));
}
