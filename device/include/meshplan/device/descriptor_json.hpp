// Chip and mesh descriptors as JSON files (the JSON form of schemas/device.fbs, read with
// flatbuffers::Parser against the embedded schema: no hand-written JSON parser).
//
//   {"chip": {"base": "wormhole_b0", "name": "wh_small", "grid_x": 4, "grid_y": 4}}
//   {"mesh": {"name": "ring8", "rows": 1, "cols": 8, "topology": "ring", "links": 2,
//             "hop_latency_ns": 711, "chip": {"base": "n300"}}}
//
// Fields absent from a table take their value from its `base` (a built-in chip or mesh name);
// with no base every field is required. A mesh's chip falls back to the chip of the mesh's base.
#pragma once

#include <string>
#include <string_view>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// The chip of a device file: its `chip` table, or the chip of its `mesh` if it has only a mesh.
/// Errors name `source_name`, the table and the field (parse errors also give line and column).
Result<ChipDesc> chip_from_json(std::string_view json, std::string_view source_name);
/// The mesh of a device file: its `mesh` table, or a 1x1 mesh of its `chip`.
Result<MeshDesc> mesh_from_json(std::string_view json, std::string_view source_name);
/// The same, from a file path.
Result<ChipDesc> load_chip_file(const std::string& path);
Result<MeshDesc> load_mesh_file(const std::string& path);

/// A device file holding `chip` with every field written (no base). Loads back to an equal
/// descriptor (doubles are printed with 12 significant digits).
Result<std::string> chip_to_json(const ChipDesc& chip);
/// A device file holding `mesh` (and its chip) with every field written.
Result<std::string> mesh_to_json(const MeshDesc& mesh);

}  // namespace meshplan::device
