// Executable: a verified plan (single-chip or mesh) bound to a device::Mesh, run with host tensors.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "meshplan/device/device.hpp"
#include "meshplan/runtime/plan.hpp"
#include "meshplan/runtime/tensor.hpp"

namespace meshplan::device {
class Mesh;
}

namespace meshplan::runtime {

/// Simulated time of one executed op on one chip.
struct OpProfile {
  std::string_view name;  ///< Points into the plan.
  device::OpKind kind;
  uint64_t device_ns = 0;   ///< The op's duration on this chip (collectives: incl. waiting).
  uint32_t cores = 0;       ///< 0 for collectives.
  uint64_t compute_ns = 0;  ///< The busiest core's compute time within device_ns (device ops).
  uint64_t dram_ns = 0;     ///< The op's DRAM traffic at the chip's DRAM bandwidth (device ops).
  uint32_t chip = 0;        ///< Chip index (row-major); 0 on a 1x1 mesh.
  uint64_t start_ns = 0;    ///< The chip's clock when the op started.
  bool collective = false;
};

/// What one run produced. Per-chip vectors have one entry per chip of the mesh (one on 1x1).
struct RunResult {
  std::vector<Tensor> outputs;           ///< Host (full) tensors, in plan output order.
  std::vector<OpProfile> ops;            ///< Plan order, then chip order.
  uint64_t device_ns = 0;                ///< The slowest chip's clock: the run's simulated time.
  std::vector<uint64_t> chip_ns;         ///< Per chip: its clock at the end.
  std::vector<uint64_t> chip_device_ns;  ///< Per chip: time in device ops.
  std::vector<uint64_t> chip_collective_ns;  ///< Per chip: time in collectives (incl. waiting).
  uint64_t collective_ns = 0;  ///< Sum over collective ops of their slowest group's duration.
  uint64_t bytes_moved = 0;    ///< Bytes that crossed between chips.
};

/// An input bound by name (the plan's input tensor name).
struct NamedTensorView {
  std::string_view name;
  TensorView view;
};

/// A verified plan bound to a device::Mesh, run with host (full) tensors. Any plan binds: a
/// single-chip plan to a 1x1 mesh (or, as a shorthand, to one Device: the same thing without a
/// mesh object), a mesh plan to a mesh of the shape, topology and chip it was made for. Binding
/// checks that and allocates nothing that grows with the plan. run() may be called from several
/// threads; runs on one Executable are serialised (a mesh is single-threaded). The plan's memory
/// and the mesh (device) must outlive the Executable.
///
/// A run resets the mesh; allocates every argument on every chip at its planned address; writes
/// constants to every chip; writes each host input (a mesh plan splits it over the chips by its
/// boundary shard, Mesh::full_to_shard); then for each op in plan order allocates its results on
/// every chip and either launches it on every chip (device ops) or runs it through the Mesh
/// (collectives), and frees what the plan frees; finally reads each output back (a mesh plan
/// reassembles it on the host, Mesh::shard_to_full).
class Executable {
 public:
  /// Fails with incompatible if the plan was made for another chip descriptor, a mesh plan for
  /// another mesh shape or mesh descriptor, or a single-chip plan meets a mesh of several chips.
  static Result<std::unique_ptr<Executable>> bind(PlanRef plan, device::Mesh& mesh);
  /// One chip as a 1x1 mesh. Fails with incompatible for a mesh plan (bind those to a
  /// device::Mesh) or a plan made for another device descriptor.
  static Result<std::unique_ptr<Executable>> bind(PlanRef plan, device::Device& device);

  const PlanRef& plan() const { return plan_; }
  size_t input_count() const;
  std::string_view input_name(size_t i) const;
  /// The host shape the caller passes for input i: the plan's (full) shape, except for inputs
  /// with a host transform (input_transform.hpp: a conv2d weight the planner prepared), which
  /// take their host shape [O, KH, KW, I/groups] and are prepared on the host before upload.
  std::span<const int64_t> input_shape(size_t i) const;
  size_t output_count() const;
  std::string_view output_name(size_t i) const;
  /// The host (full) shape of output i.
  std::span<const int64_t> output_shape(size_t i) const;

  /// Position of the input named `name`; not_found lists the names the plan has.
  Result<size_t> input_index(std::string_view name) const;
  /// Position of the output named `name`; not_found lists the names the plan has.
  Result<size_t> output_index(std::string_view name) const;

  /// Runs the plan with `inputs` bound by position (plan input order), each of input_shape(i).
  /// Shape mismatches name the offending input (and, for a prepared weight, both shapes). The
  /// mesh is reset first. Thread-safe: concurrent calls are serialised on this Executable's
  /// mesh; bind one Executable per mesh to run in parallel. Running out of host memory is a
  /// resource_exhausted error, not an exception.
  Result<RunResult> run(std::span<const TensorView> inputs);
  /// Runs the plan with every input bound by name, in any order. Errors name the input: unknown
  /// names, inputs given twice, inputs missing, shape or size mismatches.
  Result<RunResult> run(std::span<const NamedTensorView> inputs);

 private:
  Executable(PlanRef plan, device::Mesh* mesh, device::Device* chip)
      : plan_(plan), mesh_(mesh), chip_(chip) {}
  /// run() after its input checks, holding mutex_: the one run loop, over the mesh's chips (or
  /// the one Device); may throw std::bad_alloc.
  Result<RunResult> run_bound(std::span<const TensorView> inputs);
  PlanRef plan_;
  device::Mesh* mesh_;    ///< Null when bound to one Device.
  device::Device* chip_;  ///< The Device when bound to one Device (no mesh), else null.
  std::mutex mutex_;
  /// Host staging for inputs with a host transform; guarded by mutex_, reused across runs.
  std::vector<float> prepared_;
};

/// Runs the plan's ops on the host in f32 (device::reference), with the same inputs: what the
/// device's results are checked against. Mesh plans: run_mesh_reference (host inputs).
Result<std::vector<Tensor>> run_reference(const PlanRef& plan, std::span<const TensorView> inputs);

/// Host f32 SPMD simulation of a mesh plan: each host input split per its shard, every chip's
/// ops computed with device::reference, collectives combined on the host, outputs reassembled.
/// What check_outputs compares a mesh run against. run_reference() calls it for mesh plans.
Result<std::vector<Tensor>> run_mesh_reference(const PlanRef& plan,
                                               std::span<const TensorView> inputs);

/// OpConfig stored in a plan op.
device::OpConfig op_config_of(const fb::OpPlan& op);

}  // namespace meshplan::runtime
