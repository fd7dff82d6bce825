// Every error path of the emulated device on bad input (issue 3, "Bad input"): out of memory in L1
// and DRAM, misaligned and overlapping fixed addresses, shard shapes that do not tile, unsupported
// dtype/layout combinations, circular buffers reaching a live tensor, dead or short buffers, bad
// indices. Each error names the op (for launches), the tensor, and the core or bank and address
// where one is at fault; after each, the same device runs a good op correctly.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/placement.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::unique_ptr<EmulatedDevice> make_device() {
  auto d = EmulatedDevice::create(wormhole_b0());
  REQUIRE(d);
  return std::move(*d);
}

const std::vector<int64_t> kSmall{32, 64};

/// An L1 address `below` bytes under the usable top, rounded down to 64 bytes.
uint64_t under_top(const ChipDesc& chip, uint64_t below) {
  return (chip.l1_usable_top() - below) / 64 * 64;
}

/// Runs relu from an L1 tensor at the top of L1 into a DRAM tensor, checks the values, frees both,
/// and checks the allocators are back where they were and still consistent.
void good_op_runs(EmulatedDevice& dev) {
  size_t l1_live = dev.l1_allocator().live_buffers(),
         dram_live = dev.dram_allocator().live_buffers();
  TensorPlacement x = make_interleaved("good_x", kSmall, DType::f32, BufferType::l1,
                                       under_top(dev.descriptor(), 4096));
  TensorPlacement y =
      make_interleaved("good_y", kSmall, DType::f32, BufferType::dram, 512ull << 20);
  std::vector<float> in(static_cast<size_t>(volume(kSmall))), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 7) - 3.0f;
  REQUIRE(dev.allocate(x));
  REQUIRE(dev.allocate(y));
  REQUIRE(dev.write(x, in));
  const TensorPlacement* ins[] = {&x};
  const TensorPlacement* outs[] = {&y};
  OpConfig c;
  c.grid_x = c.grid_y = 2;
  auto r = dev.launch(OpLaunch{OpKind::relu, "good", ins, outs, c});
  REQUIRE_MESSAGE(r, r.error().message);
  REQUIRE(dev.read(y, out));
  for (size_t i = 0; i < in.size(); ++i) CHECK(out[i] == std::max(in[i], 0.0f));
  REQUIRE(dev.deallocate(x));
  REQUIRE(dev.deallocate(y));
  CHECK(dev.l1_allocator().live_buffers() == l1_live);
  CHECK(dev.dram_allocator().live_buffers() == dram_live);
  CHECK(dev.l1_allocator().verify());
  CHECK(dev.dram_allocator().verify());
}

OpConfig grid(uint16_t x, uint16_t y) {
  OpConfig c;
  c.grid_x = x;
  c.grid_y = y;
  return c;
}

}  // namespace

TEST_CASE("L1 out of memory: allocation past the usable top names tensor, cores and range") {
  auto dev = make_device();
  const ChipDesc& chip = dev->descriptor();
  // [1024, 2048] f32 interleaved over 64 cores: 32 tiles of 4 KiB per core = 128 KiB, placed so
  // it would end past the top.
  std::vector<int64_t> shape{1024, 2048};
  TensorPlacement t =
      make_interleaved("big", shape, DType::f32, BufferType::l1, under_top(chip, 64 * 1024));
  auto s = dev->allocate(t);
  REQUIRE_FALSE(s);
  CHECK(s.error().code == ErrorCode::resource_exhausted);
  CHECK(has(s.error().message, "'big'"));
  CHECK(has(s.error().message, "every core"));
  CHECK(has(s.error().message, "outside the allocatable range"));
  CHECK(has(s.error().message, std::to_string(under_top(chip, 64 * 1024))));
  good_op_runs(*dev);
}

TEST_CASE("L1 out of memory in an op: L1 result too big for a core names op, result and core") {
  auto dev = make_device();
  std::vector<int64_t> shape{8192, 8192};  // bf16: 2 MiB per core interleaved over 64 cores
  TensorPlacement x = make_interleaved("x", shape, DType::bf16, BufferType::dram, 0);
  TensorPlacement y = make_interleaved("huge_out", shape, DType::bf16, BufferType::l1, 0);
  const TensorPlacement* ins[] = {&x};
  const TensorPlacement* outs[] = {&y};
  auto r = dev->launch(OpLaunch{OpKind::relu, "act", ins, outs, grid(8, 8)});
  REQUIRE_FALSE(r);
  CHECK(has(r.error().message, "op 'act'"));
  CHECK(has(r.error().message, "'huge_out'"));
  CHECK(has(r.error().message, "core (0,0)"));
  good_op_runs(*dev);
}

