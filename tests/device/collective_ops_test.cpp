// Collective op kinds on one chip: the emulator refuses them, OpModel accepts only interleaved
// DRAM/L1 operands and results and costs them with the collective timing model.
#include "meshplan/device/collective_ops.hpp"

#include <doctest/doctest.h>

#include "meshplan/device/collective_rules.hpp"
#include "meshplan/device/collective_timing.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/placement.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

std::vector<int64_t> kIn = {64, 64};

OpConfig gather_config() {
  OpConfig c;
  c.mesh_rows = 2;
  c.mesh_cols = 4;
  c.cluster_axis = 1;
  c.collective_dim = 0;
  return c;
}

}  // namespace

TEST_CASE("collective groups follow the cluster axis, -1 is the whole mesh in chip order") {
  CHECK(collective_groups(2, 4, 0) ==
        std::vector<std::vector<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  CHECK(collective_groups(2, 4, 1) == std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(collective_groups(2, 4, -1) == std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7}});
  OpConfig c = gather_config();
  CHECK(collective_group_size(c) == 4);
  c.cluster_axis = -1;
  CHECK(collective_group_size(c) == 8);
}

TEST_CASE("the emulator refuses collectives; OpModel validates and costs them") {
  ChipDesc chip = *builtin_chip("wormhole_b0");
  auto dev = EmulatedDevice::create(chip);
  REQUIRE(dev);
  std::vector<int64_t> out_shape = {256, 64};
  TensorPlacement in = make_interleaved("x", kIn, DType::bf16, BufferType::dram, 0);
  TensorPlacement out = make_interleaved("y", out_shape, DType::bf16, BufferType::l1, 0);
  const TensorPlacement* ins[] = {&in};
  const TensorPlacement* outs[] = {&out};
  OpLaunch op{OpKind::all_gather, "ag", ins, outs, gather_config()};
  auto launched = (*dev)->launch(op);
  REQUIRE(!launched);
  CHECK(launched.error().message.find("all_gather is a mesh op: run it through a Mesh") !=
        std::string::npos);

  OpModel model(chip);
  OpValidation v = model.validate(op);
  CHECK_MESSAGE(v.ok, v.reason);
  CHECK(v.output_l1_bytes_per_core > 0);
  // Costed on the fabric of the 2x4 built-in (t3k: 2 links): 3/4 of the gathered tensor over
  // the links, plus 3 hops.
  OpTiming t = model.cost(op);
  MeshDesc t3k = *builtin_mesh("t3k");
  t3k.chip = chip;
  CHECK(default_collective_mesh(chip, op.config).hash() == t3k.hash());
  CollectiveTiming expected = estimate_collective(t3k, CollectiveKind::all_gather, 4, 256 * 64 * 2);
  CHECK(t.duration_ns == expected.duration_ns);
  CHECK(t.duration_ns > 3 * 711);
  // On a one-link mesh the same gather is slower.
  MeshDesc thin = t3k;
  thin.links = 1;
  CHECK(OpModel(thin).cost(op).duration_ns > t.duration_ns);

  // Sharded results are rejected; so is a wrong result shape or a 1x1 mesh.
  TensorPlacement sharded = out;
  sharded.memory = MemLayout::height_sharded;
  sharded.buffer = BufferType::l1;
  sharded.shard.grid = CoreRange{0, 0, 7, 0};
  sharded.shard.shape[0] = 32;
  sharded.shard.shape[1] = 64;
  const TensorPlacement* bad_outs[] = {&sharded};
  OpLaunch bad = op;
  bad.results = bad_outs;
  OpValidation rejected = model.validate(bad);
  CHECK(!rejected.ok);
  CHECK(rejected.reason.find("interleaved") != std::string::npos);
  OpLaunch one = op;
  one.config.mesh_cols = 1;
  one.config.mesh_rows = 1;
  CHECK(!model.validate(one).ok);
  OpLaunch wrong = op;
  wrong.config.cluster_axis = 0;  // gathers 2, not 4
  CHECK(!model.validate(wrong).ok);
}

