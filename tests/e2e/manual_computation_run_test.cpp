// A user's sdy.manual_computation program runs on the emulated mesh with global host inputs
// and gives what the same computation gives on one device: meshplan-run splits the global
// input by the in_shardings, runs the body per device and assembles the global output by the
// out_shardings. Small integer-valued f32 data: the sums are exact, so the outputs are equal
// text.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

const std::string kBin = MESHPLAN_BINARY_DIR;

void write_text(const std::string& path, const std::string& text) {
  meshplan::test::write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

/// An 8x8 manual computation over both axes of a 2x2 mesh that doubles its block.
std::string manual_program(const std::string& sharding, const std::string& block) {
  return R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, )" +
         sharding + R"(>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, )" + sharding +
         R"(>}) {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, )" +
         sharding + R"(>] out_shardings=[<@mesh, )" + sharding +
         R"(>] manual_axes={"x", "y"} (%arg1: )" + block + R"() {
    %1 = stablehlo.add %arg1, %arg1 : )" +
         block + R"(
    sdy.return %1 : )" +
         block + R"(
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)";
}

const std::string kOneDevice = R"(func.func @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)";

/// `[[a, a+1, ...], ...]`: 8x8 values start, start + step, ... in row-major order.
std::string matrix(int start, int step) {
  std::string s = "[";
  for (int r = 0; r < 8; ++r) {
    s += r ? ",[" : "[";
    for (int c = 0; c < 8; ++c) s += (c ? "," : "") + std::to_string(start + step * (r * 8 + c));
    s += "]";
  }
  return s + "]";
}

/// The printed output line of plan `name` run on the input 0..63.
std::string run(const std::string& cache, const std::string& name) {
  auto r = meshplan::test::run_shell(kBin + "/runtime/meshplan-run " + cache + " --name " + name +
                                     " -q --input='8x8xf32=" + matrix(0, 1) + "' --output -");
  INFO(r.text);
  REQUIRE(r.status == 0);
  size_t at = r.text.find("v1 = ");
  REQUIRE(at != std::string::npos);
  size_t end = r.text.find('\n', at);
  return r.text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

TEST_CASE("a manual computation with global inputs equals the one-device program") {
  meshplan::test::TempDir dir;
  const std::string cache = dir.file("c.mpc");
  // Split on both dims (4x4 blocks), and split on dim 0 with "y" replicated (4x8 blocks: the
  // two "y" instances compute the same block).
  const std::string programs[][3] = {
      {"split2d", R"([{"x"}, {"y"}])", "tensor<4x4xf32>"},
      {"rows", R"([{"x"}, {}])", "tensor<4x8xf32>"},
  };
  const std::string tool = kBin + "/planner/meshplan-compile ";
  for (const auto& p : programs) {
    write_text(dir.file(p[0] + ".mlir"), manual_program(p[1], p[2]));
    auto r = meshplan::test::run_shell(tool + dir.file(p[0] + ".mlir") + " -o " + cache +
                                       " --name " + p[0]);
    INFO(r.text);
    REQUIRE(r.status == 0);
  }
  write_text(dir.file("one.mlir"), kOneDevice);
  REQUIRE(meshplan::test::run_shell(tool + dir.file("one.mlir") + " -o " + cache + " --name one")
              .status == 0);
  const std::string expected = "v1 = 8x8xf32=" + matrix(0, 2);  // x + x, by hand
  CHECK(run(cache, "one") == expected);
  CHECK(run(cache, "split2d") == expected);
  CHECK(run(cache, "rows") == expected);
}

// Partial manual computations as JAX's shard_map prints them with Shardy (manual_axes={"x"} on
// a 2x2 mesh, "y" free: open in_shardings, a psum as stablehlo.all_reduce over the "x" groups).
// The body is still sharded along "y" (a with_sharding_constraint), so meshplan lowers it over
// "y" too. Expected values: integer arithmetic worked out independently (a Python script of
// plain loops over the same formulas), checked in as literals.
namespace {

const std::string kMesh =
    R"(module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
)";

/// The psum over "x" of the body's matmul (JAX's printed form), then `tail` on %2.
std::string psum_program(const std::string& result_type, const std::string& out_sharding,
                         const std::string& tail, const std::string& returned) {
  return kMesh +
         R"(  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<16x8xf32>) -> ()" +
         result_type + R"( {jax.result_info = ""}) {
    %0 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{?}, {"x", ?}]>, <@mesh, [{"x", ?}, {?}]>] out_shardings=[<@mesh, )" +
         out_sharding + R"(>] manual_axes={"x"} (%arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>) {
      %c = sdy.sharding_constraint %arg2 <@mesh, [{"y"}, {}]> : tensor<8x8xf32>
      %1 = stablehlo.dot_general %c, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      %2 = "stablehlo.all_reduce"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
        %3 = stablehlo.add %arg4, %arg5 : tensor<f32>
        stablehlo.return %3 : tensor<f32>
      }) : (tensor<8x8xf32>) -> tensor<8x8xf32>
)" + tail +
         R"(      sdy.return )" + returned + " : " + result_type + R"(
    } : (tensor<8x16xf32>, tensor<16x8xf32>) -> )" +
         result_type + R"(
    return %0 : )" +
         result_type +
         R"(
  }
}
)";
}

