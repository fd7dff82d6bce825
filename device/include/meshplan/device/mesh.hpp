// The mesh interface (device::Mesh) that every mesh backend implements (the emulator's
// EmulatedMesh, emulated_mesh.hpp; MpiMesh), and NullMesh, which implements nothing.
//
// Tensors on a mesh are given per chip: a span of placements indexed by chip index
// (row * cols + col), one per chip, each the chip-local tensor (SPMD plans usually give every
// chip the same placement). Collectives read their inputs from every chip (Device::read), move
// and combine the values, and write the results into the outputs (Device::write): both must be
// live buffers (allocated by the caller at their planned addresses). They do not cast: input
// and output dtypes are equal.
//
// cluster_axis = k runs one independent collective per group of chips along mesh axis k:
// axis 0 groups the chips of one column (N = rows), axis 1 the chips of one row (N = cols);
// cluster_axis = -1 runs one collective over all chips in chip-index order (N = rows * cols),
// timed as a line or ring over all of them (the mesh's topology).
// Within a group, results are ordered by the chips' coordinate along the axis.
//
// Time: each group starts when its slowest chip is ready (the latest of its chips' clocks), lasts
// the collective timing model's duration (collective_timing.hpp) and moves every chip of the
// group to its end. A chip's clock is its device's op time plus the time it spent in
// collectives. Host <-> mesh transfers (full_to_shard, shard_to_full) are not timed: DEVICE-FACTS
// gives no host-link figure.
//
// Errors: a collective checks the placement count, that a group's inputs agree, and then runs
// OpModel::validate on every chip's part (as EmulatedDevice::launch does for an op: the planner's
// shape, layout and tt-metal rules; the reason comes after the chip, "chip (r,c): op '...'")
// before it reads anything, and reads every input before it writes anything, so a bad call never modifies an
// input and leaves the mesh usable; the message names the collective, the chip coordinates and
// the tensor. An output that is not a live buffer fails at its write, after the outputs of
// earlier chips were written.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "meshplan/device/collective_timing.hpp"
#include "meshplan/device/device.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/device/mesh_shard.hpp"
#include "meshplan/device/placement.hpp"

namespace meshplan::device {

/// One placement per chip, indexed by chip index. Views: the caller owns the placements.
using PerChip = std::span<const TensorPlacement>;

// ReduceOp (types.hpp), MeshShardType, MeshShardSpec and mesh_shard_local_shape
// (mesh_shard.hpp) are declared with the op types so that graphs and plans can name them.

/// What one collective call did.
struct CollectiveRun {
  CollectiveTiming timing;   ///< The slowest group's timing.
  uint64_t end_ns = 0;       ///< Latest clock among the chips that took part, after the call.
  uint64_t bytes_moved = 0;  ///< Bytes that arrived at a chip from another chip (emulated).
  uint32_t groups = 0;       ///< Independent collectives run (rows or columns).
};

/// A mesh of chips: the interface the runtime programs against, as Device is for one chip.
/// EmulatedMesh (emulated_mesh.hpp) is the first backend; NullMesh shows the surface a hardware
/// backend fills in. Not thread-safe: callers serialise every call, including calls on the chips it
/// hands out (the runtime's Executable does).
class Mesh {
 public:
  virtual ~Mesh() = default;
  virtual const MeshDesc& descriptor() const = 0;
  int rows() const { return descriptor().rows; }
  int cols() const { return descriptor().cols; }
  int size() const { return descriptor().chips(); }

  /// Chip `index` (row-major). Precondition: the index lies in the mesh.
  virtual Device& chip(int index) = 0;
  /// Simulated time of one chip since reset: its device's op time plus collective time.
  virtual uint64_t now_ns(MeshCoord c) const = 0;
  /// The latest chip clock.
  virtual uint64_t now_ns() const = 0;
  /// Frees every buffer on every chip and resets all clocks.
  virtual void reset() = 0;

