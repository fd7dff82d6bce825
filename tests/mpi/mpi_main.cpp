// The doctest main of the MPI tests: every rank runs every test case (SPMD), and the job fails
// if any rank fails. Launched by CTest through mpirun with 1, 2 and 4 ranks.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  doctest::Context context(argc, argv);
  // Only rank 0 prints the summary; every rank prints its own failures.
  if (rank != 0) context.setOption("minimal", true);
  int failed = context.run() != 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
