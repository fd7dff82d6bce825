// A Shardy module through the command-line tools with its own mesh and global host tensors:
// meshplan-compile takes the module's sdy.mesh without --mesh; meshplan-run takes each argument's
// global array, splits it per its sdy.sharding and assembles global outputs, bit-equal to the
// same program planned for one chip (integer-valued data, exact in every dtype on the way).
#include <doctest/doctest.h>

#include <fstream>

#include "test_util.hpp"

using namespace meshplan;

namespace {

const std::string kCompile = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
const std::string kRun = std::string(MESHPLAN_BINARY_DIR) + "/runtime/meshplan-run";

constexpr int kN = 64;
constexpr const char* kInputType = "64x64xf32";

/// dot(a, b) + b with a split [{"x"}, {"y"}] and b [{"y"}, {}]: the contracting dim is split over
/// "y" (partial sums, an all_reduce), the rows over "x".
std::string module_text(bool sharded) {
  const std::string t = "tensor<64x64xf32>";
  std::string a = sharded ? " {sdy.sharding = #sdy.sharding<@mesh, [{\"x\"}, {\"y\"}]>}" : "";
  std::string b = sharded ? " {sdy.sharding = #sdy.sharding<@mesh, [{\"y\"}, {}]>}" : "";
  return std::string(sharded ? "sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]>\n" : "") +
         "func.func public @main(%arg0: " + t + a + ", %arg1: " + t + b + ") -> " + t + " {\n" +
         "  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (" + t + ", " +
         t + ") -> " + t + "\n  %1 = stablehlo.add %0, %arg1 : " + t + "\n  return %1 : " + t +
         "\n}\n";
}

/// Values in {-1, 0, 1}: every partial and full sum is a small integer.
std::vector<float> values(int salt) {
  std::vector<float> v(kN * kN);
  for (int i = 0; i < kN * kN; ++i) v[i] = static_cast<float>((i * 7 + salt * 3 + i / 5) % 3 - 1);
  return v;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

}  // namespace

TEST_CASE("a module's own 2x2 mesh with global inputs equals the one-chip program bit for bit") {
  test::TempDir dir;
  const std::string mesh_mlir = dir.file("mm.mlir"), one_mlir = dir.file("mm_one.mlir");
  write(mesh_mlir, module_text(true));
  write(one_mlir, module_text(false));
  const std::string cache = dir.file("c.mpc");
  // No --mesh: the module's mesh (4 devices) is the mesh.
  auto c1 = test::run_shell(kCompile + " " + mesh_mlir + " -o " + cache + " --name mesh");
  INFO(c1.text);
  REQUIRE(c1.status == 0);
  CHECK(c1.text.find("mesh ") != std::string::npos);
  auto c2 = test::run_shell(kCompile + " " + one_mlir + " -o " + cache + " --name one");
  INFO(c2.text);
  REQUIRE(c2.status == 0);

  auto inspected = test::run_shell(kRun + " inspect " + cache + " --name mesh");
  INFO(inspected.text);
  REQUIRE(inspected.status == 0);
  // The host passes global arrays; the runtime splits them.
  CHECK(inspected.text.find("host [64x64] -> per chip [32x32], devices") != std::string::npos);
  CHECK(inspected.text.find("host [64x64] -> per chip [32x64], devices") != std::string::npos);

  const std::vector<float> a = values(1), b = values(2);
  const std::string inputs = test::input_arg(kInputType, a) + test::input_arg(kInputType, b);
  const std::string out_mesh = dir.file("mesh.npy"), out_one = dir.file("one.npy");
  auto r1 =
      test::run_shell(kRun + " " + cache + " --name mesh" + inputs + " --output=@" + out_mesh);
  INFO(r1.text);
  REQUIRE(r1.status == 0);
  CHECK(r1.text.find("2x2") != std::string::npos);
  auto r2 = test::run_shell(kRun + " " + cache + " --name one" + inputs + " --output=@" + out_one);
  INFO(r2.text);
  REQUIRE(r2.status == 0);
  CHECK(test::read_bytes(out_mesh) == test::read_bytes(out_one));
  // And both are dot(a, b) + b, worked out here.
  std::vector<float> got = test::npy_values(out_mesh, kN * kN);
  int wrong = 0;
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j) {
      float want = b[i * kN + j];
      for (int k = 0; k < kN; ++k) want += a[i * kN + k] * b[k * kN + j];
      wrong += got[i * kN + j] != want;
    }
  CHECK(wrong == 0);
}

