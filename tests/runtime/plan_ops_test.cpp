// verify_plan on op entries the op set made possible: variadic operand counts bounded by
// kMaxOperands, attribute lists bounded by kMaxRank, consistent slice lists, known enums.
// Plans are built by hand with the FlatBuffers builder (the runtime never links the planner).
#include <doctest/doctest.h>

#include <functional>

#include "meshplan/device/types.hpp"
#include "meshplan/runtime/plan.hpp"
#include "meshplan/schemas/schemas.hpp"

using namespace meshplan;

namespace {

/// A one-op plan over a single [4, 4] bf16 tensor; `config` writes the op's OpConfig.
std::vector<uint8_t> one_op_plan(
    fb::OpKind kind, uint32_t operands,
    const std::function<flatbuffers::Offset<fb::OpConfig>(flatbuffers::FlatBufferBuilder&)>&
        config) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<int64_t> shape{4, 4};
  auto tname = b.CreateString("t");
  auto tshape = b.CreateVector(shape);
  fb::TensorPlanBuilder tb(b);
  tb.add_name(tname);
  tb.add_shape(tshape);
  tb.add_page_size(2048);
  std::vector<flatbuffers::Offset<fb::TensorPlan>> tensors{tb.Finish()};
  std::vector<uint32_t> ids(operands, 0), res{0};
  auto cfg = config ? config(b) : 0;
  auto op = fb::CreateOpPlan(b, kind, b.CreateString("op"), b.CreateVector(ids),
                             b.CreateVector(res), cfg);
  std::vector<flatbuffers::Offset<fb::OpPlan>> ops{op};
  fb::Hash128 h(1, 2);
  auto device = fb::CreateDeviceInfo(b, b.CreateString("wormhole_b0"), 8, 8, 0, 0, 12, 0, &h);
  auto header = fb::CreatePlanHeader(b, kPlanFormatMajor, kPlanFormatMinor, b.CreateString("test"),
                                     &h, &h, b.CreateString("g"), device);
  std::vector<uint32_t> io{0};
  auto plan = fb::CreatePlan(b, header, b.CreateVector(tensors), b.CreateVector(ops),
                             b.CreateVector(io), b.CreateVector(io));
  b.FinishSizePrefixed(plan, fb::PlanIdentifier());
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

std::string verify_error(const std::vector<uint8_t>& bytes) {
  auto r = runtime::verify_plan(bytes, "hand-made");
  return r ? std::string() : r.error().message;
}

}  // namespace

TEST_CASE("verify_plan bounds variadic operand counts") {
  CHECK(verify_error(one_op_plan(fb::OpKind::concat, 3, nullptr)).empty());
  CHECK(verify_error(one_op_plan(fb::OpKind::concat, device::kMaxOperands, nullptr)).empty());
  std::string e = verify_error(one_op_plan(fb::OpKind::concat, device::kMaxOperands + 1, nullptr));
  CHECK(e.find("(concat) has the wrong number of operands") != std::string::npos);
  CHECK_FALSE(verify_error(one_op_plan(fb::OpKind::concat, 0, nullptr)).empty());
  CHECK(verify_error(one_op_plan(fb::OpKind::layer_norm, 3, nullptr)).empty());
  CHECK_FALSE(verify_error(one_op_plan(fb::OpKind::layer_norm, 4, nullptr)).empty());
  CHECK_FALSE(verify_error(one_op_plan(fb::OpKind::linear, 2, nullptr)).empty());
}

TEST_CASE("verify_plan bounds attribute lists and checks their consistency") {
  auto with_begins = [](size_t n, size_t ends) {
    return [n, ends](flatbuffers::FlatBufferBuilder& b) {
      std::vector<int64_t> v(n, 0), e(ends, 1);
      auto bv = b.CreateVector(v), ev = b.CreateVector(e), sv = b.CreateVector(v);
      fb::OpConfigBuilder cb(b);
      cb.add_begins(bv);
      cb.add_ends(ev);
      cb.add_steps(sv);
      return cb.Finish();
    };
  };
  CHECK(verify_error(one_op_plan(fb::OpKind::slice, 1, with_begins(2, 2))).empty());
  CHECK(verify_error(one_op_plan(fb::OpKind::slice, 1, with_begins(9, 9)))
            .find("longer than the runtime supports") != std::string::npos);
  CHECK(verify_error(one_op_plan(fb::OpKind::slice, 1, with_begins(2, 1)))
            .find("different lengths") != std::string::npos);
  auto perm = [](size_t n) {
    return [n](flatbuffers::FlatBufferBuilder& b) {
      std::vector<int32_t> v(n, 0);
      auto dv = b.CreateVector(v);
      fb::OpConfigBuilder cb(b);
      cb.add_dims(dv);
      return cb.Finish();
    };
  };
  CHECK(verify_error(one_op_plan(fb::OpKind::permute, 1, perm(8))).empty());
  CHECK_FALSE(verify_error(one_op_plan(fb::OpKind::permute, 1, perm(9))).empty());
  auto activation = [](flatbuffers::FlatBufferBuilder& b) {
    fb::OpConfigBuilder cb(b);
    cb.add_activation(static_cast<fb::Activation>(200));
    return cb.Finish();
  };
  CHECK(verify_error(one_op_plan(fb::OpKind::add, 2, activation)).find("unknown activation") !=
        std::string::npos);
}
