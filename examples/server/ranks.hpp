// meshplan-server under mpirun (docs/mpi.md): rank 0 serves the clients; the other ranks follow
// its mesh runs SPMD-style on an MpiMesh. Without MPI support built in, or outside mpirun, there
// is one rank and these do nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "protocol.hpp"

namespace meshplan::server {

/// This process's place in the MPI job (one rank, rank 0, without MPI).
struct Ranks {
  bool mpi = false;
  int rank = 0, size = 1;
};

/// Initialises MPI when started by an MPI launcher (and built with MPI).
Result<Ranks> start_ranks();
/// Registers the backends this build links: "emulator", and "mpi" when built with MPI.
Status register_backends();
/// The backend mesh plans open on: "mpi" (an MpiMesh over every rank; collective: every rank
/// opens the same meshes in the same order) under MPI, else `chosen`.
std::string mesh_backend(std::string_view chosen);
/// Every rank checks that every rank serves the same mesh plans (digest of names and keys).
Status compare_mesh_plans(const Worker& worker);
/// Hooks that keep the ranks in step (rank 0 announces each mesh run; all agree on each
/// outcome); failures end the job with an error naming the rank.
Worker::MeshRunHooks mesh_run_hooks();
/// A rank other than 0: runs rank 0's mesh runs until rank 0 sends quit. After `stop` is set (a
/// signal) it waits at most `grace_s` more seconds for quit, then ends the job.
Status follow(Worker& worker, const std::atomic<bool>& stop, double grace_s);
/// Rank 0 at shutdown: tells the other ranks to stop, then finalises MPI.
void finish_ranks();
/// Under MPI: prints `e` with the rank and ends the whole job (the others would wait for this
/// rank). Without MPI: returns.
void end_job_on_error(const Error& e);

}  // namespace meshplan::server
