// OpModel: the backend query API the planner uses. It answers whether an (op, operand layouts,
// result layout, config) is valid on this chip, how much L1 it needs, and what it costs. The
// emulator runs the same validate() before every launch, so the planner can never accept what
// the device would reject.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "meshplan/device/device.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/device/timing.hpp"

namespace meshplan::device {

/// The answer to a validate() query.
struct OpValidation {
  bool ok = false;
  std::string reason;                     ///< Why not, naming the op and tensor (when !ok).
  uint64_t cb_bytes_per_core = 0;         ///< Circular buffers the op places from the L1 base up.
  uint64_t output_l1_bytes_per_core = 0;  ///< L1 the result needs on each core (0 for DRAM).
};

/// Stateless queries against one chip's descriptor. Thread-safe (const).
class OpModel {
 public:
  explicit OpModel(ChipDesc chip) : chip_(std::move(chip)) {}
  /// An OpModel for one chip of `mesh` (collectives are costed on its fabric).
  explicit OpModel(MeshDesc mesh) : chip_(mesh.chip), mesh_(std::move(mesh)) {}
  const ChipDesc& chip() const { return chip_; }
  /// The mesh collectives are costed on, if this model was made for a mesh.
  const std::optional<MeshDesc>& mesh() const { return mesh_; }

  /// Validates op.kind on these operand and result placements (addresses are ignored) with
  /// op.config: operand count, shapes (the result shape must equal the inferred one), supported
  /// layouts and dtypes, core grid, and that circular buffers plus the L1 result fit per core.
  OpValidation validate(const OpLaunch& op) const;

  /// Simulated time of the op (the emulator's clock advances by the same amount). Collectives:
  /// collective_op_ns() on the mesh, or on default_collective_mesh() without one.
  OpTiming cost(const OpLaunch& op) const;

  /// Bytes of circular buffers the op needs per core.
  uint64_t circular_buffer_bytes(const OpLaunch& op) const;

 private:
  ChipDesc chip_;
  std::optional<MeshDesc> mesh_;
};

/// Checks a placement the emulator can hold: supported layout, dtype and page size. The message
/// names the tensor. Shared by OpModel and EmulatedDevice.
Status check_placement(const TensorPlacement& t, const ChipDesc& chip);

}  // namespace meshplan::device
