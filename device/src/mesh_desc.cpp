// Built-in meshes (shared/DEVICE-FACTS.md "Meshes", from tt-metal's public cluster descriptions)
// and the canonical mesh encoding.
#include "meshplan/device/mesh_desc.hpp"

namespace meshplan::device {

std::string coord_name(MeshCoord c) {
  return str("(", c.row, ",", c.col, ")");
}

std::string_view topology_name(Topology t) {
  return t == Topology::ring ? "ring" : "linear";
}

Hash128 MeshDesc::hash() const {
  Hasher h;
  h.string("meshplan.mesh.v1").string(name).u32(rows).u32(cols).hash(chip.hash());
  h.u8(static_cast<uint8_t>(topology)).u32(links).u64(hop_latency_ns);
  return h.digest();
}

Status MeshDesc::verify() const {
  auto bad = [&](std::string_view field, auto value, std::string_view rule) {
    return fail(ErrorCode::invalid_argument, "mesh '", name, "': field '", field, "' = ", value,
                " ", rule);
  };
  if (rows == 0) return bad("rows", rows, "must be > 0");
  if (cols == 0) return bad("cols", cols, "must be > 0");
  auto chip_ok = chip.verify();
  if (!chip_ok) return std::unexpected(with_context(chip_ok.error(), str("mesh '", name, "'")));
  if (topology != Topology::linear && topology != Topology::ring)
    return bad("topology", static_cast<int>(topology), "must be linear (0) or ring (1)");
  if (chips() > 1) {
    if (links == 0) return bad("links", links, "must be > 0 for a mesh of more than one chip");
    if (links > chip.ethernet_links)
      return bad("links", links,
                 str("exceeds the chip's ethernet_links (", chip.ethernet_links, ")"));
    if (!(chip.ethernet_gbps > 0.0))
      return bad("chip.ethernet_gbps", chip.ethernet_gbps, "must be > 0");
  }
  return {};
}

MeshDesc single_chip_mesh(const ChipDesc& chip) {
  MeshDesc m;
  m.name = chip.name;
  m.rows = m.cols = 1;
  m.chip = chip;
  return m;
}

namespace {

MeshDesc wormhole_mesh(std::string name, uint16_t rows, uint16_t cols, uint32_t links) {
  MeshDesc m;
  m.name = std::move(name);
  m.rows = rows;
  m.cols = cols;
  m.chip = wormhole_n300();
  m.topology = Topology::linear;  // No wrap-around links are assumed; a ring mesh comes from JSON.
  m.links = links;
  m.hop_latency_ns = 711;  // DEVICE-FACTS: per-hop fabric latency ~711 ns on Wormhole.
  return m;
}

}  // namespace

Result<MeshDesc> builtin_mesh(std::string_view name) {
  // DEVICE-FACTS "Meshes": n300 1x2 (2 links between its two chips); T3000 2x4 (2 links between
  // neighbours); Galaxy 32 chips opened as 8x4 (4 links between neighbours).
  if (name == "n300") return wormhole_mesh("n300", 1, 2, 2);
  if (name == "t3k") return wormhole_mesh("t3k", 2, 4, 2);
  if (name == "galaxy") {
    MeshDesc m = wormhole_mesh("galaxy", 8, 4, 4);
    // DEVICE-FACTS has no per-chip row for Galaxy: we use the n150 chip facts (8x8 Wormhole B0).
    m.chip = wormhole_b0();
    return m;
  }
  auto chip = builtin_chip(name);
  if (chip) return single_chip_mesh(*chip);
  std::string known;
  for (auto n : builtin_mesh_names()) known += (known.empty() ? "" : ", ") + std::string(n);
  for (auto n : builtin_chip_names()) known += ", " + std::string(n) + " (1x1)";
  return fail(ErrorCode::not_found, "unknown mesh '", name, "' (built-in meshes: ", known, ")");
}

std::vector<std::string_view> builtin_mesh_names() {
  return {"n300", "t3k", "galaxy"};
}

}  // namespace meshplan::device
