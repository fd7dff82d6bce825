// Chip and mesh descriptors: built-in facts, canonical hashing over every field, validation
// errors naming the field, and JSON files (round trip, base + overrides, each error).
#include <doctest/doctest.h>

#include <functional>
#include <limits>

#include "meshplan/device/descriptor_json.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/device/timing.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

bool has(const Error& e, const std::string& text) {
  bool found = e.message.find(text) != std::string::npos;
  if (!found) MESSAGE("message: " << e.message << " lacks: " << text);
  return found;
}

void check_same(const ChipDesc& a, const ChipDesc& b) {
  CHECK(a.name == b.name);
  CHECK(a.hash() == b.hash());
}

}  // namespace

TEST_CASE("built-in chips carry DEVICE-FACTS numbers") {
  ChipDesc n300 = *builtin_chip("n300");
  CHECK(n300.grid_x == 8);
  CHECK(n300.grid_y == 7);
  CHECK(n300.l1_size == wormhole_b0().l1_size);
  CHECK(n300.verify());
  ChipDesc bh = *builtin_chip("blackhole_p150");
  CHECK(bh.cores() == 110);
  CHECK(bh.l1_size == 1572864);
  CHECK(bh.l1_unreserved_base == 98304);
  CHECK(bh.dram_banks == 8);
  CHECK(bh.dram_bank_size == 4278190080ull);
  CHECK(bh.dram_alignment == 64);
  CHECK(bh.clock_ghz == 1.35);
  CHECK(bh.noc_bytes_per_cycle == 64);
  CHECK(bh.dram_gbps == 500.0);  // measured, not the 512 peak
  CHECK(bh.ethernet_links == 14);
  CHECK(bh.ethernet_gbps == 50.0);
  CHECK(bh.verify());
  CHECK(builtin_chip("n150")->hash() == wormhole_b0().hash());
  CHECK(builtin_chip_names().size() == 4);
  for (auto n : builtin_chip_names()) CHECK(builtin_chip(n));
}

TEST_CASE("built-in rates are the achievable ones") {
  ChipDesc wh = wormhole_b0();
  CHECK(wh.dram_gbps == 267.0);  // measured on Wormhole; 288 is the peak
  CHECK(wh.pcie_h2d_gbps == 15.0);
  CHECK(wh.pcie_d2h_gbps == 1.9);
  CHECK(wormhole_n300().dram_gbps == 267.0);
  // 1 MiB in: 1048576 / 15 GB/s = 69905.07 ns; out: 1048576 / 1.9 = 551882.1 ns.
  CHECK(host_transfer_ns(wh, 1 << 20, true) == 69906);
  CHECK(host_transfer_ns(wh, 1 << 20, false) == 551883);
  CHECK(host_transfer_ns(wh, 0, true) == 0);
  // Measured per-core rates (Tenstorrent's data-movement primitives), GEMM_FLOPS utilization.
  CHECK(wh.matmul_utilization == 0.89);
  CHECK(wh.dram_read_bytes_per_cycle == 22);
  CHECK(wh.mcast_bytes_per_cycle == 22);
  ChipDesc bh = blackhole_p150();
  CHECK(bh.dram_read_bytes_per_cycle == 33);
  CHECK(bh.mcast_bytes_per_cycle == 41);
}

TEST_CASE("a device file's rates round-trip and reach the timing") {
  // matmul_utilization set in a file is the one the loaded chip carries, and printing the chip
  // gives it back.
  auto c = chip_from_json(R"({chip: {base: "wormhole_b0", matmul_utilization: 0.5}})", "d.json");
  REQUIRE_MESSAGE(c, c.error().message);
  CHECK(c->matmul_utilization == 0.5);
  CHECK(c->hash() != wormhole_b0().hash());
  auto text = chip_to_json(*c);
  REQUIRE(text);
  auto back = chip_from_json(*text, "back.json");
  REQUIRE_MESSAGE(back, back.error().message);
  CHECK(back->hash() == c->hash());
}

