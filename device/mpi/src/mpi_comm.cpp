// MPI waits with a deadline and MPI return codes as Status values.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "meshplan/device/mpi_mesh.hpp"

namespace meshplan::device {

double mpi_timeout_seconds() {
  const char* t = std::getenv("MESHPLAN_MPI_TIMEOUT");
  double v = t ? std::atof(t) : 0.0;
  return v > 0 ? v : 300.0;
}

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

Status mpi_check(int code, const std::string& what) {
  if (code == MPI_SUCCESS) return {};
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return fail(ErrorCode::io, what,
              ": MPI error: ", std::string_view(text, static_cast<size_t>(len)));
}

Status mpi_wait(MPI_Request& request, double timeout_s, const std::string& what) {
  return mpi_wait_all(std::span<MPI_Request>(&request, 1), timeout_s, what);
}

Status mpi_wait_all(std::span<MPI_Request> requests, double timeout_s, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  auto pause = std::chrono::microseconds(20);
  for (int spins = 0;; ++spins) {
    int done = 0;
    MESHPLAN_TRY(mpi_check(
        MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
        what));
    if (done) return {};
    double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (waited > timeout_s)
      return fail(ErrorCode::io, what, ": no answer after ", timeout_s,
                  " s (a rank died, hangs or runs a different plan)");
    // Yield first (answers usually come quickly), then back off so that ranks waiting on an
    // oversubscribed host leave the cores to the others.
    if (spins < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(500));
    }
  }
}

}  // namespace meshplan::device
