// MpiMesh: chip ownership, the chips' stand-ins on other ranks, exchanges and agreement.
#include "meshplan/device/mpi_mesh.hpp"

#include <algorithm>
#include <climits>

#include "../../emulator/src/mesh_internal.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/timing.hpp"

namespace meshplan::device {

namespace {

/// A chip this rank owns: its EmulatedDevice; while the mesh exchanges, each read is also sent
/// to the other ranks.
class LocalChip final : public Device {
 public:
  LocalChip(MpiMesh& mesh, int index, std::unique_ptr<EmulatedDevice> dev)
      : mesh_(mesh), index_(index), dev_(std::move(dev)) {}
  EmulatedDevice& device() { return *dev_; }
  const ChipDesc& descriptor() const override { return dev_->descriptor(); }
  Status allocate(const TensorPlacement& t) override { return dev_->allocate(t); }
  Status deallocate(const TensorPlacement& t) override { return dev_->deallocate(t); }
  void reset() override { dev_->reset(); }
  Status write(const TensorPlacement& t, std::span<const float> host) override {
    if (!mesh_.scattering() || mesh_.rank() == 0) return dev_->write(t, host);
    std::vector<float> values(host.size());
    MESHPLAN_TRY(mesh_.scatter(index_, values));
    return dev_->write(t, values);
  }
  Status read(const TensorPlacement& t, std::span<float> host) override {
    Status ok = dev_->read(t, host);
    if (!mesh_.exchanging()) return ok;
    return mesh_.exchange(index_, host, std::move(ok));
  }
  Result<OpTiming> launch(const OpLaunch& op) override { return dev_->launch(op); }
  uint64_t now_ns() const override { return dev_->now_ns(); }

 private:
  MpiMesh& mesh_;
  int index_;
  std::unique_ptr<EmulatedDevice> dev_;
};

/// A chip another rank owns: no bytes. It keeps the chip's clock with the same timing model as
/// the owner's device, accepts allocations and writes (the owner does them for real) and
/// answers reads only while the mesh exchanges (the owner's broadcast).
class RemoteChip final : public Device {
 public:
  RemoteChip(MpiMesh& mesh, int index, ChipDesc chip)
      : mesh_(mesh), index_(index), chip_(std::move(chip)) {}
  const ChipDesc& descriptor() const override { return chip_; }
  Status allocate(const TensorPlacement&) override { return {}; }
  Status deallocate(const TensorPlacement&) override { return {}; }
  void reset() override { clock_ns_ = 0; }
  Status write(const TensorPlacement&, std::span<const float> host) override {
    if (!mesh_.scattering() || mesh_.rank() != 0) return {};
    // Rank 0 holds the host tensor: the values go to the chip's owner.
    return mesh_.scatter(index_, std::span<float>(const_cast<float*>(host.data()), host.size()));
  }
  Status read(const TensorPlacement& t, std::span<float> host) override {
    if (!mesh_.exchanging())
      return fail(ErrorCode::invalid_argument, "read of '", t.name, "' on chip ",
                  coord_name(mesh_.descriptor().coord(index_)), ": the chip lives on MPI rank ",
                  mesh_.owner(index_), ", this is rank ", mesh_.rank(),
                  " (read it through a collective or shard_to_full)");
    return mesh_.exchange(index_, host, {});
  }
  Result<OpTiming> launch(const OpLaunch& op) override {
    if (is_collective(op.kind))
      return fail(ErrorCode::invalid_argument, "op '", op.name, "': ", op_name(op.kind),
                  " is a mesh op: run it through a Mesh");
    OpTiming timing = estimate(chip_, op);
    clock_ns_ += timing.duration_ns;
    return timing;
  }
  uint64_t now_ns() const override { return clock_ns_; }

