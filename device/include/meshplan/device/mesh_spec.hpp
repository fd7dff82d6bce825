// Mesh specifications as users write them (meshplan-compile --mesh, meshplan-run --mesh):
//
//   RxC            a rows x cols mesh: device::default_mesh() of that shape (built-in facts for
//                  the built-in shapes 1x2, 2x4, 8x4; else linear, one link)
//   n300|t3k|galaxy  the built-in mesh of that name (default_mesh() of its shape)
//   SPEC:ring      either of the above with wrap-around links on every row and column
//   SPEC:linear    ... or explicitly without them
//   FILE.json      a device JSON file's mesh table (schemas/device.fbs), with its own chip
//
// Text forms take their chips from the caller (the planning or running chip); a JSON file
// carries its chip.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// A parsed text form (no file read). Plain data.
struct MeshSpec {
  uint16_t rows = 1, cols = 1;
  std::optional<Topology> topology;  ///< Set when written (":ring" / ":linear").
  std::string file;                  ///< FILE.json form: the path (rows, cols unknown yet).
};

/// Parses `text` (see above). Errors (invalid_argument) quote the text and name the bad part:
/// the topology after ':', a rows or cols count (1 to 65535), or the form itself.
Result<MeshSpec> parse_mesh_spec(std::string_view text);

/// The mesh descriptor `text` stands for, verified: text forms are default_mesh(chip, rows,
/// cols) with the written topology; a FILE.json is load_mesh_file() (its chip, not `chip`).
/// Errors name the text, or the file and its field.
Result<MeshDesc> resolve_mesh_spec(std::string_view text, const ChipDesc& chip);

/// "t3k 2x4 ring, 2 links": the facts a plan key depends on, for messages and tool output.
std::string mesh_summary(const MeshDesc& mesh);

}  // namespace meshplan::device
