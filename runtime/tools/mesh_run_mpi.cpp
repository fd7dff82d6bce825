// meshplan-run under mpirun (see mesh_run_mpi.hpp).
#include "mesh_run_mpi.hpp"

#include <cstdio>
#include <cstdlib>

#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>

#include "meshplan/device/backend.hpp"
#include "meshplan/device/emulator_backend.hpp"
#include "meshplan/runtime/check.hpp"

#ifdef MESHPLAN_HAVE_MPI
#include "meshplan/device/mpi_backend.hpp"
#include "meshplan/device/mpi_mesh.hpp"
#endif

namespace meshplan::tools {

Status register_run_backends() {
  MESHPLAN_TRY(device::register_emulator_backend());
#ifdef MESHPLAN_HAVE_MPI
  MESHPLAN_TRY(device::register_mpi_backend());
#endif
  return {};
}

#ifdef MESHPLAN_HAVE_MPI
namespace {

bool g_mpi = false;  ///< MPI was initialised by make_run_mesh.
int g_rank = 0;

Status bcast(void* data, int count, MPI_Datatype type, const std::string& what) {
  MPI_Request r;
  MESHPLAN_TRY(device::mpi_check(MPI_Ibcast(data, count, type, 0, MPI_COMM_WORLD, &r), what));
  return device::mpi_wait(r, device::mpi_timeout_seconds(), what);
}

}  // namespace

Result<std::unique_ptr<device::Mesh>> make_run_mesh(const device::MeshDesc& desc,
                                                    const runtime::PlanRef& plan,
                                                    std::string_view backend) {
  MESHPLAN_TRY(register_run_backends());
  if (!device::launched_by_mpi()) return device::open_backend(backend, desc);
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return fail(ErrorCode::io, "MPI_Init failed");
  g_mpi = true;
  std::atexit([] { MPI_Finalize(); });
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  // Every rank must run the same plan: compare the keys before anything runs.
  Hash128 key = plan.key();
  uint64_t mine[2] = {key.lo, key.hi};
  std::vector<uint64_t> all(2 * static_cast<size_t>(ranks));
  std::string what = str("rank ", g_rank, ": comparing plan keys");
  MPI_Request r;
  MESHPLAN_TRY(device::mpi_check(
      MPI_Iallgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD, &r),
      what));
  MESHPLAN_TRY(device::mpi_wait(r, device::mpi_timeout_seconds(), what));
  for (int k = 0; k < ranks; ++k) {
    Hash128 theirs{all[2 * static_cast<size_t>(k)], all[2 * static_cast<size_t>(k) + 1]};
    if (theirs != key)
      return fail(ErrorCode::incompatible, "plan '", plan.name(), "': rank ", g_rank, " has key ",
                  key.hex(), ", rank ", k, " has key ", theirs.hex(),
                  " (every rank must map the same plan cache)");
  }
  auto mesh = MESHPLAN_TRY(device::open_backend(device::kMpiBackend, desc));
  if (g_rank != 0 && !std::freopen("/dev/null", "w", stdout))
    return fail(ErrorCode::io, "rank ", g_rank, ": cannot silence stdout");
  return mesh;
}

bool is_root_rank() {
  return g_rank == 0;
}

