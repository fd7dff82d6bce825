// The emulated mesh: a grid of EmulatedDevices (one per chip) with a simulated clock per chip
// and collectives that move real bytes between the chips' memories. The semantics of every call
// are the Mesh interface's (mesh.hpp).
#pragma once

#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/mesh.hpp"

namespace meshplan::device {

/// A mesh of emulated chips. Owns its devices; references from chip() live as long as the mesh.
/// Memory is allocated lazily by each chip, so an idle 32-chip mesh costs little host memory
/// (see resident_bytes()).
class EmulatedMesh final : public Mesh {
 public:
  /// Fails if the descriptor does not verify.
  static Result<std::unique_ptr<EmulatedMesh>> create(MeshDesc desc);

  const MeshDesc& descriptor() const override { return desc_; }
  /// Preconditions: the coordinate / index lies in the mesh.
  EmulatedDevice& chip(MeshCoord c) { return *chips_[static_cast<size_t>(desc_.index(c))]; }
  EmulatedDevice& chip(int index) override { return *chips_[static_cast<size_t>(index)]; }
  const EmulatedDevice& chip(int index) const { return *chips_[static_cast<size_t>(index)]; }

  uint64_t now_ns(MeshCoord c) const override;
  uint64_t now_ns() const override;
  void reset() override;
  /// Host bytes backing all chips' emulated memories.
  uint64_t resident_bytes() const;

  Result<CollectiveRun> all_gather(PerChip in, PerChip out, int dim, int cluster_axis) override;
  Result<CollectiveRun> reduce_scatter(PerChip in, PerChip out, int dim, int cluster_axis,
                                       ReduceOp op = ReduceOp::sum) override;
  Result<CollectiveRun> all_reduce(PerChip in, PerChip out, int cluster_axis,
                                   ReduceOp op = ReduceOp::sum) override;
  Result<CollectiveRun> all_to_all(PerChip in, PerChip out, int split_dim, int concat_dim,
                                   int cluster_axis) override;
  Result<CollectiveRun> collective_permute(
      PerChip in, PerChip out, std::span<const std::pair<MeshCoord, MeshCoord>> pairs) override;
  Result<CollectiveRun> all_slice(PerChip in, PerChip out, int dim, int cluster_axis) override;
  Status full_to_shard(std::span<const float> host, std::span<const int64_t> full_shape,
                       const MeshShardSpec& spec, PerChip out) override;
  Status shard_to_full(PerChip in, const MeshShardSpec& spec, std::span<const int64_t> full_shape,
                       std::span<float> host) override;

 private:
  explicit EmulatedMesh(MeshDesc desc) : desc_(std::move(desc)) {}
  /// Chip indices of each group along `axis` (-1: one group of all chips), in coordinate order.
  std::vector<std::vector<int>> groups(int axis) const;
  /// Moves the chips to `start + duration` where start is the latest of their clocks.
  uint64_t advance(std::span<const int> chips, uint64_t duration_ns);

  MeshDesc desc_;
  std::vector<std::unique_ptr<EmulatedDevice>> chips_;
  std::vector<uint64_t> waited_ns_;  ///< Per chip: time spent in collectives (added to its clock).
};

}  // namespace meshplan::device