 private:
  MpiMesh& mesh_;
  int index_;
  ChipDesc chip_;
  uint64_t clock_ns_ = 0;
};

/// Broadcasts `n` elements of `type` from `root` in pieces an int count can hold.
Status bcast(void* data, size_t n, size_t elem, MPI_Datatype type, int root, MPI_Comm comm,
             double timeout_s, const std::string& what) {
  constexpr size_t kPiece = size_t{1} << 28;
  auto* bytes = static_cast<char*>(data);
  for (size_t done = 0; done < n; done += kPiece) {
    size_t count = std::min(kPiece, n - done);
    MPI_Request r;
    MESHPLAN_TRY(mpi_check(
        MPI_Ibcast(bytes + done * elem, static_cast<int>(count), type, root, comm, &r), what));
    MESHPLAN_TRY(mpi_wait(r, timeout_s, what));
  }
  return {};
}

}  // namespace

MpiMesh::MpiMesh(MeshDesc desc, MPI_Comm comm, double timeout_s)
    : desc_(std::move(desc)), comm_(comm), timeout_s_(timeout_s) {}

MpiMesh::~MpiMesh() = default;

Result<std::unique_ptr<MpiMesh>> MpiMesh::create(MeshDesc desc, MPI_Comm comm, double timeout_s) {
  MESHPLAN_TRY(desc.verify());
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return fail(ErrorCode::invalid_argument, "MpiMesh ", desc.name, ": MPI is not initialised");
  std::unique_ptr<MpiMesh> mesh(new MpiMesh(std::move(desc), comm, timeout_s));
  MESHPLAN_TRY(mpi_check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MpiMesh"));
  MESHPLAN_TRY(mpi_check(MPI_Comm_rank(comm, &mesh->rank_), "MpiMesh"));
  MESHPLAN_TRY(mpi_check(MPI_Comm_size(comm, &mesh->ranks_), "MpiMesh"));
  // Every rank must emulate the same mesh: compare the descriptor hashes.
  Hash128 h = mesh->desc_.hash();
  uint64_t mine[2] = {h.lo, h.hi};
  std::vector<uint64_t> all(2 * static_cast<size_t>(mesh->ranks_));
  MPI_Request r;
  std::string what =
      str("MpiMesh ", mesh->desc_.name, ": rank ", mesh->rank_, ": comparing mesh descriptors");
  MESHPLAN_TRY(mpi_check(
      MPI_Iallgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm, &r), what));
  MESHPLAN_TRY(mpi_wait(r, timeout_s, what));
  for (int k = 0; k < mesh->ranks_; ++k)
    if (all[2 * static_cast<size_t>(k)] != h.lo || all[2 * static_cast<size_t>(k) + 1] != h.hi)
      return fail(ErrorCode::incompatible, "MpiMesh ", mesh->desc_.name, ": rank ", k,
                  " emulates another mesh than rank ", mesh->rank_, " (descriptor ",
                  h.hex().substr(0, 8), ")");
  int chips = mesh->desc_.chips();
  mesh->local_.assign(static_cast<size_t>(chips), nullptr);
  for (int i = 0; i < chips; ++i) {
    if (mesh->owns(i)) {
      auto dev = EmulatedDevice::create(mesh->desc_.chip);
      if (!dev)
        return std::unexpected(
            with_context(dev.error(), str("mesh chip ", coord_name(mesh->desc_.coord(i)))));
      mesh->local_[static_cast<size_t>(i)] = dev->get();
      mesh->chips_.push_back(std::make_unique<LocalChip>(*mesh, i, std::move(*dev)));
    } else {
      mesh->chips_.push_back(std::make_unique<RemoteChip>(*mesh, i, mesh->desc_.chip));
    }
  }
  mesh->waited_ns_.assign(static_cast<size_t>(chips), 0);
  return mesh;
}

int MpiMesh::owner(int index) const {
  return static_cast<int>(static_cast<int64_t>(index) * ranks_ / desc_.chips());
}

Device& MpiMesh::chip(int index) {
  return *chips_[static_cast<size_t>(index)];
}

EmulatedDevice* MpiMesh::local_chip(int index) {
  return local_[static_cast<size_t>(index)];
}

uint64_t MpiMesh::now_ns(MeshCoord c) const {
  size_t i = static_cast<size_t>(desc_.index(c));
  return chips_[i]->now_ns() + waited_ns_[i];
}

uint64_t MpiMesh::now_ns() const {
  uint64_t t = 0;
  for (int i = 0; i < size(); ++i) t = std::max(t, now_ns(desc_.coord(i)));
  return t;
}

void MpiMesh::reset() {
  for (auto& c : chips_) c->reset();
  std::fill(waited_ns_.begin(), waited_ns_.end(), 0);
}

uint64_t MpiMesh::resident_bytes() const {
  uint64_t n = 0;
  for (const EmulatedDevice* d : local_)
    if (d) n += d->resident_bytes();
  return n;
}

uint64_t MpiMesh::advance(std::span<const int> chips, uint64_t duration_ns) {
  uint64_t start = 0;
  for (int i : chips) start = std::max(start, now_ns(desc_.coord(i)));
  uint64_t end = start + duration_ns;
  for (int i : chips) waited_ns_[static_cast<size_t>(i)] += end - now_ns(desc_.coord(i));
  return end;
}

Status MpiMesh::exchange(int index, std::span<float> values, Status ok) {
  int root = owner(index);
  std::string what = str(what_, ": rank ", rank_, " waiting for chip ",
                         coord_name(desc_.coord(index)), " from rank ", root);
  // The owner's read status and the values travel together (one round trip); after a failed
  // read the values are whatever the owner's buffer held and nobody uses them.
  int status = ok ? 0 : 1;
  constexpr size_t kPiece = size_t{1} << 28;
  std::vector<MPI_Request> requests(1 + (values.size() + kPiece - 1) / kPiece);
  MESHPLAN_TRY(mpi_check(MPI_Ibcast(&status, 1, MPI_INT, root, comm_, &requests[0]), what));
  for (size_t k = 1; k < requests.size(); ++k) {
    size_t begin = (k - 1) * kPiece, count = std::min(kPiece, values.size() - begin);
    MESHPLAN_TRY(mpi_check(MPI_Ibcast(values.data() + begin, static_cast<int>(count), MPI_FLOAT,
                                      root, comm_, &requests[k]),
                           what));
  }
  MESHPLAN_TRY(mpi_wait_all(requests, timeout_s_, what));
  if (status == 0) return {};
  if (root == rank_) return ok;
  return fail(ErrorCode::invalid_argument, what_, ": chip ", coord_name(desc_.coord(index)),
              " failed to read on its rank ", root);
}

Status MpiMesh::scatter(int index, std::span<float> values) {
  int to = owner(index);
  if (to == 0 || (rank_ != 0 && rank_ != to)) return {};
  std::string what = str(what_, ": rank ", rank_, rank_ == 0 ? " sending" : " receiving", " chip ",
                         coord_name(desc_.coord(index)), "'s shard",
                         rank_ == 0 ? str(" to rank ", to) : std::string(" from rank 0"));
  constexpr size_t kPiece = size_t{1} << 28;
  constexpr int kTag = 20;
  for (size_t begin = 0; begin < values.size(); begin += kPiece) {
    int count = static_cast<int>(std::min(kPiece, values.size() - begin));
    MPI_Request r;
    MESHPLAN_TRY(mpi_check(
        rank_ == 0 ? MPI_Isend(values.data() + begin, count, MPI_FLOAT, to, kTag, comm_, &r)
                   : MPI_Irecv(values.data() + begin, count, MPI_FLOAT, 0, kTag, comm_, &r),
        what));
    MESHPLAN_TRY(mpi_wait(r, timeout_s_, what));
  }
  return {};
}

Status MpiMesh::agree(Status local, std::string_view what) {
  int mine = local ? ranks_ : rank_, first = ranks_;
  std::string label = str(what, ": rank ", rank_, " agreeing on the outcome");
  MPI_Request r;
  MESHPLAN_TRY(mpi_check(MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm_, &r), label));
  MESHPLAN_TRY(mpi_wait(r, timeout_s_, label));
  if (first == ranks_) return {};
  // Every rank reports the first failing rank's error.
  std::string message = local ? std::string() : local.error().message;
  int code = local ? 0 : static_cast<int>(local.error().code);
  uint64_t len = message.size();
  MESHPLAN_TRY(bcast(&code, 1, sizeof(int), MPI_INT, first, comm_, timeout_s_, label));
  MESHPLAN_TRY(bcast(&len, 1, sizeof(uint64_t), MPI_UINT64_T, first, comm_, timeout_s_, label));
  message.resize(static_cast<size_t>(len));
  MESHPLAN_TRY(bcast(message.data(), message.size(), 1, MPI_CHAR, first, comm_, timeout_s_, label));
  if (first == rank_) return local;
  return fail(static_cast<ErrorCode>(code), "rank ", first, ": ", message);
}

