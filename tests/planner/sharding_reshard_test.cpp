// Reshards where Shardy inserts them: before a reshape whose operand's minor factor is split;
// all_reduce of unreduced (partial-sum) values before a use that does not keep them; and the
// located errors for shardings Shardy refuses (unknown axis, axis used twice, indivisible dim).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/spmd_host.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

Result<Module> pipe(const std::string& text, const char* stage, bool presharded = false) {
  auto m = parse_module(text, "t.mlir");
  if (!m) return std::unexpected(m.error());  // shardings are checked as the module is read too
  PipelineOptions o;
  o.mesh_rows = 0;  // the module's own mesh
  o.mesh_cols = 0;
  o.presharded_arguments = presharded;
  o.stop_after = *stage_from_name(stage);
  auto s = run_pipeline(*m, o);
  if (!s) return std::unexpected(s.error());
  return std::move(*m);
}

Module ok(const std::string& text, const char* stage, bool presharded = false) {
  auto m = pipe(text, stage, presharded);
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  return std::move(*m);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

std::string error_of(const std::string& text) {
  auto m = pipe(text, "close");
  REQUIRE(!m.has_value());
  return m.error().message;
}

const std::string kReshape =
    "sdy.mesh @mesh = <[\"x\"=2]>\n"
    "func.func public @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, "
    "{\"x\"}]>}) -> tensor<64xf32> {\n"
    "  %0 = stablehlo.reshape %arg0 : (tensor<8x8xf32>) -> tensor<64xf32>\n"
    "  return %0 : tensor<64xf32>\n}\n";

std::string unreduced_module(const std::string& result_sharding) {
  return "sdy.mesh @mesh = <[\"x\"=2]>\n"
         "func.func public @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, "
         "[{}, {}], unreduced={\"x\"}>}, %arg1: tensor<8x8xf32>) -> (tensor<8x8xf32>" +
         result_sharding +
         ") {\n"
         "  %0 = stablehlo.multiply %arg0, %arg1 : tensor<8x8xf32>\n"
         "  return %0 : tensor<8x8xf32>\n}\n";
}

}  // namespace

TEST_CASE("reshape of [{}, {x}]: the operand is gathered first, the program is exact") {
  std::string reshards = print_module(ok(kReshape, "explicit-reshards"));
  // The minor factor of the merged dim cannot stay split while the major one is whole.
  CHECK(reshards.find("sdy.reshard %arg0 <@mesh, [{}, {}]>") != std::string::npos);
  Module local = ok(kReshape, "close");
  std::string printed = print_module(local);
  CHECK(count(printed, "stablehlo.all_gather") == 1);
  CHECK(verify_local_program(local).has_value());
  auto global = parse_module(kReshape, "r.mlir");
  REQUIRE(global.has_value());
  auto inputs = random_inputs(*global, 5);
  auto ref = evaluate_reference(*global, inputs);
  REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
  auto spmd = evaluate_spmd(local, inputs);
  REQUIRE_MESSAGE(spmd.has_value(), spmd.error().message);
  REQUIRE(spmd->size() == 1);
  // Element 9 of the flattened result is element [1][1] of the input: a gather, no arithmetic.
  CHECK((*spmd)[0].data == (*ref)[0].data);
  CHECK((*spmd)[0].data[9] == inputs[0].data[9]);
}

TEST_CASE("unreduced partial sums are all-reduced before a multiply by a replicated operand") {
  // Pre-split pieces are partial sums over "x": the product needs their sum first.
  std::string text = unreduced_module("");
  std::string reshards = print_module(ok(text, "explicit-reshards", true));
  size_t ar = reshards.find("sdy.all_reduce {\"x\"} %arg0");
  size_t mul = reshards.find("stablehlo.multiply");
  CHECK(ar != std::string::npos);
  CHECK(ar < mul);
  std::string local = print_module(ok(text, "close", true));
  CHECK(count(local, "\"stablehlo.all_reduce\"") == 1);
  // A result declared unreduced on "x" keeps partial sums of an unreduced value it returns as is.
  std::string keep =
      "sdy.mesh @mesh = <[\"x\"=2]>\n"
      "func.func public @main(%arg0: tensor<8x8xf32> {sdy.sharding = "
      "#sdy.sharding<@mesh, [{}, {}], unreduced={\"x\"}>}) -> (tensor<8x8xf32> "
      "{sdy.sharding = #sdy.sharding<@mesh, [{}, {}], unreduced={\"x\"}>}) {\n"
      "  return %arg0 : tensor<8x8xf32>\n}\n";
  CHECK(count(print_module(ok(keep, "explicit-reshards", true)), "sdy.all_reduce") == 0);
  // A global host array is the reduced value: nothing to sum.
  std::string global = print_module(ok(text, "close", false));
  CHECK(count(global, "all_reduce") == 0);
}

