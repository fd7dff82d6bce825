// MeshExecutable: a verified mesh plan bound to a device::Mesh, run with host (full) tensors.
// The mesh counterpart of Executable (executable.hpp), with the same surface: bind, input/output
// names and shapes, run by position or by name. Executable::bind refuses mesh plans and
// MeshExecutable::bind refuses single-chip plans, each with a clear error.
//
// A run: resets the mesh; allocates every argument on every chip at its planned address; writes
// constants to every chip; splits each host input over the chips by its boundary shard
// (Mesh::full_to_shard); then for each op in plan order allocates its results on every chip and
// either launches it on every chip (device ops) or runs it through the Mesh (collectives), and
// frees what the plan frees; finally reassembles each output on the host (Mesh::shard_to_full).
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "meshplan/device/mesh.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"
#include "meshplan/runtime/tensor.hpp"

namespace meshplan::runtime {

/// One op on one chip.
struct MeshOpProfile {
  std::string_view name;  ///< Points into the plan.
  device::OpKind kind;
  uint32_t chip = 0;      ///< Chip index (row-major).
  uint64_t start_ns = 0;  ///< The chip's mesh clock when the op started.
  uint64_t duration_ns = 0;
  uint32_t cores = 0;  ///< 0 for collectives.
  bool collective = false;
};

struct MeshRunResult {
  std::vector<Tensor> outputs;     ///< Host (full) tensors.
  std::vector<MeshOpProfile> ops;  ///< Plan order, then chip order.
  std::vector<uint64_t> chip_ns;   ///< Per chip: its clock at the end (device ops + collectives).
  std::vector<uint64_t> chip_device_ns;      ///< Per chip: time in device ops.
  std::vector<uint64_t> chip_collective_ns;  ///< Per chip: time in collectives (incl. waiting).
  uint64_t device_ns = 0;      ///< The slowest chip's clock: the run's simulated time.
  uint64_t collective_ns = 0;  ///< Sum over collective ops of their slowest group's duration.
  uint64_t bytes_moved = 0;    ///< Bytes that crossed between chips.
};

/// A mesh plan bound to a mesh. The plan's memory and the mesh must outlive it. run() may be
/// called from several threads; runs are serialised (the mesh is single-threaded).
class MeshExecutable {
 public:
  /// Fails with incompatible if the plan is a single-chip plan, was made for another mesh shape
  /// or mesh descriptor, or for another chip descriptor.
  static Result<std::unique_ptr<MeshExecutable>> bind(PlanRef plan, device::Mesh& mesh);

  const PlanRef& plan() const { return plan_; }
  size_t input_count() const;
  std::string_view input_name(size_t i) const;
  /// Host (full) shape the input takes; for a prepared conv2d weight (input_transform.hpp) its
  /// host form [O, KH, KW, I/groups].
  std::span<const int64_t> input_shape(size_t i) const;
  size_t output_count() const;
  std::string_view output_name(size_t i) const;
  std::span<const int64_t> output_shape(size_t i) const;
  Result<size_t> input_index(std::string_view name) const;

  /// Runs with host (full) inputs by position. Shape mismatches name the input.
  Result<MeshRunResult> run(std::span<const TensorView> inputs);
  /// Runs with inputs by name (each exactly once).
  Result<MeshRunResult> run(std::span<const NamedTensorView> inputs);

 private:
  MeshExecutable(PlanRef plan, device::Mesh& mesh) : plan_(plan), mesh_(mesh) {}
  PlanRef plan_;
  device::Mesh& mesh_;
  std::mutex mutex_;
  /// Host staging for inputs with a host transform; guarded by mutex_, reused across runs.
  std::vector<float> prepared_;
};

/// Host f32 SPMD simulation of a mesh plan: each host input split per its shard, every chip's
/// ops computed with device::reference, collectives combined on the host, outputs reassembled.
/// What check_outputs compares a mesh run against. run_reference() calls it for mesh plans.
Result<std::vector<Tensor>> run_mesh_reference(const PlanRef& plan,
                                               std::span<const TensorView> inputs);

}  // namespace meshplan::runtime
