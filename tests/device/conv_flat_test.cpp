// conv2d and pools on flattened [1, 1, N*H*W, C] activations (OpConfig::input_n/h/w, as TTNN
// runs them): the same numbers as the NHWC form from the shape rule, the reference and the
// kernels, on DRAM and on L1 height-sharded layouts; bad geometry is an error naming the values;
// conv blocking and timing work from the flat form's tile grid.
#include <doctest/doctest.h>

#include "device/op_test_util.hpp"
#include "meshplan/device/conv_blocking.hpp"
#include "meshplan/device/timing.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

OpConfig window_config(int kh, int kw, int sh, int sw, std::array<int, 4> pad, int dh = 1,
                       int dw = 1, int groups = 1) {
  OpConfig c = grid_config();
  c.kernel[0] = kh, c.kernel[1] = kw;
  c.stride[0] = sh, c.stride[1] = sw;
  for (int i = 0; i < 4; ++i) c.padding[i] = pad[i];
  c.dilation[0] = dh, c.dilation[1] = dw;
  c.groups = groups;
  return c;
}

/// The flattened twin of an NHWC input and config: same bytes, shape [1, 1, N*H*W, C].
OpInput flat_input(const OpInput& x) {
  OpInput f = x;
  f.shape = {1, 1, x.shape[0] * x.shape[1] * x.shape[2], x.shape[3]};
  return f;
}
OpConfig flat_config(OpConfig c, const OpInput& nhwc) {
  c.input_n = static_cast<uint32_t>(nhwc.shape[0]);
  c.input_h = static_cast<uint32_t>(nhwc.shape[1]);
  c.input_w = static_cast<uint32_t>(nhwc.shape[2]);
  return c;
}

/// Runs the op in both forms (DRAM layouts) and checks: the flat result shape, the reference
/// values equal element for element (same row-major order), the kernels match the reference.
void check_both_forms(OpKind kind, std::vector<OpInput> ins, const OpConfig& c) {
  OpRun nhwc = run_op(kind, ins, c);
  OpInput x = ins[0];
  ins[0] = flat_input(x);
  OpRun flat = run_op(kind, ins, flat_config(c, x));
  const auto& s = nhwc.shape;
  CHECK(flat.shape == std::vector<int64_t>{1, 1, s[0] * s[1] * s[2], s[3]});
  CHECK(flat.want == nhwc.want);
  CHECK(flat.got == nhwc.got);  // Same dot products in the same order: bit-equal.
  CHECK(flat.rel_err() < 0.01);
  CHECK(nhwc.rel_err() < 0.01);
}

/// Height-sharded L1 placement of `shape` over as many of 3, 2, 1 cores (in a row) as evenly
/// split its tile rows, at per-core L1 address `address`.
device::TensorPlacement l1_sharded(std::string_view name, const std::vector<int64_t>& shape,
                                   uint64_t address) {
  int64_t tiles = device::tile_grid(shape).tiles_h;
  uint16_t cores = tiles % 3 == 0 ? 3 : tiles % 2 == 0 ? 2 : 1;
  auto spec = device::even_shard_spec(shape, device::MemLayout::height_sharded,
                                      device::CoreRange{0, 0, static_cast<uint16_t>(cores - 1), 0});
  REQUIRE_MESSAGE(spec, spec.error().message);
  return device::make_sharded(name, shape, DType::bf16, device::MemLayout::height_sharded, *spec,
                              address);
}