template <typename F>
auto MpiMesh::exchanged(std::string what, F&& f) -> decltype(f()) {
  what_ = std::move(what);
  auto result = f();
  what_.clear();
  // A failed exchange (a rank that does not answer) leaves nothing to agree with: report it.
  if (!result && result.error().code == ErrorCode::io) return result;
  Status local = result ? Status{} : Status(std::unexpected(result.error()));
  MESHPLAN_TRY(agree(std::move(local), "MpiMesh"));
  return result;
}

#define MESHPLAN_MPI_CLOCK [this](std::span<const int> c, uint64_t ns) { return advance(c, ns); }

Result<CollectiveRun> MpiMesh::all_gather(PerChip in, PerChip out, int dim, int cluster_axis) {
  return exchanged("all_gather", [&] {
    return mesh_detail::all_gather_on(*this, MESHPLAN_MPI_CLOCK, in, out, dim, cluster_axis);
  });
}

Result<CollectiveRun> MpiMesh::reduce_scatter(PerChip in, PerChip out, int dim, int cluster_axis,
                                              ReduceOp op) {
  return exchanged("reduce_scatter", [&] {
    return mesh_detail::reduce_scatter_on(*this, MESHPLAN_MPI_CLOCK, in, out, dim, cluster_axis,
                                          op);
  });
}

