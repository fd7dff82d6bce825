// The model zoo: every model builds, its JSON form matches it, and its reduced form runs on the
// emulator under every policy within bf16 tolerance of the f32 reference.
#include <doctest/doctest.h>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/layout.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "test_util.hpp"
#include "zoo.hpp"

using namespace meshplan;

TEST_CASE("zoo models have the published shapes and their JSON files match") {
  for (const models::ModelSpec& spec : models::zoo()) {
    INFO(spec.name);
    auto full = spec.full();
    REQUIRE(full);
    auto file =
        planner::load_graph_file(test::source_path("examples/models/" + spec.name + ".json"));
    REQUIRE(file);
    CHECK(planner::graph_key(*file) == planner::graph_key(*full));
  }
  // Spot checks of the architectures' sizes.
  auto llama = models::zoo()[1].full();
  REQUIRE(llama);
  bool found_ffn = false;
  for (const planner::Value& v : llama->values)
    if (v.name == "l0.w1") found_ffn = v.shape == std::vector<int64_t>{4096, 14336};
  CHECK(found_ffn);
  auto resnet = models::zoo()[6].full();
  REQUIRE(resnet);
  CHECK(resnet->ops.size() == 73);
  CHECK(resnet->values[resnet->outputs[0]].shape == std::vector<int64_t>{1, 1000});
}

TEST_CASE("every zoo model (reduced) runs under every policy and matches the reference") {
  device::ChipDesc chip = device::wormhole_b0();
  for (const models::ModelSpec& spec : models::zoo()) {
    auto g = spec.reduced();
    REQUIRE(g);
    for (std::string_view policy : planner::policy_names()) {
      INFO(spec.name, " under ", policy);
      planner::PlannerOptions options;
      options.policy = std::string(policy);
      auto plan = planner::compile(*g, chip, options);
      REQUIRE(plan);
      auto ref = runtime::verify_plan(plan->bytes, spec.name);
      REQUIRE(ref);
      auto dev = device::EmulatedDevice::create(chip);
      REQUIRE(dev);
      auto exe = runtime::Executable::bind(*ref, **dev);
      REQUIRE(exe);
      auto inputs = runtime::random_inputs(*ref, 3);
      auto views = runtime::views_of(inputs);
      auto result = (*exe)->run(views);
      REQUIRE(result);
      auto expected = runtime::run_reference(*ref, views);
      REQUIRE(expected);
      runtime::CheckReport rep =
          runtime::check_outputs(result->outputs, *expected, runtime::kDefaultTolerance);
      INFO("relative error ", rep.relative_error);
      CHECK(rep.ok);
      // Consistency check, not a validation: both sum device::estimate().
      CHECK(result->device_ns == ref->plan().header()->metrics()->estimated_ns());
    }
  }
}
