// conv2d deallocate_activation on the device: the halo buffer OpModel charges, and the emulator
// freeing the input between the halo step and the result's allocation, so a result that takes
// the input's L1 computes the same bits as one placed apart.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>

#include "device/op_test_util.hpp"
#include "meshplan/device/conv_blocking.hpp"
#include "meshplan/device/op_model.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

/// x [1,8,8,32] in L1 (interleaved) -> conv 3x3 pad 1 (32 out) -> y [1,8,8,32].
struct DLaunch {
  std::vector<int64_t> xs{1, 8, 8, 32}, ws{32, 3, 3, 32}, ys{1, 8, 8, 32};
  device::TensorPlacement x, w, y;
  std::vector<const device::TensorPlacement*> in, out;
  OpConfig config = grid_config();

  DLaunch(uint64_t x_addr, uint64_t y_addr, bool dealloc) {
    x = device::make_interleaved("x", xs, DType::bf16, device::BufferType::l1, x_addr);
    w = device::make_interleaved("w", ws, DType::bf16, device::BufferType::dram, 0);
    y = device::make_interleaved("y", ys, DType::bf16, device::BufferType::l1, y_addr);
    for (int i = 0; i < 4; ++i) config.padding[i] = 1;
    config.kernel[0] = config.kernel[1] = 3;
    config.deallocate_activation = dealloc;
    in = {&x, &w};
    out = {&y};
  }
  device::OpLaunch launch() const {
    return device::OpLaunch{OpKind::conv2d, "conv", in, out, config};
  }
};

/// Runs the conv on a fresh emulator: x and w written, y allocated by the test unless the conv
/// frees x (then the launch allocates it); returns y's values.
std::vector<float> run(const DLaunch& l, const OpInput& xd, const OpInput& wd) {
  auto dev_or = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev_or);
  auto& dev = **dev_or;
  REQUIRE(dev.allocate(l.x));
  REQUIRE(dev.write(l.x, xd.data));
  REQUIRE(dev.allocate(l.w));
  REQUIRE(dev.write(l.w, wd.data));
  if (!l.config.deallocate_activation) REQUIRE(dev.allocate(l.y));
  auto t = dev.launch(l.launch());
  REQUIRE_MESSAGE(t, (t ? std::string() : t.error().message));
  std::vector<float> got(static_cast<size_t>(device::volume(l.ys)));
  REQUIRE(dev.read(l.y, got));
  // Freed by the op: x is no longer live (buffers are named by address: y may sit on x's).
  if (l.x.address != l.y.address)
    CHECK(static_cast<bool>(dev.deallocate(l.x)) == !l.config.deallocate_activation);
  return got;
}

}  // namespace

TEST_CASE("the halo buffer: the core's share of the padded input and the window's reach") {
  device::ChipDesc chip = device::wormhole_b0();
  DLaunch keep(chip.l1_usable_top() - 65536, chip.l1_usable_top() - 131072, false);
  DLaunch frees(chip.l1_usable_top() - 65536, chip.l1_usable_top() - 65536, true);
  auto b = device::resolve_conv(frees.launch(), chip);
  REQUIRE(b);
  // 8 output tile rows (N*OH = 8 rows of 8 pixels), one tile column: 8 cores with work.
  REQUIRE(b->cores == 8);
  // Padded input 1 x 10 x 10 = 100 pixels, 13 per core, plus 2 padded rows (20 pixels) and 2
  // pixels of reach: 35 pixels x 32 channels x 2 bytes (bf16: 2048 bytes per 1024-element tile).
  CHECK(device::conv_halo_bytes(*b, frees.launch()) == 35 * 32 * 2);
  device::OpModel model(chip);
  CHECK(model.circular_buffer_bytes(frees.launch()) ==
        model.circular_buffer_bytes(keep.launch()) + 35 * 32 * 2);
  // Only on a conv2d, and only an L1 input.
  DLaunch dram(0, chip.l1_usable_top() - 65536, true);
  dram.x.buffer = device::BufferType::dram;
  device::OpValidation v = model.validate(dram.launch());
  CHECK_FALSE(v.ok);
  CHECK_MESSAGE(v.reason.find("deallocate_activation frees an L1 input; 'x' is in DRAM") !=
                    std::string::npos,
                v.reason);
}

TEST_CASE("a conv2d whose result takes its freed input's L1 computes the same bits") {
  device::ChipDesc chip = device::wormhole_b0();
  OpInput xd = rand_input("x", {1, 8, 8, 32}, 11), wd = rand_input("w", {32, 3, 3, 32}, 12);
  const uint64_t top = chip.l1_usable_top();
  DLaunch apart(top - 65536, top - 131072, false);
  DLaunch over(top - 65536, top - 65536, true);      // y exactly on x
  // y over the first half of x (one 2048-byte page per bank).
  DLaunch shifted(top - 65536, top - 65536 - 1024, true);
  std::vector<float> want = run(apart, xd, wd);
  // A result with values to compare: the conv of these inputs is not all zero.
  CHECK(std::any_of(want.begin(), want.end(), [](float f) { return f != 0.0f; }));
  for (const DLaunch* l : {&over, &shifted}) {
    std::vector<float> got = run(*l, xd, wd);
    REQUIRE(got.size() == want.size());
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
  }
  // Without the flag the same overlap is an allocation clash.
  {
    auto dev_or = device::EmulatedDevice::create(chip);
    REQUIRE(dev_or);
    auto& dev = **dev_or;
    DLaunch clash(top - 65536, top - 65536 - 1024, false);
    REQUIRE(dev.allocate(clash.x));
    CHECK_FALSE(dev.allocate(clash.y));
  }
  // With the flag, a result allocated before the launch is refused, naming it.
  {
    auto dev_or = device::EmulatedDevice::create(chip);
    REQUIRE(dev_or);
    auto& dev = **dev_or;
    DLaunch pre(top - 65536, top - 131072, true);
    REQUIRE(dev.allocate(pre.x));
    REQUIRE(dev.write(pre.x, xd.data));
    REQUIRE(dev.allocate(pre.w));
    REQUIRE(dev.write(pre.w, wd.data));
    REQUIRE(dev.allocate(pre.y));
    auto t = dev.launch(pre.launch());
    REQUIRE_FALSE(t);
    CHECK_MESSAGE(t.error().message.find("result 'y' is allocated before the conv2d frees its "
                                         "input") != std::string::npos,
                  t.error().message);
  }
}