/// Runs the op with input 0 and the result height-sharded in L1 (other operands in DRAM) and
/// returns what the device computed (compared by the caller with the reference).
OpRun run_l1_sharded(OpKind kind, const std::vector<OpInput>& ins, OpConfig c) {
  auto dev_or = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev_or);
  auto& dev = *dev_or;
  const device::ChipDesc& chip = device::wormhole_b0();
  std::vector<std::span<const int64_t>> shapes;
  for (const OpInput& t : ins) shapes.emplace_back(t.shape);
  auto out_shape = device::infer_shape(kind, shapes, c);
  REQUIRE_MESSAGE(out_shape, out_shape.error().message);
  OpRun run;
  run.shape = *out_shape;
  uint64_t top = chip.l1_usable_top();
  std::vector<device::TensorPlacement> ps;
  ps.push_back(l1_sharded("x", ins[0].shape, top - (64 << 10)));
  for (size_t i = 1; i < ins.size(); ++i)
    ps.push_back(device::make_interleaved(ins[i].name, ins[i].shape, DType::bf16,
                                          device::BufferType::dram, (i * 64ull) << 20));
  device::TensorPlacement out = l1_sharded("y", run.shape, top - (128 << 10));
  c.grid_x = static_cast<uint16_t>(out.shard.grid.x1 + 1);
  c.grid_y = 1;
  for (size_t i = 0; i < ins.size(); ++i) {
    REQUIRE(dev->allocate(ps[i]));
    REQUIRE(dev->write(ps[i], ins[i].data));
  }
  REQUIRE(dev->allocate(out));
  std::vector<const device::TensorPlacement*> inp, outp{&out};
  for (auto& p : ps) inp.push_back(&p);
  auto timing = dev->launch(device::OpLaunch{kind, "op", inp, outp, c});
  REQUIRE_MESSAGE(timing, timing.error().message);
  run.got.resize(static_cast<size_t>(device::volume(run.shape)));
  REQUIRE(dev->read(out, run.got));
  std::vector<device::HostView> views;
  for (const OpInput& t : ins) views.push_back(device::HostView{t.shape, t.data});
  run.want.resize(run.got.size());
  REQUIRE(device::reference(kind, views, c, run.shape, run.want));
  return run;
}

}  // namespace

TEST_CASE("flattened conv2d: same shapes and values as NHWC, reference and kernel") {
  OpInput x = rand_input("x", {2, 12, 11, 8}, 1);
  SUBCASE("3x3 same padding") {
    check_both_forms(OpKind::conv2d, {x, rand_input("w", {16, 3, 3, 8}, 2)},
                     window_config(1, 1, 1, 1, {1, 1, 1, 1}));
  }
  SUBCASE("stride 2, dilation 2, asymmetric padding, bias, relu") {
    OpConfig c = window_config(1, 1, 2, 2, {0, 1, 2, 0}, 2, 2);
    c.activation = device::Activation::relu;
    check_both_forms(OpKind::conv2d,
                     {x, rand_input("w", {40, 3, 2, 8}, 3), rand_input("b", {40}, 4)}, c);
  }
  SUBCASE("grouped, prepared weight") {
    // Prepared [KH*KW*I/g, O] weight: the window comes from config.kernel.
    check_both_forms(OpKind::conv2d, {x, rand_input("w", {3 * 3 * 4, 6}, 5)},
                     window_config(3, 3, 1, 1, {0, 0, 0, 0}, 1, 1, 2));
  }
  SUBCASE("a 7x7 map over several tile rows, pixels of two images in one tile row") {
    OpInput m = rand_input("m", {3, 7, 7, 32}, 6);
    check_both_forms(OpKind::conv2d, {m, rand_input("w", {64, 1, 1, 32}, 7)}, grid_config());
  }
}

TEST_CASE("flattened pools: same shapes and values as NHWC") {
  OpInput x = rand_input("x", {2, 13, 10, 40}, 1);
  check_both_forms(OpKind::max_pool2d, {x}, window_config(3, 3, 2, 2, {1, 1, 1, 1}));
  check_both_forms(OpKind::avg_pool2d, {x}, window_config(2, 2, 2, 2, {0, 0, 0, 0}));
  check_both_forms(OpKind::avg_pool2d, {x}, window_config(3, 2, 1, 2, {1, 1, 0, 1}));
  OpInput f = flat_input(x);
  OpRun gp = run_op(OpKind::global_avg_pool2d, {f}, flat_config(grid_config(), x));
  CHECK(gp.shape == std::vector<int64_t>{1, 1, 2, 40});
  CHECK(gp.rel_err() < 0.01);
  CHECK(gp.want == run_op(OpKind::global_avg_pool2d, {x}, grid_config()).want);
}

