// The layout and dtype rules OpModel takes from tt-metal's binary eltwise, conv2d, softmax and
// layer/RMS norm validation (docs/hardware-rules.md): for each rule a launch it accepts and one
// it refuses with tt-metal's reason, and the emulator refusing the same launch.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/placement.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

/// One launch over placements the test owns (validate ignores addresses).
struct Launch {
  OpKind kind;
  std::vector<TensorPlacement> ps;  // operands, then the result
  OpConfig config;
  mutable std::vector<const TensorPlacement*> in, out;

  Launch(OpKind k, std::vector<TensorPlacement> p) : kind(k), ps(std::move(p)) {
    config.grid_x = 8;
    config.grid_y = 8;
  }
  OpLaunch op() const {
    in.clear();
    for (size_t i = 0; i + 1 < ps.size(); ++i) in.push_back(&ps[i]);
    out = {&ps.back()};
    return OpLaunch{kind, "op", in, out, config};
  }
};

// Placements hold a view of their shape: the shapes passed below outlive them.
TensorPlacement dram(const char* name, const std::vector<int64_t>& shape, DType dt = DType::bf16) {
  static uint64_t next = 0;
  next += 16 << 20;
  return make_interleaved(name, shape, dt, BufferType::dram, next % (512u << 20));
}

/// `shape` split evenly over the cores (x0,y0)-(x1,y1) for `memory`.
TensorPlacement l1(const char* name, const std::vector<int64_t>& shape, MemLayout memory,
                   CoreRange grid, DType dt = DType::bf16) {
  auto spec = even_shard_spec(shape, memory, grid);
  REQUIRE(spec);
  return make_sharded(name, shape, dt, memory, *spec, 1 << 20);
}

std::string reason(const Launch& l) {
  OpValidation v = OpModel(wormhole_b0()).validate(l.op());
  return v.ok ? std::string("accepted") : v.reason;
}

bool has(const std::string& s, const char* what) {
  return s.find(what) != std::string::npos;
}

const std::vector<int64_t> kX{64, 256};  // 2 x 8 tiles
constexpr CoreRange kTwo{0, 0, 1, 0};    // two cores in a row
constexpr CoreRange kTwoLow{0, 1, 1, 1};
constexpr CoreRange kFour{0, 0, 3, 0};
constexpr CoreRange kBlock{0, 0, 1, 1};  // 2x2 cores

}  // namespace

TEST_CASE("binary eltwise: two sharded operands share layout and shard spec") {
  auto hs = [](const char* n) { return l1(n, kX, MemLayout::height_sharded, kTwo); };
  CHECK(reason(Launch(OpKind::add, {hs("a"), hs("b"), hs("c")})) == "accepted");
  CHECK(reason(Launch(OpKind::add, {hs("a"), hs("b"), dram("c", kX)})) == "accepted");
  std::string r = reason(
      Launch(OpKind::add, {hs("a"), l1("b", kX, MemLayout::width_sharded, kFour), dram("c", kX)}));
  CHECK(has(r, "operands 'a'"));
  CHECK(has(r, "both sharded but differently"));
  // Same layout, other cores: still two shard specs.
  r = reason(Launch(OpKind::multiply,
                    {hs("a"), l1("b", kX, MemLayout::height_sharded, kTwoLow), dram("c", kX)}));
  CHECK(has(r, "both sharded but differently"));
  // Compares are the same device operation.
  r = reason(
      Launch(OpKind::lt, {hs("a"), l1("b", kX, MemLayout::block_sharded, kBlock), dram("c", kX)}));
  CHECK(has(r, "both sharded but differently"));
}

TEST_CASE("binary eltwise: a sharded result keeps its sharded operand's layout and shard spec") {
  auto hs = [](const char* n, CoreRange g) { return l1(n, kX, MemLayout::height_sharded, g); };
  // Both interleaved: any result layout.
  CHECK(reason(Launch(OpKind::add, {dram("a", kX), dram("b", kX),
                                    l1("c", kX, MemLayout::block_sharded, kBlock)})) == "accepted");
  // Only b sharded: the result follows b.
  CHECK(reason(Launch(OpKind::subtract, {dram("a", kX), hs("b", kTwo), hs("c", kTwo)})) ==
        "accepted");
  std::string r = reason(Launch(OpKind::subtract, {dram("a", kX), hs("b", kTwo),
                                                   l1("c", kX, MemLayout::width_sharded, kFour)}));
  CHECK(has(r, "result 'c' is width_sharded but operand 'b' is height_sharded"));
  r = reason(Launch(OpKind::add,
                    {hs("a", kTwo), dram("b", kX), l1("c", kX, MemLayout::block_sharded, kBlock)}));
  CHECK(has(r, "in its sharded operand's memory layout"));
  // Same layout on other cores.
  r = reason(Launch(OpKind::add, {hs("a", kTwo), dram("b", kX), hs("c", kTwoLow)}));
  CHECK(has(r, "result 'c'"));
  CHECK(has(r, "shard spec from its sharded operand"));
}

TEST_CASE("conv2d: the weights are not sharded") {
  // 1x1 conv [1,8,8,32] -> 32 channels; weight prepared [KH*KW*I, O] = [32, 32].
  std::vector<int64_t> xs{1, 8, 8, 32}, ws{32, 32};
  Launch ok(OpKind::conv2d, {dram("x", xs), dram("w", ws), dram("y", xs)});
  CHECK(reason(ok) == "accepted");
  Launch bad(OpKind::conv2d,
             {dram("x", xs), l1("w", ws, MemLayout::height_sharded, {0, 0, 0, 0}), dram("y", xs)});
  std::string r = reason(bad);
  CHECK(has(r, "weights 'w' are height_sharded"));
  CHECK(has(r, "Weights tensor should not be sharded"));
}