// a[i][j] = (5 (16 i + j)) mod 9 - 4 and b[i][j] = (3 (8 i + j)) mod 7 - 3.
const std::string kA =
    "[[-4,1,-3,2,-2,3,-1,4,0,-4,1,-3,2,-2,3,-1],[4,0,-4,1,-3,2,-2,3,-1,4,0,-4,1,-3,2,-2],"
    "[3,-1,4,0,-4,1,-3,2,-2,3,-1,4,0,-4,1,-3],[2,-2,3,-1,4,0,-4,1,-3,2,-2,3,-1,4,0,-4],"
    "[1,-3,2,-2,3,-1,4,0,-4,1,-3,2,-2,3,-1,4],[0,-4,1,-3,2,-2,3,-1,4,0,-4,1,-3,2,-2,3],"
    "[-1,4,0,-4,1,-3,2,-2,3,-1,4,0,-4,1,-3,2],[-2,3,-1,4,0,-4,1,-3,2,-2,3,-1,4,0,-4,1]]";
const std::string kB =
    "[[-3,0,3,-1,2,-2,1,-3],[0,3,-1,2,-2,1,-3,0],[3,-1,2,-2,1,-3,0,3],[-1,2,-2,1,-3,0,3,-1],"
    "[2,-2,1,-3,0,3,-1,2],[-2,1,-3,0,3,-1,2,-2],[1,-3,0,3,-1,2,-2,1],[-3,0,3,-1,2,-2,1,-3],"
    "[0,3,-1,2,-2,1,-3,0],[3,-1,2,-2,1,-3,0,3],[-1,2,-2,1,-3,0,3,-1],[2,-2,1,-3,0,3,-1,2],"
    "[-2,1,-3,0,3,-1,2,-2],[1,-3,0,3,-1,2,-2,1],[-3,0,3,-1,2,-2,1,-3],[0,3,-1,2,-2,1,-3,0]]";
// a @ b.
const std::string kAB =
    "[[-56,37,-31,20,8,-11,33,-56],[-53,25,12,-8,35,-55,44,-53],[-5,-5,37,-54,44,-54,37,-5],"
    "[25,-53,44,-55,35,-8,12,25],[37,-56,33,-11,8,20,-31,37],[40,-32,22,6,-10,30,-56,40],"
    "[34,10,-7,32,-55,40,-54,34],[10,34,-54,40,-55,32,-7,10]]";

