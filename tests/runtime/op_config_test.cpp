// Matmul program configs survive the plan format: every OpConfig field written with the
// generated builder (as planner/src/emit/emit.cpp writes it) comes back from op_config_of(), and
// absent fields read as device::OpConfig's defaults.
#include <doctest/doctest.h>

#include "meshplan/runtime/executable.hpp"

using namespace meshplan;

namespace {

const fb::OpPlan* build(flatbuffers::FlatBufferBuilder& b, bool with_config) {
  flatbuffers::Offset<fb::OpConfig> config;
  if (with_config) {
    fb::OpConfigBuilder c(b);
    c.add_transpose_a(true);
    c.add_activation(fb::Activation::relu);
    c.add_fidelity(fb::MathFidelity::lofi);
    c.add_grid_x(4);
    c.add_grid_y(2);
    c.add_program(fb::MatmulProgram::mcast_1d);
    c.add_mcast_in0(false);
    c.add_transpose_mcast(true);
    c.add_per_core_m(3);
    c.add_per_core_n(5);
    c.add_in0_block_w(2);
    c.add_out_subblock_h(1);
    c.add_out_subblock_w(4);
    config = c.Finish();
  }
  auto name = b.CreateString("mm");
  auto ids = b.CreateVector(std::vector<uint32_t>{0, 1});
  auto res = b.CreateVector(std::vector<uint32_t>{2});
  b.Finish(fb::CreateOpPlan(b, fb::OpKind::matmul, name, ids, res, config));
  return flatbuffers::GetRoot<fb::OpPlan>(b.GetBufferPointer());
}

}  // namespace

TEST_CASE("op_config_of reads every matmul program field") {
  flatbuffers::FlatBufferBuilder b;
  device::OpConfig c = runtime::op_config_of(*build(b, true));
  CHECK(c.transpose_a);
  CHECK(c.activation == device::Activation::relu);
  CHECK(c.fidelity == device::MathFidelity::lofi);
  CHECK(c.grid_x == 4);
  CHECK(c.grid_y == 2);
  CHECK(c.program == device::MatmulProgram::mcast_1d);
  CHECK_FALSE(c.mcast_in0);
  CHECK(c.transpose_mcast);
  CHECK(c.per_core_m == 3);
  CHECK(c.per_core_n == 5);
  CHECK(c.in0_block_w == 2);
  CHECK(c.out_subblock_h == 1);
  CHECK(c.out_subblock_w == 4);
}

TEST_CASE("absent config fields read as the device defaults") {
  flatbuffers::FlatBufferBuilder b;
  flatbuffers::FlatBufferBuilder b2;
  auto config = fb::CreateOpConfig(b2);  // every field at its schema default
  b2.Finish(fb::CreateOpPlan(b2, fb::OpKind::matmul, 0, 0, 0, config));
  device::OpConfig c =
      runtime::op_config_of(*flatbuffers::GetRoot<fb::OpPlan>(b2.GetBufferPointer()));
  device::OpConfig d;
  CHECK(c.program == d.program);
  CHECK(c.mcast_in0 == d.mcast_in0);
  CHECK(c.transpose_mcast == d.transpose_mcast);
  CHECK(c.per_core_m == d.per_core_m);
  CHECK(c.in0_block_w == d.in0_block_w);
  CHECK(c.out_subblock_h == d.out_subblock_h);
  CHECK(c.out_subblock_w == d.out_subblock_w);
  CHECK(c.grid_x == d.grid_x);
  // No config table at all.
  device::OpConfig none = runtime::op_config_of(*build(b, false));
  CHECK(none.program == d.program);
  CHECK(none.out_subblock_w == 1);
}
