// Former names of the mesh executor: Executable (executable.hpp) binds mesh plans to a
// device::Mesh and returns one RunResult for every plan. Kept while callers move over.
#pragma once

#include "meshplan/device/mesh.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/mesh_plan.hpp"

namespace meshplan::runtime {

using MeshExecutable = Executable;
using MeshRunResult = RunResult;
using MeshOpProfile = OpProfile;

}  // namespace meshplan::runtime
