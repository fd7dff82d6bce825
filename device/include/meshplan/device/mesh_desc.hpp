// Mesh descriptors: a rows x cols grid of identical chips joined by ethernet, with the fabric
// facts the collective timing model needs (shared/DEVICE-FACTS.md "Meshes").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/schemas/error.hpp"
#include "meshplan/schemas/hash.hpp"

namespace meshplan::device {

/// How the chips along one mesh axis are wired. Values match fb::Topology.
enum class Topology : uint8_t {
  linear = 0,  ///< Neighbours only: chip i talks to i-1 and i+1.
  ring = 1,    ///< Neighbours plus a wrap-around link between the two ends of every row/column.
};

std::string_view topology_name(Topology t);

/// A chip's position in a mesh.
struct MeshCoord {
  uint16_t row = 0;
  uint16_t col = 0;
  friend bool operator==(const MeshCoord&, const MeshCoord&) = default;
};
/// "(row,col)", for messages.
std::string coord_name(MeshCoord c);

/// A mesh of `rows` x `cols` identical chips. Chip (r, c) has index r * cols + c. Mesh axis 0
/// runs along rows (the chips of one column), axis 1 along columns (the chips of one row).
/// Plain data; copy freely.
struct MeshDesc {
  std::string name;
  uint16_t rows = 1;
  uint16_t cols = 1;
  ChipDesc chip;
  Topology topology = Topology::linear;  ///< Applies to both axes.
  uint32_t links = 1;                    ///< Ethernet links between two neighbouring chips.
  uint64_t hop_latency_ns = 711;         ///< Per-hop fabric latency (Wormhole: ~711 ns).

  int chips() const { return static_cast<int>(rows) * cols; }
  /// Chips along mesh axis `axis` (0: rows, 1: cols).
  int axis_size(int axis) const { return axis == 0 ? rows : cols; }
  /// Canonical encoding hashed into plan keys: every field, fixed order, the chip's hash inside.
  Hash128 hash() const;
  int index(MeshCoord c) const { return static_cast<int>(c.row) * cols + c.col; }
  MeshCoord coord(int index) const {
    return MeshCoord{static_cast<uint16_t>(index / cols), static_cast<uint16_t>(index % cols)};
  }
  bool contains(MeshCoord c) const { return c.row < rows && c.col < cols; }
  /// Invariants: non-empty grid, the chip verifies, 1 <= links <= the chip's ethernet links
  /// (only for meshes of more than one chip), positive link bandwidth. The error names the field.
  Status verify() const;
};

/// A 1x1 mesh of `chip`.
MeshDesc single_chip_mesh(const ChipDesc& chip);

/// A built-in mesh by name: "n300" (1x2, 2 links), "t3k" (2x4, 2 links), "galaxy" (8x4,
/// 4 links), all Wormhole, linear; or the name of a built-in chip for a 1x1 mesh of it.
Result<MeshDesc> builtin_mesh(std::string_view name);
/// Names of the multi-chip built-ins accepted by builtin_mesh() (chip names are accepted too).
std::vector<std::string_view> builtin_mesh_names();

}  // namespace meshplan::device
