// --mesh texts (device/mesh_spec.hpp): every form resolves to the descriptor it names, ring and
// linear are distinct descriptors, and bad texts and files fail naming the bad part or field.
#include "meshplan/device/mesh_spec.hpp"

#include <doctest/doctest.h>

#include <fstream>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/collective_timing.hpp"
#include "meshplan/device/descriptor_json.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::device;

namespace {

std::string error_of(std::string_view text, const ChipDesc& chip = wormhole_b0()) {
  auto m = resolve_mesh_spec(text, chip);
  REQUIRE_FALSE(m.has_value());
  CHECK(m.error().code == ErrorCode::invalid_argument);
  return m.error().message;
}

}  // namespace

TEST_CASE("mesh spec text forms resolve to the default mesh of their shape and topology") {
  const ChipDesc chip = wormhole_b0();
  auto t3k = resolve_mesh_spec("t3k", chip);
  REQUIRE(t3k);
  CHECK(t3k->hash() == default_mesh(chip, 2, 4).hash());
  CHECK(t3k->name == "t3k");
  CHECK(t3k->links == 2);
  CHECK(t3k->topology == Topology::linear);
  auto linear = resolve_mesh_spec("t3k:linear", chip);
  REQUIRE(linear);
  CHECK(linear->hash() == t3k->hash());
  auto ring = resolve_mesh_spec("t3k:ring", chip);
  REQUIRE(ring);
  CHECK(ring->topology == Topology::ring);
  CHECK(ring->name == "t3k");
  CHECK(ring->links == 2);
  CHECK(ring->hash() != t3k->hash());
  // RxC of a built-in shape is that built-in; other shapes are linear with one link.
  CHECK(resolve_mesh_spec("2x4:ring", chip)->hash() == ring->hash());
  auto row = resolve_mesh_spec("1x8:ring", chip);
  REQUIRE(row);
  CHECK(row->rows == 1);
  CHECK(row->cols == 8);
  CHECK(row->name == "1x8");
  CHECK(row->links == 1);
  CHECK(row->topology == Topology::ring);
  CHECK(resolve_mesh_spec("galaxy:ring", chip)->chips() == 32);
  CHECK(resolve_mesh_spec("n300", chip)->cols == 2);
  // The chips come from the caller.
  CHECK(resolve_mesh_spec("t3k", wormhole_n300())->chip.hash() == wormhole_n300().hash());
  CHECK(mesh_summary(*ring) == "t3k 2x4 ring, 2 links");
  CHECK(mesh_summary(*row) == "1x8 1x8 ring, 1 link");
  auto spec = parse_mesh_spec("galaxy:linear");
  REQUIRE(spec);
  CHECK(spec->rows == 8);
  CHECK(spec->cols == 4);
  REQUIRE(spec->topology.has_value());
  CHECK(*spec->topology == Topology::linear);
  CHECK_FALSE(parse_mesh_spec("3x5")->topology.has_value());
}

TEST_CASE("bad mesh spec texts name the part that is wrong") {
  CHECK(error_of("t3k:torus") == "mesh 't3k:torus': topology 'torus' is not ring or linear");
  CHECK(error_of("t3k:") == "mesh 't3k:': topology '' is not ring or linear");
  CHECK(error_of("2x0") == "mesh '2x0': cols '0' is not a count from 1 to 65535");
  CHECK(error_of("x4") == "mesh 'x4': rows '' is not a count from 1 to 65535");
  CHECK(error_of("70000x1") == "mesh '70000x1': rows '70000' is not a count from 1 to 65535");
  CHECK(error_of("2x4x8").find("cols '4x8'") != std::string::npos);
  CHECK(error_of("tpu").find("mesh 'tpu': not RxC (e.g. 2x4), n300, t3k or galaxy") == 0);
  CHECK(error_of(":ring").find("no mesh before ':'") != std::string::npos);
  CHECK(error_of("m.json:ring").find("its 'topology' field") != std::string::npos);
  // A mesh of chips without ethernet is refused by MeshDesc::verify, naming the field.
  ChipDesc lonely = wormhole_b0();
  lonely.ethernet_links = 0;
  CHECK(error_of("1x8:ring", lonely) ==
        "mesh '1x8:ring': mesh '1x8': field 'links' = 1 exceeds the chip's ethernet_links (0)");
}

TEST_CASE("a mesh JSON file resolves with its own chip; bad files name the field") {
  test::TempDir dir;
  auto write = [&](const std::string& name, const std::string& text) {
    std::string path = dir.file(name);
    std::ofstream(path) << text;
    return path;
  };
  std::string ring8 = write("ring8.json", R"({"mesh": {"name": "ring8", "rows": 1, "cols": 8,
      "topology": "ring", "links": 2, "hop_latency_ns": 500, "chip": {"base": "n300"}}})");
  auto m = resolve_mesh_spec(ring8, blackhole_p150());
  REQUIRE_MESSAGE(m, m.error().message);
  CHECK(m->name == "ring8");
  CHECK(m->topology == Topology::ring);
  CHECK(m->hop_latency_ns == 500);
  CHECK(m->chip.hash() == wormhole_n300().hash());  // the file's chip, not the caller's
  auto based = resolve_mesh_spec(write("based.json", R"({"mesh": {"base": "t3k",
      "topology": "ring"}})"),
                                 wormhole_b0());
  REQUIRE(based);
  MeshDesc want = *builtin_mesh("t3k");
  want.topology = Topology::ring;
  CHECK(based->hash() == want.hash());

  auto bad = [&](const std::string& name, const std::string& text) {
    auto r = resolve_mesh_spec(write(name, text), wormhole_b0());
    REQUIRE_FALSE(r.has_value());
    return r.error().message;
  };
  CHECK(bad("torus.json", R"({"mesh": {"base": "t3k", "topology": "torus"}})").find("topology") !=
        std::string::npos);
  CHECK(bad("links.json", R"({"mesh": {"base": "t3k", "links": 0}})").find("field 'links'") !=
        std::string::npos);
  CHECK(bad("rows.json", R"({"mesh": {"base": "t3k", "rows": 0}})").find("field 'rows'") !=
        std::string::npos);
  CHECK(bad("partial.json", R"({"mesh": {"name": "m", "rows": 1, "cols": 8}})").find("links") !=
        std::string::npos);
  CHECK(resolve_mesh_spec(dir.file("missing.json"), wormhole_b0())
            .error()
            .message.find("cannot open") != std::string::npos);
}

TEST_CASE("an all_gather over 8 chips takes less simulated time on a ring than on a line") {
  const ChipDesc chip = wormhole_b0();
  MeshDesc line = *resolve_mesh_spec("1x8", chip), ring = *resolve_mesh_spec("1x8:ring", chip);
  const uint64_t bytes = 8 * 32 * 64 * 2;  // the gathered [256, 64] bf16 tensor
  CollectiveTiming l = estimate_collective(line, CollectiveKind::all_gather, 8, bytes);
  CollectiveTiming r = estimate_collective(ring, CollectiveKind::all_gather, 8, bytes);
  CHECK(r.link_bytes * 2 == l.link_bytes);  // DEVICE-FACTS: a ring halves the traffic
  CHECK(r.hops < l.hops);
  CHECK(r.duration_ns < l.duration_ns);
}