/// Compiles `text` as `name` into `cache` (the module's own mesh, global host inputs) and
/// returns the tool's output.
std::string compile(const meshplan::test::TempDir& dir, const std::string& cache,
                    const std::string& name, const std::string& text, int want_status = 0) {
  write_text(dir.file(name + ".mlir"), text);
  auto r = meshplan::test::run_shell(kBin + "/planner/meshplan-compile " +
                                     dir.file(name + ".mlir") + " -o " + cache + " --name " + name);
  INFO(r.text);
  CHECK(r.status == want_status);
  return r.text;
}

/// The first output line (`v<N> = <type>=<values>`, without the `v<N> = `) of plan `name`.
std::string output(const std::string& cache, const std::string& name, const std::string& inputs) {
  auto r = meshplan::test::run_shell(kBin + "/runtime/meshplan-run " + cache + " --name " + name +
                                     " -q " + inputs + " --output -");
  INFO(r.text);
  REQUIRE(r.status == 0);
  size_t at = 0;
  while (at < r.text.size() &&
         !(r.text[at] == 'v' && r.text.find(" = ", at) < r.text.find('\n', at)))
    at = r.text.find('\n', at) == std::string::npos ? r.text.size() : r.text.find('\n', at) + 1;
  REQUIRE(at < r.text.size());
  at = r.text.find(" = ", at) + 3;
  return r.text.substr(at, r.text.find('\n', at) - at);
}

}  // namespace

TEST_CASE("a partial manual matmul with a psum over the manual axis runs on the mesh") {
  meshplan::test::TempDir dir;
  const std::string cache = dir.file("c.mpc");
  const std::string inputs = "--input='8x16xf32=" + kA + "' --input='16x8xf32=" + kB + "'";
  compile(dir, cache, "psum", psum_program("tensor<8x8xf32>", "[{?}, {?}]", "", "%2"));
  compile(dir, cache, "one",
          R"(func.func @main(%arg0: tensor<8x16xf32>, %arg1: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)");
  CHECK(output(cache, "psum", inputs) == "8x8xf32=" + kAB);
  CHECK(output(cache, "one", inputs) == "8x8xf32=" + kAB);
}

TEST_CASE("the lowering of a partial manual body adds collectives over its free axes only") {
  meshplan::test::TempDir dir;
  const std::string cache = dir.file("c.mpc");
  // Summing dim 0, which the body splits over the free axis "y": partial sums, an all_reduce
  // over "y" (groups {0, 1} and {2, 3}) that meshplan inserts, besides the written psum over "x".
  const std::string text = psum_program(
      "tensor<8xf32>", "[{?}]",
      "      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
      "      %4 = stablehlo.reduce(%2 init: %cst) applies stablehlo.add across dimensions = [0] "
      ": (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>\n",
      "%4");
  write_text(dir.file("sum.mlir"), text);
  auto lowered =
      meshplan::test::run_shell(kBin + "/planner/meshplan-compile " + dir.file("sum.mlir") +
                                " --stop-after=close --emit=stablehlo");
  INFO(lowered.text);
  REQUIRE(lowered.status == 0);
  CHECK(lowered.text.find("manual_axes={\"x\", \"y\"} (%arg2: tensor<4x8xf32>, %arg3: "
                          "tensor<8x8xf32>)") != std::string::npos);
  CHECK(lowered.text.find("replica_groups = dense<[[0, 1], [2, 3]]>") != std::string::npos);
  CHECK(lowered.text.find("replica_groups = dense<[[0, 2], [1, 3]]>") != std::string::npos);
  compile(dir, cache, "sum", text);
  const std::string inputs = "--input='8x16xf32=" + kA + "' --input='16x8xf32=" + kB + "'";
  CHECK(output(cache, "sum", inputs) == "8xf32=[32,-40,56,-30,10,-6,-22,32]");  // column sums
}

