// Concurrent use: 8 threads look up and run plans (each on its own emulated chip, plus two
// threads sharing one Executable) while a writer keeps replacing the cache file. Built with
// -fsanitize=thread in CI (build-tsan), where any data race fails the run.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::runtime;

namespace {

std::vector<uint8_t> mlp_plan(int width) {
  std::string w = std::to_string(width);
  std::string json = R"({ name: "mlp", arguments: [
      { value: { name: "x", shape: [32, )" +
                     w + R"(], dtype: "bf16" } },
      { value: { name: "w", shape: [)" +
                     w + R"(, 64], dtype: "bf16" }, kind: parameter }],
    ops: [{ kind: "matmul", operands: ["x", "w"], results: [{ name: "h" }] },
          { kind: "relu", operands: ["h"], results: [{ name: "y" }] }],
    outputs: ["y"] })";
  auto g = planner::import_graph_json(json);
  REQUIRE(g);
  auto p =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE(p);
  return p->bytes;
}

}  // namespace

TEST_CASE("8 threads look up and run plans while a writer replaces the cache") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  REQUIRE(
      write_cache(path, {CacheEntryData{"a", mlp_plan(32)}, CacheEntryData{"b", mlp_plan(64)}}));
  std::vector<std::vector<uint8_t>> replacements = {mlp_plan(96), mlp_plan(64), mlp_plan(128),
                                                    mlp_plan(32)};

  // One cache shared by every reader (immutable after open), reopened by some threads too.
  auto shared = PlanCache::open(path);
  REQUIRE(shared);
  auto shared_plan = shared->find("a");
  REQUIRE(shared_plan);
  auto shared_dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(shared_dev);
  auto shared_exe = Executable::bind(*shared_plan, **shared_dev);
  REQUIRE(shared_exe);

  std::atomic<bool> stop{false};
  std::atomic<int> runs{0}, failures{0}, rewrites{0};
  std::thread writer([&] {
    for (int n = 0; n < 12; ++n) {
      if (!add_to_cache(path,
                        CacheEntryData{n % 2 ? "a" : "b", replacements[n % replacements.size()]}))
        ++failures;
      ++rewrites;
    }
    stop = true;
  });
  auto reader = [&](int id) {
    std::unique_ptr<device::EmulatedDevice> dev =
        std::move(*device::EmulatedDevice::create(device::wormhole_b0()));
    for (int iter = 0; iter < 6 || !stop; ++iter) {
      if (iter > 200) break;  // bounded even if the writer stalls
      bool use_shared_exe = id < 2;
      bool reopen = id % 2 == 1;
      auto cache = reopen ? PlanCache::open(path) : Result<PlanCache>(std::unexpected(Error{}));
      const PlanCache& c = reopen && cache ? *cache : *shared;
      if (reopen && !cache) {
        ++failures;
        continue;
      }
      auto plan = use_shared_exe ? *shared_plan : c.find(iter % 2 ? "a" : "b").value_or(PlanRef());
      if (plan.bytes().empty())
        continue;  // the other name may be mid-replacement in this copy: not_found is fine
      std::unique_ptr<Executable> own;
      Executable* exe = shared_exe->get();
      if (!use_shared_exe) {
        auto bound = Executable::bind(plan, *dev);
        if (!bound) {
          ++failures;
          continue;
        }
        own = std::move(*bound);
        exe = own.get();
      }
      std::vector<Tensor> inputs = random_inputs(plan, static_cast<uint64_t>(id * 1000 + iter));
      auto views = views_of(inputs);
      auto result = exe->run(views);
      auto ref = run_reference(plan, views);
      if (!result || !ref || !check_outputs(result->outputs, *ref, kDefaultTolerance).ok)
        ++failures;
      ++runs;
    }
  };
  std::vector<std::thread> readers;
  for (int i = 0; i < 8; ++i) readers.emplace_back(reader, i);
  for (auto& t : readers) t.join();
  writer.join();
  CHECK(failures == 0);
  CHECK(rewrites == 12);
  CHECK(runs >= 8 * 6);
  auto final_cache = PlanCache::open(path);
  REQUIRE(final_cache);
  CHECK(final_cache->size() == 2);
}

TEST_CASE("inputs bind by name in any order, and errors name the input") {
  std::vector<uint8_t> bytes = mlp_plan(32);
  auto plan = verify_plan(bytes, "mlp");
  REQUIRE(plan);
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto exe = Executable::bind(*plan, **dev);
  REQUIRE(exe);
  Executable& e = **exe;
  REQUIRE(e.input_count() == 2);
  CHECK(*e.input_index("x") == 0);
  CHECK(*e.input_index("w") == 1);
  CHECK(*e.output_index("y") == 0);
  auto nope = e.input_index("z");
  REQUIRE_FALSE(nope);
  CHECK(nope.error().message == "plan 'mlp' has no input named 'z' (its inputs: 'x', 'w')");

  std::vector<Tensor> inputs = random_inputs(*plan, 7);
  auto by_position = e.run(views_of(inputs));
  REQUIRE(by_position);
  NamedTensorView named[] = {{"w", inputs[1].view()}, {"x", inputs[0].view()}};
  auto by_name = e.run(std::span<const NamedTensorView>(named));
  REQUIRE(by_name);
  CHECK(by_name->outputs[0].data == by_position->outputs[0].data);

  NamedTensorView twice[] = {{"x", inputs[0].view()}, {"x", inputs[0].view()}};
  auto r1 = e.run(std::span<const NamedTensorView>(twice));
  REQUIRE_FALSE(r1);
  CHECK(r1.error().message == "plan 'mlp': input 'x' is given twice");
  NamedTensorView missing[] = {{"x", inputs[0].view()}};
  auto r2 = e.run(std::span<const NamedTensorView>(missing));
  REQUIRE_FALSE(r2);
  CHECK(r2.error().message == "plan 'mlp': input 1 'w' is missing");
  NamedTensorView swapped[] = {{"x", inputs[1].view()}, {"w", inputs[0].view()}};
  auto r3 = e.run(std::span<const NamedTensorView>(swapped));
  REQUIRE_FALSE(r3);
  CHECK(r3.error().message.find("input 0 'x': shape [32x64] does not match the plan's [32x32]") !=
        std::string::npos);
}
