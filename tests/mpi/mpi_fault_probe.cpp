// A fault for the MPI mesh tests: on a t3k MpiMesh over 2 ranks, rank 1 dies (SIGKILL) or hangs
// instead of joining an all_reduce; rank 0 must end the job with an error (timeout 2 s) rather
// than wait forever.
//
// Without a mode both ranks join and exit cleanly (the leak check of the ASan build).
//
//   mpirun -np 2 mpi_fault_probe [die|hang]
#include <mpi.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "meshplan/device/mpi_mesh.hpp"

using namespace meshplan;
using namespace meshplan::device;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::string mode = argc > 1 ? argv[1] : "";
  auto desc = builtin_mesh("t3k");
  auto mesh = desc ? MpiMesh::create(*desc, MPI_COMM_WORLD, 2.0)
                   : Result<std::unique_ptr<MpiMesh>>(std::unexpected(desc.error()));
  if (!mesh) {
    std::fprintf(stderr, "error: %s\n", mesh.error().to_string().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MpiMesh& m = **mesh;
  const std::vector<int64_t> shape = {2, 32};  // The placements view it.
  std::vector<TensorPlacement> in, out;
  for (int i = 0; i < m.size(); ++i) {
    in.push_back(make_interleaved("in", shape, DType::f32, BufferType::dram, 0));
    out.push_back(make_interleaved("out", shape, DType::f32, BufferType::dram, 1 << 20));
    if (!m.chip(i).allocate(in.back()) || !m.chip(i).allocate(out.back()) ||
        !m.chip(i).write(in.back(), std::vector<float>(64, 1.0f)))
      MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (m.rank() == 1) {
    std::fflush(stdout);
    if (mode == "die") raise(SIGKILL);
    if (mode == "hang") sleep(600);
  }
  auto r = m.all_reduce(in, out, 1, ReduceOp::sum);
  if (!r) {
    std::fprintf(stderr, "rank %d: error: %s\n", m.rank(), r.error().to_string().c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::printf("rank %d: all_reduce finished\n", m.rank());
  MPI_Finalize();
  return 0;
}
