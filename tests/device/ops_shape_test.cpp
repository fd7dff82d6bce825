// reshape, permute, concat, slice, embedding and typecast kernels against the host reference.
#include <doctest/doctest.h>

#include "device/op_test_util.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {
OpConfig dims_config(std::vector<int> dims) {
  OpConfig c = grid_config();
  c.num_dims = static_cast<uint8_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) c.dims[i] = static_cast<int8_t>(dims[i]);
  return c;
}
OpConfig reshape_config(std::vector<int64_t> shape) {
  OpConfig c = grid_config();
  c.num_shape = static_cast<uint8_t>(shape.size());
  std::copy(shape.begin(), shape.end(), c.shape);
  return c;
}
OpConfig slice_config(std::vector<int64_t> b, std::vector<int64_t> e, std::vector<int64_t> s) {
  OpConfig c = grid_config();
  c.num_slice = static_cast<uint8_t>(b.size());
  std::copy(b.begin(), b.end(), c.begins);
  std::copy(e.begin(), e.end(), c.ends);
  std::copy(s.begin(), s.end(), c.steps);
  return c;
}
}  // namespace

TEST_CASE("reshape keeps row-major order across tile boundaries") {
  OpInput x = rand_input("x", {2, 45, 70}, 1);
  for (auto shape : std::vector<std::vector<int64_t>>{
           {90, 70}, {6300}, {3, -1, 35}, {7, 2, 15, 30}, {1, 6300}}) {
    OpRun r = run_op(OpKind::reshape, {x}, reshape_config(shape));
    CHECK(r.got == x.data);  // exact: the data only moves
    CHECK(r.rel_err() == 0.0);
  }
  CHECK(run_op(OpKind::reshape, {x}, reshape_config({3, -1, 35})).shape ==
        std::vector<int64_t>{3, 60, 35});
  CHECK(contains(shape_error(OpKind::reshape, {{2, 45, 70}}, reshape_config({100, 60})),
                 "cannot reshape [2x45x70]"));
  CHECK(contains(shape_error(OpKind::reshape, {{4}}, grid_config()), "'shape'"));
}

TEST_CASE("permute, including plain transposes and 4-D perms") {
  OpInput x = rand_input("x", {2, 45, 70}, 1);
  for (auto perm :
       std::vector<std::vector<int>>{{0, 2, 1}, {2, 0, 1}, {1, 0, 2}, {2, 1, 0}, {0, 1, 2}}) {
    OpRun r = run_op(OpKind::permute, {x}, dims_config(perm));
    CHECK(r.rel_err() == 0.0);
  }
  OpRun t = run_op(OpKind::permute, {rand_input("y", {33, 40}, 2)}, dims_config({1, 0}));
  CHECK(t.shape == std::vector<int64_t>{40, 33});
  CHECK(t.rel_err() == 0.0);
  CHECK(run_op(OpKind::permute, {rand_input("z", {2, 3, 35, 5}, 3)}, dims_config({0, 3, 1, 2}))
            .rel_err() == 0.0);
  CHECK(contains(shape_error(OpKind::permute, {{4, 5}}, dims_config({0, 0})), "twice"));
  CHECK(contains(shape_error(OpKind::permute, {{4, 5}}, dims_config({1, 0, 2})), "rank 2"));
}

TEST_CASE("concat of N operands along any axis") {
  OpConfig c = grid_config();
  OpInput a = rand_input("a", {2, 45, 70}, 1), b = rand_input("b", {2, 20, 70}, 2),
          d = rand_input("d", {2, 1, 70}, 3);
  c.axis = 1;
  OpRun r = run_op(OpKind::concat, {a, b, d}, c);
  CHECK(r.shape == std::vector<int64_t>{2, 66, 70});
  CHECK(r.rel_err() == 0.0);
  c.axis = -1;
  OpRun last = run_op(OpKind::concat, {a, rand_input("e", {2, 45, 33}, 4)}, c);
  CHECK(last.shape == std::vector<int64_t>{2, 45, 103});
  CHECK(last.rel_err() == 0.0);
  c.axis = 0;
  std::vector<OpInput> eight;
  for (uint32_t i = 0; i < 8; ++i)
    eight.push_back(rand_input("p" + std::to_string(i), {1, 3, 40}, 10 + i));
  OpRun many = run_op(OpKind::concat, eight, c);
  CHECK(many.shape == std::vector<int64_t>{8, 3, 40});
  CHECK(many.rel_err() == 0.0);
  c.axis = 1;
  std::string e = shape_error(OpKind::concat, {{2, 4, 5}, {2, 4, 6}}, c);
  CHECK(contains(e, "[2x4x6]"));
  CHECK(contains(e, "[2x4x5]"));
  CHECK(contains(shape_error(OpKind::concat, std::vector<std::vector<int64_t>>(9, {2}), c),
                 "1 to 8"));
}

TEST_CASE("slice with steps, negative bounds and clamping") {
  OpInput x = rand_input("x", {3, 45, 70}, 1);
  OpRun r = run_op(OpKind::slice, {x}, slice_config({1, 3, -40}, {3, 44, 1000}, {1, 2, 3}));
  CHECK(r.shape == std::vector<int64_t>{2, 21, 14});
  CHECK(r.rel_err() == 0.0);
  OpRun lead = run_op(OpKind::slice, {x}, slice_config({2}, {3}, {1}));  // trailing dims whole
  CHECK(lead.shape == std::vector<int64_t>{1, 45, 70});
  CHECK(lead.rel_err() == 0.0);
  CHECK(contains(shape_error(OpKind::slice, {{4, 5}}, slice_config({3, 0}, {2, 5}, {1, 1})),
                 "is empty"));
  CHECK(contains(shape_error(OpKind::slice, {{4, 5}}, slice_config({0, 0}, {2, 5}, {1, 0})),
                 "must be positive"));
}