TEST_CASE("DRAM out of memory names tensor, banks and range") {
  auto dev = make_device();
  const ChipDesc& chip = dev->descriptor();
  std::vector<int64_t> shape{4096, 4096};
  TensorPlacement t = make_interleaved("weights", shape, DType::f32, BufferType::dram,
                                       chip.dram_bank_size - 1024 * 1024);
  auto s = dev->allocate(t);
  REQUIRE_FALSE(s);
  CHECK(s.error().code == ErrorCode::resource_exhausted);
  CHECK(has(s.error().message, "'weights'"));
  CHECK(has(s.error().message, "DRAM bank"));
  CHECK(has(s.error().message, std::to_string(chip.dram_bank_size - 1024 * 1024)));
  // Fill DRAM with a live buffer, then a first-fit allocation through BankAllocator fails too.
  BankAllocator copy = dev->dram_allocator();
  auto a = copy.allocate(chip.dram_bank_size + 32, "too_big");
  REQUIRE_FALSE(a);
  CHECK(has(a.error().message, "'too_big'"));
  CHECK(has(a.error().message, "largest free block"));
  good_op_runs(*dev);
}

TEST_CASE("misaligned fixed addresses name tensor, address and alignment") {
  auto dev = make_device();
  const ChipDesc& chip = dev->descriptor();
  TensorPlacement l1 =
      make_interleaved("act", kSmall, DType::bf16, BufferType::l1, under_top(chip, 8192) + 8);
  auto s = dev->allocate(l1);
  REQUIRE_FALSE(s);
  CHECK(has(s.error().message, "'act'"));
  CHECK(has(s.error().message, "not aligned to 16"));
  CHECK(has(s.error().message, std::to_string(l1.address)));
  CHECK(has(s.error().message, "every core"));
  TensorPlacement dram = make_interleaved("w", kSmall, DType::bf16, BufferType::dram, 48);
  auto d = dev->allocate(dram);
  REQUIRE_FALSE(d);
  CHECK(has(d.error().message, "'w'"));
  CHECK(has(d.error().message, "not aligned to 32"));
  CHECK(has(d.error().message, "DRAM bank"));
  good_op_runs(*dev);
}

TEST_CASE("overlapping fixed addresses name both tensors and a core both use") {
  auto dev = make_device();
  const ChipDesc& chip = dev->descriptor();
  std::vector<int64_t> shape{256, 64};
  auto spec_a = even_shard_spec(shape, MemLayout::height_sharded, CoreRange{0, 0, 3, 1});
  auto spec_b = even_shard_spec(shape, MemLayout::height_sharded, CoreRange{2, 1, 5, 2});
  REQUIRE(spec_a);
  REQUIRE(spec_b);
  uint64_t at = under_top(chip, 65536);
  TensorPlacement a =
      make_sharded("first", shape, DType::bf16, MemLayout::height_sharded, *spec_a, at);
  TensorPlacement b =
      make_sharded("second", shape, DType::bf16, MemLayout::height_sharded, *spec_b, at + 1024);
  REQUIRE(dev->allocate(a));
  auto s = dev->allocate(b);
  REQUIRE_FALSE(s);
  CHECK(has(s.error().message, "'second'"));
  CHECK(has(s.error().message, "'first'"));
  CHECK(has(s.error().message, "overlaps"));
  CHECK(has(s.error().message, "core (2,1)"));  // the first core both shard grids hold
  REQUIRE(dev->deallocate(a));
  // DRAM: every bank reserves the same range, so the message names the banks.
  TensorPlacement p = make_interleaved("p", shape, DType::bf16, BufferType::dram, 0);
  TensorPlacement q = make_interleaved("q", shape, DType::bf16, BufferType::dram, 1024);
  REQUIRE(dev->allocate(p));
  auto d = dev->allocate(q);
  REQUIRE_FALSE(d);
  CHECK(has(d.error().message, "'q'"));
  CHECK(has(d.error().message, "overlaps live buffer 'p'"));
  CHECK(has(d.error().message, "12 DRAM banks"));
  REQUIRE(dev->deallocate(p));
  good_op_runs(*dev);
}

