// Executable: binding checks the device, inputs are checked by name, results match the reference.
#include "meshplan/runtime/executable.hpp"

#include <doctest/doctest.h>

#include <limits>

#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::runtime;

namespace {

std::vector<uint8_t> mlp_plan() {
  auto g = planner::load_graph_file(test::source_path("examples/models/mlp.json"));
  REQUIRE(g);
  auto p =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE(p);
  return p->bytes;
}

}  // namespace

TEST_CASE("bind refuses a device the plan was not made for") {
  std::vector<uint8_t> bytes = mlp_plan();
  auto plan = verify_plan(bytes, "mlp");
  REQUIRE(plan);
  device::ChipDesc other = device::wormhole_b0();
  other.name = "wormhole_b0_harvested";
  other.grid_y = 7;
  auto dev = device::EmulatedDevice::create(other);
  REQUIRE(dev);
  auto exe = Executable::bind(*plan, **dev);
  REQUIRE_FALSE(exe);
  CHECK(exe.error().code == ErrorCode::incompatible);
  CHECK(exe.error().message.find("made for device wormhole_b0 8x8") != std::string::npos);
  CHECK(exe.error().message.find("wormhole_b0_harvested 8x7") != std::string::npos);
}

TEST_CASE("inputs are checked by position and named") {
  std::vector<uint8_t> bytes = mlp_plan();
  auto plan = verify_plan(bytes, "mlp");
  REQUIRE(plan);
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto exe = Executable::bind(*plan, **dev);
  REQUIRE(exe);
  CHECK((*exe)->input_count() == 7);
  CHECK((*exe)->input_name(0) == "x");
  CHECK((*exe)->output_name(0) == "z3");
  std::vector<Tensor> inputs = random_inputs(*plan, 1);
  auto views = views_of(inputs);
  SUBCASE("too few") {
    auto r = (*exe)->run(std::span(views).first(3));
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("takes 7 inputs, got 3") != std::string::npos);
  }
  SUBCASE("wrong shape") {
    Tensor wrong(std::vector<int64_t>{64, 255});
    views[0] = wrong.view();
    auto r = (*exe)->run(views);
    REQUIRE_FALSE(r);
    CHECK(
        r.error().message.find("input 0 'x': shape [64x255] does not match the plan's [64x256]") !=
        std::string::npos);
  }
  SUBCASE("runs, twice, with the same result and device time (consistency check of the clock)") {
    auto a = (*exe)->run(views);
    REQUIRE(a);
    auto b = (*exe)->run(views);
    REQUIRE(b);
    CHECK(a->outputs[0].data == b->outputs[0].data);
    CHECK(a->device_ns == b->device_ns);
    CHECK(a->ops.size() == 8);
    uint64_t sum = 0;
    for (const OpProfile& op : a->ops) sum += op.device_ns;
    CHECK(sum == a->device_ns);
    // Consistency, not validation: the clock and the plan both sum device::estimate().
    CHECK(a->device_ns == plan->plan().header()->metrics()->estimated_ns());
    auto ref = run_reference(*plan, views);
    REQUIRE(ref);
    CheckReport rep = check_outputs(a->outputs, *ref, kDefaultTolerance);
    CHECK(rep.ok);
    CHECK(rep.relative_error > 0.0);  // bf16 storage does lose something
    CHECK(rep.relative_error < 0.02);
  }
}

TEST_CASE("a single-chip plan runs on a 1x1 mesh as on its device, and refuses larger meshes") {
  std::vector<uint8_t> bytes = mlp_plan();
  auto plan = verify_plan(bytes, "mlp");
  REQUIRE(plan);
  std::vector<Tensor> inputs = random_inputs(*plan, 3);
  auto views = views_of(inputs);
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto on_device = Executable::bind(*plan, **dev);
  REQUIRE(on_device);
  auto mesh = device::EmulatedMesh::create(device::single_chip_mesh(device::wormhole_b0()));
  REQUIRE(mesh);
  auto on_mesh = Executable::bind(*plan, **mesh);
  REQUIRE(on_mesh);
  CHECK((*on_mesh)->output_shape(0).size() == 2);
  auto a = (*on_device)->run(views);
  auto b = (*on_mesh)->run(views);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->outputs[0].shape == b->outputs[0].shape);
  CHECK(a->outputs[0].data == b->outputs[0].data);
  CHECK(b->device_ns == a->device_ns);
  CHECK(b->device_ns == plan->plan().header()->metrics()->estimated_ns());
  REQUIRE(b->ops.size() == 8);
  // One chip: every op on chip 0, each starting when the previous one ended.
  uint64_t clock = 0;
  for (const OpProfile& op : b->ops) {
    CHECK(op.chip == 0);
    CHECK_FALSE(op.collective);
    CHECK(op.start_ns == clock);
    clock += op.device_ns;
  }
  CHECK(b->chip_ns == std::vector<uint64_t>{b->device_ns});
  CHECK(b->chip_collective_ns == std::vector<uint64_t>{0});
  CHECK(b->bytes_moved == 0);

  auto n300 = device::EmulatedMesh::create(*device::builtin_mesh("n300"));
  REQUIRE(n300);
  auto wrong = Executable::bind(*plan, **n300);
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().code == ErrorCode::incompatible);
  CHECK(wrong.error().message.find("single-chip plan") != std::string::npos);
  CHECK(wrong.error().message.find("1x2 mesh n300") != std::string::npos);
}

TEST_CASE("check_outputs flags wrong results") {
  Tensor a(std::vector<int64_t>{2, 2}), b(std::vector<int64_t>{2, 2});
  a.data = {1, 2, 3, 4};
  b.data = {1, 2, 3, 4.5f};
  CheckReport r = check_outputs({a}, {b}, 0.03);
  CHECK_FALSE(r.ok);
  CHECK(r.max_abs_error == doctest::Approx(0.5));
  CHECK(check_outputs({a}, {a}, 0.0).ok);
  Tensor c(std::vector<int64_t>{4});
  CHECK_FALSE(check_outputs({a}, {c}, 1.0).ok);
}

TEST_CASE(
    "check_outputs: NaN against NaN and equal infinities agree, other non-finite values fail") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Tensor ref(std::vector<int64_t>{4}), dev(std::vector<int64_t>{4});
  ref.data = {nan, inf, -inf, 2.0f};
  dev.data = {nan, inf, -inf, 2.0f};
  CheckReport same = check_outputs({dev}, {ref}, 0.0);
  CHECK(same.ok);
  CHECK(same.scale == 2.0);            // the largest finite reference value
  dev.data = {1.0f, inf, -inf, 2.0f};  // a number where the reference is NaN
  CHECK_FALSE(check_outputs({dev}, {ref}, 1.0).ok);
  dev.data = {nan, -inf, -inf, 2.0f};  // the wrong infinity
  CHECK_FALSE(check_outputs({dev}, {ref}, 1.0).ok);
  dev.data = {nan, inf, -inf, nan};  // a NaN where the reference is a number
  CHECK_FALSE(check_outputs({dev}, {ref}, 1.0).ok);
}
