// The planner's entry point: graph + device + options -> a complete plan (FlatBuffer bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/schemas/hash.hpp"

namespace meshplan::planner {

/// A finished plan: size-prefixed FlatBuffer (identifier MPLN) followed by 64-byte aligned
/// constant segments. `bytes` is what a plan cache stores.
struct CompiledPlan {
  std::vector<uint8_t> bytes;
  Hash128 key;
  Hash128 graph_key;
  /// The layout policy's notes (a bound beam hit, naming the op); not stored in the plan.
  std::vector<std::string> notes;
};

/// Plans `graph` for `chip`: schedule, layout policy, memory plan (verified), emit. A mesh
/// program is planned for planning_mesh(): options.mesh (a ring T3000, a mesh JSON file...) or
/// the built-in mesh of its shape; the plan's MeshInfo and key record it.
/// Deterministic: equal inputs give byte-identical plans (planning time is not stored).
Result<CompiledPlan> compile(const Graph& graph, const device::ChipDesc& chip,
                             const PlannerOptions& options);

/// The mesh compile() plans `graph` for: options.mesh for a mesh program, else
/// device::default_mesh(chip, rows, cols) of the graph's shape (1x1 for single-chip graphs).
/// Errors (invalid_argument) name the mesh: options.mesh of another shape than the graph's, made
/// of other chips than `chip`, failing MeshDesc::verify(), or given for a single-chip graph.
Result<device::MeshDesc> planning_mesh(const Graph& graph, const device::ChipDesc& chip,
                                       const PlannerOptions& options);

}  // namespace meshplan::planner