TEST_CASE("embedding gathers table rows by i32 index") {
  OpInput ids{"ids", {3, 17}, {}, DType::i32};
  for (int i = 0; i < 51; ++i) ids.data.push_back(static_cast<float>((i * 7) % 50));
  OpInput table = rand_input("table", {50, 70}, 2);
  OpRun r = run_op(OpKind::embedding, {ids, table}, grid_config());
  CHECK(r.shape == std::vector<int64_t>{3, 17, 70});
  CHECK(r.rel_err() == 0.0);
  // An index outside the table fails clearly.
  ids.data[5] = 50;
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  std::vector<int64_t> out_shape{3, 17, 70};
  auto pi = device::make_interleaved("ids", ids.shape, DType::i32, device::BufferType::dram, 0);
  auto pt = device::make_interleaved("table", table.shape, DType::bf16, device::BufferType::dram,
                                     1 << 20);
  auto po =
      device::make_interleaved("out", out_shape, DType::bf16, device::BufferType::dram, 2 << 20);
  for (auto* p : {&pi, &pt, &po}) REQUIRE((*dev)->allocate(*p));
  REQUIRE((*dev)->write(pi, ids.data));
  REQUIRE((*dev)->write(pt, table.data));
  const device::TensorPlacement* in[] = {&pi, &pt};
  const device::TensorPlacement* out[] = {&po};
  auto bad = (*dev)->launch(device::OpLaunch{OpKind::embedding, "embed", in, out, grid_config()});
  REQUIRE_FALSE(bad);
  CHECK(contains(bad.error().message, "'embed'"));
  CHECK(contains(bad.error().message, "index 50"));
  // bf16 indices are refused by the op model.
  auto pf =
      device::make_interleaved("ids_f", ids.shape, DType::bf16, device::BufferType::dram, 3 << 20);
  REQUIRE((*dev)->allocate(pf));
  const device::TensorPlacement* in_f[] = {&pf, &pt};
  auto wrong =
      (*dev)->launch(device::OpLaunch{OpKind::embedding, "embed", in_f, out, grid_config()});
  REQUIRE_FALSE(wrong);
  CHECK(contains(wrong.error().message, "must be i32 or u32"));
}

TEST_CASE("ranks beyond kMaxRank are refused, not overrun") {
  std::vector<int64_t> rank8(8, 1), rank9(9, 1);
  CHECK(contains(shape_error(OpKind::embedding, {rank8, {5, 4}}, grid_config()), "rank 9"));
  CHECK(contains(shape_error(OpKind::gelu, {rank9}, grid_config()), "has rank 9"));
  OpConfig c = grid_config();
  c.num_dims = 9;
  CHECK(contains(shape_error(OpKind::reduce_sum, {{4}}, c), "more than 8"));
  c = reshape_config({4});
  c.num_shape = 9;
  CHECK(contains(shape_error(OpKind::reshape, {{4}}, c), "more than 8"));
}

TEST_CASE("typecast converts between f32, bf16 and integers") {
  OpConfig c = grid_config();
  OpInput x = with_dtype(rand_input("x", {45, 70}, 1, -50, 50), DType::f32);
  x.data[0] = 1.00390625f;  // not representable in bf16: rounds to 1
  x.data[1] = -2.75f;       // truncates to -2
  c.dtype = DType::bf16;
  OpRun to_bf16 = run_op(OpKind::typecast, {x}, c);
  CHECK(to_bf16.got == to_bf16.want);
  CHECK(to_bf16.got[0] == 1.0f);
  c.dtype = DType::i32;
  OpRun to_i32 = run_op(OpKind::typecast, {x}, c);
  CHECK(to_i32.got == to_i32.want);
  CHECK(to_i32.got[1] == -2.0f);
  c.dtype = DType::f32;
  OpRun back = run_op(OpKind::typecast, {with_dtype(rand_input("y", {3, 33}, 2), DType::bf16)}, c);
  CHECK(back.rel_err() == 0.0);
}

TEST_CASE("bitcast of f32 words to i32: the kernel and the host reference agree on the bits") {
  OpConfig c = grid_config();
  OpInput x = with_dtype(rand_input("x", {4, 8}, 3, -50, 50), DType::f32);
  // 1.0f = 0x3F800000, -0.0f = 0x80000000, -2.5f = 0xC0200000 (each exact as an f32 value).
  x.data[0] = 1.0f;
  x.data[1] = -0.0f;
  x.data[2] = -2.5f;
  c.dtype = DType::i32;
  OpRun r = run_op(OpKind::bitcast, {x}, c);
  CHECK(r.want[0] == 1065353216.0f);
  CHECK(r.want[1] == -2147483648.0f);
  CHECK(r.want[2] == -1071644672.0f);
  CHECK(r.got == r.want);
  // The other way the host value of a large integer has lost its bits: no reference.
  c.dtype = DType::f32;
  std::vector<float> out(32);
  std::vector<device::HostView> views = {device::HostView{x.shape, x.data}};
  CHECK_FALSE(device::reference(OpKind::bitcast, views, c, x.shape, out));
}
