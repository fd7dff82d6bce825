// The emulated chip: host transfers through the address map, kernels against the f32 reference,
// and clear errors that leave the device usable.
#include "meshplan/device/emulator.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "meshplan/device/formats.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "meshplan/device/placement.hpp"
#include "meshplan/device/timing.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
  TensorPlacement placement(DType dtype, uint64_t address) const {
    return make_interleaved(name, shape, dtype, BufferType::dram, address);
  }
};

Tensor random_tensor(std::string name, std::vector<int64_t> shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  Tensor t{std::move(name), std::move(shape), {}};
  t.data.resize(static_cast<size_t>(volume(t.shape)));
  for (float& v : t.data) v = round_bf16(d(rng));  // bf16-exact, so only the op's error remains
  return t;
}

std::unique_ptr<EmulatedDevice> make_device() {
  auto d = EmulatedDevice::create(wormhole_b0());
  REQUIRE(d);
  return std::move(*d);
}

/// Runs one op on the device (operands at 0, 64 MiB, ...) and on the reference; returns the
/// largest difference relative to the reference's scale.
double run_and_compare(OpKind kind, const std::vector<Tensor>& ins, const OpConfig& config,
                       DType dtype = DType::bf16) {
  auto dev = make_device();
  std::vector<std::span<const int64_t>> shapes;
  for (const Tensor& t : ins) shapes.emplace_back(t.shape);
  auto out_shape = infer_shape(kind, shapes, config);
  REQUIRE(out_shape);
  std::vector<TensorPlacement> ps;
  uint64_t addr = 0;
  for (const Tensor& t : ins) {
    ps.push_back(t.placement(dtype, addr));
    addr += 64ull << 20;
  }
  TensorPlacement out = make_interleaved("out", *out_shape, dtype, BufferType::dram, addr);
  for (size_t i = 0; i < ins.size(); ++i) {
    REQUIRE(dev->allocate(ps[i]));
    REQUIRE(dev->write(ps[i], ins[i].data));
  }
  REQUIRE(dev->allocate(out));
  std::vector<const TensorPlacement*> inp, outp{&out};
  for (auto& p : ps) inp.push_back(&p);
  auto timing = dev->launch(OpLaunch{kind, "op", inp, outp, config});
  REQUIRE(timing);
  CHECK(timing->duration_ns > 0);
  CHECK(dev->now_ns() == timing->duration_ns);
  std::vector<float> got(static_cast<size_t>(volume(*out_shape)));
  REQUIRE(dev->read(out, got));
  std::vector<HostView> views;
  for (const Tensor& t : ins) views.push_back(HostView{t.shape, t.data});
  std::vector<float> want(got.size());
  REQUIRE(reference(kind, views, config, *out_shape, want));
  double err = 0, scale = 1e-6;
  for (size_t i = 0; i < got.size(); ++i) {
    err = std::max(err, static_cast<double>(std::fabs(got[i] - want[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(want[i])));
  }
  return err / scale;
}

}  // namespace

TEST_CASE("write/read round-trips through the interleaved address map") {
  auto dev = make_device();
  for (DType dtype : {DType::bf16, DType::f32}) {
    Tensor t = random_tensor("x", {3, 45, 70}, 1);
    TensorPlacement p = t.placement(dtype, 4096);
    REQUIRE(dev->allocate(p));
    REQUIRE(dev->write(p, t.data));
    std::vector<float> back(t.data.size());
    REQUIRE(dev->read(p, back));
    CHECK(back == t.data);
    REQUIRE(dev->deallocate(p));
  }
}

TEST_CASE("pages land in bank p % 12 at address + (p / 12) * page") {
  ChipDesc chip = wormhole_b0();
  std::vector<int64_t> shape{64, 224};  // 2 x 7 = 14 tiles
  TensorPlacement p = make_interleaved("x", shape, DType::bf16, BufferType::dram, 1024);
  AddressMap map(p, chip);
  CHECK(map.page(0).bank == 0);
  CHECK(map.page(0).offset == 1024);
  CHECK(map.page(13).bank == 1);
  CHECK(map.page(13).offset == 1024 + 2048);
  CHECK(map.bytes_per_bank() == 2 * 2048);
  // A second tensor placed right after the first one's reservation does not clobber it.
  auto dev = make_device();
  Tensor a = random_tensor("a", shape, 2), b = random_tensor("b", shape, 3);
  TensorPlacement pa = a.placement(DType::bf16, 0),
                  pb = b.placement(DType::bf16, map.bytes_per_bank());
  REQUIRE(dev->allocate(pa));
  REQUIRE(dev->allocate(pb));
  REQUIRE(dev->write(pa, a.data));
  REQUIRE(dev->write(pb, b.data));
  std::vector<float> back(a.data.size());
  REQUIRE(dev->read(pa, back));
  CHECK(back == a.data);
  // One byte less of room and the allocator refuses, naming both buffers.
  TensorPlacement pc = b.placement(DType::bf16, map.bytes_per_bank() * 2 - 32);
  pc.name = "c";
  auto overlap = dev->allocate(pc);
  REQUIRE_FALSE(overlap);
  CHECK(overlap.error().message.find("'c'") != std::string::npos);
  CHECK(overlap.error().message.find("'b'") != std::string::npos);
}

TEST_CASE("matmul matches the reference") {
  OpConfig c;
  c.grid_x = 8;
  c.grid_y = 8;
  SUBCASE("tile-aligned") {
    CHECK(run_and_compare(OpKind::matmul,
                          {random_tensor("a", {64, 96}, 1), random_tensor("b", {96, 128}, 2)},
                          c) < 0.01);
  }
  SUBCASE("ragged dims") {
    CHECK(run_and_compare(OpKind::matmul,
                          {random_tensor("a", {45, 70}, 3), random_tensor("b", {70, 33}, 4)},
                          c) < 0.01);
  }
  SUBCASE("batched with a shared rhs") {
    CHECK(run_and_compare(OpKind::matmul,
                          {random_tensor("a", {3, 40, 64}, 5), random_tensor("b", {64, 50}, 6)},
                          c) < 0.01);
  }
  SUBCASE("batched rhs") {
    CHECK(run_and_compare(OpKind::matmul,
                          {random_tensor("a", {2, 33, 64}, 7), random_tensor("b", {2, 64, 40}, 8)},
                          c) < 0.01);
  }
  SUBCASE("transposed operands") {
    c.transpose_a = true;
    c.transpose_b = true;
    CHECK(run_and_compare(OpKind::matmul,
                          {random_tensor("a", {70, 45}, 9), random_tensor("b", {33, 70}, 10)},
                          c) < 0.01);
  }
  SUBCASE("fused relu, one core") {
    c.activation = Activation::relu;
    c.grid_x = c.grid_y = 1;
    CHECK(run_and_compare(OpKind::matmul,
                          {random_tensor("a", {64, 64}, 11), random_tensor("b", {64, 64}, 12)},
                          c) < 0.01);
  }
  SUBCASE("f32 storage is near exact") {
    CHECK(run_and_compare(OpKind::matmul,
                          {random_tensor("a", {64, 96}, 13), random_tensor("b", {96, 64}, 14)}, c,
                          DType::f32) < 1e-5);
  }
}

TEST_CASE("add and relu match the reference, with broadcasting") {
  OpConfig c;
  c.grid_x = 4;
  c.grid_y = 2;
  CHECK(run_and_compare(OpKind::add,
                        {random_tensor("a", {45, 70}, 1), random_tensor("b", {45, 70}, 2)},
                        c) < 0.01);
  CHECK(run_and_compare(OpKind::add,
                        {random_tensor("a", {45, 70}, 3), random_tensor("b", {1, 70}, 4)},
                        c) < 0.01);
  CHECK(run_and_compare(OpKind::add, {random_tensor("a", {45, 70}, 5), random_tensor("b", {70}, 6)},
                        c) < 0.01);
  CHECK(run_and_compare(OpKind::add,
                        {random_tensor("a", {2, 3, 33, 40}, 7), random_tensor("b", {3, 1, 40}, 8)},
                        c) < 0.01);
  CHECK(run_and_compare(OpKind::add,
                        {random_tensor("a", {33, 1}, 9), random_tensor("b", {1, 40}, 10)},
                        c) < 0.01);
  CHECK(run_and_compare(OpKind::relu, {random_tensor("a", {2, 45, 70}, 11)}, c) == 0.0);
}

TEST_CASE("a wrong placement fails clearly and the device stays usable") {
  auto dev = make_device();
  Tensor a = random_tensor("a", {32, 32}, 1);
  TensorPlacement pa = a.placement(DType::bf16, 0), out = a.placement(DType::bf16, 1 << 20);
  out.name = "out";
  REQUIRE(dev->allocate(pa));
  const TensorPlacement* in[] = {&pa};
  const TensorPlacement* res[] = {&out};
  auto r = dev->launch(OpLaunch{OpKind::relu, "act1", in, res, OpConfig{}});
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("act1") != std::string::npos);
  CHECK(r.error().message.find("'out'") != std::string::npos);
  // Wrong page size.
  TensorPlacement bad = pa;
  bad.page_size = 1000;
  auto w = dev->write(bad, a.data);
  REQUIRE_FALSE(w);
  CHECK(w.error().message.find("page size") != std::string::npos);
  // A sharded DRAM buffer is refused with a clear error naming the tensor.
  TensorPlacement sharded = pa;
  sharded.memory = MemLayout::height_sharded;
  auto sa = dev->allocate(sharded);
  REQUIRE_FALSE(sa);
  CHECK(sa.error().code == ErrorCode::invalid_argument);
  CHECK(sa.error().message.find("'a'") != std::string::npos);
  CHECK(sa.error().message.find("L1") != std::string::npos);
  // Still usable.
  REQUIRE(dev->allocate(out));
  CHECK(dev->launch(OpLaunch{OpKind::relu, "act1", in, res, OpConfig{}}));
}