TEST_CASE("shard shapes that do not tile, or do not fit the grid, name tensor and cores") {
  auto dev = make_device();
  const ChipDesc& chip = dev->descriptor();
  std::vector<int64_t> shape{80, 96};
  ShardSpec spec;
  spec.grid = CoreRange{0, 0, 1, 0};
  spec.shape[0] = 40;  // not a multiple of 32
  spec.shape[1] = 96;
  uint64_t at = under_top(chip, 65536);
  TensorPlacement t = make_sharded("half", shape, DType::bf16, MemLayout::height_sharded, spec, at);
  auto s = dev->allocate(t);
  REQUIRE_FALSE(s);
  CHECK(has(s.error().message, "'half'"));
  CHECK(has(s.error().message, "does not tile"));
  // The same placement as an op's result: the launch names the op too.
  TensorPlacement x = make_interleaved("x", shape, DType::bf16, BufferType::dram, 0);
  const TensorPlacement* ins[] = {&x};
  const TensorPlacement* outs[] = {&t};
  auto r = dev->launch(OpLaunch{OpKind::relu, "act", ins, outs, grid(2, 1)});
  REQUIRE_FALSE(r);
  CHECK(has(r.error().message, "op 'act'"));
  CHECK(has(r.error().message, "'half'"));
  CHECK(has(r.error().message, "does not tile"));
  // Whole tiles, but a grid past the chip's edge: names the missing core.
  spec.shape[0] = 32;
  spec.grid = CoreRange{7, 0, 8, 1};
  t = make_sharded("edge", shape, DType::bf16, MemLayout::height_sharded, spec, at);
  s = dev->allocate(t);
  REQUIRE_FALSE(s);
  CHECK(has(s.error().message, "'edge'"));
  CHECK(has(s.error().message, "core (8,1) does not exist"));
  // Too few cores for the shards.
  spec.grid = CoreRange{0, 0, 0, 0};
  t = make_sharded("crowded", shape, DType::bf16, MemLayout::height_sharded, spec, at);
  s = dev->allocate(t);
  REQUIRE_FALSE(s);
  CHECK(has(s.error().message, "'crowded'"));
  CHECK(has(s.error().message, "the grid has 1 cores"));
  good_op_runs(*dev);
}

TEST_CASE("unsupported dtype and layout combinations name op and tensor") {
  auto dev = make_device();
  // bf8b is a block format: never row-major.
  TensorPlacement rm = make_interleaved("blocky", kSmall, DType::bf8b, BufferType::dram, 0);
  rm.layout = TileLayout::row_major;
  auto s = dev->allocate(rm);
  REQUIRE_FALSE(s);
  CHECK(has(s.error().message, "'blocky'"));
  CHECK(has(s.error().message, "must be tiled"));
  // Sharded DRAM.
  TensorPlacement sd = make_interleaved("sd", kSmall, DType::bf16, BufferType::dram, 0);
  sd.memory = MemLayout::width_sharded;
  s = dev->allocate(sd);
  REQUIRE_FALSE(s);
  CHECK(has(s.error().message, "'sd'"));
  CHECK(has(s.error().message, "must be in L1"));
  // Compute ops take tiled operands only.
  TensorPlacement x =
      make_interleaved("rows", kSmall, DType::bf16, BufferType::dram, 0, TileLayout::row_major);
  TensorPlacement y = make_interleaved("y", kSmall, DType::bf16, BufferType::dram, 1 << 20);
  REQUIRE(dev->allocate(x));
  REQUIRE(dev->allocate(y));
  const TensorPlacement* ins[] = {&x};
  const TensorPlacement* outs[] = {&y};
  auto r = dev->launch(OpLaunch{OpKind::gelu, "act", ins, outs, grid(1, 1)});
  REQUIRE_FALSE(r);
  CHECK(has(r.error().message, "op 'act' (gelu)"));
  CHECK(has(r.error().message, "operand 'rows' must be tiled"));
  // Embedding indices must be integers.
  std::vector<int64_t> ids_shape{1, 32}, table_shape{64, 64}, emb_shape{1, 32, 64};
  TensorPlacement ids = make_interleaved("ids", ids_shape, DType::bf16, BufferType::dram, 2 << 20);
  TensorPlacement table =
      make_interleaved("table", table_shape, DType::bf16, BufferType::dram, 3 << 20);
  TensorPlacement emb = make_interleaved("emb", emb_shape, DType::bf16, BufferType::dram, 4 << 20);
  const TensorPlacement* eins[] = {&ids, &table};
  const TensorPlacement* eouts[] = {&emb};
  r = dev->launch(OpLaunch{OpKind::embedding, "embed", eins, eouts, grid(1, 1)});
  REQUIRE_FALSE(r);
  CHECK(has(r.error().message, "op 'embed'"));
  CHECK(has(r.error().message, "indices 'ids' must be i32 or u32"));
  REQUIRE(dev->deallocate(x));
  REQUIRE(dev->deallocate(y));
  good_op_runs(*dev);
}