TEST_CASE("built-in meshes") {
  MeshDesc n300 = *builtin_mesh("n300");
  CHECK((n300.rows == 1 && n300.cols == 2 && n300.links == 2));
  MeshDesc t3k = *builtin_mesh("t3k");
  CHECK((t3k.rows == 2 && t3k.cols == 4 && t3k.links == 2 && t3k.chips() == 8));
  MeshDesc galaxy = *builtin_mesh("galaxy");
  CHECK((galaxy.rows == 8 && galaxy.cols == 4 && galaxy.links == 4 && galaxy.chips() == 32));
  CHECK(galaxy.hop_latency_ns == 711);
  MeshDesc one = *builtin_mesh("blackhole_p150");
  CHECK(one.chips() == 1);
  for (auto n : builtin_mesh_names()) CHECK(builtin_mesh(n)->verify());
  auto unknown = builtin_mesh("tpu_pod");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().code == ErrorCode::not_found);
  CHECK(has(unknown.error(), "galaxy"));
  CHECK(t3k.index(MeshCoord{1, 2}) == 6);
  CHECK(t3k.coord(6) == MeshCoord{1, 2});
  CHECK(coord_name(MeshCoord{1, 2}) == "(1,2)");
}

TEST_CASE("every field enters the chip and mesh hashes") {
  ChipDesc base = wormhole_b0();
  std::vector<std::function<void(ChipDesc&)>> chip_edits = {
      [](ChipDesc& d) { d.name = "x"; },
      [](ChipDesc& d) { d.grid_x = 7; },
      [](ChipDesc& d) { d.grid_y = 7; },
      [](ChipDesc& d) { d.l1_size += 16; },
      [](ChipDesc& d) { d.l1_unreserved_base += 16; },
      [](ChipDesc& d) { d.l1_usable_fraction = 0.9; },
      [](ChipDesc& d) { d.dram_banks = 8; },
      [](ChipDesc& d) { d.dram_bank_size /= 2; },
      [](ChipDesc& d) { d.l1_alignment = 32; },
      [](ChipDesc& d) { d.dram_alignment = 64; },
      [](ChipDesc& d) { d.clock_ghz = 1.1; },
      [](ChipDesc& d) { d.matmul_flops_per_cycle = 2048; },
      [](ChipDesc& d) { d.eltwise_elems_per_cycle = 16; },
      [](ChipDesc& d) { d.noc_bytes_per_cycle = 64; },
      [](ChipDesc& d) { d.dram_gbps = 288; },
      [](ChipDesc& d) { d.pcie_h2d_gbps = 20; },
      [](ChipDesc& d) { d.pcie_d2h_gbps = 3; },
      [](ChipDesc& d) { d.ethernet_links = 14; },
      [](ChipDesc& d) { d.ethernet_gbps = 50; },
      [](ChipDesc& d) { d.dispatch_ns = 10; },
      [](ChipDesc& d) { d.matmul_utilization = 0.75; },
      [](ChipDesc& d) { d.dram_read_bytes_per_cycle = 20; },
      [](ChipDesc& d) { d.mcast_bytes_per_cycle = 19; },
      [](ChipDesc& d) { d.l1_bytes_per_cycle = 32; },
      [](ChipDesc& d) { d.conv_block_sync_cycles = 400; },
  };
  for (size_t i = 0; i < chip_edits.size(); ++i) {
    ChipDesc e = base;
    chip_edits[i](e);
    CAPTURE(i);
    CHECK(e.hash() != base.hash());
  }
  MeshDesc m = *builtin_mesh("t3k");
  std::vector<std::function<void(MeshDesc&)>> mesh_edits = {
      [](MeshDesc& d) { d.name = "y"; },
      [](MeshDesc& d) { d.rows = 1; },
      [](MeshDesc& d) { d.cols = 8; },
      [](MeshDesc& d) { d.chip.grid_y = 8; },
      [](MeshDesc& d) { d.topology = Topology::ring; },
      [](MeshDesc& d) { d.links = 1; },
      [](MeshDesc& d) { d.hop_latency_ns = 700; },
  };
  for (size_t i = 0; i < mesh_edits.size(); ++i) {
    MeshDesc e = m;
    mesh_edits[i](e);
    CAPTURE(i);
    CHECK(e.hash() != m.hash());
  }
  CHECK(builtin_mesh("t3k")->hash() == m.hash());  // deterministic
}