TEST_CASE("shardings Shardy refuses are located errors naming the value, axis and mesh") {
  auto module = [](const std::string& sharding, const std::string& shape = "8x8") {
    return "sdy.mesh @mesh = <[\"x\"=2, \"y\"=4]>\n"
           "func.func public @main(%arg0: tensor<" +
           shape + "xf32> {sdy.sharding = #sdy.sharding<@mesh, " + sharding + ">}) -> tensor<" +
           shape + "xf32> {\n  return %arg0 : tensor<" + shape + "xf32>\n}\n";
  };
  // An unknown axis is refused as the module is read, at the sharding.
  auto unknown = parse_module(module("[{\"z\"}, {}]"), "t.mlir");
  REQUIRE(!unknown.has_value());
  CHECK(unknown.error().message.find("t.mlir:2:") != std::string::npos);
  CHECK(unknown.error().message.find("axis \"z\" is not in mesh @mesh") != std::string::npos);
  std::string twice = error_of(module("[{\"x\"}, {\"x\"}]"));
  CHECK(twice.find("axis \"x\" is used twice") != std::string::npos);
  CHECK(twice.find("argument %arg0") != std::string::npos);
  std::string sub = error_of(module("[{\"y\":(1)2}, {\"y\"}]"));
  CHECK(sub.find("axis \"y\" is used twice") != std::string::npos);
  std::string indivisible = error_of(module("[{\"y\"}, {}]", "6x8"));
  CHECK(indivisible.find("dim 0 of size 6 is not divisible by the 4 devices") != std::string::npos);
  CHECK(indivisible.find("@mesh = <[\"x\"=2, \"y\"=4]>") != std::string::npos);
  std::string rank = error_of(module("[{\"y\"}]"));
  CHECK(rank.find("1 dims for a rank-2 tensor") != std::string::npos);
  std::string op = error_of(
      "sdy.mesh @mesh = <[\"x\"=2]>\n"
      "func.func public @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {\n"
      "  %0 = sdy.sharding_constraint %arg0 <@mesh, [{\"x\"}, {\"x\"}]> : tensor<8x8xf32>\n"
      "  return %0 : tensor<8x8xf32>\n}\n");
  CHECK(op.find("t.mlir:3:") != std::string::npos);
  CHECK(op.find("sdy.sharding_constraint") != std::string::npos);
  CHECK(op.find("axis \"x\" is used twice (mesh @mesh = <[\"x\"=2]>)") != std::string::npos);
}

TEST_CASE("an axis moving between dims costs one all_to_all, half the bytes of a gather") {
  const std::string text =
      "sdy.mesh @mesh = <[\"x\"=2]>\n"
      "func.func public @main(%arg0: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, "
      "[{\"x\"}, {}]>}) -> (tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, "
      "{\"x\"}]>}) {\n  return %arg0 : tensor<32x64xf32>\n}\n";
  Module local = ok(text, "close");
  auto comm = communication(local);
  REQUIRE_MESSAGE(comm.has_value(), comm.error().message);
  REQUIRE(comm->ops.size() == 1);
  CHECK(comm->ops[0].kind == "all_to_all");
  CHECK(comm->ops[0].group == 2);
  // Each chip holds 16x64 f32 (4096 bytes) and sends the half the other chip keeps: 2048 bytes;
  // an all_gather of the 32x64 result would send 4096. (16 rows to concatenate and 32 columns
  // left: tt-metal takes this all_to_all, docs/hardware-rules.md.)
  CHECK(comm->ops[0].bytes == 2048.0);
  CHECK(comm->bytes == 2048.0);
}