TEST_CASE("circular buffers reaching a live L1 tensor name op, core, tensor and address") {
  auto dev = make_device();
  const ChipDesc& chip = dev->descriptor();
  TensorPlacement x = make_interleaved("x", kSmall, DType::bf16, BufferType::dram, 0);
  TensorPlacement y = make_interleaved("y", kSmall, DType::bf16, BufferType::dram, 1 << 20);
  REQUIRE(dev->allocate(x));
  REQUIRE(dev->allocate(y));
  const TensorPlacement* ins[] = {&x};
  const TensorPlacement* outs[] = {&y};
  // A tensor sharded on core (5,6) only, at the bottom of L1: the op on the 4x4 grid does not
  // run there, so it is no obstacle.
  ShardSpec spec;
  spec.grid = CoreRange{5, 6, 5, 6};
  spec.shape[0] = 32;
  spec.shape[1] = 64;
  TensorPlacement low_far = make_sharded("low_far", kSmall, DType::bf16, MemLayout::height_sharded,
                                         spec, chip.l1_unreserved_base);
  REQUIRE(dev->allocate(low_far));
  CHECK(dev->launch(OpLaunch{OpKind::relu, "act", ins, outs, grid(4, 4)}));
  // On a grid that reaches core (5,6), the circular buffers clash with it.
  auto r = dev->launch(OpLaunch{OpKind::relu, "act", ins, outs, grid(8, 8)});
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::resource_exhausted);
  CHECK(has(r.error().message, "op 'act'"));
  CHECK(has(r.error().message, "core (5,6)"));
  CHECK(has(r.error().message, "'low_far'"));
  CHECK(has(r.error().message, std::to_string(chip.l1_unreserved_base)));
  REQUIRE(dev->deallocate(low_far));
  CHECK(dev->launch(OpLaunch{OpKind::relu, "act", ins, outs, grid(8, 8)}));
  REQUIRE(dev->deallocate(x));
  REQUIRE(dev->deallocate(y));
  good_op_runs(*dev);
}

TEST_CASE("dead, short or mis-sized buffers name the op, tensor and address") {
  auto dev = make_device();
  TensorPlacement x = make_interleaved("x", kSmall, DType::bf16, BufferType::dram, 0);
  TensorPlacement y = make_interleaved("y", kSmall, DType::bf16, BufferType::dram, 1 << 20);
  REQUIRE(dev->allocate(y));
  const TensorPlacement* ins[] = {&x};
  const TensorPlacement* outs[] = {&y};
  // Operand never allocated.
  auto r = dev->launch(OpLaunch{OpKind::relu, "act", ins, outs, grid(1, 1)});
  REQUIRE_FALSE(r);
  CHECK(has(r.error().message, "op 'act'"));
  CHECK(has(r.error().message, "operand 'x'"));
  INFO(r.error().message);
  CHECK(has(r.error().message, "no live dram buffer at address 0"));
  // A buffer too small for the tensor that claims it.
  std::vector<int64_t> bigger{64, 64};
  REQUIRE(dev->allocate(x));
  TensorPlacement grown = make_interleaved("grown", bigger, DType::f32, BufferType::dram, 0);
  const TensorPlacement* gins[] = {&grown};
  const TensorPlacement* gouts[] = {&y};
  std::vector<int64_t> out_shape = bigger;
  TensorPlacement y2 = make_interleaved("y2", out_shape, DType::f32, BufferType::dram, 2 << 20);
  REQUIRE(dev->allocate(y2));
  gouts[0] = &y2;
  r = dev->launch(OpLaunch{OpKind::relu, "act", gins, gouts, grid(1, 1)});
  REQUIRE_FALSE(r);
  CHECK(has(r.error().message, "'grown'"));
  CHECK(has(r.error().message, "holds"));
  // Host buffers of the wrong size.
  std::vector<float> wrong(5);
  auto w = dev->write(x, wrong);
  REQUIRE_FALSE(w);
  CHECK(has(w.error().message, "'x'"));
  auto rd = dev->read(x, wrong);
  REQUIRE_FALSE(rd);
  CHECK(has(rd.error().message, "'x'"));
  // Freeing twice.
  REQUIRE(dev->deallocate(y2));
  auto d = dev->deallocate(y2);
  REQUIRE_FALSE(d);
  CHECK(has(d.error().message, "'y2'"));
  CHECK(has(d.error().message, std::to_string(2 << 20)));
  REQUIRE(dev->deallocate(x));
  REQUIRE(dev->deallocate(y));
  good_op_runs(*dev);
}