TEST_CASE("verify names the field") {
  struct Case {
    std::function<void(ChipDesc&)> edit;
    const char* field;
  };
  std::vector<Case> cases = {
      {[](ChipDesc& d) { d.grid_x = 0; }, "grid_x"},
      {[](ChipDesc& d) { d.l1_unreserved_base = d.l1_size; }, "l1_unreserved_base"},
      {[](ChipDesc& d) { d.l1_usable_fraction = 1.5; }, "l1_usable_fraction"},
      {[](ChipDesc& d) { d.dram_banks = 0; }, "dram_banks"},
      {[](ChipDesc& d) { d.dram_alignment = 48; }, "dram_alignment"},
      {[](ChipDesc& d) { d.clock_ghz = 0; }, "clock_ghz"},
      {[](ChipDesc& d) { d.noc_bytes_per_cycle = 0; }, "noc_bytes_per_cycle"},
      {[](ChipDesc& d) { d.ethernet_gbps = -1; }, "ethernet_gbps"},
      {[](ChipDesc& d) { d.dram_gbps = 0; }, "dram_gbps"},
      {[](ChipDesc& d) { d.dram_gbps = -267; }, "dram_gbps"},
      {[](ChipDesc& d) { d.dram_bank_size = 0; }, "dram_bank_size"},
      {[](ChipDesc& d) { d.dram_bank_size = 16; }, "dram_bank_size"},
      {[](ChipDesc& d) { d.l1_size = 1024; }, "l1_unreserved_base"},
      {[](ChipDesc& d) { d.l1_unreserved_base = d.l1_size - 2048; }, "l1_unreserved_base"},
      {[](ChipDesc& d) { d.pcie_h2d_gbps = 0; }, "pcie_h2d_gbps"},
      {[](ChipDesc& d) { d.pcie_d2h_gbps = -1; }, "pcie_d2h_gbps"},
      {[](ChipDesc& d) { d.matmul_utilization = 0; }, "matmul_utilization"},
      {[](ChipDesc& d) { d.matmul_utilization = 1.2; }, "matmul_utilization"},
      {[](ChipDesc& d) { d.dram_read_bytes_per_cycle = 0; }, "dram_read_bytes_per_cycle"},
      {[](ChipDesc& d) { d.dram_read_bytes_per_cycle = 33; }, "dram_read_bytes_per_cycle"},
      {[](ChipDesc& d) { d.mcast_bytes_per_cycle = 0; }, "mcast_bytes_per_cycle"},
      {[](ChipDesc& d) { d.mcast_bytes_per_cycle = 64; }, "mcast_bytes_per_cycle"},
      {[](ChipDesc& d) { d.l1_bytes_per_cycle = 16; }, "l1_bytes_per_cycle"},
      // Every other checked field: zero counts, zero or negative rates, a NaN bandwidth.
      {[](ChipDesc& d) { d.grid_y = 0; }, "grid_y"},
      {[](ChipDesc& d) { d.l1_size = 0; }, "l1_size"},
      {[](ChipDesc& d) { d.l1_usable_fraction = 0; }, "l1_usable_fraction"},
      {[](ChipDesc& d) { d.l1_alignment = 0; }, "l1_alignment"},
      {[](ChipDesc& d) { d.l1_alignment = 24; }, "l1_alignment"},
      {[](ChipDesc& d) { d.dram_alignment = 0; }, "dram_alignment"},
      {[](ChipDesc& d) { d.clock_ghz = -1; }, "clock_ghz"},
      {[](ChipDesc& d) { d.matmul_flops_per_cycle = 0; }, "matmul_flops_per_cycle"},
      {[](ChipDesc& d) { d.eltwise_elems_per_cycle = 0; }, "eltwise_elems_per_cycle"},
      {[](ChipDesc& d) { d.dram_gbps = std::numeric_limits<double>::quiet_NaN(); }, "dram_gbps"},
      {[](ChipDesc& d) { d.ethernet_gbps = 0; }, "ethernet_gbps"},
      {[](ChipDesc& d) { d.pcie_h2d_gbps = -15; }, "pcie_h2d_gbps"},
      {[](ChipDesc& d) { d.pcie_d2h_gbps = 0; }, "pcie_d2h_gbps"},
  };
  for (const Case& c : cases) {
    ChipDesc d = wormhole_b0();
    c.edit(d);
    auto r = d.verify();
    REQUIRE_FALSE(r);
    CHECK(has(r.error(), str("field '", c.field, "'")));
  }
  MeshDesc m = *builtin_mesh("t3k");
  m.links = 17;
  auto r = m.verify();
  REQUIRE_FALSE(r);
  CHECK(has(r.error(), "mesh 't3k': field 'links' = 17 exceeds the chip's ethernet_links (16)"));
  m.links = 2;
  m.rows = 0;
  CHECK(has(m.verify().error(), "field 'rows'"));
  m.rows = 2;
  m.chip.grid_y = 0;
  CHECK(has(m.verify().error(), "mesh 't3k': chip 'n300': field 'grid_y'"));
}

