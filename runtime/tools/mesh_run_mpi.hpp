// meshplan-run's backends, and meshplan-run under mpirun: the mesh plan runs SPMD on backend "mpi"
// (an MpiMesh, one block of chips per rank). Without MPI support built in, or outside mpirun,
// meshes open on the backend the user chose (--backend, default the emulator).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "meshplan/device/mesh.hpp"
#include "meshplan/runtime/plan.hpp"
#include "meshplan/runtime/tensor.hpp"

namespace meshplan::tools {

/// Registers the backends this build of meshplan-run links: "emulator", and "mpi" when built
/// with MPI. Idempotent.
Status register_run_backends();
/// The mesh to run `plan` on: under mpirun (built with MPI), initialises MPI, checks that every
/// rank bound the same plan (same key) and opens backend "mpi" (an MpiMesh over MPI_COMM_WORLD);
/// ranks other than 0 then print nothing to stdout. Otherwise a mesh of backend `backend`.
Result<std::unique_ptr<device::Mesh>> make_run_mesh(const device::MeshDesc& desc,
                                                    const runtime::PlanRef& plan,
                                                    std::string_view backend);
/// Whether this process prints results, writes files and checks (rank 0, or no MPI).
bool is_root_rank();
/// "rank R of N: " under MPI, else empty.
std::string rank_label();
/// Whether this rank owns chip `index` of `mesh` (always, without MPI).
bool rank_owns_chip(device::Mesh& mesh, int index);
/// Pre-sharded (identity) inputs are read per rank from then on (MpiMesh; no-op without MPI).
void read_identity_inputs_per_rank(device::Mesh& mesh);
/// The host inputs a rank passes to the run. Under MPI, ranks other than 0 get rank 0's shapes
/// and value counts over untouched zero pages (MpiMesh::full_to_shard reads only rank 0's
/// values, so these cost no memory until written: a rank writes there only the pieces of
/// pre-sharded inputs it reads itself, see writable()); otherwise views of `inputs`.
class RankInputs {
 public:
  RankInputs() = default;
  RankInputs(const RankInputs&) = delete;
  RankInputs& operator=(const RankInputs&) = delete;
  ~RankInputs();
  std::vector<runtime::TensorView> views;
  /// On a rank other than 0 under MPI: the values of input `i`, writable (empty elsewhere).
  std::span<float> writable(size_t i) const;

 private:
  friend Result<std::unique_ptr<RankInputs>> share_inputs(const std::vector<runtime::Tensor>&);
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<uint64_t> counts_;
  void* zeros_ = nullptr;
  size_t bytes_ = 0;
};
Result<std::unique_ptr<RankInputs>> share_inputs(const std::vector<runtime::Tensor>& inputs);
/// Under MPI, each rank prints its chips, the emulated memory it backs and its peak RSS to stderr
/// (after a run of `run_ms` host milliseconds).
void report_rank(device::Mesh& mesh, double run_ms);
/// Under MPI, an error ends the whole job (MPI_Abort) after printing it with the rank: the other
/// ranks would otherwise wait for this one. Returns `code` when there is no MPI job.
Result<int> finish_mpi(Result<int> code);

}  // namespace meshplan::tools
