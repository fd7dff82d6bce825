// tt-metal's layout rules for concat, permute, slice, the pools, a broadcast a operand
// and the plain matmul program's shard shapes (docs/hardware-rules.md), as the OpModel/emulator
// contract: each rule with a launch validate() accepts, which runs and matches the f32
// reference, and one it refuses with tt-metal's reason, which launch() refuses the same way.
#include <doctest/doctest.h>

#include "device/layout_sweep.hpp"

using namespace meshplan;
using namespace meshplan::device;
using namespace meshplan::device::sweep;

TEST_CASE(
    "a broadcast operand a, concat, permute, slice, pools and the plain matmul program's shards: "
    "tt-metal's rules; validate() and launch() agree") {
  Sweep s;
  // Whether validate() refuses with a reason containing `why` (empty: accepts), then the contract.
  auto expect = [&](OpKind kind, std::vector<TensorPlacement> ins, const TensorPlacement& out,
                    const OpConfig& config, const std::vector<std::vector<float>>& host,
                    const std::string& why) {
    s.expect(kind, std::move(ins), out, config, host, why);
  };
  auto on = [](std::string_view name, const std::vector<int64_t>& shape, MemLayout m,
               CoreRange grid, DType dt = DType::bf16) {
    auto spec = even_shard_spec(shape, m, grid, ShardOrientation::row_major, TileLayout::tile);
    REQUIRE(spec);
    return make_sharded(name, shape, dt, m, *spec, 0);
  };
  OpConfig c = grid_config();
  const std::vector<int64_t> shape{2, 40, 96}, row{1, 96};
  auto hx = random_values(shape, 51), hr = random_values(row, 52);
  auto hy = random_values(shape, 54);

  // Either operand may be the broadcast one (ttnn's binary_ng), a included.
  expect(OpKind::subtract,
         {place("r", row, DType::bf16, Kind::l1), place("x", shape, DType::bf16, Kind::dram)},
         place("z", shape, DType::bf16, Kind::dram), c, {hr, hx}, "");

  // concat along W (axis -1) and H (axis 1).
  OpConfig w = c, h = c, d0 = c;
  w.axis = -1;
  h.axis = 1;
  d0.axis = 0;
  const std::vector<int64_t> wide{2, 40, 192}, tall{2, 80, 96}, deep{4, 40, 96};
  expect(OpKind::concat,
         {place("x", shape, DType::bf16, Kind::dram), place("y", shape, DType::bf16, Kind::l1)},
         place("z", wide, DType::bf16, Kind::dram), w, {hx, hy}, "");
  expect(OpKind::concat,
         {place("x", shape, DType::bf16, Kind::dram), place("y", shape, DType::f32, Kind::dram)},
         place("z", wide, DType::bf16, Kind::dram), w, {hx, hy},
         "\"All Tensors should have same dtypes.\"");
  expect(OpKind::concat,
         {place("x", shape, DType::bf16, Kind::height), place("y", shape, DType::bf16, Kind::dram)},
         place("z", wide, DType::bf16, Kind::dram), w, {hx, hy},
         "\"All tensors must be sharded or all must be interleaved\"");
  expect(OpKind::concat,
         {place("x", shape, DType::bf16, Kind::height),
          place("y", shape, DType::bf16, Kind::height_set)},
         place("z", wide, DType::bf16, Kind::height), w, {hx, hy},
         "\"Sharded tensors must have the same grid.\"");
  expect(
      OpKind::concat,
      {place("x", shape, DType::bf16, Kind::height), place("y", shape, DType::bf16, Kind::height)},
      place("z", wide, DType::bf16, Kind::height), w, {hx, hy}, "");
  expect(
      OpKind::concat,
      {place("x", shape, DType::bf16, Kind::height), place("y", shape, DType::bf16, Kind::height)},
      place("z", wide, DType::bf16, Kind::dram), w, {hx, hy},
      "\"Sharded output and inputs must have the same memory layout.\"");
  expect(OpKind::concat,
         {place("x", shape, DType::bf16, Kind::width), place("y", shape, DType::bf16, Kind::width)},
         place("z", wide, DType::bf16, Kind::width), w, {hx, hy},
         "\"Only support width concat on height-sharded or block-sharded tensors.\"");
  expect(OpKind::concat,
         {place("x", shape, DType::bf16, Kind::width), place("y", shape, DType::bf16, Kind::width)},
         place("z", tall, DType::bf16, Kind::width), h, {hx, hy}, "");
  expect(
      OpKind::concat,
      {place("x", shape, DType::bf16, Kind::height), place("y", shape, DType::bf16, Kind::height)},
      place("z", tall, DType::bf16, Kind::height), h, {hx, hy},
      "\"Only support height concat on width-sharded or block-sharded tensors.\"");
  expect(
      OpKind::concat,
      {place("x", shape, DType::bf16, Kind::height), place("y", shape, DType::bf16, Kind::height)},
      place("z", deep, DType::bf16, Kind::height), d0, {hx, hy},
      "\"Only width or height concat on sharded tensors\"");
  expect(OpKind::concat,
         {place("x", shape, DType::bf16, Kind::dram), place("y", shape, DType::bf16, Kind::dram)},
         place("z", deep, DType::f32, Kind::dram), d0, {hx, hy},
         "tt-metal's concat gives its operands' dtype");

  // permute reads interleaved tensors only; permute and slice keep the dtype.
  OpConfig perm = c;
  perm.num_dims = 3;
  perm.dims[0] = 0;
  perm.dims[1] = 2;
  perm.dims[2] = 1;
  const std::vector<int64_t> swapped{2, 96, 40};
  expect(OpKind::permute, {place("x", shape, DType::bf16, Kind::height)},
         place("z", swapped, DType::bf16, Kind::dram), perm, {hx},
         "\"Permute operation does not support sharded input tensor\"");
  expect(OpKind::permute, {place("x", shape, DType::bf16, Kind::l1)},
         place("z", swapped, DType::bf16, Kind::height), perm, {hx}, "");
  expect(OpKind::permute, {place("x", shape, DType::bf16, Kind::l1)},
         place("z", swapped, DType::f32, Kind::dram), perm, {hx}, "gives its input's dtype");
  OpConfig sl = c;
  sl.num_slice = 3;
  for (int i = 0; i < 3; ++i) {
    sl.begins[i] = 0;
    sl.ends[i] = shape[static_cast<size_t>(i)];
    sl.steps[i] = 1;
  }
  sl.ends[2] = 64;
  const std::vector<int64_t> cut{2, 40, 64};
  expect(OpKind::slice, {place("x", shape, DType::bf16, Kind::block_row)},
         place("z", cut, DType::bf16, Kind::dram), sl, {hx}, "");
  expect(OpKind::slice, {place("x", shape, DType::bf16, Kind::dram)},
         place("z", cut, DType::f32, Kind::dram), sl, {hx}, "gives its input's dtype");

  // Pools: a bf16 input; a sharded input is row-major oriented, its channels split evenly over
  // channel cores.
  OpConfig pool = c;
  pool.kernel[0] = pool.kernel[1] = 2;
  pool.stride[0] = pool.stride[1] = 2;
  const std::vector<int64_t> img{1, 8, 8, 96}, half{1, 4, 4, 96}, img2{1, 8, 8, 64},
      half2{1, 4, 4, 64};
  auto hi = random_values(img, 59), hi2 = random_values(img2, 60);
  expect(OpKind::max_pool2d, {place("x", img, DType::bf16, Kind::height)},
         place("z", half, DType::bf16, Kind::dram), pool, {hi}, "");
  // The pools read bf16 only.
  expect(OpKind::max_pool2d, {place("x", img, DType::f32, Kind::dram)},
         place("z", half, DType::f32, Kind::dram), pool, {hi},
         "is f32; tt-metal's pool2d: \"Only BFLOAT16 supported for now\"");
  expect(OpKind::avg_pool2d, {place("x", img, DType::f32, Kind::height)},
         place("z", half, DType::f32, Kind::dram), pool, {hi},
         "\"Only BFLOAT16 supported for now\"");
  expect(OpKind::max_pool2d, {place("x", img, DType::bf16, Kind::height_col)},
         place("z", half, DType::bf16, Kind::dram), pool, {hi},
         "\"Only row major orientation is supported.\"");
  expect(OpKind::avg_pool2d, {on("x", img, MemLayout::width_sharded, CoreRange{0, 0, 2, 0})},
         place("z", half, DType::bf16, Kind::dram), pool, {hi}, "");
  expect(OpKind::avg_pool2d, {on("x", img2, MemLayout::width_sharded, CoreRange{0, 0, 2, 0})},
         place("z", half2, DType::bf16, Kind::dram), pool, {hi2},
         "\"For width and block sharding, input channels (64) should be divisible by num_shards "
         "(3)\"");

  // The plain multi-core program (MatmulMultiCoreReuseProgramConfig) reads in0 shards holding all
  // of K and in1 shards holding all of N in whole multiples of K rows.
  const std::vector<int64_t> as{64, 96}, bs{96, 128}, os{64, 128};
  auto ha = random_values(as, 61), hb = random_values(bs, 62);
  expect(OpKind::matmul,
         {on("a", as, MemLayout::block_sharded, CoreRange{0, 0, 0, 1}),
          place("b", bs, DType::bf16, Kind::dram)},
         place("c", os, DType::bf16, Kind::dram), c, {ha, hb}, "");
  expect(OpKind::matmul,
         {place("a", as, DType::bf16, Kind::block_row), place("b", bs, DType::bf16, Kind::dram)},
         place("c", os, DType::bf16, Kind::dram), c, {ha, hb},
         "\"Error: K, 96, needs to be equal to 32\"");
  expect(OpKind::matmul,
         {place("a", as, DType::bf16, Kind::dram),
          on("b", bs, MemLayout::height_sharded, CoreRange{0, 0, 0, 0})},
         place("c", os, DType::bf16, Kind::l1), c, {ha, hb}, "");
  expect(OpKind::matmul,
         {place("a", as, DType::bf16, Kind::dram), place("b", bs, DType::bf16, Kind::height)},
         place("c", os, DType::bf16, Kind::l1), c, {ha, hb},
         "\"Input B shard shape[0] (32) must be divisible by K (96)\"");
  expect(OpKind::matmul,
         {on("a", as, MemLayout::height_sharded, CoreRange{0, 0, 1, 0}),
          on("b", bs, MemLayout::height_sharded, CoreRange{0, 0, 0, 0})},
         place("c", os, DType::bf16, Kind::dram), c, {ha, hb},
         "\"Input tensors A and B must have matching shard spec grids\"");
  MESSAGE("tt-metal rule cases: ", s.accepted, " accepted, ", s.rejected, " rejected");
  CHECK(s.accepted == 10);
  CHECK(s.rejected == 18);
}