TEST_CASE("collective_permute's pairs live out of line and are checked against the mesh") {
  // Only collective_permute carries pairs: the other ops' configs hold an empty vector, not an
  // array for the largest mesh (552 bytes per config before, 440 now on 64-bit targets).
  static_assert(sizeof(OpConfig) <= 448);
  OpConfig c = gather_config();
  c.pairs = {0, 1, 1, 2, 2, 0};
  CHECK(permute_pairs(c) == std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 0}});
  std::span<const int64_t> in[] = {kIn};
  auto shape = infer_collective_shape(OpKind::collective_permute, in, c);
  REQUIRE_MESSAGE(shape, (shape ? std::string() : shape.error().message));
  CHECK(*shape == kIn);
  c.pairs.push_back(3);  // half a pair
  auto odd = infer_collective_shape(OpKind::collective_permute, in, c);
  REQUIRE_FALSE(odd);
  CHECK(odd.error().message.find("7 pair entries") != std::string::npos);
  c.pairs.assign(2 * (kMaxMeshChips + 1), 0);
  auto many = infer_collective_shape(OpKind::collective_permute, in, c);
  REQUIRE_FALSE(many);
  CHECK(many.error().message.find("more than 64") != std::string::npos);
}

TEST_CASE(
    "tt-metal's all_gather and reduce_scatter rules: rank 2 or more, a group of more than one "
    "chip, whole tiles per chip when scattering the last two dims") {
  OpModel model(*builtin_chip("wormhole_b0"));
  // Validates `kind` from `in` to `out` on `c`: "accepted" or the reason.
  auto reason = [&](OpKind kind, std::vector<int64_t> in_shape, std::vector<int64_t> out_shape,
                    const OpConfig& c) {
    TensorPlacement in = make_interleaved("x", in_shape, DType::bf16, BufferType::dram, 0);
    TensorPlacement out = make_interleaved("y", out_shape, DType::bf16, BufferType::dram, 0);
    const TensorPlacement* ins[] = {&in};
    const TensorPlacement* outs[] = {&out};
    OpValidation v = model.validate(OpLaunch{kind, "cc", ins, outs, c});
    return v.ok ? std::string("accepted") : v.reason;
  };
  auto has = [](const std::string& s, const std::string& what) {
    bool found = s.find(what) != std::string::npos;
    if (!found) MESSAGE(s);
    return found;
  };
  OpConfig c = gather_config();  // 2x4 mesh, cluster_axis 1: groups of 4
  CHECK(reason(OpKind::all_gather, {64, 64}, {256, 64}, c) == "accepted");
  CHECK(
      has(reason(OpKind::all_gather, {64}, {256}, c),
          "operand 'x' has rank 1; tt-metal: \"AllGather requires tensor of rank 2 or greater\""));
  // A 1x2 mesh grouped along its columns axis (cluster_axis 0) has groups of one chip.
  OpConfig one = c;
  one.mesh_rows = 1;
  one.mesh_cols = 2;
  one.cluster_axis = 0;
  CHECK(has(reason(OpKind::all_gather, {64, 64}, {64, 64}, one),
            "\"all_gather op will only work for num_devices > 1\""));
  one.cluster_axis = 1;
  CHECK(reason(OpKind::all_gather, {64, 64}, {128, 64}, one) == "accepted");

  OpConfig rs = c;
  rs.collective_dim = 1;
  // The last dim: 256 columns are 8 tiles, 2 per chip of 4; 64 columns are 2 tiles, which do
  // not split over 4 chips although 64 does.
  CHECK(reason(OpKind::reduce_scatter, {64, 256}, {64, 64}, rs) == "accepted");
  CHECK(has(reason(OpKind::reduce_scatter, {64, 64}, {64, 16}, rs),
            "scatters dim 1 (64, 2 tiles) over 4 chips; tt-metal: \"Number of tiles at dimension 1 "
            "must be divisible by ring_size\""));
  // The second-to-last dim likewise (rows in tiles); a leading dim splits by elements.
  rs.collective_dim = -2;
  CHECK(has(reason(OpKind::reduce_scatter, {2, 64, 32}, {2, 16, 32}, rs),
            "\"Number of tiles at dimension 1 must be divisible by ring_size\""));
  rs.collective_dim = 0;
  CHECK(reason(OpKind::reduce_scatter, {4, 64, 32}, {1, 64, 32}, rs) == "accepted");
  CHECK(has(reason(OpKind::reduce_scatter, {64}, {16}, rs),
            "tt-metal: \"reduce_scatter currently supports rank 2 tensors at minimum\""));
  // all_slice keeps its shape rules only (docs/hardware-rules.md).
  OpConfig a2a = c;
  a2a.split_dim = 1;
  a2a.concat_dim = 0;
  CHECK(reason(OpKind::all_to_all, {64}, {64}, a2a) != "accepted");  // concat_dim 0 of rank 1
  CHECK(reason(OpKind::all_to_all, {16, 128}, {64, 32}, a2a) == "accepted");
}

