// bfloat4_b as a device dtype: its place in the enum (plans store the value), its tile size (as
// tt-metal's: 64 exponent bytes + 512 bytes of nibbles), tensors written, read and multiplied
// in it against values worked out by hand, and the timing counting its real bytes.
#include <doctest/doctest.h>

#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/formats_bf4b.hpp"
#include "meshplan/device/timing.hpp"

using namespace meshplan;
using namespace meshplan::device;

TEST_CASE("bf4b is dtype 5, a 576-byte tile format with no row-major encoding") {
  CHECK(static_cast<int>(DType::bf4b) == 5);  // appended: older plans keep their values
  CHECK(static_cast<int>(DType::u32) == 4);
  CHECK(dtype_name(DType::bf4b) == "bf4b");
  CHECK(dtype_from_name("bf4b") == DType::bf4b);
  CHECK(tile_bytes(DType::bf4b) == 576);  // 32 * 32 / 2 nibble bytes + 64 shared exponents
  CHECK(element_bytes(DType::bf4b) == 0);
  float v[kTileElems] = {};
  v[0] = 1.0f;
  std::vector<std::byte> t(576);
  REQUIRE(pack_tile(DType::bf4b, v, t.data()));
  CHECK(static_cast<int>(t[0]) == 127);
  CHECK(static_cast<int>(t[64]) == 0x04);  // magnitude 4 = the leading one at exponent 127
  auto rm = pack_elements(DType::bf4b, v, 4, t.data());
  REQUIRE_FALSE(rm);
  CHECK(rm.error().message.find("bf4b") != std::string::npos);
}

TEST_CASE("a bf4b weight is stored quantized and a matmul reads the dequantized values") {
  auto d = EmulatedDevice::create(wormhole_b0());
  REQUIRE(d);
  auto& dev = **d;
  const std::vector<int64_t> shape{32, 32};
  // W row 0, columns 0..15 (one group: shared exponent that of 1.0, steps of 0.25):
  // 1.0 -> 4 steps; 0.3 -> 1.2 -> 1 (0.25); -0.6 -> 2.4 -> 2 (-0.5); 0.1 -> 0.4 -> 0;
  // 0.375 -> 1.5 ties to even 2 (0.5); 0.625 -> 2.5 ties to even 2 (0.5); 0.9 -> 3.6 -> 4 (1.0).
  // Row 1, columns 0..15: the largest is 3.0 (exponent 128, steps of 0.5): 3.0 -> 6;
  // 0.2 -> 0.4 -> 0; -1.3 -> 2.6 -> 3 (-1.5).
  std::vector<float> w(32 * 32, 0.0f), want(32 * 32, 0.0f);
  const float r0[7] = {1.0f, 0.3f, -0.6f, 0.1f, 0.375f, 0.625f, 0.9f};
  const float q0[7] = {1.0f, 0.25f, -0.5f, 0.0f, 0.5f, 0.5f, 1.0f};
  for (int i = 0; i < 7; ++i) {
    w[i] = r0[i];
    want[i] = q0[i];
  }
  w[32 + 0] = 3.0f;
  w[32 + 1] = 0.2f;
  w[32 + 2] = -1.3f;
  want[32 + 0] = 3.0f;
  want[32 + 1] = 0.0f;
  want[32 + 2] = -1.5f;
  TensorPlacement wt = make_interleaved("w", shape, DType::bf4b, BufferType::dram, 0);
  TensorPlacement x = make_interleaved("x", shape, DType::bf16, BufferType::dram, 1 << 20);
  TensorPlacement y = make_interleaved("y", shape, DType::bf16, BufferType::dram, 2 << 20);
  REQUIRE(dev.allocate(wt));
  REQUIRE(dev.allocate(x));
  REQUIRE(dev.allocate(y));
  REQUIRE(dev.write(wt, w));
  std::vector<float> back(32 * 32);
  REQUIRE(dev.read(wt, back));
  CHECK(back == want);
  // x = 2 * identity: y = 2 * W as stored (exact in bf16).
  std::vector<float> eye(32 * 32, 0.0f);
  for (int i = 0; i < 32; ++i) eye[i * 32 + i] = 2.0f;
  REQUIRE(dev.write(x, eye));
  const TensorPlacement* ins[] = {&x, &wt};
  const TensorPlacement* outs[] = {&y};
  OpConfig c;
  c.grid_x = 8;
  c.grid_y = 8;
  REQUIRE(dev.launch(OpLaunch{OpKind::matmul, "mm", ins, outs, c}));
  std::vector<float> got(32 * 32);
  REQUIRE(dev.read(y, got));
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == 2.0f * want[i]);
  }
}

TEST_CASE("a DRAM-bound matmul's time follows its weight's bytes: bf16 > bf8b > bf4b") {
  // Decode-shaped: one tile row of activations against a [4096, 4096] weight, whose bytes
  // (32 MiB in bf16, 17 MiB in bf8b, 9 MiB in bf4b) dominate the op.
  const std::vector<int64_t> xs{32, 4096}, ws{4096, 4096};
  auto time = [&](DType wdt) {
    TensorPlacement x = make_interleaved("x", xs, DType::bf16, BufferType::dram, 0);
    TensorPlacement w = make_interleaved("w", ws, wdt, BufferType::dram, 1 << 24);
    TensorPlacement y = make_interleaved("y", xs, DType::bf16, BufferType::dram, 0);
    const TensorPlacement* ins[] = {&x, &w};
    const TensorPlacement* outs[] = {&y};
    OpConfig c;
    c.grid_x = 8;
    c.grid_y = 8;
    return estimate(wormhole_b0(), OpLaunch{OpKind::matmul, "mm", ins, outs, c}).duration_ns;
  };
  uint64_t t16 = time(DType::bf16), t8 = time(DType::bf8b), t4 = time(DType::bf4b);
  CHECK(t16 > t8);
  CHECK(t8 > t4);
  // The weight moves at the DRAM rate: the differences are within the byte ratios' reach.
  CHECK(static_cast<double>(t16) / static_cast<double>(t4) < 2048.0 / 576.0 + 0.01);
}
