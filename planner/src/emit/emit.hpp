// Plan emission (private to the planner): a planned, scheduled and memory-planned graph
// written as a plan.fbs FlatBuffer followed by its constant segments. compile() (planner.hpp)
// runs the passes and calls it last.
#pragma once

#include <cstdint>
#include <vector>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/planner/flatten_spatial.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/memory_plan.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/prepare_weights.hpp"
#include "meshplan/planner/schedule.hpp"

namespace meshplan::planner {

/// What compile() hands emission; every reference outlives the call.
struct EmitInput {
  const Graph& original;  ///< The user's graph (keys, mesh, output shards, input transforms).
  const Graph& source;    ///< What the policy planned (weights prepared, regions flattened).
  const std::vector<PreparedWeight>& prepared;
  const FlattenResult& flattened;
  const device::MeshDesc& mesh;  ///< The planning mesh (collective timing, MeshInfo).
  const LayoutResult& planned;
  const Schedule& schedule;  ///< Of planned.graph.
  const MemoryPlan& memory;  ///< Of planned.graph, verified.
  Hash128 key, graph_key;
};

/// The plan's bytes: size-prefixed FlatBuffer (identifier MPLN), then the 64-byte aligned
/// constant segments. Deterministic: sub-objects are written in a fixed order.
Result<std::vector<uint8_t>> emit_plan(const EmitInput& in, const device::ChipDesc& chip,
                                       const PlannerOptions& options);

}  // namespace meshplan::planner