TEST_CASE("flattened conv2d and pools run on L1 height-sharded layouts") {
  OpInput x = rand_input("x", {2, 12, 11, 8}, 11);
  OpInput f = flat_input(x);
  OpRun conv = run_l1_sharded(OpKind::conv2d, {f, rand_input("w", {16, 3, 3, 8}, 12)},
                              flat_config(window_config(1, 1, 1, 1, {1, 1, 1, 1}), x));
  CHECK(conv.shape == std::vector<int64_t>{1, 1, 264, 16});
  CHECK(conv.rel_err() < 0.01);
  OpRun pool = run_l1_sharded(OpKind::max_pool2d, {f},
                              flat_config(window_config(3, 3, 2, 2, {1, 1, 1, 1}), x));
  CHECK(pool.shape == std::vector<int64_t>{1, 1, 72, 8});
  CHECK(pool.rel_err() == 0.0);
  // The NHWC run of the same conv on the same kind of layout gives the same values.
  OpRun nhwc = run_l1_sharded(OpKind::conv2d, {x, rand_input("w", {16, 3, 3, 8}, 12)},
                              window_config(1, 1, 1, 1, {1, 1, 1, 1}));
  CHECK(nhwc.got == conv.got);
}

TEST_CASE("flattened geometry errors name the op's values") {
  OpConfig c = grid_config();
  c.input_n = 2, c.input_h = 4, c.input_w = 4;
  std::string e = shape_error(OpKind::conv2d, {{1, 1, 30, 8}, {16, 1, 1, 8}}, c);
  CHECK(contains(e, "[1x1x30x8]"));
  CHECK(contains(e, "N*H*W = 32"));
  OpConfig pool = window_config(2, 2, 1, 1, {0, 0, 0, 0});
  pool.input_n = 2, pool.input_h = 4, pool.input_w = 4;
  CHECK(contains(shape_error(OpKind::max_pool2d, {{2, 1, 16, 8}}, pool), "is not [1x1x32xC]"));
  OpConfig part = grid_config();
  part.input_n = 1, part.input_h = 4;
  CHECK(contains(shape_error(OpKind::global_avg_pool2d, {{1, 1, 16, 8}}, part),
                 "needs all three of N, H, W positive"));
  CHECK(shape_error(OpKind::conv2d, {{1, 1, 32, 8}, {16, 1, 1, 8}}, c).empty());
}