TEST_CASE("softmax: dtypes, and a sharded softmax runs in place over the last dim") {
  CHECK(reason(Launch(OpKind::softmax, {dram("x", kX), dram("y", kX)})) == "accepted");
  CHECK(reason(Launch(OpKind::softmax, {dram("x", kX, DType::f32), dram("y", kX, DType::f32)})) ==
        "accepted");
  std::string r =
      reason(Launch(OpKind::softmax, {dram("x", kX, DType::bf4b), dram("y", kX, DType::bf4b)}));
  CHECK(has(r, "operand 'x' is bf4b"));
  CHECK(has(r, "Input tensor must be FLOAT32, BFLOAT16, or BFLOAT8_B"));

  auto hs = [](const char* n) { return l1(n, kX, MemLayout::height_sharded, kTwo); };
  CHECK(reason(Launch(OpKind::softmax, {hs("x"), hs("y")})) == "accepted");
  r = reason(Launch(OpKind::softmax, {hs("x"), dram("y", kX)}));
  CHECK(has(r, "result 'y' is not placed like operand 'x'"));
  CHECK(has(r, "Operation must be inplace"));
  // Whole rows per shard: [64, 256] width-sharded on 4 cores holds 64 of 256 columns, block
  // sharded on 2 x 2 cores 128; refused even in place.
  auto ws = [](const char* n) { return l1(n, kX, MemLayout::width_sharded, kFour); };
  auto bs = [](const char* n) { return l1(n, kX, MemLayout::block_sharded, kBlock); };
  r = reason(Launch(OpKind::softmax, {ws("x"), ws("y")}));
  CHECK(has(r, "operand 'x' (width_sharded [64, 64] on (0,0)-(3,0)) holds 64 of each row's 256"));
  CHECK(has(r, "shard width must equal to input tensor shape[3]"));
  r = reason(Launch(OpKind::softmax, {bs("x"), bs("y")}));
  CHECK(has(r, "holds 128 of each row's 256 columns"));
  // The padded row: [64, 200] is 7 tile columns, so a height shard is 224 wide and holds it.
  const std::vector<int64_t> odd{64, 200};
  auto hs_odd = [&](const char* n) { return l1(n, odd, MemLayout::height_sharded, kTwo); };
  CHECK(reason(Launch(OpKind::softmax, {hs_odd("x"), hs_odd("y")})) == "accepted");
  // Over the rows dim.
  Launch rows(OpKind::softmax, {hs("x"), hs("y")});
  rows.config.num_dims = 1;
  rows.config.dims[0] = 0;
  r = reason(rows);
  CHECK(has(r, "softmax is over dim 0 of 2"));
  rows.ps = {dram("x", kX), dram("y", kX)};
  CHECK(reason(rows) == "accepted");
}

TEST_CASE("layer and RMS norm: dtypes, and sharded inputs give like-sharded results") {
  for (OpKind k : {OpKind::layer_norm, OpKind::rms_norm}) {
    CAPTURE(op_name(k));
    CHECK(reason(Launch(k, {dram("x", kX), dram("y", kX)})) == "accepted");
    std::string r = reason(Launch(k, {dram("x", kX, DType::bf4b), dram("y", kX, DType::bf4b)}));
    CHECK(has(r, "Input tensor must be FLOAT32, BFLOAT16, or BFLOAT8_B"));
    auto ws = [](const char* n) { return l1(n, kX, MemLayout::width_sharded, kFour); };
    auto bs = [](const char* n) { return l1(n, kX, MemLayout::block_sharded, kBlock); };
    auto hs = [](const char* n) { return l1(n, kX, MemLayout::height_sharded, kTwo); };
    CHECK(reason(Launch(k, {ws("x"), ws("y")})) == "accepted");
    CHECK(reason(Launch(k, {bs("x"), bs("y")})) == "accepted");
    CHECK(has(reason(Launch(k, {hs("x"), dram("y", kX)})), "Height sharded inputs"));
    CHECK(has(reason(Launch(k, {hs("x"), hs("y")})), "Height sharded inputs are not supported"));
    CHECK(
        has(reason(Launch(k, {ws("x"), dram("y", kX)})), "Sharded inputs require sharded outputs"));
    CHECK(has(reason(Launch(k, {bs("x"), ws("y")})), "Input and output memory layouts must match"));
    // A sharded result from an interleaved input is the interleaved program's choice.
    CHECK(reason(Launch(k, {dram("x", kX), hs("y")})) == "accepted");
  }
}

TEST_CASE("the emulator refuses what the layout rules refuse, with the same reason") {
  auto dev = EmulatedDevice::create(wormhole_b0());
  REQUIRE(dev);
  auto hs = [](const char* n) { return l1(n, kX, MemLayout::height_sharded, kTwo); };
  Launch l(OpKind::softmax, {hs("x"), dram("y", kX)});
  std::string want = reason(l);
  REQUIRE(has(want, "Operation must be inplace"));
  auto got = (*dev)->launch(l.op());
  REQUIRE_FALSE(got);
  CHECK(got.error().message == want);
}
