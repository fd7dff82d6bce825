// NaN in max / min reductions, max_pool2d and the max / min collectives: StableHLO's maximum
// and minimum propagate NaN, so a window, reduced line or group holding a NaN gives NaN (and
// -inf / +inf behave as ordinary values). Literal expectations; kernel and reference both.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "device/op_test_util.hpp"
#include "mesh_fixture.hpp"
#include "meshplan/device/emulated_mesh.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

bool same(float got, float want) {
  return std::isnan(want) ? std::isnan(got) : got == want;
}

void check_both(const OpRun& r, const std::vector<float>& want) {
  REQUIRE(r.got.size() == want.size());
  REQUIRE(r.want.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK_MESSAGE(same(r.got[i], want[i]), "kernel ", r.got[i], " != ", want[i]);
    CHECK_MESSAGE(same(r.want[i], want[i]), "reference ", r.want[i], " != ", want[i]);
  }
}

}  // namespace

TEST_CASE("reduce_max / reduce_min over a line holding NaN give NaN, wherever the NaN is") {
  // Rows: NaN first, NaN last, NaN between infinities, no NaN (with -inf / +inf).
  OpInput x{"x",
            {4, 4},
            {kNaN, 1, 2, 3, 1, 2, 3, kNaN, -kInf, kNaN, kInf, 0, -kInf, -1, 5, kInf},
            DType::f32};
  OpConfig c = grid_config(2, 2);
  c.num_dims = 1;
  c.dims[0] = 1;
  check_both(run_op(OpKind::reduce_max, {x}, c), {kNaN, kNaN, kNaN, kInf});
  check_both(run_op(OpKind::reduce_min, {x}, c), {kNaN, kNaN, kNaN, -kInf});
  // bf16 storage: NaN survives the round trip.
  check_both(run_op(OpKind::reduce_max, {with_dtype(x, DType::bf16)}, c), {kNaN, kNaN, kNaN, kInf});
}

TEST_CASE("max_pool2d: a window holding NaN gives NaN; an all -inf window gives -inf") {
  // 1x4x4x1, 2x2 windows, stride 2: {1,2,5,6}->6, {NaN,3,7,8}->NaN, {-inf x4}->-inf,
  // {9,-1,NaN,0}->NaN. bf16, the pools' one dtype (every value here is exact in it).
  OpInput x{"x",
            {1, 4, 4, 1},
            {1, 2, kNaN, 3, 5, 6, 7, 8, -kInf, -kInf, 9, -1, -kInf, -kInf, kNaN, 0},
            DType::bf16};
  OpConfig c = grid_config(1, 1);
  c.kernel[0] = c.kernel[1] = 2;
  c.stride[0] = c.stride[1] = 2;
  check_both(run_op(OpKind::max_pool2d, {x}, c), {6, kNaN, -kInf, kNaN});
}

TEST_CASE(
    "max / min over a 1x2 mesh propagate NaN from either chip: tt-metal's all_reduce sums only, "
    "the all_gather and local reduce the lowering emits instead do") {
  auto desc = device::builtin_mesh("n300");
  REQUIRE(desc);
  auto mesh = device::EmulatedMesh::create(*desc);
  REQUIRE(mesh);
  std::vector<int64_t> shape{1, 4};
  ChipTensors in(**mesh, "x", same_shape(**mesh, shape), DType::f32, 0);
  ChipTensors out(**mesh, "y", same_shape(**mesh, shape), DType::f32, 64ull << 20);
  ChipTensors gathered(**mesh, "g", same_shape(**mesh, {2, 4}), DType::f32, 96ull << 20);
  std::vector<float> a{kNaN, 1, -kInf, 2}, b{1, kNaN, 3, -5};
  REQUIRE((*mesh)->chip(0).write(in[0], a));
  REQUIRE((*mesh)->chip(1).write(in[1], b));
  for (auto op : {device::ReduceOp::max, device::ReduceOp::min}) {
    auto refused = (*mesh)->all_reduce(in.all(), out.all(), 1, op);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find(
              std::string("all_reduce by ") + (op == device::ReduceOp::max ? "max" : "min") +
              "; tt-metal's all_reduce reduces by sum only") != std::string::npos);
  }
  REQUIRE((*mesh)->all_gather(in.all(), gathered.all(), 0, 1));
  for (int i = 0; i < 2; ++i) {
    std::vector<float> rows(8);
    REQUIRE((*mesh)->chip(i).read(gathered[static_cast<size_t>(i)], rows));
    OpInput g{"g", {2, 4}, rows, DType::f32};
    OpConfig c = grid_config(1, 1);
    c.num_dims = 1;
    c.dims[0] = 0;
    check_both(run_op(OpKind::reduce_max, {g}, c), {kNaN, kNaN, 3, 2});
    check_both(run_op(OpKind::reduce_min, {g}, c), {kNaN, kNaN, -kInf, -5});
  }
}