TEST_CASE("a ppermute over the manual axis in a partial manual computation runs on the mesh") {
  meshplan::test::TempDir dir;
  const std::string cache = dir.file("c.mpc");
  // Each "x" instance takes the other's 8 columns (lax.ppermute with perm [(0, 1), (1, 0)]) and
  // subtracts its own: out[i][j] = a[i][(j + 8) mod 16] - a[i][j].
  compile(
      dir, cache, "pp",
      kMesh +
          R"(  func.func public @main(%arg0: tensor<8x16xf32>) -> (tensor<8x16xf32> {jax.result_info = ""}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{?}, {"x", ?}]>] out_shardings=[<@mesh, [{?}, {"x", ?}]>] manual_axes={"x"} (%arg1: tensor<8x8xf32>) {
      %c = sdy.sharding_constraint %arg1 <@mesh, [{"y"}, {}]> : tensor<8x8xf32>
      %1 = "stablehlo.collective_permute"(%c) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 2], [1, 3], [2, 0], [3, 1]]> : tensor<4x2xi64>}> : (tensor<8x8xf32>) -> tensor<8x8xf32>
      %2 = stablehlo.subtract %1, %c : tensor<8x8xf32>
      sdy.return %2 : tensor<8x8xf32>
    } : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
}
)");
  CHECK(output(cache, "pp", "--input='8x16xf32=" + kA + "'") ==
        "8x16xf32=[[4,-5,4,-5,4,-5,4,-5,-4,5,-4,5,-4,5,-4,5],[-5,4,4,-5,4,-5,4,-5,5,-4,-4,5,-4,5,"
        "-4,5],[-5,4,-5,4,4,-5,4,-5,5,-4,5,-4,-4,5,-4,5],[-5,4,-5,4,-5,4,4,-5,5,-4,5,-4,5,-4,-4,5]"
        ",[-5,4,-5,4,-5,4,-5,4,5,-4,5,-4,5,-4,5,-4],[4,4,-5,4,-5,4,-5,4,-4,-4,5,-4,5,-4,5,-4],[4,"
        "-5,4,4,-5,4,-5,4,-4,5,-4,-4,5,-4,5,-4],[4,-5,4,-5,4,4,-5,4,-4,5,-4,5,-4,-4,5,-4]]");
}

TEST_CASE("manual computations meshplan cannot lower are located refusals") {
  meshplan::test::TempDir dir;
  const std::string cache = dir.file("c.mpc");
  // A psum written over the free axis "y" (groups {0, 1}, {2, 3}) inside manual_axes={"x"}.
  std::string text = psum_program("tensor<8x8xf32>", "[{?}, {?}]", "", "%2");
  text.replace(text.find("[[0, 2], [1, 3]]"), 16, "[[0, 1], [2, 3]]");
  std::string out = compile(dir, cache, "free", text, 1);
  CHECK(out.find("free.mlir:7:7: unimplemented: stablehlo.all_reduce inside "
                 "sdy.manual_computation with manual_axes={\"x\"} joins devices 0 and 1, which "
                 "differ along free axis \"y\"") != std::string::npos);
  // An op outside the manual computation would not reach the per-device program.
  out = compile(dir, cache, "outside", R"(sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a = stablehlo.add %arg0, %arg0 : tensor<8x8xf32>
  %0 = sdy.manual_computation(%a) in_shardings=[<@mesh, [{"x"}, {"y"}]>] out_shardings=[<@mesh, [{"x"}, {"y"}]>] manual_axes={"x", "y"} (%arg1: tensor<4x4xf32>) {
    sdy.return %arg1 : tensor<4x4xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
)",
                1);
  CHECK(out.find("outside.mlir:3:3: unimplemented: stablehlo.add outside the "
                 "sdy.manual_computation") != std::string::npos);
}

