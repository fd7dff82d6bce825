// Values moved between meshes that lay the same devices out otherwise (other axes, another axis
// order, reversed device_ids) run on the emulated 2x2 mesh with global inputs, bit-equal to the
// same program planned for one chip (integer-valued data, exact in f32), and cost what the
// collectives worked out by hand cost: the source's counterpart on the module's mesh is
// resharded there, and a collective_permute moves each piece to the device the target wants it
// on (no op when every piece already is there).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include "test_util.hpp"

using namespace meshplan;

namespace {

const std::string kCompile = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
const std::string kRun = std::string(MESHPLAN_BINARY_DIR) + "/runtime/meshplan-run";

constexpr int kRows = 32, kCols = 64;
constexpr const char* kInputType = "32x64xf32";
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

std::vector<float> values() {
  std::vector<float> v(kRows * kCols);
  for (int i = 0; i < kRows * kCols; ++i) v[i] = static_cast<float>((i * 7 + i / 9) % 5 - 2);
  return v;
}

/// Compiles the sharded and the one-chip program, runs both with the same global input, checks
/// they agree bit for bit and equal 2|x|; returns the sharded compile's summary.
std::string run_both(const std::string& meshes, const std::string& from, const std::string& to) {
  test::TempDir dir;
  const std::string mesh_mlir = dir.file("m.mlir"), one_mlir = dir.file("one.mlir");
  std::ofstream(mesh_mlir, std::ios::trunc) << module_text(meshes, from, to);
  std::ofstream(one_mlir, std::ios::trunc) << one_chip_text();
  const std::string cache = dir.file("c.mpc");
  auto c1 = test::run_shell(kCompile + " " + mesh_mlir + " -o " + cache + " --name mesh");
  INFO(c1.text);
  REQUIRE(c1.status == 0);
  auto c2 = test::run_shell(kCompile + " " + one_mlir + " -o " + cache + " --name one");
  INFO(c2.text);
  REQUIRE(c2.status == 0);
  const std::vector<float> x = values();
  const std::string out_mesh = dir.file("mesh.npy"), out_one = dir.file("one.npy");
  auto r1 = test::run_shell(kRun + " " + cache + " --name mesh" + test::input_arg(kInputType, x) +
                            " --output=@" + out_mesh);
  INFO(r1.text);
  REQUIRE(r1.status == 0);
  auto r2 = test::run_shell(kRun + " " + cache + " --name one" + test::input_arg(kInputType, x) +
                            " --output=@" + out_one);
  INFO(r2.text);
  REQUIRE(r2.status == 0);
  CHECK(test::read_bytes(out_mesh) == test::read_bytes(out_one));
  std::vector<float> got = test::npy_values(out_mesh, x.size());
  int wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) wrong += got[i] != 2 * std::fabs(x[i]);
  CHECK(wrong == 0);
  return c1.text;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::string kXY = "sdy.mesh @m = <[\"x\"=2, \"y\"=2]>\n";

}  // namespace

TEST_CASE("2x2 -> 4: [{x}, {y}] on @m to [{a}, {}] on @n = [a=4] is one all_to_all") {
  // @n's [{a}] has @m's [{x, y}] as counterpart (device k holds rows 8k..8k+7 under both), so
  // the move is @m's [{x}, {y}] -> [{x, y}, {}]: "y" moves from dim 1 to dim 0, an all_to_all
  // over groups of 2 where each chip sends half its 16x32 f32 shard (2048 bytes): 1024 bytes.
  // The permute onto @n and the result's way back onto @m move nothing and are no ops.
  std::string summary =
      run_both(kXY + "sdy.mesh @n = <[\"a\"=4]>\n", "@m, [{\"x\"}, {\"y\"}]", "@n, [{\"a\"}, {}]");
  INFO(summary);
  CHECK(has(summary, "all_to_all on groups of 2"));
  CHECK(has(summary, "communication 1024 bytes per chip in 1 collectives"));
}

TEST_CASE("4 -> 2x2: [{a}, {}] on @n to [{x}, {y}] on @m") {
  // The input on @n arrives as its counterpart [{x, y}, {}] on @m (same rows per device: no
  // permute), then the all_to_all of the test above the other way: 8x64 f32 shards (2048
  // bytes), half of each sent.
  std::string summary =
      run_both(kXY + "sdy.mesh @n = <[\"a\"=4]>\n", "@n, [{\"a\"}, {}]", "@m, [{\"x\"}, {\"y\"}]");
  INFO(summary);
  CHECK(has(summary, "all_to_all on groups of 2"));
  CHECK(has(summary, "communication 1024 bytes per chip in 1 collectives"));
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
  // Onto [a=4] in reversed order: the all_to_all of the 2x2 -> 4 case (1024 bytes), then each
  // 8x64 shard (2048 bytes) to its mirror, and back for the result.
  summary = run_both(kXY + "sdy.mesh @n = <[\"a\"=4], device_ids=[3, 2, 1, 0]>\n",
                     "@m, [{\"x\"}, {\"y\"}]", "@n, [{\"a\"}, {}]");
  INFO(summary);
  CHECK(has(summary, "communication 5120 bytes per chip in 3 collectives"));
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
