// Plans with input transforms (format 1.2): the runtime prepares a conv2d weight passed in its
// host shape, equal results with and without preparation, errors naming the input and both
// shapes, and verify_plan rejecting damaged transforms.
#include <doctest/doctest.h>

#include <cstring>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/input_transform.hpp"

using namespace meshplan;

namespace {

/// x -> conv 3x3 (w1, bias) -> relu -> grouped conv 1x1 (w2): two prepared weights.
planner::Graph cnn() {
  using planner::attr;
  planner::GraphBuilder b("cnn");
  auto x = b.input("x", {1, 10, 10, 8});
  auto w1 = b.parameter("w1", {16, 3, 3, 8});
  auto b1 = b.parameter("b1", {16});
  auto w2 = b.parameter("w2", {24, 1, 1, 8});
  auto c1 = b.op("conv2d", {x, w1, b1},
                 {attr("padding", std::vector<int64_t>{1, 1}), attr("activation", "relu")}, "c1");
  b.output(b.op("conv2d", {c1, w2}, {attr("groups", 2)}, "c2"));
  auto g = b.build();
  REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
  return *g;
}

std::vector<uint8_t> compile(bool prepare, const char* policy = "dram") {
  planner::PlannerOptions o;
  o.policy = policy;
  o.prepare_weights = prepare;
  auto c = planner::compile(cnn(), device::wormhole_b0(), o);
  REQUIRE_MESSAGE(c, (c ? std::string() : c.error().message));
  return c->bytes;
}

std::string verify_error(const std::vector<uint8_t>& bytes) {
  auto r = runtime::verify_plan(bytes, "damaged");
  return r ? std::string() : r.error().message;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a prepared plan runs host-shaped weights; results equal the unprepared plan's") {
  std::vector<uint8_t> on_bytes = compile(true), off_bytes = compile(false);
  auto on = runtime::verify_plan(on_bytes, "on");
  auto off = runtime::verify_plan(off_bytes, "off");
  REQUIRE(on);
  REQUIRE(off);
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto on_exe = runtime::Executable::bind(*on, **dev);
  auto off_exe = runtime::Executable::bind(*off, **dev);
  REQUIRE(on_exe);
  REQUIRE(off_exe);
  // Both take the same host shapes; random inputs are drawn alike.
  REQUIRE((*on_exe)->input_count() == (*off_exe)->input_count());
  for (size_t i = 0; i < (*on_exe)->input_count(); ++i)
    CHECK(std::ranges::equal((*on_exe)->input_shape(i), (*off_exe)->input_shape(i)));
  CHECK(std::ranges::equal((*on_exe)->input_shape(1), std::vector<int64_t>{16, 3, 3, 8}));
  auto inputs = runtime::random_inputs(*on, 5);
  auto off_inputs = runtime::random_inputs(*off, 5);
  for (size_t i = 0; i < inputs.size(); ++i) CHECK(inputs[i].data == off_inputs[i].data);
  auto views = runtime::views_of(inputs);
  auto a = (*on_exe)->run(views);
  REQUIRE_MESSAGE(a, (a ? std::string() : a.error().message));
  auto b = (*off_exe)->run(views);
  REQUIRE(b);
  // Same DRAM policy, same kernels, same summation order: bit-equal outputs.
  REQUIRE(a->outputs.size() == 1);
  CHECK(a->outputs[0].data == b->outputs[0].data);
  // Fewer weight bytes from DRAM.
  CHECK(a->device_ns < b->device_ns);
  auto ra = runtime::run_reference(*on, views);
  auto rb = runtime::run_reference(*off, views);
  REQUIRE(ra);
  REQUIRE(rb);
  CHECK((*ra)[0].data == (*rb)[0].data);
  CHECK(runtime::check_outputs(a->outputs, *ra, runtime::kDefaultTolerance).ok);
  // Runs again with the same staging buffer: the same result.
  auto again = (*on_exe)->run(views);
  REQUIRE(again);
  CHECK(again->outputs[0].data == a->outputs[0].data);

  SUBCASE("a wrong host tensor names the input and both shapes") {
    std::vector<int64_t> device_shape{72, 16};
    std::vector<float> data(72 * 16, 0.0f);
    views[1] = runtime::TensorView{device_shape, data};
    auto r = (*on_exe)->run(views);
    REQUIRE_FALSE(r);
    CHECK(contains(r.error().message, "input 1 'w1'"));
    CHECK(contains(r.error().message, "[72x16]"));
    CHECK(contains(r.error().message, "[16x3x3x8]"));
    auto rr = runtime::run_reference(*on, views);
    REQUIRE_FALSE(rr);
    CHECK(contains(rr.error().message, "[16x3x3x8]"));
    // Right shape, too few values.
    std::vector<int64_t> host{16, 3, 3, 8};
    views[1] = runtime::TensorView{host, std::span<const float>(data).subspan(0, 100)};
    r = (*on_exe)->run(views);
    REQUIRE_FALSE(r);
    CHECK(contains(r.error().message, "100 values"));
  }
}

TEST_CASE("verify_plan rejects damaged input transforms") {
  std::vector<uint8_t> bytes = compile(true);
  auto plan = runtime::verify_plan(bytes, "ok");
  REQUIRE(plan);
  const auto* list = plan->plan().input_transforms();
  REQUIRE(list);
  REQUIRE(list->size() == 4);
  const fb::InputTransform* t = list->Get(1);
  REQUIRE(t->kind() == fb::InputTransformKind::conv_weight);
  auto offset_of = [&](const void* p) {
    return static_cast<size_t>(static_cast<const uint8_t*>(p) - bytes.data());
  };
  // Generated tables derive privately from flatbuffers::Table: reach the field addresses through
  // it.
  const auto* table = reinterpret_cast<const flatbuffers::Table*>(t);
  size_t kind_at = offset_of(table->GetAddressOf(fb::InputTransform::VT_KIND));
  size_t shape_at = offset_of(t->host_shape()->data());
  // Groups are stored only when not 1: input 3 (w2) has groups 2.
  const fb::InputTransform* grouped = list->Get(3);
  REQUIRE(grouped->groups() == 2);
  size_t groups_at = offset_of(reinterpret_cast<const flatbuffers::Table*>(grouped)->GetAddressOf(
      fb::InputTransform::VT_GROUPS));

  SUBCASE("unknown kind") {
    bytes[kind_at] = 7;
    std::string e = verify_error(bytes);
    CHECK(contains(e, "input 1 has unknown transform kind 7"));
  }
  SUBCASE("host shape that does not prepare into the tensor") {
    int64_t o = 17;
    std::memcpy(&bytes[shape_at], &o, sizeof o);
    std::string e = verify_error(bytes);
    CHECK(contains(e, "input 1"));
    CHECK(contains(e, "[17x3x3x8]"));
    CHECK(contains(e, "[72x17]"));
  }
  SUBCASE("non-positive dim") {
    int64_t zero = 0;
    std::memcpy(&bytes[shape_at + 8], &zero, sizeof zero);
    CHECK(contains(verify_error(bytes), "outside [1, 2^31)"));
  }
  SUBCASE("groups that do not divide O") {
    int32_t g = 5;
    std::memcpy(&bytes[groups_at], &g, sizeof g);
    CHECK(contains(verify_error(bytes), "groups 5"));
  }
  SUBCASE("kind none with a host shape") {
    bytes[kind_at] = 0;
    CHECK(contains(verify_error(bytes), "has a host shape but no transform"));
  }
}
