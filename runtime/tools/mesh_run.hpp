// meshplan-run for mesh plans: opens a mesh of the backend, of the shape the plan was made for,
// runs the plan with host tensors, prints per-chip timing, writes a trace with one track per chip,
// checks against the host SPMD reference, and inspects the mesh and boundary shards.
#pragma once

#include <string>
#include <vector>

#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/runtime/plan.hpp"

namespace meshplan::tools {

struct MeshRunOptions {
  std::vector<std::string> inputs, outputs;
  std::string trace;
  uint64_t seed = 1;
  double tolerance = 0.03;
  bool check = false, print = false, inspect = false, json = false;
  std::string backend;  ///< The registered backend to open the mesh on (device/backend.hpp).
};

/// Runs (or inspects) a mesh plan on a mesh of `mesh` on options.backend (under mpirun: "mpi")
/// (Executable::bind refuses a mesh the plan was not made for); the exit code (0, or 2 when --check
/// fails).
Result<int> run_mesh_plan(const runtime::PlanRef& plan, const device::MeshDesc& mesh,
                          const MeshRunOptions& options);

/// The mesh part of `inspect`: mesh, topology, links, and one line per boundary shard.
std::string inspect_mesh(const runtime::PlanRef& plan);

}  // namespace meshplan::tools