TEST_CASE("conv blocking and timing of the flat form: tile rows of N*OH*OW, not of N*OH images") {
  // 7x7x64 map, 1x1 conv to 64: NHWC pads each image row to a tile row (7 tile rows); the flat
  // form has ceil(49 / 32) = 2.
  // TensorPlacement::shape is a view: the shapes live here.
  const std::vector<int64_t> x_nhwc{1, 7, 7, 64}, x_flat{1, 1, 49, 64}, w_shape{64, 1, 1, 64};
  auto dram = [](const char* name, const std::vector<int64_t>& shape, uint64_t at) {
    return device::make_interleaved(name, shape, DType::bf16, device::BufferType::dram, at);
  };
  device::TensorPlacement w = dram("w", w_shape, 32 << 20);
  device::TensorPlacement xn = dram("x", x_nhwc, 0), yn = dram("y", x_nhwc, 64 << 20);
  device::TensorPlacement xf = dram("x", x_flat, 0), yf = dram("y", x_flat, 64 << 20);
  OpConfig cn = grid_config(), cf = grid_config();
  cf.input_n = 1, cf.input_h = 7, cf.input_w = 7;
  const device::TensorPlacement* in_n[] = {&xn, &w};
  const device::TensorPlacement* out_n[] = {&yn};
  const device::TensorPlacement* in_f[] = {&xf, &w};
  const device::TensorPlacement* out_f[] = {&yf};
  device::OpLaunch ln{OpKind::conv2d, "conv", in_n, out_n, cn};
  device::OpLaunch lf{OpKind::conv2d, "conv", in_f, out_f, cf};
  auto bn = device::resolve_conv(ln, device::wormhole_b0());
  auto bf = device::resolve_conv(lf, device::wormhole_b0());
  REQUIRE(bn);
  REQUIRE(bf);
  CHECK(bn->rows == 7);
  CHECK(bf->rows == 2);
  CHECK(bf->k == bn->k);
  // On one core the compute term is the same im2col matmul count in both forms (it counts
  // N*OH*OW rows, not padded tile rows).
  device::OpLaunch ln1 = ln, lf1 = lf;
  ln1.config.grid_x = ln1.config.grid_y = lf1.config.grid_x = lf1.config.grid_y = 1;
  CHECK(device::estimate(device::wormhole_b0(), lf1).compute_ns ==
        device::estimate(device::wormhole_b0(), ln1).compute_ns);
  // A stage-4 shaped conv (8 images of 7x7x512, 1x1 to 512) over the 8x8 grid: the flat form
  // moves 13 tile rows of output instead of 56, and is faster.
  const std::vector<int64_t> b_nhwc{8, 7, 7, 512}, b_flat{1, 1, 392, 512}, bw{512, 1, 1, 512};
  device::TensorPlacement bwp = dram("w", bw, 32 << 20);
  device::TensorPlacement bxn = dram("x", b_nhwc, 0), byn = dram("y", b_nhwc, 64 << 20);
  device::TensorPlacement bxf = dram("x", b_flat, 0), byf = dram("y", b_flat, 64 << 20);
  const device::TensorPlacement* bin_n[] = {&bxn, &bwp};
  const device::TensorPlacement* bout_n[] = {&byn};
  const device::TensorPlacement* bin_f[] = {&bxf, &bwp};
  const device::TensorPlacement* bout_f[] = {&byf};
  OpConfig bcf = grid_config();
  bcf.input_n = 8, bcf.input_h = 7, bcf.input_w = 7;
  device::OpLaunch bln{OpKind::conv2d, "conv", bin_n, bout_n, grid_config()};
  device::OpLaunch blf{OpKind::conv2d, "conv", bin_f, bout_f, bcf};
  auto bbn = device::resolve_conv(bln, device::wormhole_b0());
  auto bbf = device::resolve_conv(blf, device::wormhole_b0());
  REQUIRE(bbn);
  REQUIRE(bbf);
  CHECK(bbn->rows == 56);
  CHECK(bbf->rows == 13);
  CHECK(device::estimate(device::wormhole_b0(), blf).duration_ns <
        device::estimate(device::wormhole_b0(), bln).duration_ns);
  // global_avg_pool2d: H*W input elements per output in both forms (one core for both).
  const std::vector<int64_t> gx_shape{1, 1, 98, 64}, gy_shape{1, 1, 2, 64}, nx_shape{2, 7, 7, 64},
      ny_shape{2, 1, 1, 64};
  device::TensorPlacement gx = dram("gx", gx_shape, 0), gy = dram("gy", gy_shape, 64 << 20);
  device::TensorPlacement nx = dram("nx", nx_shape, 0), ny = dram("ny", ny_shape, 64 << 20);
  OpConfig gc = grid_config(1, 1);
  gc.input_n = 2, gc.input_h = 7, gc.input_w = 7;
  const device::TensorPlacement* gin[] = {&gx};
  const device::TensorPlacement* gout[] = {&gy};
  const device::TensorPlacement* nin[] = {&nx};
  const device::TensorPlacement* nout[] = {&ny};
  device::OpTiming flat_pool = device::estimate(
      device::wormhole_b0(), device::OpLaunch{OpKind::global_avg_pool2d, "g", gin, gout, gc});
  device::OpTiming nhwc_pool = device::estimate(
      device::wormhole_b0(),
      device::OpLaunch{OpKind::global_avg_pool2d, "g", nin, nout, grid_config(1, 1)});
  CHECK(flat_pool.compute_ns == nhwc_pool.compute_ns);
}