TEST_CASE("JSON round trip of every built-in chip and mesh") {
  for (auto n : builtin_chip_names()) {
    ChipDesc d = *builtin_chip(n);
    auto text = chip_to_json(d);
    REQUIRE(text);
    auto back = chip_from_json(*text, "chip.json");
    REQUIRE(back);
    check_same(*back, d);
  }
  for (auto n : builtin_mesh_names()) {
    MeshDesc m = *builtin_mesh(n);
    m.topology = Topology::ring;
    auto text = mesh_to_json(m);
    REQUIRE(text);
    CHECK(text->find("ring") != std::string::npos);
    auto back = mesh_from_json(*text, "mesh.json");
    REQUIRE(back);
    CHECK(back->hash() == m.hash());
    CHECK(back->topology == Topology::ring);
  }
  test::TempDir dir;
  std::string path = dir.file("galaxy.json");
  {
    std::ofstream out(path);
    out << *mesh_to_json(*builtin_mesh("galaxy"));
  }
  auto loaded = load_mesh_file(path);
  REQUIRE(loaded);
  CHECK(loaded->hash() == builtin_mesh("galaxy")->hash());
  CHECK(load_chip_file(path)->hash() == builtin_mesh("galaxy")->chip.hash());
  auto none = load_mesh_file(dir.file("absent.json"));
  REQUIRE_FALSE(none);
  CHECK(none.error().code == ErrorCode::not_found);
}

TEST_CASE("JSON with a base and overrides") {
  auto chip = chip_from_json(
      R"({chip: {base: "wormhole_b0", name: "wh4x4", grid_x: 4, grid_y: 4}})", "small.json");
  REQUIRE(chip);
  CHECK(chip->name == "wh4x4");
  CHECK(chip->cores() == 16);
  CHECK(chip->l1_size == wormhole_b0().l1_size);
  auto mesh = mesh_from_json(
      R"({mesh: {base: "t3k", name: "ring8", rows: 1, cols: 8, topology: "ring"}})", "r.json");
  REQUIRE(mesh);
  CHECK((mesh->rows == 1 && mesh->cols == 8 && mesh->links == 2));
  CHECK(mesh->chip.hash() == wormhole_n300().hash());
  CHECK(mesh->topology == Topology::ring);
  // A mesh's chip falls back to the chip of the mesh's base.
  auto over = mesh_from_json(R"({mesh: {base: "t3k", chip: {grid_y: 8}}})", "o.json");
  REQUIRE(over);
  CHECK(over->chip.grid_y == 8);
  CHECK(over->chip.name == "n300");
  // A chip-only file is a 1x1 mesh.
  auto single = mesh_from_json(R"({chip: {base: "blackhole_p150"}})", "bh.json");
  REQUIRE(single);
  CHECK(single->chips() == 1);
}