TEST_CASE(
    "binary_ng broadcasts along the last dim only when an operand or the result is sharded; "
    "validate() and launch() agree") {
  Sweep s;
  auto expect = [&](OpKind kind, std::vector<TensorPlacement> ins, const TensorPlacement& out,
                    const std::vector<std::vector<float>>& host, const std::string& why) {
    std::vector<const TensorPlacement*> in;
    for (auto& t : ins) in.push_back(&t);
    const TensorPlacement* outs[1] = {&out};
    OpValidation v = s.model.validate(OpLaunch{kind, "op", in, outs, grid_config()});
    if (why.empty())
      CHECK_MESSAGE(v.ok, v.reason);
    else
      CHECK_MESSAGE(v.reason.find(why) != std::string::npos, v.reason);
    s.check(kind, std::move(ins), out, grid_config(), host, 0.02);
  };
  const std::vector<int64_t> shape{2, 64, 96}, row{1, 96}, col{2, 64, 1}, flat{96};
  // `shape` height-sharded on 4 cores: 32 rows (one tile row) per core.
  auto height = [&shape](std::string_view name, DType dt = DType::bf16) {
    auto spec = even_shard_spec(shape, MemLayout::height_sharded, CoreRange{0, 0, 3, 0},
                                ShardOrientation::row_major, TileLayout::tile);
    REQUIRE(spec);
    return make_sharded(name, shape, dt, MemLayout::height_sharded, *spec, 0);
  };
  auto hx = random_values(shape, 71), hr = random_values(row, 72), hc = random_values(col, 73);
  auto hf = random_values(flat, 74);
  const std::string refused = "Cannot broadcast sharded tensors on dims other than W";
  auto l1 = [](std::string_view name, const std::vector<int64_t>& sh) {
    return place(name, sh, DType::bf16, Kind::l1);
  };

  // A row (dims 0 and 1 broadcast) against a sharded operand, sharded or interleaved result.
  expect(OpKind::add, {height("x"), l1("r", row)}, height("z"), {hx, hr},
         refused + ", violation for rank -2, dim a: 64, dim b: 1");
  expect(OpKind::add, {height("x"), l1("r", row)}, l1("z", shape), {hx, hr}, refused);
  // b first (numpy: the missing leading dims count as 1), and a rank-1 operand.
  expect(OpKind::multiply, {l1("r", row), height("x")}, height("z"), {hr, hx},
         refused + ", violation for rank -2, dim a: 1, dim b: 64");
  expect(OpKind::subtract, {height("x"), l1("f", flat)}, height("z"), {hx, hf},
         refused + ", violation for rank -2, dim a: 64, dim b: 1");
  // Only the result sharded: tt-metal counts the output memory config too.
  expect(OpKind::add, {l1("x", shape), l1("r", row)}, height("z"), {hx, hr}, refused);
  // A column (the last dim, W, broadcast) beside a sharded operand and result: accepted and run.
  expect(OpKind::add, {height("x"), l1("c", col)}, height("z"), {hx, hc}, "");
  expect(OpKind::maximum, {l1("c", col), height("x")}, l1("z", shape), {hc, hx}, "");
  // The row broadcast with nothing sharded: accepted and run.
  expect(OpKind::add, {l1("x", shape), l1("r", row)}, l1("z", shape), {hx, hr}, "");
  // A sharded block-float operand takes ttnn's legacy binary program (is_legacy_only), which
  // binary_ng's rule does not bind.
  expect(OpKind::add, {height("x", DType::bf8b), l1("r", row)}, height("z"), {hx, hr}, "");
  MESSAGE("binary_ng broadcast cases: ", s.accepted, " accepted, ", s.rejected, " rejected");
  CHECK(s.accepted == 4);
  CHECK(s.rejected == 5);
}
