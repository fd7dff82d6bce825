// Reading the mesh part of a plan (MESH-SPEC §4): the header's mesh, the boundary shards of the
// plan's inputs and outputs with their host (full) shapes, and the mesh a plan runs on. Views into
// the plan; no allocation beyond the returned small values.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "meshplan/device/backend.hpp"
#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/device/mesh_shard.hpp"
#include "meshplan/runtime/plan.hpp"
#include "meshplan/runtime/tensor.hpp"

namespace meshplan::runtime {

/// True if the plan runs on a mesh of more than one chip (its header has a mesh that is not 1x1).
bool is_mesh_plan(const PlanRef& plan);
/// The plan's mesh rows x cols (1x1 for single-chip plans).
int mesh_rows(const PlanRef& plan);
int mesh_cols(const PlanRef& plan);

/// The boundary shard of the plan's input (or output) at `index` (replicate on a single chip).
/// Precondition: index < inputs (outputs) count; the plan passed verify_plan().
device::MeshShardSpec boundary_shard(const PlanRef& plan, size_t index, bool output);
/// The host (full) shape of input (output) `index`: the shard's full_shape on a mesh plan, the
/// tensor's shape on a single-chip plan. Views into the plan.
std::span<const int64_t> host_shape(const PlanRef& plan, size_t index, bool output);

/// Checks host inputs against the plan's host shapes (identity shards: chips x the shape's
/// values); errors name the input.
Status check_host_inputs(const PlanRef& plan, std::span<const TensorView> inputs);
/// Checks that the values of integer inputs (i32, u32 words; i64/ui64 are computed in them)
/// are integers the word holds: NaN and values beyond the word's range (other than 2^31 and
/// 2^32, where f32 rounds INT32_MAX and UINT32_MAX) are errors naming the input and element.
Status check_input_values(const PlanRef& plan, std::span<const TensorView> inputs);

/// The mesh descriptor the plan was made for, rebuilt from its header with `chip` (the chip
/// descriptor the plan's device hash names); fails if the rebuilt descriptor's hash differs from
/// the one the header recorded, or the plan has no mesh.
Result<device::MeshDesc> plan_mesh_desc(const PlanRef& plan, const device::ChipDesc& chip);

/// The mesh `plan` runs on with `chip`: the mesh it was made for (plan_mesh_desc) for a mesh
/// plan, a 1x1 mesh of `chip` for a single-chip plan.
Result<device::MeshDesc> run_mesh_desc(const PlanRef& plan, const device::ChipDesc& chip);

/// Opens run_mesh_desc(plan, chip) on the registered backend `backend` (device/backend.hpp; the
/// caller registers the backends it links). The caller binds the plan to it.
Result<std::unique_ptr<device::Mesh>> open_plan_mesh(const PlanRef& plan,
                                                     const device::ChipDesc& chip,
                                                     std::string_view backend,
                                                     const device::BackendOptions& options = {});

}  // namespace meshplan::runtime
