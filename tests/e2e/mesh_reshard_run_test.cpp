// Reshards that Shardy turns into an all_to_all over several axes or a collective_permute run on
// the emulated 2x2 mesh with global inputs, bit-equal to the same program planned for one chip
// (integer-valued data, exact in every dtype on the way), and cost what those collectives cost.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include "mesh_vs_one_chip.hpp"
#include "test_util.hpp"

using namespace meshplan;

namespace {


/// |x| + |x| with x split `from` and the sum wanted `to` (a reshard between the two); without
/// shardings (`from` empty) the one-chip program.
std::string module_text(const std::string& from, const std::string& to,
                        const std::string& mesh = "\"x\"=2, \"y\"=2") {
  const std::string t = "tensor<32x64xf32>";
  if (from.empty())
    return "func.func public @main(%arg0: " + t + ") -> " + t +
           " {\n  %0 = stablehlo.abs %arg0 : " + t + "\n  %1 = stablehlo.add %0, %0 : " + t +
           "\n  return %1 : " + t + "\n}\n";
  return "sdy.mesh @mesh = <[" + mesh + "]>\n" + "func.func public @main(%arg0: " + t +
         " {sdy.sharding = #sdy.sharding<@mesh, " + from + ">}) -> (" + t +
         " {sdy.sharding = #sdy.sharding<@mesh, " + to +
         ">}) {\n  %0 = stablehlo.abs %arg0 : " + t +
         "\n  %1 = sdy.sharding_constraint %0 <@mesh, " + to + "> : " + t +
         "\n  %2 = stablehlo.add %1, %1 : " + t + "\n  return %2 : " + t + "\n}\n";
}

/// Compiles the sharded and the one-chip program, runs both, checks they agree bit for bit and
/// equal 2|x|; returns the sharded compile's summary.
std::string run_both(const std::string& from, const std::string& to,
                     const std::string& mesh = "\"x\"=2, \"y\"=2") {
  return test::run_mesh_and_one_chip(module_text(from, to, mesh), module_text("", ""));
}

}  // namespace

TEST_CASE("[{x, y}, {}] -> [{}, {x, y}] runs as one exchange over the whole 2x2 mesh") {
  std::string summary = run_both("[{\"x\", \"y\"}, {}]", "[{}, {\"x\", \"y\"}]");
  INFO(summary);
  // One all_to_all over the whole mesh of each chip's 8x64 f32 shard (2048 bytes), which would
  // send 3/4 of it (1536 bytes); its 8 rows to concatenate are refused by tt-metal's all_to_all
  // (the second-last dim in multiples of 16), so it runs as an all_gather of the 32x64 tensor
  // and an all_slice: each chip receives the other 3 shards, 6144 bytes.
  CHECK(summary.find("all_gather + all_slice on groups of 4") != std::string::npos);
  CHECK(summary.find("communication 6144 bytes per chip in 1 collectives") != std::string::npos);
  CHECK(summary.find("all_to_all") == std::string::npos);
}

TEST_CASE("[{x}, {y}] -> [{y}, {x}] runs as one collective_permute (a device transpose)") {
  std::string summary = run_both("[{\"x\"}, {\"y\"}]", "[{\"y\"}, {\"x\"}]");
  INFO(summary);
  // Each moving chip sends its 16x32 f32 shard once: 2048 bytes.
  CHECK(summary.find("collective_permute") != std::string::npos);
  CHECK(summary.find("communication 2048 bytes per chip in 1 collectives") != std::string::npos);
  CHECK(summary.find("all_gather") == std::string::npos);
}

TEST_CASE("a Shardy sequence the mesh cannot run falls back to all_gather + all_slice") {
  // On x=2, y=4 (a 2x4 system), Shardy's [{x}, {y}] -> [{y}, {x}] is a permute then an
  // all_to_all over "y":(2)2, a group of every other chip of a row, which no physical
  // collective runs: the plan gathers and slices instead, and still computes 2|x| exactly.
  std::string summary = run_both("[{\"x\"}, {\"y\"}]", "[{\"y\"}, {\"x\"}]", "\"x\"=2, \"y\"=4");
  INFO(summary);
  CHECK(summary.find("all_gather") != std::string::npos);
  CHECK(summary.find("all_to_all") == std::string::npos);
}