TEST_CASE("--mesh must have the module's device count; --presharded takes per-chip pieces") {
  test::TempDir dir;
  const std::string mlir = dir.file("m.mlir");
  write(mlir, module_text(true));
  auto bad = test::run_shell(kCompile + " " + mlir + " -o " + dir.file("c.mpc") + " --mesh 1x2");
  CHECK(bad.status != 0);
  CHECK(bad.text.find("the module's mesh @mesh has 4 devices but --mesh 1x2 has 2") !=
        std::string::npos);
  const std::string cache = dir.file("p.mpc");
  auto c = test::run_shell(kCompile + " " + mlir + " -o " + cache + " --presharded --name p");
  INFO(c.text);
  REQUIRE(c.status == 0);
  auto inspected = test::run_shell(kRun + " inspect " + cache + " --name p");
  INFO(inspected.text);
  CHECK(inspected.text.find("per chip [32x32], identity") != std::string::npos);
}

TEST_CASE("the compile summary says what the batch-parallel analysis decided and why") {
  test::TempDir dir;
  const std::string mlir = dir.file("b.mlir");
  // The batch factor of the result flows from %a (through the dot) and %b (through the add);
  // %w carries only the contracting and column factors.
  write(mlir,
        "func.func public @main(%a: tensor<32x16xf32>, %w: tensor<16x8xf32>, %b: "
        "tensor<32x8xf32>) -> tensor<32x8xf32> {\n"
        "  %0 = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0] : (tensor<32x16xf32>, "
        "tensor<16x8xf32>) -> tensor<32x8xf32>\n"
        "  %1 = stablehlo.add %0, %b : tensor<32x8xf32>\n"
        "  return %1 : tensor<32x8xf32>\n}\n");
  auto r = test::run_shell(kCompile + " " + mlir + " --mesh 1x4 -o " + dir.file("c.mpc"));
  INFO(r.text);
  REQUIRE(r.status == 0);
  CHECK(r.text.find("batch parallel: %arg0 dim 0, %arg2 dim 0 split over \"batch\" (4 ways); the "
                    "factor of size 32 of the first result's dim 0") != std::string::npos);
  CHECK(r.text.find("communication 0 bytes per chip in 0 collectives") != std::string::npos);
  // A reduction over the leading dim makes dim 1 the result's parallel factor.
  const std::string red = dir.file("r.mlir");
  write(red,
        "func.func public @main(%a: tensor<32x16xf32>) -> tensor<16xf32> {\n"
        "  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
        "  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0] : "
        "(tensor<32x16xf32>, tensor<f32>) -> tensor<16xf32>\n"
        "  return %0 : tensor<16xf32>\n}\n");
  auto s = test::run_shell(kCompile + " " + red + " --mesh 1x2 -o " + dir.file("d.mpc"));
  INFO(s.text);
  CHECK(s.text.find("batch parallel: %arg0 dim 1 split over \"batch\" (2 ways)") !=
        std::string::npos);
  // A concatenate along the leading dim stops it, and the summary names the op.
  const std::string cat = dir.file("k.mlir");
  write(cat,
        "func.func public @main(%a: tensor<32x16xf32>) -> tensor<64x16xf32> {\n"
        "  %0 = stablehlo.concatenate %a, %a, dim = 0 : (tensor<32x16xf32>, tensor<32x16xf32>) "
        "-> tensor<64x16xf32>\n"
        "  return %0 : tensor<64x16xf32>\n}\n");
  auto k = test::run_shell(kCompile + " " + cat + " --mesh 1x2 -o " + dir.file("e.mpc"));
  INFO(k.text);
  CHECK(k.text.find("no batch parallelism: the factor of the first result's dim 0 is not a "
                    "batch: stablehlo.concatenate at ") != std::string::npos);
  CHECK(k.text.find("needs it whole") != std::string::npos);
}
