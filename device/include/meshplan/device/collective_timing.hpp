// The collective timing model: how long a collective takes on the mesh's ethernet fabric. The
// emulated Mesh advances chip clocks by it and a planner can score collectives with it, so both
// agree. Pure functions of the mesh descriptor.
//
// For a collective among N chips along one mesh axis on a tensor of T bytes
// (shared/DEVICE-FACTS.md "Collectives"):
//   bytes over the bottleneck link  B = f(kind, N) * T, halved on a ring (N >= 3: traffic splits
//                                       over both directions), where
//     all_gather, reduce_scatter   f = (N-1)/N      (T = the gathered / the unreduced tensor)
//     all_reduce                   f = 2(N-1)/N     (reduce_scatter then all_gather)
//     all_to_all                   f = floor(N/2) * ceil(N/2) / N   (the middle cut of a line:
//                                      every chip left of it sends 1/N of its T to every chip
//                                      right of it; T = one chip's tensor)
//   hops                           H = N-1 on a line, floor(N/2) on a ring; x2 for all_reduce
//   duration = B / (links * link GB/s) + H * per-hop latency        (bytes / (GB/s) = ns)
// collective_permute routes every source -> target pair along shortest paths, columns first
// then rows (dimension order), adds T to every directed link it crosses; B is the most loaded
// link and H the longest route. N <= 1, or no pair leaving its chip, costs nothing.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "meshplan/device/mesh_desc.hpp"

namespace meshplan::device {

enum class CollectiveKind : uint8_t {
  all_gather,
  reduce_scatter,
  all_reduce,
  all_to_all,
  collective_permute
};
std::string_view collective_name(CollectiveKind kind);

/// Simulated cost of one collective (one group: a row or a column of the mesh).
struct CollectiveTiming {
  uint64_t duration_ns = 0;  ///< transfer_ns + latency_ns.
  uint64_t transfer_ns = 0;  ///< link_bytes / (links * GB/s per link).
  uint64_t latency_ns = 0;   ///< hops * per-hop latency.
  uint64_t link_bytes = 0;   ///< Bytes over the bottleneck link, one direction.
  uint32_t hops = 0;
  uint32_t chips = 0;  ///< N, chips taking part.
};

/// Cost of `kind` (not collective_permute) among `n` chips along one axis of `mesh`, on a
/// tensor of `tensor_bytes` (T, as defined above).
CollectiveTiming estimate_collective(const MeshDesc& mesh, CollectiveKind kind, uint32_t n,
                                     uint64_t tensor_bytes);

/// Cost of a collective_permute moving `tensor_bytes` for every (source, target) pair.
/// Preconditions: every coordinate lies in the mesh.
CollectiveTiming estimate_permute(const MeshDesc& mesh,
                                  std::span<const std::pair<MeshCoord, MeshCoord>> pairs,
                                  uint64_t tensor_bytes);

}  // namespace meshplan::device
