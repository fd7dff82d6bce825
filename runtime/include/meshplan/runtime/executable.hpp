// Executable: a verified plan bound to a device, run with host tensors.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "meshplan/device/device.hpp"
#include "meshplan/runtime/plan.hpp"
#include "meshplan/runtime/tensor.hpp"

namespace meshplan::runtime {

/// Simulated time of one executed op.
struct OpProfile {
  std::string_view name;  ///< Points into the plan.
  device::OpKind kind;
  uint64_t device_ns = 0;
  uint32_t cores = 0;
  uint64_t compute_ns = 0;  ///< The busiest core's compute time within device_ns.
  uint64_t dram_ns = 0;     ///< The op's DRAM traffic at the chip's DRAM bandwidth.
};

struct RunResult {
  std::vector<Tensor> outputs;
  std::vector<OpProfile> ops;
  uint64_t device_ns = 0;  ///< Simulated device time of the whole run.
};

/// An input bound by name (the plan's input tensor name).
struct NamedTensorView {
  std::string_view name;
  TensorView view;
};

/// A plan bound to a device. Binding checks that the plan was made for this device and
/// allocates nothing that grows with the plan. run() may be called from several threads; runs on
/// one Executable are serialised (the device is single-threaded). The plan's memory and the
/// device must outlive the Executable.
class Executable {
 public:
  /// Fails with incompatible if the plan was made for another device descriptor, or is a mesh
  /// plan (those bind to a device::Mesh: MeshExecutable in mesh_executable.hpp).
  static Result<std::unique_ptr<Executable>> bind(PlanRef plan, device::Device& device);

  const PlanRef& plan() const { return plan_; }
  size_t input_count() const;
  std::string_view input_name(size_t i) const;
  /// The shape the caller passes for input i: the plan tensor's shape, except for inputs with a
  /// host transform (input_transform.hpp: a conv2d weight the planner prepared), which take
  /// their host shape [O, KH, KW, I/groups] and are prepared on the host before upload.
  std::span<const int64_t> input_shape(size_t i) const;
  size_t output_count() const;
  std::string_view output_name(size_t i) const;
  std::span<const int64_t> output_shape(size_t i) const;

  /// Position of the input named `name`; not_found lists the names the plan has.
  Result<size_t> input_index(std::string_view name) const;
  /// Position of the output named `name`; not_found lists the names the plan has.
  Result<size_t> output_index(std::string_view name) const;

  /// Runs the plan with `inputs` bound by position (plan input order), each of input_shape(i).
  /// Shape mismatches name the offending input (and, for a prepared weight, both shapes). The
  /// device is reset first. Thread-safe: concurrent calls are serialised on this Executable's
  /// device; bind one Executable per device to run in parallel. Running out of host memory is a
  /// resource_exhausted error, not an exception.
  Result<RunResult> run(std::span<const TensorView> inputs);
  /// Runs the plan with every input bound by name, in any order. Errors name the input: unknown
  /// names, inputs given twice, inputs missing, shape or size mismatches.
  Result<RunResult> run(std::span<const NamedTensorView> inputs);

 private:
  Executable(PlanRef plan, device::Device& device) : plan_(plan), device_(device) {}
  /// run() after its input checks, holding mutex_; may throw std::bad_alloc.
  Result<RunResult> run_checked(std::span<const TensorView> inputs);
  PlanRef plan_;
  device::Device& device_;
  std::mutex mutex_;
  /// Host staging for inputs with a host transform; guarded by mutex_, reused across runs.
  std::vector<float> prepared_;
};

/// Runs the plan's ops on the host in f32 (device::reference), with the same inputs: what the
/// device's results are checked against. Mesh plans: run_mesh_reference (host inputs).
Result<std::vector<Tensor>> run_reference(const PlanRef& plan, std::span<const TensorView> inputs);

/// OpConfig stored in a plan op.
device::OpConfig op_config_of(const fb::OpPlan& op);

}  // namespace meshplan::runtime
