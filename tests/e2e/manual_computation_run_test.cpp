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
