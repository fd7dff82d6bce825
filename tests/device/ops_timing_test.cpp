// The timing model for the op set: conv2d as its im2col tile-matmuls, row ops and reductions by
// operand tiles and passes, pools by window size, data-movement ops by bytes only.
#include <doctest/doctest.h>

#include "device/op_test_util.hpp"
#include "meshplan/device/timing.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {
struct Launch {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<device::TensorPlacement> ps;
  std::vector<const device::TensorPlacement*> in, out;
  device::OpTiming time(OpKind kind, const OpConfig& c) {
    ps.clear();
    in.clear();
    out.clear();
    for (const auto& s : shapes)
      ps.push_back(device::make_interleaved("t", s, DType::bf16, device::BufferType::dram, 0));
    for (size_t i = 0; i + 1 < ps.size(); ++i) in.push_back(&ps[i]);
    out.push_back(&ps.back());
    return device::estimate(device::wormhole_b0(), device::OpLaunch{kind, "op", in, out, c});
  }
};
}  // namespace

TEST_CASE("conv2d costs its im2col tile-matmuls over the cores") {
  // [1,32,32,32] * [32,3,3,32], pad 1: M = 1024 (32 tiles), K = 288 (9 tiles), N = 32 (1 tile).
  Launch l{{{1, 32, 32, 32}, {32, 3, 3, 32}, {1, 32, 32, 32}}, {}, {}, {}};
  OpConfig c = grid_config();
  c.padding[0] = c.padding[1] = c.padding[2] = c.padding[3] = 1;
  device::OpTiming t64 = l.time(OpKind::conv2d, c);
  CHECK(t64.cores_used == 32);  // 32 output tiles
  // 9 tile-matmuls per core x 32 cycles (HiFi2) at the achieved 89% of the peak:
  // ceil(288 / 0.89) = 324.
  CHECK(t64.compute_ns == 324);
  c.fidelity = device::MathFidelity::lofi;
  CHECK(l.time(OpKind::conv2d, c).compute_ns == 162);  // ceil(9 x 16 / 0.89)
  c.grid_x = c.grid_y = 1;
  CHECK(l.time(OpKind::conv2d, c).compute_ns == 5178);  // ceil(288 x 16 / 0.89)
}

TEST_CASE(
    "row ops and reductions cost operand tiles times passes; data movement costs bytes only") {
  OpConfig c = grid_config(1, 1);
  Launch sm{{{64, 256}, {64, 256}}, {}, {}, {}};
  // 16 operand tiles x 1024 elements / 32 per cycle = 512 cycles per pass.
  CHECK(sm.time(OpKind::softmax, c).compute_ns == 3 * 512);
  CHECK(sm.time(OpKind::layer_norm, c).compute_ns == 3 * 512);
  CHECK(sm.time(OpKind::rms_norm, c).compute_ns == 2 * 512);
  Launch red{{{64, 256}, {64}}, {}, {}, {}};
  CHECK(red.time(OpKind::reduce_sum, c).compute_ns == 512);
  for (OpKind k : {OpKind::reshape, OpKind::permute, OpKind::slice}) {
    device::OpTiming t = sm.time(k, c);
    CHECK(t.compute_ns == 0);
    CHECK(t.dram_ns > 0);
  }
  Launch pool{{{1, 16, 16, 32}, {1, 8, 8, 32}}, {}, {}, {}};
  OpConfig p = grid_config(1, 1);
  p.kernel[0] = p.kernel[1] = 2;
  CHECK(pool.time(OpKind::max_pool2d, p).compute_ns == 8 * 8 * 32 * 4 / 32);
  // More cores are faster for every family.
  OpConfig many = grid_config();
  Launch big{{{512, 512}, {512, 512}}, {}, {}, {}};
  CHECK(big.time(OpKind::softmax, many).compute_ns < big.time(OpKind::softmax, c).compute_ns);
  CHECK(big.time(OpKind::gelu, many).compute_ns < big.time(OpKind::gelu, c).compute_ns);
}
