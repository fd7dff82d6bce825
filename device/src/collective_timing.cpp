// The collective timing model (see collective_timing.hpp).
#include "meshplan/device/collective_timing.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace meshplan::device {

std::string_view collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_gather:
      return "all_gather";
    case CollectiveKind::reduce_scatter:
      return "reduce_scatter";
    case CollectiveKind::all_reduce:
      return "all_reduce";
    case CollectiveKind::all_to_all:
      return "all_to_all";
    case CollectiveKind::collective_permute:
      return "collective_permute";
  }
  return "collective";
}

namespace {

void finish(const MeshDesc& mesh, CollectiveTiming& t) {
  double gbps = static_cast<double>(mesh.links) * mesh.chip.ethernet_gbps;
  t.transfer_ns =
      gbps > 0 ? static_cast<uint64_t>(std::ceil(static_cast<double>(t.link_bytes) / gbps)) : 0;
  t.latency_ns = static_cast<uint64_t>(t.hops) * mesh.hop_latency_ns;
  t.duration_ns = t.transfer_ns + t.latency_ns;
}

}  // namespace

CollectiveTiming estimate_collective(const MeshDesc& mesh, CollectiveKind kind, uint32_t n,
                                     uint64_t tensor_bytes) {
  CollectiveTiming t;
  t.chips = n;
  if (n <= 1) return t;
  // Fractions as exact ratios num / den, applied in 128-bit arithmetic to avoid rounding drift.
  uint64_t num = n - 1, den = n;
  uint32_t hops = n - 1;
  bool ring = mesh.topology == Topology::ring && n >= 3;
  switch (kind) {
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
      break;
    case CollectiveKind::all_reduce:
      num = 2 * (n - 1);
      break;
    case CollectiveKind::all_to_all:
      num = static_cast<uint64_t>(n / 2) * ((n + 1) / 2);
      break;
    case CollectiveKind::collective_permute:
      return t;  // See estimate_permute.
  }
  if (ring) {
    den *= 2;
    hops = n / 2;
  }
  if (kind == CollectiveKind::all_reduce) hops *= 2;
  unsigned __int128 bytes = static_cast<unsigned __int128>(tensor_bytes) * num;
  t.link_bytes = static_cast<uint64_t>((bytes + den - 1) / den);
  t.hops = hops;
  finish(mesh, t);
  return t;
}

CollectiveTiming estimate_permute(const MeshDesc& mesh,
                                  std::span<const std::pair<MeshCoord, MeshCoord>> pairs,
                                  uint64_t tensor_bytes) {
  CollectiveTiming t;
  std::map<std::pair<int, int>, uint64_t> load;  // directed link (from chip, to chip) -> bytes
  std::vector<bool> involved(static_cast<size_t>(mesh.chips()), false);
  // One step along `axis` from `at` towards `to`, the short way round on a ring.
  auto step = [&](int at, int to, int size) {
    int fwd = ((to - at) % size + size) % size;
    if (mesh.topology == Topology::ring && size >= 3)
      return fwd <= size - fwd ? (at + 1) % size : (at + size - 1) % size;
    return to > at ? at + 1 : at - 1;
  };
  for (const auto& [src, dst] : pairs) {
    involved[static_cast<size_t>(mesh.index(src))] =
        involved[static_cast<size_t>(mesh.index(dst))] = true;
    MeshCoord at = src;
    uint32_t hops = 0;
    while (at.col != dst.col) {
      MeshCoord next{at.row, static_cast<uint16_t>(step(at.col, dst.col, mesh.cols))};
      load[{mesh.index(at), mesh.index(next)}] += tensor_bytes;
      at = next;
      ++hops;
    }
    while (at.row != dst.row) {
      MeshCoord next{static_cast<uint16_t>(step(at.row, dst.row, mesh.rows)), at.col};
      load[{mesh.index(at), mesh.index(next)}] += tensor_bytes;
      at = next;
      ++hops;
    }
    t.hops = std::max(t.hops, hops);
  }
  t.chips = static_cast<uint32_t>(std::count(involved.begin(), involved.end(), true));
  for (const auto& [link, bytes] : load) t.link_bytes = std::max(t.link_bytes, bytes);
  finish(mesh, t);
  return t;
}

}  // namespace meshplan::device