TEST_CASE("an embedding index out of range names op and tensor and leaves the result untouched") {
  auto dev = make_device();
  std::vector<int64_t> ids_shape{1, 4}, table_shape{8, 32}, emb_shape{1, 4, 32};
  TensorPlacement ids = make_interleaved("ids", ids_shape, DType::i32, BufferType::dram, 0);
  TensorPlacement table =
      make_interleaved("table", table_shape, DType::f32, BufferType::dram, 1 << 20);
  TensorPlacement emb = make_interleaved("emb", emb_shape, DType::f32, BufferType::dram, 2 << 20);
  for (auto* t : {&ids, &table, &emb}) REQUIRE(dev->allocate(*t));
  std::vector<float> table_values(8 * 32, 1.0f), before(4 * 32, -5.0f), after(4 * 32);
  REQUIRE(dev->write(table, table_values));
  REQUIRE(dev->write(emb, before));
  REQUIRE(dev->write(ids, std::vector<float>{1, 2, 9, 3}));
  const TensorPlacement* ins[] = {&ids, &table};
  const TensorPlacement* outs[] = {&emb};
  auto r = dev->launch(OpLaunch{OpKind::embedding, "embed", ins, outs, grid(1, 1)});
  REQUIRE_FALSE(r);
  CHECK(has(r.error().message, "op 'embed'"));
  CHECK(has(r.error().message, "'ids'"));
  CHECK(has(r.error().message, "index 9"));
  CHECK(has(r.error().message, "'table'"));
  REQUIRE(dev->read(emb, after));
  CHECK(after == before);
  // Fixed indices: the same buffers work.
  REQUIRE(dev->write(ids, std::vector<float>{1, 2, 7, 3}));
  CHECK(dev->launch(OpLaunch{OpKind::embedding, "embed", ins, outs, grid(1, 1)}));
  for (auto* t : {&ids, &table, &emb}) REQUIRE(dev->deallocate(*t));
  good_op_runs(*dev);
}

TEST_CASE(
    "values a dtype cannot hold name the tensor, and in an op the op, tile, core and address") {
  auto dev = make_device();
  const ChipDesc& chip = dev->descriptor();
  // Host write of inf into a bf8b tensor.
  TensorPlacement b8 = make_interleaved("blocky", kSmall, DType::bf8b, BufferType::dram, 0);
  REQUIRE(dev->allocate(b8));
  std::vector<float> values(static_cast<size_t>(volume(kSmall)), 1.0f);
  values[40] = std::numeric_limits<float>::infinity();
  auto w = dev->write(b8, values);
  REQUIRE_FALSE(w);
  CHECK(has(w.error().message, "writing tensor 'blocky'"));
  CHECK(has(w.error().message, "bf8b cannot hold inf"));
  REQUIRE(dev->deallocate(b8));
  // exp(100) overflows f32 to inf, which the bf8b L1 result cannot hold.
  TensorPlacement x = make_interleaved("logits", kSmall, DType::f32, BufferType::dram, 0);
  TensorPlacement y =
      make_interleaved("probs", kSmall, DType::bf8b, BufferType::l1, under_top(chip, 4096));
  REQUIRE(dev->allocate(x));
  REQUIRE(dev->allocate(y));
  std::fill(values.begin(), values.end(), 100.0f);
  REQUIRE(dev->write(x, values));
  const TensorPlacement* ins[] = {&x};
  const TensorPlacement* outs[] = {&y};
  auto r = dev->launch(OpLaunch{OpKind::exp, "expo", ins, outs, grid(1, 1)});
  REQUIRE_FALSE(r);
  CHECK(has(r.error().message, "op 'expo'"));
  CHECK(has(r.error().message,
            "tensor 'probs' tile 0 on core (0,0) at L1 address " + std::to_string(y.address)));
  CHECK(has(r.error().message, "bf8b cannot hold inf"));
  // Smaller logits fit.
  std::fill(values.begin(), values.end(), 2.0f);
  REQUIRE(dev->write(x, values));
  CHECK(dev->launch(OpLaunch{OpKind::exp, "expo", ins, outs, grid(1, 1)}));
  REQUIRE(dev->deallocate(x));
  REQUIRE(dev->deallocate(y));
  good_op_runs(*dev);
}
