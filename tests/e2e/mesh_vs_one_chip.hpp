// Test helper for reshard programs of the form 2|x| on a 32x64 f32 tensor: the sharded program
// and the one-chip program compiled with meshplan-compile and run with meshplan-run on the same
// global input; they must agree bit for bit and equal 2|x|.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace meshplan::test {

/// Compiles `mesh_text` and `one_text`, runs both on one 32x64 f32 input of small integers,
/// checks they agree bit for bit and equal 2|x|; returns the sharded compile's summary.
inline std::string run_mesh_and_one_chip(const std::string& mesh_text,
                                         const std::string& one_text) {
  const std::string compile = std::string(MESHPLAN_BINARY_DIR) + "/planner/meshplan-compile";
  const std::string run = std::string(MESHPLAN_BINARY_DIR) + "/runtime/meshplan-run";
  constexpr const char* kInputType = "32x64xf32";
  TempDir dir;
  const std::string mesh_mlir = dir.file("m.mlir"), one_mlir = dir.file("one.mlir");
  std::ofstream(mesh_mlir, std::ios::trunc) << mesh_text;
  std::ofstream(one_mlir, std::ios::trunc) << one_text;
  const std::string cache = dir.file("c.mpc");
  auto c1 = run_shell(compile + " " + mesh_mlir + " -o " + cache + " --name mesh");
  INFO(c1.text);
  REQUIRE(c1.status == 0);
  auto c2 = run_shell(compile + " " + one_mlir + " -o " + cache + " --name one");
  INFO(c2.text);
  REQUIRE(c2.status == 0);
  std::vector<float> x(32 * 64);
  for (int i = 0; i < 32 * 64; ++i) x[i] = static_cast<float>((i * 7 + i / 9) % 5 - 2);
  const std::string out_mesh = dir.file("mesh.npy"), out_one = dir.file("one.npy");
  auto r1 = run_shell(run + " " + cache + " --name mesh" + input_arg(kInputType, x) +
                      " --output=@" + out_mesh);
  INFO(r1.text);
  REQUIRE(r1.status == 0);
  auto r2 = run_shell(run + " " + cache + " --name one" + input_arg(kInputType, x) +
                      " --output=@" + out_one);
  INFO(r2.text);
  REQUIRE(r2.status == 0);
  CHECK(read_bytes(out_mesh) == read_bytes(out_one));
  std::vector<float> got = npy_values(out_mesh, x.size());
  int wrong = 0;
  for (size_t i = 0; i < x.size(); ++i) wrong += got[i] != 2 * std::fabs(x[i]);
  CHECK(wrong == 0);
  return c1.text;
}

}  // namespace meshplan::test
