// A module on a 3-axis mesh (data x fsdp x tensor) through the command-line tools: its axes map
// onto the emulated 2x4 t3k system, the plan records the mapping, and the result with global
// inputs equals the one-chip program and the product worked out here, bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>

#include "test_util.hpp"

using namespace meshplan;

namespace {

const std::string kCompile = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
const std::string kRun = std::string(MESHPLAN_BINARY_DIR) + "/runtime/meshplan-run";

constexpr int kB = 16, kD = 32, kH = 64;

/// relu(x . w1) . w2 with x [B, D] split over data x fsdp, w1's columns and w2's rows over tensor.
std::string module_text(bool sharded) {
  auto sh = [&](const char* dims) {
    return sharded ? std::string(" {sdy.sharding = #sdy.sharding<@mesh, ") + dims + ">}"
                   : std::string();
  };
  const std::string x = "tensor<16x32xf32>", w1 = "tensor<32x64xf32>", w2 = "tensor<64x32xf32>",
                    h = "tensor<16x64xf32>";
  return std::string(sharded ? "sdy.mesh @mesh = <[\"data\"=2, \"fsdp\"=2, \"tensor\"=2]>\n" : "") +
         "func.func public @main(%arg0: " + x + sh("[{\"data\", \"fsdp\"}, {}]") +
         ", %arg1: " + w1 + sh("[{}, {\"tensor\"}]") + ", %arg2: " + w2 + sh("[{\"tensor\"}, {}]") +
         ") -> (" + x + sh("[{\"data\", \"fsdp\"}, {}]") + ") {\n" +
         "  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (" + x + ", " +
         w1 + ") -> " + h + "\n" + "  %1 = stablehlo.constant dense<0.0> : tensor<f32>\n" +
         "  %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> " + h + "\n" +
         "  %3 = stablehlo.maximum %0, %2 : " + h + "\n" +
         "  %4 = stablehlo.dot_general %3, %arg2, contracting_dims = [1] x [0] : (" + h + ", " +
         w2 + ") -> " + x + "\n  return %4 : " + x + "\n}\n";
}

/// Values in {-1, 0, 1}: every partial and full sum is a small integer, exact in f32.
std::vector<float> values(int n, int salt) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + salt * 5 + i / 3) % 3 - 1);
  return v;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

}  // namespace

TEST_CASE("a data x fsdp x tensor module runs on t3k and equals the one-chip program") {
  test::TempDir dir;
  const std::string mesh_mlir = dir.file("m3.mlir"), one_mlir = dir.file("one.mlir");
  write(mesh_mlir, module_text(true));
  write(one_mlir, module_text(false));
  const std::string cache = dir.file("c.mpc");
  auto c1 = test::run_shell(kCompile + " " + mesh_mlir + " -o " + cache + " --name mesh");
  INFO(c1.text);
  REQUIRE(c1.status == 0);
  CHECK(c1.text.find("mesh @mesh [\"data\"=2, \"fsdp\"=2, \"tensor\"=2] maps onto the t3k 2x4 "
                     "system: rows = \"tensor\", cols = \"data\" x \"fsdp\"") != std::string::npos);
  // The one all_reduce over "tensor": its 4x32 f32 partial (512 bytes), 2 * 1/2 of it per chip.
  CHECK(c1.text.find("all_reduce on groups of 2 at ") != std::string::npos);
  CHECK(c1.text.find("communication 512 bytes per chip in 1 collectives") != std::string::npos);
  auto c2 = test::run_shell(kCompile + " " + one_mlir + " -o " + cache + " --name one");
  INFO(c2.text);
  REQUIRE(c2.status == 0);

  auto inspected = test::run_shell(kRun + " inspect " + cache + " --name mesh");
  INFO(inspected.text);
  REQUIRE(inspected.status == 0);
  CHECK(inspected.text.find("2x4") != std::string::npos);
  CHECK(inspected.text.find("axes tensor data=2*fsdp=2") != std::string::npos);
  CHECK(inspected.text.find("host [16x32] -> per chip [4x32]") != std::string::npos);
  CHECK(inspected.text.find("host [32x64] -> per chip [32x32]") != std::string::npos);

  const std::vector<float> x = values(kB * kD, 1), w1 = values(kD * kH, 2), w2 = values(kH * kD, 3);
  const std::string inputs = test::input_arg("16x32xf32", x) + test::input_arg("32x64xf32", w1) +
                             test::input_arg("64x32xf32", w2);
  const std::string out_mesh = dir.file("mesh.npy"), out_one = dir.file("one.npy");
  auto r1 =
      test::run_shell(kRun + " " + cache + " --name mesh" + inputs + " --output=@" + out_mesh);
  INFO(r1.text);
  REQUIRE(r1.status == 0);
  auto r2 = test::run_shell(kRun + " " + cache + " --name one" + inputs + " --output=@" + out_one);
  INFO(r2.text);
  REQUIRE(r2.status == 0);
  CHECK(test::read_bytes(out_mesh) == test::read_bytes(out_one));
  std::vector<float> got = test::npy_values(out_mesh, kB * kD);
  int wrong = 0;
  for (int i = 0; i < kB; ++i)
    for (int j = 0; j < kD; ++j) {
      float want = 0;
      for (int k = 0; k < kH; ++k) {
        float hk = 0;
        for (int d = 0; d < kD; ++d) hk += x[i * kD + d] * w1[d * kH + k];
        want += std::max(hk, 0.0f) * w2[k * kD + j];
      }
      wrong += got[i * kD + j] != want;
    }
  CHECK(wrong == 0);
}

TEST_CASE("a 3-axis mesh that cannot map onto --mesh is a named error") {
  test::TempDir dir;
  const std::string mlir = dir.file("m3.mlir");
  write(mlir, module_text(true));
  auto r = test::run_shell(kCompile + " " + mlir + " -o " + dir.file("c.mpc") + " --mesh 1x8");
  INFO(r.text);
  CHECK(r.status != 0);
  CHECK(r.text.find("mesh @mesh [\"data\"=2, \"fsdp\"=2, \"tensor\"=2] cannot map onto the 1x8 "
                    "system") != std::string::npos);
}
