// meshplan-server under mpirun (see ranks.hpp).
#include "ranks.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "meshplan/device/emulator_backend.hpp"

#ifdef MESHPLAN_HAVE_MPI
#include "meshplan/device/mpi_backend.hpp"
#include "meshplan/device/mpi_mesh.hpp"
#endif

namespace meshplan::server {

#ifdef MESHPLAN_HAVE_MPI
namespace {

Ranks g_ranks;
constexpr int64_t kQuit = -1;  ///< The command that ends the followers; >= 0: run mesh plan N.

[[noreturn]] void end_job(const Error& e) {
  std::fprintf(stderr, "meshplan-server: rank %d of %d: error: %s; ending the MPI job\n",
               g_ranks.rank, g_ranks.size, e.to_string().c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

void announce(int64_t command) {
  std::string what = str("rank 0: telling the other ranks to ",
                         command == kQuit ? std::string("stop") : str("run mesh plan ", command));
  MPI_Request r;
  Status s = device::mpi_check(MPI_Ibcast(&command, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &r), what);
  if (s) s = device::mpi_wait(r, device::mpi_timeout_seconds(), what);
  if (!s) end_job(s.error());
}

void finished(bool ok) {
  // {failed somewhere, succeeded somewhere}: both set means the ranks went different ways.
  int mine[2] = {ok ? 0 : 1, ok ? 1 : 0}, all[2] = {0, 0};
  std::string what = str("rank ", g_ranks.rank, ": agreeing on a mesh run's outcome");
  MPI_Request r;
  Status s =
      device::mpi_check(MPI_Iallreduce(mine, all, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r), what);
  if (s) s = device::mpi_wait(r, device::mpi_timeout_seconds(), what);
  if (!s) end_job(s.error());
  if (all[0] && all[1])
    end_job(Error{ErrorCode::io,
                  str("a mesh run ", ok ? "succeeded" : "failed", " on this rank and ",
                      ok ? "failed" : "succeeded", " on another: the ranks are out of step")});
}

}  // namespace

Result<Ranks> start_ranks() {
  if (!device::launched_by_mpi()) return Ranks{};
  int provided = 0;
  // Serialized: the worker thread makes the calls while serving, the main thread before and after.
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    return fail(ErrorCode::io, "MPI_Init failed");
  if (provided < MPI_THREAD_SERIALIZED)
    return fail(ErrorCode::unimplemented,
                "this MPI does not allow calls from more than one thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  g_ranks.mpi = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_ranks.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_ranks.size);
  return g_ranks;
}

Status register_backends() {
  MESHPLAN_TRY(device::register_emulator_backend());
  return device::register_mpi_backend();
}

std::string mesh_backend(std::string_view chosen) {
  return std::string(g_ranks.mpi ? device::kMpiBackend : chosen);
}

Status compare_mesh_plans(const Worker& worker) {
  if (!g_ranks.mpi) return {};
  Hash128 digest = worker.mesh_plans_digest();
  uint64_t mine[2] = {digest.lo, digest.hi};
  std::vector<uint64_t> all(2 * static_cast<size_t>(g_ranks.size));
  std::string what = str("rank ", g_ranks.rank, ": comparing the served mesh plans");
  MPI_Request r;
  MESHPLAN_TRY(device::mpi_check(
      MPI_Iallgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD, &r),
      what));
  MESHPLAN_TRY(device::mpi_wait(r, device::mpi_timeout_seconds(), what));
  for (int k = 0; k < g_ranks.size; ++k) {
    Hash128 theirs{all[2 * static_cast<size_t>(k)], all[2 * static_cast<size_t>(k) + 1]};
    if (theirs != digest)
      return fail(ErrorCode::incompatible, "rank ", g_ranks.rank, " serves mesh plans ",
                  digest.hex(), ", rank ", k, " serves ", theirs.hex(),
                  " (every rank must map the same plan cache and devices)");
  }
  return {};
}

Worker::MeshRunHooks mesh_run_hooks() {
  if (!g_ranks.mpi) return {};
  Worker::MeshRunHooks h;
  if (g_ranks.rank == 0) h.announce = [](size_t plan) { announce(static_cast<int64_t>(plan)); };
  h.finished = finished;
  return h;
}

Status follow(Worker& worker, const std::atomic<bool>& stop, double grace_s) {
  using Clock = std::chrono::steady_clock;
  std::fprintf(stderr, "meshplan-server: rank %d of %d (pid %d) follows rank 0\n", g_ranks.rank,
               g_ranks.size, static_cast<int>(::getpid()));
  std::fflush(stderr);
  Clock::time_point stop_seen{};
  while (true) {
    int64_t command = 0;
    MPI_Request r;
    std::string what = str("rank ", g_ranks.rank, ": waiting for rank 0's next request");
    MESHPLAN_TRY(
        device::mpi_check(MPI_Ibcast(&command, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &r), what));
    // Rank 0 may be idle for hours: no deadline, except after a stop signal. A rank 0 that
    // dies ends the job through the launcher.
    for (int done = 0; !done;) {
      MESHPLAN_TRY(device::mpi_check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), what));
      if (done) break;
      if (stop.load() && stop_seen == Clock::time_point{}) stop_seen = Clock::now();
      if (stop_seen != Clock::time_point{} &&
          std::chrono::duration<double>(Clock::now() - stop_seen).count() > grace_s)
        return fail(ErrorCode::io, what, ": no quit from rank 0 within ", grace_s,
                    " s of a stop signal");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (command == kQuit) break;
    Status s = worker.follow(static_cast<size_t>(command));
    (void)s;  // the outcome was agreed with rank 0, which answers its client with the error
  }
  MPI_Finalize();
  return {};
}

void finish_ranks() {
  if (!g_ranks.mpi || g_ranks.rank != 0) return;
  announce(kQuit);
  MPI_Finalize();
}

void end_job_on_error(const Error& e) {
  if (g_ranks.mpi) end_job(e);
}

#else  // !MESHPLAN_HAVE_MPI

Result<Ranks> start_ranks() {
  return Ranks{};
}
Status register_backends() {
  return device::register_emulator_backend();
}

std::string mesh_backend(std::string_view chosen) {
  return std::string(chosen);
}
Status compare_mesh_plans(const Worker&) {
  return {};
}
Worker::MeshRunHooks mesh_run_hooks() {
  return {};
}
Status follow(Worker&, const std::atomic<bool>&, double) {
  return {};
}
void finish_ranks() {}
void end_job_on_error(const Error&) {}

#endif

}  // namespace meshplan::server
