// The C API runs mesh plans through the same handles: host (full) shapes, results equal to
// the C++ Executable's.
#include <doctest/doctest.h>

#include <vector>

#include "meshplan/device/mesh.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/meshplan.h"
#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

using namespace meshplan;

TEST_CASE("C API: a tensor-parallel MLP plan for a T3000 runs with host tensors") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  auto graph = planner::load_graph_file(test::source_path("examples/models/tp_mlp_t3k.json"));
  REQUIRE(graph);
  auto plan = planner::compile(*graph, device::builtin_mesh("t3k")->chip,
                               planner::PlannerOptions::with_policy("dram"));
  REQUIRE(plan);
  REQUIRE(runtime::add_to_cache(path, runtime::CacheEntryData{"tp", plan->bytes}));
  mp_cache* cache = nullptr;
  REQUIRE(mp_cache_open(path.c_str(), &cache) == MP_OK);
  mp_executable* exe = nullptr;
  REQUIRE(mp_executable_create(cache, "tp", &exe) == MP_OK);
  REQUIRE(mp_executable_input_count(exe) == 3);
  size_t rank = 0;
  const int64_t* w1 = mp_executable_input_shape(exe, 1, &rank);
  REQUIRE(rank == 2);
  CHECK(w1[0] == 256);
  CHECK(w1[1] == 512);  // host shape: 4 column shards of 128

  auto ref = runtime::verify_plan(plan->bytes, "tp");
  REQUIRE(ref);
  auto inputs = runtime::random_inputs(*ref, 3);
  auto expected = runtime::run_reference(*ref, runtime::views_of(inputs));
  REQUIRE(expected);
  std::vector<mp_tensor> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int64_t* shape = mp_executable_input_shape(exe, i, &rank);
    in.push_back(
        mp_tensor{nullptr, MP_F32, shape, rank, inputs[i].data.data(), inputs[i].data.size() * 4});
  }
  const int64_t* out_shape = mp_executable_output_shape(exe, 0, &rank);
  std::vector<float> out_data(64 * 256);
  mp_tensor out{nullptr, MP_F32, out_shape, rank, out_data.data(), out_data.size() * 4};
  uint64_t ns = 0;
  REQUIRE(mp_executable_run(exe, in.data(), in.size(), &out, 1, &ns) == MP_OK);
  CHECK(ns > 0);
  runtime::Tensor got(expected->at(0).shape);
  std::copy(out_data.begin(), out_data.end(), got.data.begin());
  CHECK(runtime::check_outputs({got}, *expected, runtime::kDefaultTolerance).ok);
  // A per-chip-shaped input is refused with a message naming it.
  std::vector<int64_t> local{256, 128};
  in[1].shape = local.data();
  in[1].size_bytes = 256 * 128 * 4;
  CHECK(mp_executable_run(exe, in.data(), in.size(), &out, 1, &ns) != MP_OK);
  CHECK(std::string(mp_last_error()).find("w1") != std::string::npos);
  mp_executable_destroy(exe);
  mp_cache_close(cache);
}
