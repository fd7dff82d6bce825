// A one-op relu plan for the plan-cache tests: distinct input widths give distinct keys.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"

namespace meshplan::testing {

/// The plan bytes of `y = relu(x)` with x of shape [4, width], planned for wormhole_b0.
inline std::vector<uint8_t> relu_plan(int width) {
  std::string json =
      R"({ name: "g", arguments: [{ value: { name: "x", shape: [4, )" + std::to_string(width) +
      R"(], dtype: "bf16" } }], ops: [{ kind: "relu", operands: ["x"], results: [{ name: "y" }] }],
      outputs: ["y"] })";
  auto g = planner::import_graph_json(json);
  REQUIRE(g);
  auto p =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE(p);
  return p->bytes;
}

}  // namespace meshplan::testing
