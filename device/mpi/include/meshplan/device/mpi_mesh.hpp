// MpiMesh: the emulated mesh spread over the ranks of an MPI communicator (optional: built when
// CMake finds MPI, option MESHPLAN_MPI).
//
// Every rank builds the same MpiMesh and makes the same calls in the same order (SPMD). Chip i
// is owned by rank i * ranks / chips (contiguous blocks in chip-index order); only its owner
// holds an EmulatedDevice with the chip's L1 and DRAM bytes. The other ranks hold a RemoteChip
// that keeps the chip's simulated clock (the timing model needs placements, not bytes) and
// ignores writes, so every rank knows every chip's clock without communication.
//
// Collectives and host transfers run the in-process EmulatedMesh algorithms unchanged: they read
// every chip they need in the same order on every rank, and each read is an MPI broadcast from
// the chip's owner. Every rank therefore combines the same values in the same order, and writes
// only its own chips: results are bit-identical to EmulatedMesh and the clocks follow the same
// model (the modelled ethernet, not MPI). After each collective the ranks agree on its status,
// so a chip's error reaches every rank.
//
// full_to_shard scatters: only rank 0's host tensor is read (other ranks may pass any buffer of
// the right size, e.g. untouched zero pages), and each chip's shard travels from rank 0 to its
// owner, so no rank but 0 ever holds a whole host input.
//
// Faults: the communicator returns errors (MPI_ERRORS_RETURN) and every wait polls with a
// deadline (timeout_s): a rank that died or stopped calling makes the others fail with an error
// naming the call, the chip and the rank they waited for, never hang. Callers should then end
// the job (MPI_Abort) rather than continue.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "meshplan/device/emulated_mesh.hpp"

namespace meshplan::device {

class MpiMesh final : public Mesh {
 public:
  /// Collective over `comm`: every rank must call it with the same descriptor (checked: the
  /// ranks compare the descriptor's hash). MPI must be initialised.
  static Result<std::unique_ptr<MpiMesh>> create(MeshDesc desc, MPI_Comm comm = MPI_COMM_WORLD,
                                                 double timeout_s = 60.0);
  ~MpiMesh() override;

  const MeshDesc& descriptor() const override { return desc_; }
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  /// The rank that owns chip `index`.
  int owner(int index) const;
  bool owns(int index) const { return owner(index) == rank_; }
  /// Chip `index`: its EmulatedDevice on the owner, a RemoteChip elsewhere.
  Device& chip(int index) override;
  /// The EmulatedDevice of an owned chip, or nullptr.
  EmulatedDevice* local_chip(int index);

  uint64_t now_ns(MeshCoord c) const override;
  uint64_t now_ns() const override;
  void reset() override;
  /// Host bytes backing the emulated memories of this rank's chips.
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

  /// Broadcasts `values` from chip `index`'s owner to every rank (the read of an exchange);
  /// `ok` carries the owner's read status. Used by the chips while an exchange runs.
  Status exchange(int index, std::span<float> values, Status ok);
  bool exchanging() const { return !what_.empty(); }
  /// Whether writes are scattered from rank 0 (during full_to_shard): only rank 0's host values
  /// count; each chip's values travel from rank 0 to the chip's owner.
  bool scattering() const { return scattering_; }
  /// The write of a scatter on chip `index`: rank 0 sends `values` to the owner; the owner
  /// receives them into `values`. Other ranks do nothing.
  Status scatter(int index, std::span<float> values);
  /// Pre-sharded (identity) inputs read per rank (for example from per-chip files): from now on
  /// full_to_shard of an identity spec writes each chip's piece from its owner's own host
  /// buffer, not from rank 0's (the pieces of chips a rank does not own are not read).
  void set_identity_inputs_per_rank(bool on) { identity_per_rank_ = on; }
  /// Every rank learns whether any rank failed `local`; the error names the first failing rank.
  Status agree(Status local, std::string_view what);

 private:
  MpiMesh(MeshDesc desc, MPI_Comm comm, double timeout_s);
  /// Runs `f` with reads exchanged between the ranks, then agrees on its status.
  template <typename F>
  auto exchanged(std::string what, F&& f) -> decltype(f());
  uint64_t advance(std::span<const int> chips, uint64_t duration_ns);

  MeshDesc desc_;
  MPI_Comm comm_;
  double timeout_s_;
  int rank_ = 0, ranks_ = 1;
  std::vector<std::unique_ptr<Device>> chips_;
  std::vector<EmulatedDevice*> local_;  ///< Per chip: the owned device, or nullptr.
  std::vector<uint64_t> waited_ns_;
  std::string what_;  ///< The call an exchange runs for (empty: no exchange).
  bool scattering_ = false;
  bool identity_per_rank_ = false;
};

/// Waits for `request` until `timeout_s` passes, polling; the error names `what`.
Status mpi_wait(MPI_Request& request, double timeout_s, const std::string& what);
/// Waits for all `requests` (see mpi_wait).
Status mpi_wait_all(std::span<MPI_Request> requests, double timeout_s, const std::string& what);
/// An MPI return code as a Status naming `what`.
Status mpi_check(int code, const std::string& what);
/// Seconds a rank waits for another before it gives up: MESHPLAN_MPI_TIMEOUT, default 300 (a
/// peer may legitimately spend minutes emulating a full-size op before the next collective).
double mpi_timeout_seconds();
/// Whether this process was started by an MPI launcher (Open MPI, or a PMI-based one).
bool launched_by_mpi();

}  // namespace meshplan::device
