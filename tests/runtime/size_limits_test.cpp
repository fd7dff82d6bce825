// Size limits, end to end: graph.json shapes beyond the limits are refused by the planner with
// the size and the limit; a plan whose shapes were forged past them fails verify_plan; a plan
// whose page size does not follow from its shape fails it; and a plan that verifies but does not
// fit the chip fails at bind with an error value (never a signal).
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/size_limits.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"

using namespace meshplan;

namespace {

std::string relu_json(const std::string& shape, const std::string& dtype = "bf16") {
  return R"({ name: "big", arguments: [{ value: { name: "x", shape: [)" + shape + R"(], dtype: ")" +
         dtype +
         R"(" } }], ops: [{ kind: "relu", operands: ["x"], results: [{ name: "y" }] }],
             outputs: ["y"] })";
}

std::string import_error(const std::string& shape) {
  auto g = planner::import_graph_json(relu_json(shape), "big.json");
  if (!g) return g.error().message;
  auto c =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  return c ? std::string() : c.error().message;
}

std::vector<uint8_t> relu_plan(const std::string& shape) {
  auto g = planner::import_graph_json(relu_json(shape, "f32"), "relu.json");
  REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
  auto c =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE_MESSAGE(c, (c ? std::string() : c.error().message));
  return c->bytes;
}

/// Overwrites the shape of every tensor in `bytes` (all of the same rank) with `dims`.
void forge_shapes(std::vector<uint8_t>& bytes, std::vector<int64_t> dims) {
  auto plan = runtime::verify_plan(bytes, "original");
  REQUIRE(plan);
  std::vector<size_t> offsets;
  for (const fb::TensorPlan* t : *plan->plan().tensors()) {
    REQUIRE(t->shape()->size() == dims.size());
    offsets.push_back(
        static_cast<size_t>(reinterpret_cast<const uint8_t*>(t->shape()->data()) - bytes.data()));
  }
  for (size_t at : offsets) std::memcpy(&bytes[at], dims.data(), dims.size() * sizeof(int64_t));
}