TEST_CASE("timing model: more cores and lower fidelity are faster") {
  ChipDesc chip = wormhole_b0();
  std::vector<int64_t> as{256, 1024}, bs{1024, 1024}, os{256, 1024};
  TensorPlacement a = make_interleaved("a", as, DType::bf16, BufferType::dram, 0);
  TensorPlacement b = make_interleaved("b", bs, DType::bf16, BufferType::dram, 0);
  TensorPlacement o = make_interleaved("o", os, DType::bf16, BufferType::dram, 0);
  const TensorPlacement* in[] = {&a, &b};
  const TensorPlacement* out[] = {&o};
  OpConfig one, many, lofi;
  many.grid_x = many.grid_y = 8;
  lofi = many;
  lofi.fidelity = MathFidelity::lofi;
  OpTiming t1 = estimate(chip, OpLaunch{OpKind::matmul, "m", in, out, one});
  OpTiming t64 = estimate(chip, OpLaunch{OpKind::matmul, "m", in, out, many});
  OpTiming tl = estimate(chip, OpLaunch{OpKind::matmul, "m", in, out, lofi});
  CHECK(t1.cores_used == 1);
  CHECK(t64.cores_used == 64);
  // 8 x 32 output tiles x 32 k-tiles x 32 cycles (HiFi2) on one core, at the achieved 89% of
  // the FPU peak (timing.cpp): 294,544 cycles; 64 cores: 4 tiles each; LoFi 16 cycles.
  CHECK(t1.compute_ns == 294544);  // ceil(262144 / 0.89)
  CHECK(t64.compute_ns == 4603);   // ceil(4096 / 0.89)
  CHECK(tl.compute_ns == 2302);    // ceil(2048 / 0.89)
  CHECK(t1.duration_ns > t64.duration_ns);
}

