// The MPI mesh's registration in the backend registry (backend.hpp), called explicitly by the
// programs built with MPI that run mesh plans over MPI ranks (meshplan-run, meshplan-server).
#pragma once

#include <string_view>

#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// The MPI mesh's backend name.
inline constexpr std::string_view kMpiBackend = "mpi";

/// Registers backend "mpi": an MpiMesh of the descriptor over MPI_COMM_WORLD, waiting at most
/// mpi_timeout_seconds() for a peer. Opening is collective (every rank opens the same meshes in
/// the same order) and fails (incompatible) unless the caller has initialised MPI.
/// Idempotent and thread-safe: the first call registers, later calls return what it returned.
Status register_mpi_backend();

}  // namespace meshplan::device
