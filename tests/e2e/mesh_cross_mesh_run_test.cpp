// Values moved between meshes that lay the same devices out otherwise (other axes, another axis
// order, reversed device_ids) run on the emulated 2x2 mesh with global inputs, bit-equal to the
// same program planned for one chip (integer-valued data, exact in f32), and cost what the
// collectives worked out by hand cost: the source's counterpart on the module's mesh is
// resharded there, and a collective_permute moves each piece to the device the target wants it
// on (no op when every piece already is there).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include "mesh_vs_one_chip.hpp"
#include "test_util.hpp"

using namespace meshplan;

namespace {

const std::string kType = "tensor<32x64xf32>";

/// `meshes` (the first is the module's), then |x| + |x| with x split `from` (on its mesh),
/// resharded to `to` (on its mesh) and returned so.
std::string module_text(const std::string& meshes, const std::string& from,
                        const std::string& to) {
  return meshes + "func.func public @main(%arg0: " + kType + " {sdy.sharding = #sdy.sharding<" +
         from + ">}) -> (" + kType + " {sdy.sharding = #sdy.sharding<" + to +
         ">}) {\n  %0 = stablehlo.abs %arg0 : " + kType + "\n  %1 = stablehlo.add %0, %0 : " +
         kType + "\n  %2 = sdy.sharding_constraint %1 <" + to + "> : " + kType +
         "\n  return %2 : " + kType + "\n}\n";
}

std::string one_chip_text() {
  return "func.func public @main(%arg0: " + kType + ") -> " + kType +
         " {\n  %0 = stablehlo.abs %arg0 : " + kType + "\n  %1 = stablehlo.add %0, %0 : " + kType +
         "\n  return %1 : " + kType + "\n}\n";
}

/// Compiles the sharded and the one-chip program, runs both with the same global input, checks
/// they agree bit for bit and equal 2|x|; returns the sharded compile's summary.
std::string run_both(const std::string& meshes, const std::string& from, const std::string& to) {
  return test::run_mesh_and_one_chip(module_text(meshes, from, to), one_chip_text());
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::string kXY = "sdy.mesh @m = <[\"x\"=2, \"y\"=2]>\n";

}  // namespace

TEST_CASE("2x2 -> 4: [{x}, {y}] on @m to [{a}, {}] on @n = [a=4] is one exchange") {
  // @n's [{a}] has @m's [{x, y}] as counterpart (device k holds rows 8k..8k+7 under both), so
  // the move is @m's [{x}, {y}] -> [{x, y}, {}]: "y" moves from dim 1 to dim 0, an all_to_all
  // over groups of 2. Its split leaves 16 columns, which tt-metal's all_to_all refuses (the last
  // dim in whole tiles): it runs as an all_gather and all_slice, each chip receiving the other's
  // whole 16x32 f32 shard, 2048 bytes (the all_to_all would send half, 1024).
  // The permute onto @n and the result's way back onto @m move nothing and are no ops.
  std::string summary =
      run_both(kXY + "sdy.mesh @n = <[\"a\"=4]>\n", "@m, [{\"x\"}, {\"y\"}]", "@n, [{\"a\"}, {}]");
  INFO(summary);
  CHECK(has(summary, "all_gather + all_slice on groups of 2"));
  CHECK(has(summary, "communication 2048 bytes per chip in 1 collectives"));
}

TEST_CASE("4 -> 2x2: [{a}, {}] on @n to [{x}, {y}] on @m") {
  // The input on @n arrives as its counterpart [{x, y}, {}] on @m (same rows per device: no
  // permute), then the all_to_all of the test above the other way: 8x64 f32 shards (2048
  // bytes); 8 rows to concatenate, which tt-metal's all_to_all refuses (the second-last dim in
  // multiples of 16): an all_gather and all_slice, the other chip's whole shard received.
  std::string summary =
      run_both(kXY + "sdy.mesh @n = <[\"a\"=4]>\n", "@n, [{\"a\"}, {}]", "@m, [{\"x\"}, {\"y\"}]");
  INFO(summary);
  CHECK(has(summary, "all_gather + all_slice on groups of 2"));
  CHECK(has(summary, "communication 2048 bytes per chip in 1 collectives"));
}

TEST_CASE("[a, b] -> [b, a]: the same sharding on the transposed mesh is a permute") {
  // Device k is (a=k/2, b=k%2) on @m and (b=k/2, a=k%2) on @n: devices 1 and 2 trade their
  // 16x32 f32 shards (2048 bytes), and trade back for the result, which leaves as @m's.
  std::string summary = run_both(
      "sdy.mesh @m = <[\"a\"=2, \"b\"=2]>\nsdy.mesh @n = <[\"b\"=2, \"a\"=2]>\n",
      "@m, [{\"a\"}, {\"b\"}]", "@n, [{\"a\"}, {\"b\"}]");
  INFO(summary);
  CHECK(has(summary, "collective_permute at"));
  CHECK(has(summary, "communication 4096 bytes per chip in 2 collectives"));
  CHECK_FALSE(has(summary, "all_gather"));
}

TEST_CASE("reversed device_ids: every device trades its shard with its mirror") {
  // @r puts position k on device 3-k: each chip sends its 16x32 shard there (2048 bytes), and
  // the result leaves as @m's through the same exchange.
  std::string summary =
      run_both(kXY + "sdy.mesh @r = <[\"x\"=2, \"y\"=2], device_ids=[3, 2, 1, 0]>\n",
               "@m, [{\"x\"}, {\"y\"}]", "@r, [{\"x\"}, {\"y\"}]");
  INFO(summary);
  CHECK(has(summary, "communication 4096 bytes per chip in 2 collectives"));
  // Onto [a=4] in reversed order: the exchange of the 2x2 -> 4 case (2048 bytes), then each
  // 8x64 shard (2048 bytes) to its mirror, and back for the result.
  summary = run_both(kXY + "sdy.mesh @n = <[\"a\"=4], device_ids=[3, 2, 1, 0]>\n",
                     "@m, [{\"x\"}, {\"y\"}]", "@n, [{\"a\"}, {}]");
  INFO(summary);
  CHECK(has(summary, "communication 6144 bytes per chip in 3 collectives"));
}

TEST_CASE("other axes and a replicated side: gather on the source, slice on the target") {
  // Replicated on @n: @m's [{x}, {y}] gathers fully on @m and nothing moves onto @n. Dim 0
  // over "x" sends half of the 32x32 f32 result (2048 bytes), then dim 1 over "y" half of the
  // 32x64 (4096 bytes).
  std::string summary =
      run_both(kXY + "sdy.mesh @n = <[\"a\"=4]>\n", "@m, [{\"x\"}, {\"y\"}]", "@n, [{}, {}]");
  INFO(summary);
  CHECK_FALSE(has(summary, "collective_permute"));
  CHECK(has(summary, "communication 6144 bytes per chip in 2 collectives"));
  // Replicated on @n to [{}, {a}] there: a local slice on @m ([{}, {x, y}]), no communication.
  summary = run_both(kXY + "sdy.mesh @n = <[\"a\"=4]>\n", "@n, [{}, {}]", "@n, [{}, {\"a\"}]");
  INFO(summary);
  CHECK(has(summary, "communication 0 bytes"));
}
