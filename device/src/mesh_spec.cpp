// Mesh specifications (see mesh_spec.hpp).
#include "meshplan/device/mesh_spec.hpp"

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/descriptor_json.hpp"

namespace meshplan::device {

namespace {

constexpr std::string_view kForms =
    "RxC (e.g. 2x4), n300, t3k or galaxy, optionally followed by :ring or :linear, or a mesh "
    "JSON file";

/// A count from 1 to 65535 written in decimal digits.
std::optional<uint16_t> count(std::string_view s) {
  if (s.empty() || s.size() > 5) return std::nullopt;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  if (v == 0 || v > 0xFFFF) return std::nullopt;
  return static_cast<uint16_t>(v);
}

}  // namespace

Result<MeshSpec> parse_mesh_spec(std::string_view text) {
  auto bad = [&](auto&&... why) {
    return fail(ErrorCode::invalid_argument, "mesh '", text, "': ", why...);
  };
  MeshSpec spec;
  if (text.ends_with(".json")) {
    spec.file = std::string(text);
    return spec;
  }
  std::string_view shape = text;
  if (size_t colon = text.find(':'); colon != std::string_view::npos) {
    shape = text.substr(0, colon);
    std::string_view topology = text.substr(colon + 1);
    if (topology == "ring")
      spec.topology = Topology::ring;
    else if (topology == "linear")
      spec.topology = Topology::linear;
    else
      return bad("topology '", topology, "' is not ring or linear");
    if (shape.ends_with(".json"))
      return bad("a mesh JSON file gives its topology in its 'topology' field, not after ':'");
  }
  if (shape.empty()) return bad("no mesh before ':' (", kForms, ")");
  for (std::string_view name : builtin_mesh_names())
    if (shape == name) {
      MeshDesc b = *builtin_mesh(name);
      spec.rows = b.rows;
      spec.cols = b.cols;
      return spec;
    }
  size_t x = shape.find('x');
  if (x == std::string_view::npos) return bad("not ", kForms);
  auto rows = count(shape.substr(0, x)), cols = count(shape.substr(x + 1));
  if (!rows) return bad("rows '", shape.substr(0, x), "' is not a count from 1 to 65535");
  if (!cols) return bad("cols '", shape.substr(x + 1), "' is not a count from 1 to 65535");
  spec.rows = *rows;
  spec.cols = *cols;
  return spec;
}

Result<MeshDesc> resolve_mesh_spec(std::string_view text, const ChipDesc& chip) {
  MeshSpec spec = MESHPLAN_TRY(parse_mesh_spec(text));
  if (!spec.file.empty()) return load_mesh_file(spec.file);  // verified by the loader
  MeshDesc mesh = default_mesh(chip, spec.rows, spec.cols);
  if (spec.topology) mesh.topology = *spec.topology;
  auto ok = mesh.verify();
  if (!ok) return std::unexpected(with_context(ok.error(), str("mesh '", text, "'")));
  return mesh;
}

std::string mesh_summary(const MeshDesc& mesh) {
  return str(mesh.name, " ", mesh.rows, "x", mesh.cols, " ", topology_name(mesh.topology), ", ",
             mesh.links, mesh.links == 1 ? " link" : " links");
}

}  // namespace meshplan::device