// shard_map as JAX prints it without Shardy (GSPMD): custom_call @Sharding +
// @SPMDFullToShardShape on each argument, the body a private function, @Sharding {manual} +
// @SPMDShardToFullShape on the result. meshplan reads it as a manual computation over a mesh
// factored from the tile assignments.
namespace {

/// A GSPMD shard_map over `parts` devices: arguments tiled by `in0` / `in1` (mhlo.sharding),
/// the body `body` (a private function of the local values %arg0, %arg1 returning %r), the
/// result tiled by `out`.
std::string gspmd_program(int parts, const std::string& in0, const std::string& in1,
                          const std::string& local0, const std::string& local1,
                          const std::string& out, const std::string& local_out,
                          const std::string& body) {
  const std::string p = std::to_string(parts);
  return "module @jit_f attributes {mhlo.num_partitions = " + p +
         R"( : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32> {mhlo.layout_mode = "default", mhlo.sharding = ")" +
         in0 + R"("}, %arg1: tensor<16x8xf32> {mhlo.layout_mode = "default", mhlo.sharding = ")" +
         in1 + R"("}) -> (tensor<8x8xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = ")" +
         in0 +
         R"("} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<8x16xf32>) -> )" +
         local0 + R"(
    %2 = stablehlo.custom_call @Sharding(%arg1) {backend_config = "", mhlo.sharding = ")" +
         in1 +
         R"("} : (tensor<16x8xf32>) -> tensor<16x8xf32>
    %3 = stablehlo.custom_call @SPMDFullToShardShape(%2) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<16x8xf32>) -> )" +
         local1 + R"(
    %4 = call @shmap_body(%1, %3) : ()" +
         local0 + ", " + local1 + ") -> " + local_out + R"(
    %5 = stablehlo.custom_call @Sharding(%4) {backend_config = "", mhlo.sharding = "{manual}"} : ()" +
         local_out + ") -> " + local_out + R"(
    %6 = stablehlo.custom_call @SPMDShardToFullShape(%5) {backend_config = "", mhlo.sharding = ")" +
         out + R"("} : ()" + local_out + R"() -> tensor<8x8xf32>
    return %6 : tensor<8x8xf32>
  }
  func.func private @shmap_body(%arg0: )" +
         local0 + ", %arg1: " + local1 + ") -> (" + local_out +
         R"( {jax.result_info = "[None, None]"}) {
)" + body +
         R"(    return %r : )" + local_out + R"(
  }
}
)";
}

std::string psum_body(const std::string& groups, const std::string& type, const std::string& x) {
  return R"(    %r = "stablehlo.all_reduce"()" + x +
         R"() <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = )" +
         groups + R"(, use_global_device_ids}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : ()" +
         type + ") -> " + type + "\n";
}

}  // namespace

