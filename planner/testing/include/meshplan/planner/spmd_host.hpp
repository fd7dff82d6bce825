// The StableHLO host evaluator, test-only code in meshplan_testing (planner/testing/), which only
// the test suites link: the single-device f32 reference of a module and a lockstep simulation of
// its SPMD program, each a checker the lowering and the mesh passes are compared against.
#pragma once

#include <cstdint>
#include <vector>

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// A row-major f32 host array (integers and booleans are held as floats).
struct HostArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/// Evaluates the entry function on one host "device" with f32 math: the single-device
/// reference. Sharding annotations and sdy.reshard/sharding_constraint are identities.
/// Errors name the op (file:line:col) that has no host evaluation.
Result<std::vector<HostArray>> evaluate_reference(const Module& m,
                                                  const std::vector<HostArray>& inputs);

/// Simulates the SPMD program on the host: the manual computation's operands are split per
/// in_shardings onto every device of the mesh (mesh_shard FullToShard), each device runs the
/// body on its local arrays in lockstep, collectives combine host arrays along their replica
/// groups, and the results are assembled per out_shardings (ShardToFull), checking that
/// replicated copies agree.
Result<std::vector<HostArray>> evaluate_spmd(const Module& m, const std::vector<HostArray>& inputs);

/// Deterministic pseudo-random inputs for the entry function's arguments (values in [-1, 1)).
std::vector<HostArray> random_inputs(const Module& m, uint64_t seed);

}  // namespace meshplan::planner::shlo