TEST_CASE(
    "tt-metal's all_to_all rules: a group of more than one chip, the last dim in whole tiles and "
    "the second-last in half tiles on both sides") {
  OpModel model(*builtin_chip("wormhole_b0"));
  auto reason = [&](std::vector<int64_t> in_shape, std::vector<int64_t> out_shape,
                    const OpConfig& c) {
    TensorPlacement in = make_interleaved("x", in_shape, DType::bf16, BufferType::dram, 0);
    TensorPlacement out = make_interleaved("y", out_shape, DType::bf16, BufferType::dram, 0);
    const TensorPlacement* ins[] = {&in};
    const TensorPlacement* outs[] = {&out};
    OpValidation v = model.validate(OpLaunch{OpKind::all_to_all, "cc", ins, outs, c});
    return v.ok ? std::string("accepted") : v.reason;
  };
  const std::string op = "op 'cc' (all_to_all): ";
  OpConfig c = gather_config();  // 2x4 mesh, cluster_axis 1: groups of 4
  c.split_dim = 1;
  c.concat_dim = 0;
  // 16 rows gathered to 64; 128 columns split to 32.
  CHECK(reason({16, 128}, {64, 32}, c) == "accepted");
  // The split leaves 16 columns: the last dim must be whole tiles (32).
  CHECK(
      reason({16, 64}, {64, 16}, c) ==
      op + "all_to_all's result of 'x' has 16 at dim 1 (the last); tt-metal: \"1 dimension doesn't "
           "support padding, so must be divisible by 32\"");
  // 8 rows to concatenate: the second-last dim must be a multiple of 16.
  CHECK(reason({8, 128}, {32, 32}, c) ==
        op +
            "all_to_all's operand of 'x' has 8 at dim 0 (the second-last); tt-metal: \"0 dimension "
            "support only 0 or 16 padding, so must be divisible by 16\"");
  c.split_dim = 0;
  c.concat_dim = 1;
  CHECK(
      reason({64, 16}, {16, 64}, c) ==
      op +
          "all_to_all's operand of 'x' has 16 at dim 1 (the last); tt-metal: \"1 dimension doesn't "
          "support padding, so must be divisible by 32\"");
  CHECK(reason({32, 32}, {8, 128}, c) ==
        op + "all_to_all's result of 'x' has 8 at dim 0 (the second-last); tt-metal: \"0 dimension "
             "support only 0 or 16 padding, so must be divisible by 16\"");
  CHECK(reason({64, 32}, {16, 128}, c) == "accepted");
  // A leading dim splits and concatenates by elements; any rank.
  c.split_dim = 0;
  c.concat_dim = 2;
  CHECK(reason({4, 16, 32}, {1, 16, 128}, c) == "accepted");
  c.split_dim = 2;
  c.concat_dim = 0;
  CHECK(reason({1, 16, 128}, {4, 16, 32}, c) == "accepted");
  // A 1x2 mesh's cluster_axis 0 groups one chip.
  OpConfig one = c;
  one.mesh_rows = 1;
  one.mesh_cols = 2;
  one.cluster_axis = 0;
  one.split_dim = 1;
  one.concat_dim = 0;
  CHECK(reason({32, 64}, {32, 64}, one) ==
        op + "cluster_axis 0 of the 1x2 mesh groups 1 chip; tt-metal: \"all_to_all_async is a "
             "collective operation and requires more than 1 device\"");
  // The rule itself refuses a split dim the group does not divide (validate's shape check
  // refuses it before), quoting tt-metal.
  const std::vector<int64_t> odd = {16, 96 + 2};
  c.split_dim = 1;
  c.concat_dim = 0;
  CHECK(collective_launch_rule(OpKind::all_to_all, "x", odd, c) ==
        "operand 'x' splits dim 1 (98) over 4 chips; tt-metal: \"AllToAllAsync: input tensor "
        "dimension 98 must be divisible by num_devices 4\"");
}

