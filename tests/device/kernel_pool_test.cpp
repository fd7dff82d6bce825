// The kernels' one dispatch helper: ops big enough run their emulated cores on the pool, tiny ones
// inline, and both paths write the same bytes (each core writes only its own output tiles).
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "meshplan/device/placement.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

struct Input {
  std::vector<int64_t> shape;
  DType dtype = DType::bf16;
};

std::unique_ptr<EmulatedDevice> make_device(unsigned threads) {
  auto d = EmulatedDevice::create(wormhole_b0());
  REQUIRE(d);
  (*d)->set_core_threads(threads);
  return std::move(*d);
}

/// Runs `kind` on `dev` with operands in DRAM (deterministic random values) and the result at
/// `result` (its address and shape filled in here); returns the result as read back.
std::vector<float> run(EmulatedDevice& dev, OpKind kind, const std::vector<Input>& ins,
                       const OpConfig& config, TensorPlacement result) {
  dev.reset();
  std::vector<std::span<const int64_t>> shapes;
  std::vector<DType> dtypes;
  for (const Input& in : ins) {
    shapes.emplace_back(in.shape);
    dtypes.push_back(in.dtype);
  }
  auto out_shape = infer_shape(kind, shapes, config);
  REQUIRE_MESSAGE(out_shape, out_shape.error().message);
  std::vector<TensorPlacement> ps;
  uint64_t address = 0;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (const Input& in : ins) {
    ps.push_back(make_interleaved("x", in.shape, in.dtype, BufferType::dram, address));
    address += 64ull << 20;
    std::vector<float> values(static_cast<size_t>(volume(in.shape)));
    for (float& v : values) v = dist(rng);
    REQUIRE(dev.allocate(ps.back()));
    REQUIRE(dev.write(ps.back(), values));
  }
  result.shape = *out_shape;
  if (result.buffer == BufferType::dram) result.address = address;
  REQUIRE(dev.allocate(result));
  std::vector<const TensorPlacement*> inp, outp{&result};
  for (auto& p : ps) inp.push_back(&p);
  auto r = dev.launch(OpLaunch{kind, "op", inp, outp, config});
  REQUIRE_MESSAGE(r, r.error().message);
  std::vector<float> got(static_cast<size_t>(volume(result.shape)));
  REQUIRE(dev.read(result, got));
  return got;
}

OpConfig grid(uint16_t x, uint16_t y) {
  OpConfig c;
  c.grid_x = x;
  c.grid_y = y;
  return c;
}

}  // namespace

TEST_CASE("big ops run on the pool and write exactly the bytes the serial path writes") {
  auto serial = make_device(1), pooled = make_device(2);
  REQUIRE(serial->core_threads() == 1);
  REQUIRE(pooled->core_threads() == 2);
  struct Case {
    const char* what;
    OpKind kind;
    std::vector<Input> ins;
    OpConfig config;
    MemLayout result_memory = MemLayout::interleaved;
  };
  std::vector<Case> cases;
  cases.push_back({"add", OpKind::add, {{{4, 256, 256}}, {{4, 256, 256}}}, grid(8, 8)});
  cases.push_back({"add broadcast", OpKind::add, {{{4, 256, 256}}, {{1, 256}}}, grid(8, 8)});
  cases.push_back({"gelu", OpKind::gelu, {{{4, 256, 256}}}, grid(8, 8)});
  cases.push_back({"typecast", OpKind::typecast, {{{4, 256, 256}}}, grid(8, 8)});
  cases.back().config.dtype = DType::bf16;
  cases.push_back({"permute", OpKind::permute, {{{2, 128, 256}}}, grid(8, 8)});
  cases.back().config.num_dims = 3;
  cases.back().config.dims[0] = 0;
  cases.back().config.dims[1] = 2;
  cases.back().config.dims[2] = 1;
  for (int d : {-1, 1, 0}) {
    cases.push_back({"softmax", OpKind::softmax, {{{4, 256, 256}}}, grid(8, 8)});
    cases.back().config.num_dims = 1;
    cases.back().config.dims[0] = static_cast<int8_t>(d);
  }
  cases.push_back({"layer_norm", OpKind::layer_norm, {{{4, 256, 256}}, {{256}}}, grid(8, 8)});
  cases.push_back({"reduce_sum", OpKind::reduce_sum, {{{4, 256, 256}}}, grid(8, 8)});
  cases.back().config.num_dims = 1;
  cases.back().config.dims[0] = 1;
  OpConfig conv = grid(8, 8);
  conv.kernel[0] = conv.kernel[1] = 3;
  conv.padding[0] = conv.padding[1] = conv.padding[2] = conv.padding[3] = 1;
  cases.push_back({"conv2d", OpKind::conv2d, {{{1, 32, 32, 32}}, {{32, 3, 3, 32}}}, conv});
  cases.push_back({"max_pool2d", OpKind::max_pool2d, {{{1, 64, 64, 64}}}, conv});
  cases.push_back({"matmul", OpKind::matmul, {{{256, 256}}, {{256, 256}}}, grid(8, 8)});
  cases.push_back({"to_memory_config", OpKind::to_memory_config, {{{8, 256, 256}}}, grid(8, 8)});
  cases.push_back({"to_memory_config height-sharded",
                   OpKind::to_memory_config,
                   {{{8, 256, 256}}},
                   grid(8, 8),
                   MemLayout::height_sharded});
  for (const Case& c : cases) {
    CAPTURE(c.what);
    std::vector<int64_t> shape;
    {
      std::vector<std::span<const int64_t>> shapes;
      for (const Input& in : c.ins) shapes.emplace_back(in.shape);
      auto s = infer_shape(c.kind, shapes, c.config);
      REQUIRE(s);
      shape.assign(s->begin(), s->end());
    }
    TensorPlacement result;
    if (c.result_memory == MemLayout::interleaved) {
      result = make_interleaved("y", shape, DType::bf16, BufferType::dram, 0);
    } else {
      auto spec = even_shard_spec(shape, c.result_memory, CoreRange{0, 0, 7, 7});
      REQUIRE(spec);
      result = make_sharded("y", shape, DType::bf16, c.result_memory, *spec, 0);
      result.address =
          (wormhole_b0().l1_usable_top() - AddressMap(result, wormhole_b0()).bytes_per_bank()) /
          64 * 64;
    }
    uint64_t jobs = pooled->pooled_jobs();
    std::vector<float> a = run(*serial, c.kind, c.ins, c.config, result);
    std::vector<float> b = run(*pooled, c.kind, c.ins, c.config, result);
    CHECK(pooled->pooled_jobs() > jobs);
    REQUIRE(a.size() == b.size());
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }
  CHECK(serial->pooled_jobs() == 0);
}

TEST_CASE("tiny ops stay inline on the caller") {
  auto dev = make_device(2);
  OpConfig c = grid(8, 8);
  for (OpKind kind : {OpKind::relu, OpKind::softmax, OpKind::matmul, OpKind::reduce_max}) {
    CAPTURE(op_name(kind));
    std::vector<Input> ins{{{32, 64}}};
    if (kind == OpKind::matmul) ins.push_back({{64, 32}});
    uint64_t jobs = dev->pooled_jobs();
    auto shape = std::vector<int64_t>{32, 32};
    run(*dev, kind, ins, c, make_interleaved("y", shape, DType::bf16, BufferType::dram, 0));
    CHECK(dev->pooled_jobs() == jobs);
  }
}
