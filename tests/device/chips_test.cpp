// Every built-in chip runs on the emulator: a matmul over its whole core grid (and its DRAM
// banks and alignment) matches the host reference, and the faster chip is faster on the clock.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/op_semantics.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

std::vector<float> values(const std::vector<int64_t>& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(volume(shape)));
  for (float& x : v) x = round_bf16(d(rng));
  return v;
}

/// Runs a [96 x 200] x [200 x 330] matmul on the chip's full grid; returns (relative error, ns).
std::pair<double, uint64_t> matmul_on(const ChipDesc& chip) {
  auto dev = EmulatedDevice::create(chip);
  REQUIRE(dev);
  std::vector<int64_t> as{96, 200}, bs{200, 330}, cs{96, 330};
  auto a = values(as, 1), b = values(bs, 2);
  TensorPlacement pa = make_interleaved("a", as, DType::bf16, BufferType::dram, 0);
  TensorPlacement pb = make_interleaved("b", bs, DType::bf16, BufferType::dram, 1 << 20);
  TensorPlacement pc = make_interleaved("c", cs, DType::bf16, BufferType::dram, 2 << 20);
  for (auto* p : {&pa, &pb, &pc}) REQUIRE((*dev)->allocate(*p));
  REQUIRE((*dev)->write(pa, a));
  REQUIRE((*dev)->write(pb, b));
  OpConfig config;
  config.grid_x = chip.grid_x;
  config.grid_y = chip.grid_y;
  const TensorPlacement* in[] = {&pa, &pb};
  const TensorPlacement* out[] = {&pc};
  auto t = (*dev)->launch(OpLaunch{OpKind::matmul, "mm", in, out, config});
  REQUIRE(t);
  std::vector<float> got(static_cast<size_t>(volume(cs))), want(got.size());
  REQUIRE((*dev)->read(pc, got));
  HostView views[] = {{as, a}, {bs, b}};
  REQUIRE(reference(OpKind::matmul, views, config, cs, want));
  double err = 0, scale = 1e-6;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, static_cast<double>(std::fabs(got[i] - want[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(want[i])));
  }
  return {err / scale, t->duration_ns};
}

}  // namespace

TEST_CASE("every built-in chip runs a matmul on its whole grid") {
  std::map<std::string, uint64_t> ns;
  for (auto name : builtin_chip_names()) {
    std::string n(name);
    CAPTURE(n);
    auto [err, t] = matmul_on(*builtin_chip(name));
    CHECK(err < 0.02);
    CHECK(t > 0);
    ns[n] = t;
  }
  CHECK(ns["blackhole_p150"] < ns["wormhole_b0"]);  // more cores, higher clock, faster DRAM
  CHECK(ns["n300"] >= ns["wormhole_b0"]);           // 56 cores instead of 64
}
