// The reshape input transform (an NHWC activation the planner flattened): verify_plan accepts
// the planner's and rejects host shapes whose volume is not the tensor's or whose dims are out
// of range; a conv_weight input keeps its own checks beside it.
#include <doctest/doctest.h>

#include <cstring>

#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/input_transform.hpp"
#include "meshplan/runtime/plan.hpp"

using namespace meshplan;

namespace {

std::vector<uint8_t> flat_plan() {
  using planner::attr;
  planner::GraphBuilder b("flat");
  auto x = b.input("x", {2, 5, 6, 8});
  auto w = b.parameter("w", {16, 3, 3, 8});
  b.output(b.op("conv2d", {x, w}, {attr("padding", std::vector<int64_t>{1, 1})}, "c"));
  auto g = b.build();
  REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
  auto c =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE_MESSAGE(c, (c ? std::string() : c.error().message));
  return c->bytes;
}

std::string verify_error(const std::vector<uint8_t>& bytes) {
  auto r = runtime::verify_plan(bytes, "damaged");
  return r ? std::string() : r.error().message;
}

}  // namespace

TEST_CASE("verify_plan checks reshape input transforms") {
  std::vector<uint8_t> bytes = flat_plan();
  auto plan = runtime::verify_plan(bytes, "ok");
  REQUIRE_MESSAGE(plan, (plan ? std::string() : plan.error().message));
  const auto* list = plan->plan().input_transforms();
  REQUIRE(list);
  REQUIRE(list->size() == 2);
  const fb::InputTransform* t = list->Get(0);
  REQUIRE(t->kind() == fb::InputTransformKind::reshape);
  CHECK(list->Get(1)->kind() == fb::InputTransformKind::conv_weight);
  CHECK(std::ranges::equal(runtime::user_input_shape(*plan, 0), std::vector<int64_t>{2, 5, 6, 8}));
  CHECK(std::ranges::equal(plan->placement(plan->plan().inputs()->Get(0)).shape,
                           std::vector<int64_t>{1, 1, 60, 8}));
  size_t shape_at =
      static_cast<size_t>(reinterpret_cast<const uint8_t*>(t->host_shape()->data()) - bytes.data());

  SUBCASE("a host shape of another volume") {
    int64_t n = 3;
    std::memcpy(&bytes[shape_at], &n, sizeof n);
    std::string e = verify_error(bytes);
    CHECK(e.find("input 0") != std::string::npos);
    CHECK(e.find("reshape host shape holds 720 values, the input tensor 480") != std::string::npos);
  }
  SUBCASE("a non-positive dim") {
    int64_t zero = 0;
    std::memcpy(&bytes[shape_at + 8], &zero, sizeof zero);
    CHECK(verify_error(bytes).find("outside [1, 2^31)") != std::string::npos);
  }
  SUBCASE("the same volume in another shape is accepted: the bytes are the same") {
    int64_t dims[2] = {1, 10};  // [1x10x6x8]
    std::memcpy(&bytes[shape_at], dims, sizeof dims);
    CHECK(verify_error(bytes).empty());
  }
}