TEST_CASE("a value moved onto a mesh of other axes moves through the module's mesh") {
  // @n's [{"a"}] puts rows 2k..2k+1 on device k, as @m's [{"x", "y"}] does: the reshard is
  // @m's [{x}, {y}] -> [{x, y}, {}] ("y" moves from dim 1 to dim 0: one all_to_all over groups
  // of 2) and no permute (no piece changes device). tt-metal refuses that all_to_all (4 rows to
  // concatenate, 1 column left), so it is an all_gather and all_slice: each chip receives the
  // other's whole 4x2 f32 shard, 32 bytes (the all_to_all would send half, 16).
  const std::string head =
      "sdy.mesh @m = <[\"x\"=2, \"y\"=2]>\n"
      "sdy.mesh @n = <[\"a\"=4]>\n"
      "func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@m, "
      "[{\"x\"}, {\"y\"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@n, [{\"a\"}, "
      "{}]>}) {\n"
      "  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{\"x\"}, "
      "{\"y\"}]>]>} : tensor<8x4xf32>\n";
  const std::string moved = head +
                            "  %1 = sdy.reshard %0 <@n, [{\"a\"}, {}]> : tensor<8x4xf32>\n"
                            "  return %1 : tensor<8x4xf32>\n}\n";
  Module local = ok(moved, "close");
  auto comm = communication(local);
  REQUIRE_MESSAGE(comm.has_value(), comm.error().message);
  REQUIRE(comm->ops.size() == 1);
  CHECK(comm->ops[0].kind == "all_gather + all_slice");
  CHECK(comm->ops[0].bytes == 32.0);
  // The result leaves as its counterpart on @m.
  const std::string printed = print_module(local);
  CHECK(printed.find("out_shardings=[<@m, [{\"x\", \"y\"}, {}]>]") != std::string::npos);
  // Shardy's sequence leaves such a reshard; stopping at its local shapes says where.
  auto shardy = pipe(moved, "local-shapes");
  REQUIRE_FALSE(shardy.has_value());
  CHECK(shardy.error().message ==
        "t.mlir:5:3: sdy.reshard from @m to <@n, [{\"a\"}, {}]> moves between meshes of other "
        "device layouts, which Shardy's collectives leave to the reshard");
}

TEST_CASE("a value moved onto a mesh of other devices is refused where it moves") {
  // @n has 2 devices, @m 4: no permute pairs them up.
  const std::string text =
      "sdy.mesh @m = <[\"x\"=2, \"y\"=2]>\n"
      "sdy.mesh @n = <[\"a\"=2]>\n"
      "func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@m, "
      "[{\"x\"}, {\"y\"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@m, [{\"x\"}, "
      "{}]>}) {\n"
      "  %0 = sdy.reshard %arg0 <@n, [{\"a\"}, {}]> : tensor<8x4xf32>\n"
      "  %1 = stablehlo.negate %0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{\"x\"}, "
      "{}]>]>} : tensor<8x4xf32>\n"
      "  return %1 : tensor<8x4xf32>\n}\n";
  auto r = pipe(text, "close");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code == ErrorCode::unimplemented);
  CHECK(r.error().message.find("t.mlir:4:3: ") == 0);
  CHECK(r.error().message.find("@n has 2 devices and @m 4; plans move values only between "
                               "meshes of the same devices") != std::string::npos);
  // @m = ["x"=4] gives @n = ["a"=2, "b"=2]'s [{"a"}, {"b"}] only as sub-axes of "x", over
  // which no physical collective runs: refused at the move, saying why.
  const std::string sub =
      "sdy.mesh @m = <[\"x\"=4]>\n"
      "sdy.mesh @n = <[\"a\"=2, \"b\"=2]>\n"
      "func.func public @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m, "
      "[{\"x\"}, {}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@n, [{\"a\"}, "
      "{\"b\"}]>}) {\n"
      "  %0 = sdy.reshard %arg0 <@n, [{\"a\"}, {\"b\"}]> : tensor<8x8xf32>\n"
      "  return %0 : tensor<8x8xf32>\n}\n";
  auto split = pipe(sub, "close");
  REQUIRE_FALSE(split.has_value());
  CHECK(split.error().message.find("t.mlir:4:3: sdy.reshard from @m to <@n, [{\"a\"}, "
                                   "{\"b\"}]>") == 0);
  CHECK(split.error().message.find("no physical dim of the system") != std::string::npos);
}