Result<std::unique_ptr<RankInputs>> share_inputs(const std::vector<runtime::Tensor>& inputs) {
  auto r = std::make_unique<RankInputs>();
  if (!g_mpi) {
    r->views = runtime::views_of(inputs);
    return r;
  }
  std::string what = str("rank ", g_rank, ": receiving the host input shapes from rank 0");
  uint64_t count = inputs.size();
  MESHPLAN_TRY(bcast(&count, 1, MPI_UINT64_T, what));
  r->shapes_.resize(static_cast<size_t>(count));
  for (size_t i = 0; i < r->shapes_.size(); ++i) {
    std::vector<int64_t>& shape = r->shapes_[i];
    if (g_rank == 0) shape = inputs[i].shape;
    uint64_t rank = shape.size();
    MESHPLAN_TRY(bcast(&rank, 1, MPI_UINT64_T, what));
    shape.resize(static_cast<size_t>(rank));
    MESHPLAN_TRY(bcast(shape.data(), static_cast<int>(rank), MPI_INT64_T, what));
  }
  // Value counts: a pre-sharded (identity) input holds one piece of its shape per chip.
  r->counts_.resize(r->shapes_.size());
  for (size_t i = 0; i < r->counts_.size(); ++i)
    r->counts_[i] = g_rank == 0 ? inputs[i].data.size() : 0;
  if (!r->counts_.empty())
    MESHPLAN_TRY(bcast(r->counts_.data(), static_cast<int>(r->counts_.size()), MPI_UINT64_T, what));
  if (g_rank == 0) {
    r->views = runtime::views_of(inputs);
    return r;
  }
  size_t total = 0;
  for (uint64_t n : r->counts_) total += static_cast<size_t>(n);
  r->bytes_ = std::max<size_t>(total * sizeof(float), 1);
  r->zeros_ = mmap(nullptr, r->bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r->zeros_ == MAP_FAILED) {
    r->zeros_ = nullptr;
    return fail(ErrorCode::io, "rank ", g_rank, ": cannot map ", r->bytes_,
                " bytes for the host input shapes");
  }
  const float* at = static_cast<const float*>(r->zeros_);
  for (size_t i = 0; i < r->shapes_.size(); ++i) {
    size_t n = static_cast<size_t>(r->counts_[i]);
    r->views.push_back({r->shapes_[i], std::span<const float>(at, n)});
    at += n;
  }
  return r;
}

RankInputs::~RankInputs() {
  if (zeros_) munmap(zeros_, bytes_);
}

std::span<float> RankInputs::writable(size_t i) const {
  if (!zeros_ || i >= views.size()) return {};
  return std::span<float>(const_cast<float*>(views[i].data.data()), views[i].data.size());
}

std::string rank_label() {
  if (!g_mpi) return "";
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  return str("rank ", g_rank, " of ", ranks, ": ");
}

bool rank_owns_chip(device::Mesh& mesh, int index) {
  auto* m = dynamic_cast<device::MpiMesh*>(&mesh);
  return !m || m->owns(index);
}

void read_identity_inputs_per_rank(device::Mesh& mesh) {
  if (auto* m = dynamic_cast<device::MpiMesh*>(&mesh)) m->set_identity_inputs_per_rank(true);
}

void report_rank(device::Mesh& mesh, double run_ms) {
  auto* m = dynamic_cast<device::MpiMesh*>(&mesh);
  if (!m) return;
  int first = -1, last = -1;
  for (int i = 0; i < m->size(); ++i)
    if (m->owns(i)) {
      if (first < 0) first = i;
      last = i;
    }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  std::fprintf(stderr,
               "rank %d of %d: chips %d-%d, emulated memory %.1f MiB, peak RSS %.1f MiB, run "
               "%.1f ms\n",
               m->rank(), m->ranks(), first, last,
               static_cast<double>(m->resident_bytes()) / (1 << 20),
               static_cast<double>(u.ru_maxrss) / 1024.0, run_ms);
}

Result<int> finish_mpi(Result<int> code) {
  if (!g_mpi || code) return code;
  std::fprintf(stderr, "meshplan-run: rank %d: error: %s\n", g_rank,
               code.error().to_string().c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  return code;
}

#else  // !MESHPLAN_HAVE_MPI

Result<std::unique_ptr<device::Mesh>> make_run_mesh(const device::MeshDesc& desc,
                                                    const runtime::PlanRef&,
                                                    std::string_view backend) {
  MESHPLAN_TRY(register_run_backends());
  return device::open_backend(backend, desc);
}
bool is_root_rank() {
  return true;
}
Result<std::unique_ptr<RankInputs>> share_inputs(const std::vector<runtime::Tensor>& inputs) {
  auto r = std::make_unique<RankInputs>();
  r->views = runtime::views_of(inputs);
  return r;
}
RankInputs::~RankInputs() = default;
std::span<float> RankInputs::writable(size_t) const {
  return {};
}
std::string rank_label() {
  return "";
}
bool rank_owns_chip(device::Mesh&, int) {
  return true;
}
void read_identity_inputs_per_rank(device::Mesh&) {}
void report_rank(device::Mesh&, double) {}
Result<int> finish_mpi(Result<int> code) {
  return code;
}

#endif

}  // namespace meshplan::tools