std::string verify_error(const std::vector<uint8_t>& bytes) {
  auto r = runtime::verify_plan(bytes, "forged");
  return r ? std::string() : r.error().message;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("checked_volume: limits and overflow") {
  CHECK(*device::checked_volume(std::vector<int64_t>{}) == 1);
  CHECK(*device::checked_volume(std::vector<int64_t>{65536, 65536}) == (int64_t{1} << 32));
  auto over = device::checked_volume(std::vector<int64_t>{65536, 65537});
  REQUIRE_FALSE(over);
  CHECK(has(over.error().message, "holds 4295032832 elements, more than the limit of 4294967296"));
  auto wraps = device::checked_volume(std::vector<int64_t>{2147483647, 2147483647, 2147483647});
  REQUIRE_FALSE(wraps);
  CHECK(has(wraps.error().message, "more than 2^63 elements"));
  auto dim = device::checked_volume(std::vector<int64_t>{int64_t{1} << 31});
  REQUIRE_FALSE(dim);
  CHECK(has(dim.error().message, "dimension 2147483648, outside [1, 2147483647]"));
  CHECK_FALSE(device::checked_volume(std::vector<int64_t>(9, 1)));
}

TEST_CASE("graph.json shapes beyond the limits are refused by the planner") {
  std::string e = import_error("9223372036854775807");
  CHECK(has(e, "big.json"));
  CHECK(has(e, "value 'x'"));
  CHECK(has(e, "dimension 9223372036854775807, outside [1, 2147483647]"));
  CHECK(has(import_error("4294967296, 4294967296, 4294967296"), "dimension 4294967296"));
  CHECK(has(import_error("4611686018427387904, 4"), "dimension 4611686018427387904"));
  CHECK(has(import_error("2147483647, 2147483647, 2147483647"), "more than 2^63 elements"));
  CHECK(has(import_error("65536, 65537"), "holds 4295032832 elements"));
}

TEST_CASE("verify_plan rejects shapes past the limits") {
  std::vector<uint8_t> bytes = relu_plan("2, 4, 8");
  REQUIRE(verify_error(bytes).empty());
  SUBCASE("a dim of 2^63 - 1") {
    forge_shapes(bytes, {1, 1, INT64_MAX});
    CHECK(has(verify_error(bytes), "tensor 0: shape [1x1x9223372036854775807] has dimension"));
  }
  SUBCASE("a volume that wraps 64 bits") {
    forge_shapes(bytes, {2147483647, 2147483647, 2147483647});
    CHECK(has(verify_error(bytes), "more than 2^63 elements"));
  }
  SUBCASE("a volume past 2^32") {
    forge_shapes(bytes, {2, 65536, 65536});
    CHECK(has(verify_error(bytes), "holds 8589934592 elements, more than the limit"));
  }
}

TEST_CASE("verify_plan rejects a page size that does not follow from the shape") {
  std::vector<uint8_t> bytes = relu_plan("4, 8");
  auto plan = runtime::verify_plan(bytes, "original");
  REQUIRE(plan);
  const fb::TensorPlan* t = plan->plan().tensors()->Get(0);
  REQUIRE(t->page_size() == 32 * 32 * 4);  // one f32 tile
  const uint8_t* field =
      reinterpret_cast<const flatbuffers::Table*>(t)->GetAddressOf(fb::TensorPlan::VT_PAGE_SIZE);
  REQUIRE(field != nullptr);
  uint32_t small = 64;
  std::memcpy(&bytes[static_cast<size_t>(field - bytes.data())], &small, sizeof small);
  CHECK(has(verify_error(bytes), "tensor 0: page size 64 does not follow from its shape"));
}

TEST_CASE("a plan that verifies but exceeds the chip fails at bind, before any host buffer") {
  std::vector<uint8_t> bytes = relu_plan("4, 8");
  forge_shapes(bytes, {65536, 65536});  // 2^32 f32 elements: 16 GiB, more than 12 GiB of DRAM
  auto plan = runtime::verify_plan(bytes, "forged");
  REQUIRE_MESSAGE(plan, (plan ? std::string() : plan.error().message));
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto exe = runtime::Executable::bind(*plan, **dev);
  REQUIRE_FALSE(exe);
  CHECK(exe.error().code == ErrorCode::resource_exhausted);
  CHECK(has(exe.error().message, "tensor 0 'x' [65536x65536] needs"));
  CHECK(has(exe.error().message, "bytes per DRAM bank"));
}

TEST_CASE("a rank-0 tensor's plan verifies") {
  auto g = planner::import_graph_json(
      R"({ name: "scalar", arguments: [{ value: { name: "x", shape: [], dtype: "bf16" } }],
           ops: [{ kind: "relu", operands: ["x"], results: [{ name: "y" }] }],
           outputs: ["y"] })",
      "scalar.json");
  REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
  auto c =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE_MESSAGE(c, (c ? std::string() : c.error().message));
  auto plan = runtime::verify_plan(c->bytes, "scalar");
  CHECK_MESSAGE(plan, (plan ? std::string() : plan.error().message));
}

TEST_CASE("a graph.json mesh axis past 65535 chips is named with its size") {
  auto g = planner::import_annotated_graph_json(
      R"({ name: "m", mesh_axes: [{ name: "x", size: 1099511627776 }],
           arguments: [{ value: { name: "x", shape: [4, 4], dtype: "bf16" } }],
           ops: [{ kind: "relu", operands: ["x"], results: [{ name: "y" }] }],
           outputs: ["y"] })",
      "mesh.json");
  REQUIRE_FALSE(g);
  CHECK(has(g.error().message,
            "mesh.json: mesh axis 'x' has size 1099511627776; mesh axes have 1 to 65535 chips"));
}
