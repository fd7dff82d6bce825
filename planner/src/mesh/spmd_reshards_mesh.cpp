// The mesh Shardy's explicit-reshards stage resolves an op on when its operands and results
// name meshes that order the devices differently (Shardy's insert_explicit_reshards pass).
#include "mesh/spmd_reshards_mesh.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace meshplan::planner::shlo {

namespace {

bool splits_a_dim(const TensorSharding& s) {
  return std::any_of(s.dims.begin(), s.dims.end(),
                     [](const DimSharding& d) { return !d.axes.empty(); });
}

/// No axes and no devices: a mesh that places nothing and so agrees with every other.
bool empty_mesh(const MeshDecl& d) {
  return d.axes.empty() && d.device_ids.empty();
}

bool single_device(const MeshDecl& d) {
  return d.axes.empty() && d.device_ids.size() == 1;
}

/// Devices in the mesh's order (none listed: 0, 1, ...), so that a list in order and no list
/// compare equal.
std::vector<int64_t> device_order(const MeshDecl& d) {
  if (!d.device_ids.empty()) return d.device_ids;
  std::vector<int64_t> ids(static_cast<size_t>(d.devices()));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  return ids;
}

bool iota_ordered(const MeshDecl& d) {
  const std::vector<int64_t> ids = device_order(d);
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] != static_cast<int64_t>(i)) return false;
  return true;
}

/// Shardy's mesh equality with device order aside: the same axes, both single-device or not.
bool same_axes(const MeshDecl& a, const MeshDecl& b) {
  return single_device(a) == single_device(b) && a.axes == b.axes;
}

}  // namespace

const MeshDecl* shardy_op_mesh(const Module& m,
                               std::span<const std::optional<TensorSharding>> stated) {
  // 1. The common mesh, device order aside (an iota-ordered one preferred).
  const MeshDecl* common = nullptr;
  for (const auto& s : stated) {
    if (!s) continue;
    const MeshDecl* d = m.mesh(s->mesh);
    if (!d) return nullptr;
    if (!common || empty_mesh(*common)) {
      common = d;
      continue;
    }
    if (empty_mesh(*d)) continue;
    if (!same_axes(*common, *d)) return nullptr;
    if (iota_ordered(*d)) common = d;
  }
  if (!common || single_device(*common)) return nullptr;
  // 2. The mesh most of the shardings that split a dim name.
  std::map<std::string, int> count;
  int most = 0;
  const MeshDecl* chosen = common;
  for (const auto& s : stated) {
    if (!s || !splits_a_dim(*s)) continue;
    if (const int c = ++count[s->mesh]; c > most) {
      most = c;
      chosen = m.mesh(s->mesh);
    }
  }
  return chosen;
}

bool shardy_other_device_order(const Module& m, const TensorSharding& s, const MeshDecl& on) {
  if (!splits_a_dim(s)) return false;
  const MeshDecl* own = m.mesh(s.mesh);
  return own && device_order(*own) != device_order(on);
}

}  // namespace meshplan::planner::shlo