Result<CollectiveRun> MpiMesh::all_reduce(PerChip in, PerChip out, int cluster_axis, ReduceOp op) {
  return exchanged("all_reduce", [&] {
    return mesh_detail::all_reduce_on(*this, MESHPLAN_MPI_CLOCK, in, out, cluster_axis, op);
  });
}

Result<CollectiveRun> MpiMesh::all_to_all(PerChip in, PerChip out, int split_dim, int concat_dim,
                                          int cluster_axis) {
  return exchanged("all_to_all", [&] {
    return mesh_detail::all_to_all_on(*this, MESHPLAN_MPI_CLOCK, in, out, split_dim, concat_dim,
                                      cluster_axis);
  });
}

Result<CollectiveRun> MpiMesh::collective_permute(
    PerChip in, PerChip out, std::span<const std::pair<MeshCoord, MeshCoord>> pairs) {
  return exchanged("collective_permute", [&] {
    return mesh_detail::collective_permute_on(*this, MESHPLAN_MPI_CLOCK, in, out, pairs);
  });
}

Result<CollectiveRun> MpiMesh::all_slice(PerChip in, PerChip out, int dim, int cluster_axis) {
  return exchanged("all_slice", [&] {
    return mesh_detail::all_slice_on(*this, MESHPLAN_MPI_CLOCK, in, out, dim, cluster_axis);
  });
}

#undef MESHPLAN_MPI_CLOCK

Status MpiMesh::full_to_shard(std::span<const float> host, std::span<const int64_t> full_shape,
                              const MeshShardSpec& spec, PerChip out) {
  // Rank 0's host tensor is sliced in chip order; each shard goes to its chip's owner. Identity
  // inputs read per rank are written by each owner from its own host buffer instead.
  scattering_ = !(identity_per_rank_ && spec.type == MeshShardType::identity);
  auto ok = exchanged("FullToShard", [&] {
    return mesh_detail::full_to_shard_on(*this, host, full_shape, spec, out);
  });
  scattering_ = false;
  return ok;
}

Status MpiMesh::shard_to_full(PerChip in, const MeshShardSpec& spec,
                              std::span<const int64_t> full_shape, std::span<float> host) {
  return exchanged("ShardToFull", [&] {
    return mesh_detail::shard_to_full_on(*this, in, spec, full_shape, host);
  });
}

}  // namespace meshplan::device