TEST_CASE("GSPMD shard_map (SPMDFullToShardShape) runs on the mesh as a manual computation") {
  meshplan::test::TempDir dir;
  const std::string cache = dir.file("c.mpc");
  const std::string inputs = "--input='8x16xf32=" + kA + "' --input='16x8xf32=" + kB + "'";
  // Two devices: the contracting dim split, a psum over both.
  compile(
      dir, cache, "mm",
      gspmd_program(2, "{devices=[1,2]<=[2]}", "{devices=[2,1]<=[2]}", "tensor<8x8xf32>",
                    "tensor<8x8xf32>", "{replicated}", "tensor<8x8xf32>",
                    "    %d = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], "
                    "precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> "
                    "tensor<8x8xf32>\n" +
                        psum_body("dense<[[0, 1]]> : tensor<1x2xi64>", "tensor<8x8xf32>", "%d")));
  CHECK(output(cache, "mm", inputs) == "8x8xf32=" + kAB);
  // Four devices as a 2x2 mesh: a's rows over the major factor, its columns over the minor one;
  // a psum over the minor one (groups {0, 1}, {2, 3}) adds the two column halves; the result is
  // tiled over the major factor and replicated over the minor one.
  const std::string text = gspmd_program(
      4, "{devices=[2,2]<=[4]}", "{replicated}", "tensor<4x8xf32>", "tensor<16x8xf32>",
      "{devices=[2,1,2]<=[4] last_tile_dim_replicate}", "tensor<4x8xf32>",
      psum_body("dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>", "tensor<4x8xf32>", "%arg0"));
  write_text(dir.file("halves.mlir"), text);
  auto sdy = meshplan::test::run_shell(kBin + "/planner/meshplan-compile " +
                                       dir.file("halves.mlir") + " --stop-after=import --emit=sdy");
  INFO(sdy.text);
  CHECK(sdy.text.find("sdy.mesh @mesh = <[\"_axis_0\"=2, \"_axis_1\"=2]>") != std::string::npos);
  CHECK(sdy.text.find("in_shardings=[<@mesh, [{\"_axis_0\"}, {\"_axis_1\"}]>, <@mesh, [{}, "
                      "{}]>] out_shardings=[<@mesh, [{\"_axis_0\"}, {}]>] manual_axes={"
                      "\"_axis_0\", \"_axis_1\"}") != std::string::npos);
  compile(dir, cache, "halves", text);
  // out[i][j] = a[i][j] + a[i][j + 8].
  CHECK(output(cache, "halves", inputs) ==
        "8x8xf32=[[-4,-3,-2,-1,0,1,2,3],[3,4,-4,-3,-2,-1,0,1],[1,2,3,4,-4,-3,-2,-1],[-1,0,1,2,3,"
        "4,-4,-3],[-3,-2,-1,0,1,2,3,4],[4,-4,-3,-2,-1,0,1,2],[2,3,4,-4,-3,-2,-1,0],[0,1,2,3,4,-4,"
        "-3,-2]]");
  // A transposed device order (<=[2,2]T(1,0): tile (i, j) on device 2j + i) splits a's rows
  // over the minor axis and its columns over the major one: the psum over the minor axis adds
  // the row halves, out[4 x0 + i][j] = a[i][8 x0 + j] + a[i + 4][8 x0 + j].
  std::string transposed = text;
  transposed.replace(transposed.find("{devices=[2,2]<=[4]}\"} :"), 20,
                     "{devices=[2,2]<=[2,2]T(1,0)}");
  write_text(dir.file("transposed.mlir"), transposed);
  sdy = meshplan::test::run_shell(kBin + "/planner/meshplan-compile " +
                                  dir.file("transposed.mlir") + " --stop-after=import --emit=sdy");
  INFO(sdy.text);
  CHECK(sdy.text.find("in_shardings=[<@mesh, [{\"_axis_1\"}, {\"_axis_0\"}]>") !=
        std::string::npos);
  compile(dir, cache, "transposed", transposed);
  CHECK(output(cache, "transposed", inputs) ==
        "8x8xf32=[[-3,-2,-1,0,1,2,3,4],[4,-4,-3,-2,-1,0,1,2],[2,3,4,-4,-3,-2,-1,0],[0,1,2,3,4,-4,"
        "-3,-2],[-4,-3,-2,-1,0,1,2,3],[3,4,-4,-3,-2,-1,0,1],[1,2,3,4,-4,-3,-2,-1],[-1,0,1,2,3,4,-4,"
        "-3]]");
  // Eight devices, <=[2,4]T(1,0): tile (i, j) of a [4, 2] grid on device 4j + i, so dim 0
  // takes the minor reshape dim (4 devices, "_axis_1") and dim 1 the major one (2, "_axis_0");
  // an iota tiling replicated over the minor 4 names "_axis_0" alone.
  const std::string eight = gspmd_program(
      8, "{devices=[4,2]<=[2,4]T(1,0)}", "{devices=[1,2,4]<=[8] last_tile_dim_replicate}",
      "tensor<2x8xf32>", "tensor<16x4xf32>", "{devices=[4,2]<=[2,4]T(1,0)}", "tensor<2x4xf32>",
      "    %r = \"stablehlo.slice\"(%arg0) {start_indices = array<i64: 0, 0>, limit_indices = "
      "array<i64: 2, 4>, strides = array<i64: 1, 1>} : (tensor<2x8xf32>) -> tensor<2x4xf32>\n");
  write_text(dir.file("eight.mlir"), eight);
  sdy = meshplan::test::run_shell(kBin + "/planner/meshplan-compile " + dir.file("eight.mlir") +
                                  " --stop-after=import --emit=sdy");
  INFO(sdy.text);
  CHECK(sdy.text.find("sdy.mesh @mesh = <[\"_axis_0\"=2, \"_axis_1\"=4]>") != std::string::npos);
  CHECK(sdy.text.find("in_shardings=[<@mesh, [{\"_axis_1\"}, {\"_axis_0\"}]>, <@mesh, [{}, "
                      "{\"_axis_0\"}]>] out_shardings=[<@mesh, [{\"_axis_1\"}, {\"_axis_0\"}]>]") !=
        std::string::npos);
  // An explicit device list out of iota order: refused where it is.
  std::string listed = text;
  listed.replace(listed.find("{devices=[2,2]<=[4]}\"} :"), 20, "{devices=[2,2]0,2,1,3}");
  std::string out = compile(dir, cache, "listed", listed, 1);
  CHECK(out.find("listed.mlir:3:5: unimplemented: mhlo.sharding \"{devices=[2,2]0,2,1,3}\"") !=
        std::string::npos);
}

