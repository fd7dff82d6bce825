// flatten_spatial on the zoo's ResNet-50 (reduced): every conv and pool is planned flat, the
// image input is planned flat with a reshape transform, and under every policy the flat plan
// gives, from the same NHWC host inputs, the outputs of the NHWC plan (--no-flatten-spatial)
// within bf16 tolerance.
#include <doctest/doctest.h>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/flatten_spatial.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/layout.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "zoo.hpp"

using namespace meshplan;

namespace {

const models::ModelSpec& resnet_b1() {
  static const std::vector<models::ModelSpec> zoo = models::zoo();
  for (const models::ModelSpec& s : zoo)
    if (s.name == "resnet50_b1") return s;
  FAIL("resnet50_b1 is not in the zoo");
  return zoo.front();
}

}  // namespace

TEST_CASE("ResNet-50 (reduced) is one flat region from the stem to the global pool") {
  auto g = resnet_b1().reduced();
  REQUIRE(g);
  planner::Graph flat = *g;
  auto r = planner::flatten_spatial(flat);
  REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
  CHECK(r->regions == 1);
  // Every conv2d, pool and residual add runs flat; the image is the only flattened input and
  // the graph's own flatten reshape takes the pooled flat value: no reshape is inserted.
  int windows = 0;
  for (const planner::Op& op : g->ops)
    if (op.kind == device::OpKind::conv2d || op.kind == device::OpKind::max_pool2d ||
        op.kind == device::OpKind::global_avg_pool2d)
      ++windows;
  int flat_windows = 0;
  for (const planner::Op& op : flat.ops) flat_windows += op.attribute("input_nhw") != nullptr;
  CHECK(flat_windows == windows);
  CHECK(r->reshapes == 0);
  CHECK(r->rewired == 1);
  REQUIRE(r->inputs.size() == 1);
  CHECK(flat.values[r->inputs[0].value].name == "image");
  CHECK(flat.ops.size() == g->ops.size());
}

TEST_CASE("flat ResNet-50 (reduced) gives the NHWC plan's outputs under every policy") {
  device::ChipDesc chip = device::wormhole_b0();
  auto g = resnet_b1().reduced();
  REQUIRE(g);
  for (std::string_view policy : planner::policy_names()) {
    INFO("policy ", policy);
    planner::PlannerOptions on_options;
    on_options.policy = std::string(policy);
    planner::PlannerOptions off_options = on_options;
    off_options.flatten_spatial = false;
    auto on = planner::compile(*g, chip, on_options);
    auto off = planner::compile(*g, chip, off_options);
    REQUIRE(on);
    REQUIRE(off);
    auto p_on = runtime::verify_plan(on->bytes, "on");
    auto p_off = runtime::verify_plan(off->bytes, "off");
    REQUIRE(p_on);
    REQUIRE(p_off);
    auto inputs = runtime::random_inputs(*p_off, 5);
    auto views = runtime::views_of(inputs);
    auto expected = runtime::run_reference(*p_off, views);
    REQUIRE(expected);
    auto dev = device::EmulatedDevice::create(chip);
    REQUIRE(dev);
    auto exe = runtime::Executable::bind(*p_on, **dev);
    REQUIRE(exe);
    auto result = (*exe)->run(views);
    REQUIRE_MESSAGE(result, (result ? std::string() : result.error().message));
    runtime::CheckReport report =
        runtime::check_outputs(result->outputs, *expected, runtime::kDefaultTolerance);
    CHECK_MESSAGE(report.ok, "relative error ", report.relative_error);
    // The planner's estimate is what the emulator's clock says.
    // Consistency check, not a validation: both sum device::estimate().
    CHECK(result->device_ns == p_on->plan().header()->metrics()->estimated_ns());
  }
}
