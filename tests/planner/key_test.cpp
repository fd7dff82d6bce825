// Plan keys: stable under renaming, sensitive to everything that changes a plan.
#include "meshplan/planner/key.hpp"

#include <doctest/doctest.h>

#include "meshplan/planner/import_json.hpp"

using namespace meshplan;
using namespace meshplan::planner;

namespace {

std::string model(const std::string& x, const std::string& h,
                  const std::string& shape_w = "[8, 16]", const std::string& extra_attr = "") {
  return R"({ name: "m", arguments: [{ value: { name: ")" + x +
         R"(", shape: [4, 8], dtype: "bf16" } },
            { value: { name: "w", shape: )" +
         shape_w + R"(, dtype: "bf16" }, kind: parameter }],
    ops: [ { name: "op_)" +
         h + R"(", kind: "matmul", operands: [")" + x + R"(", "w"], results: [{ name: ")" + h +
         R"(" }])" + extra_attr + R"( },
           { kind: "relu", operands: [")" +
         h + R"("], results: [{ name: "out" }] } ],
    outputs: ["out"] })";
}

Hash128 key_of(const std::string& json) {
  auto g = import_graph_json(json);
  REQUIRE(g);
  return graph_key(*g);
}

}  // namespace

TEST_CASE("renaming values and ops keeps the key") {
  CHECK(key_of(model("x", "h")) == key_of(model("input_tokens", "hidden")));
}

TEST_CASE("any shape, attribute or argument-kind change alters the key") {
  Hash128 base = key_of(model("x", "h"));
  CHECK(key_of(model("x", "h", "[8, 32]")) != base);
  CHECK(key_of(model("x", "h", "[8, 16]",
                     R"(, attributes: [{ name: "activation", s: "relu" }])")) != base);
  std::string as_input = model("x", "h");
  as_input.replace(as_input.find(", kind: parameter"), 17, "");
  CHECK(key_of(as_input) != base);
}

TEST_CASE("the default options plan with greedy, as meshplan-compile and the Python module do") {
  auto g = import_graph_json(model("x", "h"));
  REQUIRE(g);
  Hash128 gk = graph_key(*g);
  device::ChipDesc chip = device::wormhole_b0();
  CHECK(PlannerOptions{}.policy == "greedy");
  CHECK(plan_key(gk, chip, PlannerOptions{}) ==
        plan_key(gk, chip, PlannerOptions::with_policy("greedy")));
  CHECK(plan_key(gk, chip, PlannerOptions{}) !=
        plan_key(gk, chip, PlannerOptions::with_policy("dram")));
  CHECK(PlannerOptions::with_policy("beam").policy == "beam");
  CHECK(PlannerOptions::with_policy("beam").beam_width == PlannerOptions{}.beam_width);
}

TEST_CASE("the plan key covers device, planner options and the graph") {
  auto g = import_graph_json(model("x", "h"));
  REQUIRE(g);
  Hash128 gk = graph_key(*g);
  device::ChipDesc chip = device::wormhole_b0();
  PlannerOptions dram;
  dram.policy = "dram";
  Hash128 k = plan_key(gk, chip, dram);
  CHECK(plan_key(gk, chip, dram) == k);
  PlannerOptions other = dram;
  other.policy = "greedy";
  CHECK(plan_key(gk, chip, other) != k);
  device::ChipDesc smaller = chip;
  smaller.grid_y = 7;
  CHECK(plan_key(gk, smaller, dram) != k);
  // Beam width only matters to the beam policy.
  PlannerOptions wide = dram;
  wide.beam_width = 16;
  CHECK(plan_key(gk, chip, wide) == k);
  CHECK(k.hex().size() == 32);
  Hash128 parsed;
  REQUIRE(Hash128::parse(k.hex(), &parsed));
  CHECK(parsed == k);
  CHECK_FALSE(Hash128::parse("xyz", &parsed));
}