TEST_CASE(
    "an all_gather written in a partial manual body: the gathered dim is whole along free "
    "axes") {
  meshplan::test::TempDir dir;
  const std::string cache = dir.file("c.mpc");
  // lax.all_gather over "x" on dim 1 (tiled), then x + x: 2a whatever "y" splits. With "y" on
  // dim 1 (the gathered dim), meshplan gathers "y" first (groups {0, 1}, {2, 3}).
  const std::string want =
      "8x16xf32=[[-8,2,-6,4,-4,6,-2,8,0,-8,2,-6,4,-4,6,-2],[8,0,-8,2,-6,4,-4,6,-2,8,0,-8,2,-6,4,"
      "-4],[6,-2,8,0,-8,2,-6,4,-4,6,-2,8,0,-8,2,-6],[4,-4,6,-2,8,0,-8,2,-6,4,-4,6,-2,8,0,-8],[2,"
      "-6,4,-4,6,-2,8,0,-8,2,-6,4,-4,6,-2,8],[0,-8,2,-6,4,-4,6,-2,8,0,-8,2,-6,4,-4,6],[-2,8,0,-8,"
      "2,-6,4,-4,6,-2,8,0,-8,2,-6,4],[-4,6,-2,8,0,-8,2,-6,4,-4,6,-2,8,0,-8,2]]";  // 2a
  const std::pair<std::string, std::string> cases[] = {{"rows", R"([{"y"}, {}])"},
                                                       {"cols", R"([{}, {"y"}])"}};
  for (const auto& [name, split] : cases) {
    const std::string text =
        kMesh +
        R"(  func.func public @main(%arg0: tensor<8x16xf32>) -> (tensor<8x16xf32> {jax.result_info = ""}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{?}, {"x", ?}]>] out_shardings=[<@mesh, [{?}, {?}]>] manual_axes={"x"} (%arg1: tensor<8x8xf32>) {
      %c = sdy.sharding_constraint %arg1 <@mesh, )" +
        split +
        R"(> : tensor<8x8xf32>
      %1 = "stablehlo.all_gather"(%c) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> : (tensor<8x8xf32>) -> tensor<8x16xf32>
      %2 = stablehlo.add %1, %1 : tensor<8x16xf32>
      sdy.return %2 : tensor<8x16xf32>
    } : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
}
)";
    compile(dir, cache, name, text);
    CHECK(output(cache, name, "--input='8x16xf32=" + kA + "'") == want);
    write_text(dir.file(name + "_l.mlir"), text);
    auto lowered =
        meshplan::test::run_shell(kBin + "/planner/meshplan-compile " + dir.file(name + "_l.mlir") +
                                  " --stop-after=close --emit=stablehlo");
    REQUIRE(lowered.status == 0);
    CHECK((lowered.text.find("dense<[[0, 1], [2, 3]]>") != std::string::npos) == (name == "cols"));
  }
}