  /// cluster_axis: 0 = the chips of one column, 1 = of one row, -1 = all chips as one group in
  /// chip-index order (collective_ops.hpp). Every chip of a group gets its group's inputs
  /// concatenated along `dim` (negative dims count from the back).
  virtual Result<CollectiveRun> all_gather(PerChip in, PerChip out, int dim, int cluster_axis) = 0;
  /// The group's inputs reduced elementwise (in coordinate order); the chip at position i keeps
  /// slice i of N along `dim`. in[dim] must be divisible by N.
  virtual Result<CollectiveRun> reduce_scatter(PerChip in, PerChip out, int dim, int cluster_axis,
                                               ReduceOp op = ReduceOp::sum) = 0;
  /// reduce_scatter followed by all_gather: every chip gets the group's reduction.
  virtual Result<CollectiveRun> all_reduce(PerChip in, PerChip out, int cluster_axis,
                                           ReduceOp op = ReduceOp::sum) = 0;
  /// Chip i splits its input into N slices along `split_dim` and sends slice j to chip j; chip j
  /// concatenates what it received (from positions 0..N-1) along `concat_dim`.
  virtual Result<CollectiveRun> all_to_all(PerChip in, PerChip out, int split_dim, int concat_dim,
                                           int cluster_axis) = 0;
  /// Each target gets its source's tensor; chips that are nobody's target get zeros. Sources and
  /// targets are each distinct. Only sources' inputs are read.
  virtual Result<CollectiveRun> collective_permute(
      PerChip in, PerChip out, std::span<const std::pair<MeshCoord, MeshCoord>> pairs) = 0;
  /// The chip at group position i keeps slice i of N along `dim` of its own input: no
  /// communication (timed as a local copy on each chip).
  virtual Result<CollectiveRun> all_slice(PerChip in, PerChip out, int dim, int cluster_axis) = 0;

  /// mesh_shard FullToShard: writes the host tensor (row-major, `full_shape`) into each chip's
  /// placement as `spec` says. Every placement's shape must be shard_shape(full_shape).
  virtual Status full_to_shard(std::span<const float> host, std::span<const int64_t> full_shape,
                               const MeshShardSpec& spec, PerChip out) = 0;
  /// mesh_shard ShardToFull: reassembles the host tensor from the chips (replicated copies are
  /// taken from the chips at coordinate 0 along each replicated axis).
  virtual Status shard_to_full(PerChip in, const MeshShardSpec& spec,
                               std::span<const int64_t> full_shape, std::span<float> host) = 0;
};

/// Runs collective op `kind` (collective_ops.hpp) with `config`'s attributes through `mesh`.
/// config.mesh_rows x mesh_cols must be the mesh's shape.
Result<CollectiveRun> run_collective_op(Mesh& mesh, OpKind kind, const OpConfig& config, PerChip in,
                                        PerChip out);

/// A backend that implements nothing: its chips are NullDevices and every mesh call answers
/// unimplemented.
class NullMesh final : public Mesh {
 public:
  explicit NullMesh(MeshDesc desc);
  const MeshDesc& descriptor() const override { return desc_; }
  Device& chip(int index) override { return *chips_[static_cast<size_t>(index)]; }
  uint64_t now_ns(MeshCoord) const override { return 0; }
  uint64_t now_ns() const override { return 0; }
  void reset() override {}
  Result<CollectiveRun> all_gather(PerChip, PerChip, int, int) override;
  Result<CollectiveRun> reduce_scatter(PerChip, PerChip, int, int, ReduceOp) override;
  Result<CollectiveRun> all_reduce(PerChip, PerChip, int, ReduceOp) override;
  Result<CollectiveRun> all_to_all(PerChip, PerChip, int, int, int) override;
  Result<CollectiveRun> collective_permute(
      PerChip, PerChip, std::span<const std::pair<MeshCoord, MeshCoord>>) override;
  Result<CollectiveRun> all_slice(PerChip, PerChip, int, int) override;
  Status full_to_shard(std::span<const float>, std::span<const int64_t>, const MeshShardSpec&,
                       PerChip) override;
  Status shard_to_full(PerChip, const MeshShardSpec&, std::span<const int64_t>,
                       std::span<float>) override;

 private:
  MeshDesc desc_;
  std::vector<std::unique_ptr<NullDevice>> chips_;
};

}  // namespace meshplan::device