TEST_CASE(
    "tt-metal's all_reduce and point_to_point rules: rank 2 or more, by sum only, no chip sending "
    "to itself") {
  OpModel model(*builtin_chip("wormhole_b0"));
  auto reason = [&](OpKind kind, std::vector<int64_t> shape, const OpConfig& c) {
    TensorPlacement in = make_interleaved("x", shape, DType::bf16, BufferType::dram, 0);
    TensorPlacement out = make_interleaved("y", shape, DType::bf16, BufferType::dram, 0);
    const TensorPlacement* ins[] = {&in};
    const TensorPlacement* outs[] = {&out};
    OpValidation v = model.validate(OpLaunch{kind, "cc", ins, outs, c});
    return v.ok ? std::string("accepted") : v.reason;
  };
  // validate() reports the rule's text (after what it prefixes).
  auto ends = [](const std::string& s, const std::string& what) {
    bool found =
        s.size() >= what.size() && s.compare(s.size() - what.size(), what.size(), what) == 0;
    if (!found) MESSAGE(s);
    return found;
  };
  OpConfig c = gather_config();
  CHECK(reason(OpKind::all_reduce, {1, 64}, c) == "accepted");
  CHECK(ends(
      reason(OpKind::all_reduce, {64}, c),
      "operand 'x' has rank 1; tt-metal's all_reduce: \"Expected input tensor to be of at least "
      "rank 2\""));
  CHECK(ends(
      reason(OpKind::all_reduce, {}, c),
      "operand 'x' has rank 0; tt-metal's all_reduce: \"Expected input tensor to be of at least "
      "rank 2\""));
  c.reduce = ReduceOp::max;
  CHECK(
      ends(reason(OpKind::all_reduce, {1, 64}, c),
           "all_reduce by max; tt-metal's all_reduce reduces by sum only (ttnn::all_reduce passes "
           "ReduceType::Sum)"));
  c.reduce = ReduceOp::min;
  CHECK(reason(OpKind::all_reduce, {1, 64}, c).find("all_reduce by min;") != std::string::npos);
  // The rules read the per-chip operand only: the same text from collective_launch_rule.
  std::vector<int64_t> row = {1, 64};
  CHECK(collective_launch_rule(OpKind::all_reduce, "a", row, c) ==
        "all_reduce by min; tt-metal's all_reduce reduces by sum only (ttnn::all_reduce passes "
        "ReduceType::Sum)");

  OpConfig perm = gather_config();
  perm.pairs = {0, 1, 1, 0};
  CHECK(reason(OpKind::collective_permute, {32, 32}, perm) == "accepted");
  perm.pairs = {0, 1, 1, 0, 3, 3};
  CHECK(
      ends(reason(OpKind::collective_permute, {32, 32}, perm),
           "pair (3, 3) sends chip 3 to itself; tt-metal's point_to_point: \"Can't send/receive to "
           "the same device\""));
}