TEST_CASE("JSON validation errors name the file and the field") {
  struct Case {
    const char* json;
    const char* want;
  };
  std::vector<Case> cases = {
      {R"({chip: {name: "x", grid_x: 8}})", "d.json: chip: field 'grid_y' is missing"},
      {R"({chip: {base: "wormhole_b0", l1_unreserved_base: 2000000}})",
       "d.json: chip: chip 'wormhole_b0': field 'l1_unreserved_base' = 2000000 is not below "
       "l1_size"},
      {R"({chip: {base: "wormhole_b0", clock_ghz: 0}})", "field 'clock_ghz' = 0 must be > 0"},
      {R"({chip: {base: "wormhole_b0", l1_size: 65536}})",
       "d.json: chip: chip 'wormhole_b0': field 'l1_unreserved_base' = 102400 is not below "
       "l1_size 65536"},
      {R"({chip: {base: "wormhole_b0", dram_banks: 0}})", "field 'dram_banks' = 0 must be > 0"},
      {R"({chip: {base: "wormhole_b0", grid_y: 0}})", "field 'grid_y' = 0 must be > 0"},
      {R"({chip: {base: "wormhole_b0", l1_size: 0}})", "field 'l1_size' = 0 must be > 0"},
      {R"({chip: {base: "wormhole_b0", l1_usable_fraction: 0}})",
       "field 'l1_usable_fraction' = 0 must be in (0, 1]"},
      {R"({chip: {base: "wormhole_b0", l1_alignment: 0}})",
       "field 'l1_alignment' = 0 must be a power of two"},
      {R"({chip: {base: "wormhole_b0", matmul_flops_per_cycle: 0}})",
       "field 'matmul_flops_per_cycle' = 0 must be > 0"},
      {R"({chip: {base: "wormhole_b0", eltwise_elems_per_cycle: 0}})",
       "field 'eltwise_elems_per_cycle' = 0 must be > 0"},
      {R"({chip: {base: "wormhole_b0", noc_bytes_per_cycle: 0}})",
       "field 'noc_bytes_per_cycle' = 0 must be > 0"},
      {R"({chip: {base: "wormhole_b0", ethernet_gbps: 0}})",
       "field 'ethernet_gbps' = 0 must be > 0 when the chip has ethernet links"},
      {R"({chip: {base: "wormhole_b0", pcie_h2d_gbps: -15}})",
       "field 'pcie_h2d_gbps' = -15 must be > 0"},
      {R"({chip: {base: "wormhole_b0", dram_gbps: -1}})", "field 'dram_gbps' = -1 must be > 0"},
      {R"({chip: {base: "wormhole_b0", pcie_d2h_gbps: 0}})",
       "field 'pcie_d2h_gbps' = 0 must be > 0"},
      {R"({chip: {base: "wormhole_b0", matmul_utilization: 1.5}})",
       "d.json: chip: chip 'wormhole_b0': field 'matmul_utilization' = 1.5 must be in (0, 1]"},
      {R"({chip: {base: "wormhole_b0", dram_read_bytes_per_cycle: 40}})",
       "field 'dram_read_bytes_per_cycle' = 40 must be in (0, noc_bytes_per_cycle 32]"},
      {R"({chip: {base: "blackhole_p150", noc_bytes_per_cycle: 32}})",
       "chip 'blackhole_p150': field 'dram_read_bytes_per_cycle' = 33 must be in (0, "
       "noc_bytes_per_cycle 32]"},
      {R"({chip: {base: "wormhole_b0", mcast_bytes_per_cycle: 0}})",
       "field 'mcast_bytes_per_cycle' = 0 must be in (0, noc_bytes_per_cycle 32]"},
      {R"({chip: {base: "wormhole_b0", l1_bytes_per_cycle: 8}})",
       "field 'l1_bytes_per_cycle' = 8 must be at least noc_bytes_per_cycle 32"},
      {R"({chip: {base: "n300", dram_bank_size: 8}})",
       "field 'dram_bank_size' = 8 must hold at least one aligned page"},
      {R"({chip: {base: "wormhole_b0", dram_alignment: 48}})",
       "field 'dram_alignment' = 48 must be a power of two"},
      {R"({chip: {base: "tpu"}})", "d.json: chip: field 'base': unknown device 'tpu'"},
      {R"({mesh: {base: "nope"}})", "d.json: mesh: field 'base': unknown mesh 'nope'"},
      {R"({mesh: {name: "m", rows: 2, cols: 2, links: 1, hop_latency_ns: 700, topology: "ring"}})",
       "d.json: mesh: field 'chip' is missing"},
      {R"({mesh: {base: "t3k", links: 0}})", "field 'links' = 0 must be > 0"},
      {R"({mesh: {base: "t3k", cols: 0}})", "field 'cols' = 0 must be > 0"},
      {R"({mesh: {base: "t3k", chip: {base: "wormhole_b0", ethernet_links: 1}}})",
       "field 'links' = 2 exceeds the chip's ethernet_links (1)"},
      {R"({mesh: {base: "t3k", topology: "torus"}})", "torus"},
      {R"({mesh: {base: "t3k", topology: 5}})", "topology"},
      {R"({chip: {base: "wormhole_b0", grid_x: 70000}})", "(field 'grid_x')"},
      {R"({chip: {base: "wormhole_b0", cores: 12}})", "cores"},
      {R"({chip: {base: "wormhole_b0", grid_x: "eight"}})", "(field 'grid_x')"},
      {R"({chip: {base: "wormhole_b0" )", "d.json"},
      {R"({})", "d.json: neither 'chip' nor 'mesh' is set"},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.json));
    auto r = mesh_from_json(c.json, "d.json");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::invalid_argument);
    CHECK(has(r.error(), c.want));
  }
  // Parse errors carry the line.
  auto line = chip_from_json("{\n chip: {\n  grid_x: -3\n }\n}", "lines.json");
  REQUIRE_FALSE(line);
  CHECK(has(line.error(), "lines.json:"));
  CHECK(has(line.error(), "(field 'grid_x')"));
  // A bad scalar that is not the last field of its table is still named.
  auto middle = chip_from_json("{chip: {base: \"n300\", grid_y: 99999, grid_x: 4}}", "m.json");
  REQUIRE_FALSE(middle);
  CHECK(has(middle.error(), "(field 'grid_y')"));
}