TEST_CASE("null backend answers unimplemented") {
  NullDevice null(wormhole_b0());
  TensorPlacement p;
  auto r = null.allocate(p);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::unimplemented);
  CHECK(null.descriptor().name == "wormhole_b0");
}

TEST_CASE("descriptors verify and hash") {
  ChipDesc d = wormhole_b0();
  CHECK(d.verify());
  CHECK(d.cores() == 64);
  CHECK(d.l1_usable_top() > d.l1_unreserved_base);
  CHECK(d.l1_usable_top() < d.l1_size);
  ChipDesc e = d;
  e.l1_size -= 16;
  CHECK(d.hash() != e.hash());
  e.l1_unreserved_base = e.l1_size;
  CHECK_FALSE(e.verify());
  auto unknown = builtin_chip("tpu_v9");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message.find("wormhole_b0") != std::string::npos);
  CHECK(builtin_chip("n150"));
}

TEST_CASE("to_memory_config moves a tensor between DRAM and L1 and converts dtype") {
  auto dev = make_device();
  Tensor a = random_tensor("a", {45, 70}, 21);
  TensorPlacement src = a.placement(DType::bf16, 0);
  TensorPlacement l1 = make_interleaved("a_l1", a.shape, DType::f32, BufferType::l1, 0);
  l1.address =
      wormhole_b0().l1_usable_top() - 4096;  // 6 pages over 64 cores: one f32 tile per core
  REQUIRE(dev->allocate(src));
  REQUIRE(dev->write(src, a.data));
  REQUIRE(dev->allocate(l1));
  const TensorPlacement* in[] = {&src};
  const TensorPlacement* out[] = {&l1};
  OpConfig c;
  c.grid_x = c.grid_y = 8;
  auto t = dev->launch(OpLaunch{OpKind::to_memory_config, "spill", in, out, c});
  REQUIRE(t);
  CHECK(t->compute_ns == 0);
  std::vector<float> back(a.data.size());
  REQUIRE(dev->read(l1, back));
  CHECK(back == a.data);
}
