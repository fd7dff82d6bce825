// Cache semantics: a hit is checked field by field and a miss says why; format minor versions
// are additive (still load) and majors are refused; remove and gc keep the cache consistent.
#include <doctest/doctest.h>
#include <flatbuffers/idl.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/cache_edit.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::runtime;

namespace {

planner::Graph relu_graph(int width) {
  std::string json =
      R"({ name: "g", arguments: [{ value: { name: "x", shape: [4, )" + std::to_string(width) +
      R"(], dtype: "bf16" } }], ops: [{ kind: "relu", operands: ["x"], results: [{ name: "y" }] }], outputs: ["y"] })";
  auto g = planner::import_graph_json(json);
  REQUIRE(g);
  return std::move(*g);
}

std::vector<uint8_t> relu_plan(int width) {
  auto p = planner::compile(relu_graph(width), device::wormhole_b0(),
                            planner::PlannerOptions::with_policy("dram"));
  REQUIRE(p);
  return p->bytes;
}

/// The plan as JSON through the embedded schema (flatc's schema route).
std::string to_json(const std::vector<uint8_t>& bytes, const std::string& schema) {
  flatbuffers::IDLOptions opts;
  opts.output_default_scalars_in_json = true;
  flatbuffers::Parser parser(opts);
  REQUIRE(parser.Parse(schema.c_str(), nullptr, "plan.fbs"));
  std::string text;
  REQUIRE(flatbuffers::GenerateText(parser, bytes.data() + sizeof(flatbuffers::uoffset_t), &text));
  return text;
}

/// Parses plan JSON with `schema` into size-prefixed plan bytes.
std::vector<uint8_t> from_json(const std::string& json, const std::string& schema) {
  flatbuffers::IDLOptions opts;
  opts.size_prefixed = true;
  flatbuffers::Parser parser(opts);
  REQUIRE(parser.Parse(schema.c_str(), nullptr, "plan.fbs"));
  INFO(parser.error_);
  REQUIRE(parser.Parse(json.c_str(), nullptr, "plan.json"));
  return std::vector<uint8_t>(parser.builder_.GetBufferPointer(),
                              parser.builder_.GetBufferPointer() + parser.builder_.GetSize());
}

void replace_once(std::string& s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, from);
  s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a hit is checked field by field and a miss says why") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  planner::Graph g = relu_graph(8);
  REQUIRE(add_to_cache(path, CacheEntryData{"relu", relu_plan(8)}));
  auto cache = PlanCache::open(path);
  REQUIRE(cache);
  device::ChipDesc wormhole = device::wormhole_b0();

  PlanQuery ok;
  ok.graph_key = planner::graph_key(g);
  ok.device = &wormhole;
  ok.policy = "dram";
  CHECK(cache->find("relu", ok));

  SUBCASE("stale planner") {
    PlanQuery q = ok;
    q.planner_version = "9.9.9";
    auto r = cache->find("relu", q);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::incompatible);
    CHECK(r.error().message == str("plan 'g': stale: planner ", kPlannerVersion, " ≠ 9.9.9"));
  }
  SUBCASE("another device") {
    device::ChipDesc blackhole = wormhole;
    blackhole.name = "blackhole_p150";
    blackhole.grid_x = 10;
    blackhole.grid_y = 13;
    PlanQuery q = ok;
    q.device = &blackhole;
    auto r = cache->find("relu", q);
    REQUIRE_FALSE(r);
    CHECK(r.error().message == "plan 'g': device wormhole_b0 8×8 ≠ blackhole_p150 10×13");
  }
  SUBCASE("same device name, other facts") {
    device::ChipDesc small = wormhole;
    small.l1_size = wormhole.l1_size / 2;
    PlanQuery q = ok;
    q.device = &small;
    auto r = cache->find("relu", q);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("descriptor differs") != std::string::npos);
    CHECK(r.error().message.find(str("L1 ", wormhole.l1_size, " ≠ ", small.l1_size)) !=
          std::string::npos);
  }
  SUBCASE("options differ") {
    PlanQuery q = ok;
    q.policy = "greedy";
    auto r = cache->find("relu", q);
    REQUIRE_FALSE(r);
    CHECK(r.error().message == "plan 'g': options differ: policy dram ≠ greedy");
  }
  SUBCASE("another graph") {
    PlanQuery q = ok;
    q.graph_key = planner::graph_key(relu_graph(16));
    auto r = cache->find("relu", q);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("graph differs: key " + planner::graph_key(g).hex()) !=
          std::string::npos);
  }
  SUBCASE("every differing field is listed") {
    PlanQuery q = ok;
    q.planner_version = "0.0.1";
    q.policy = "beam";
    auto r = cache->find("relu", q);
    REQUIRE_FALSE(r);
    CHECK(r.error().message == str("plan 'g': stale: planner ", kPlannerVersion,
                                   " ≠ 0.0.1; options differ: policy dram ≠ beam"));
  }
  SUBCASE("a name that is not there is not_found, not incompatible") {
    auto r = cache->find("other", ok);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::not_found);
  }
}

TEST_CASE("format minor versions are additive, majors are refused") {
  std::string schema(schemas::kPlanSchemaText);
  std::vector<uint8_t> plan = relu_plan(8);
  std::string json = to_json(plan, schema);
  // Round trip through JSON gives a plan that verifies (the route itself is sound).
  REQUIRE(verify_plan(from_json(json, schema), "round trip"));

  SUBCASE("a newer minor with a field this runtime does not know still loads") {
    std::string newer = schema;
    replace_once(newer, "  mesh: MeshInfo;\n}",
                 "  mesh: MeshInfo;\n  future_notes: string;\n  future_count: ulong;\n}");
    std::string j = json;
    replace_once(j, str("format_minor: ", kPlanFormatMinor), "format_minor: 7");
    replace_once(j, "metrics: {", "future_notes: \"added in 1.7\", future_count: 99, metrics: {");
    std::vector<uint8_t> bytes = from_json(j, newer);
    auto ref = verify_plan(bytes, "newer minor");
    REQUIRE(ref);
    CHECK(ref->plan().header()->format_minor() == 7);
    CHECK(ref->plan().ops()->size() == 1);
    test::TempDir dir;
    REQUIRE(write_cache(dir.file("c.mpc"), {CacheEntryData{"newer", bytes}}));
    auto cache = PlanCache::open(dir.file("c.mpc"));
    REQUIRE(cache);
    CHECK(cache->find("newer"));
  }
  SUBCASE("another major is a clear incompatible error") {
    std::string j = json;
    replace_once(j, "format_major: 1", "format_major: 2");
    auto ref = verify_plan(from_json(j, schema), "'m' in 'c.mpc'");
    REQUIRE_FALSE(ref);
    CHECK(ref.error().code == ErrorCode::incompatible);
    CHECK(ref.error().message ==
          str("plan 'm' in 'c.mpc': format 2.", kPlanFormatMinor, ", this runtime reads 1.x"));
  }
}

TEST_CASE("a plan whose non-conv op frees its input inside the op is refused at load") {
  // deallocate_activation (format 1.4) is valid only on a conv2d whose frees list holds its input;
  // a relu carrying it is a damaged plan, refused naming the op before anything runs.
  std::string schema(schemas::kPlanSchemaText);
  std::string j = to_json(relu_plan(8), schema);
  replace_once(j, "deallocate_activation: false", "deallocate_activation: true");
  auto ref = verify_plan(from_json(j, schema), "'m' in 'c.mpc'");
  REQUIRE_FALSE(ref);
  CHECK(ref.error().code == ErrorCode::corrupt);
  CHECK(ref.error().message.find("op 0 (") != std::string::npos);
  CHECK(ref.error().message.find("frees its input inside the op (deallocate_activation) but is "
                                 "not a conv2d") != std::string::npos);
}

TEST_CASE("remove_from_cache drops named entries and keeps the rest") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  REQUIRE(add_to_cache(path, CacheEntryData{"a", relu_plan(8)}));
  REQUIRE(add_to_cache(path, CacheEntryData{"b", relu_plan(16)}));
  REQUIRE(add_to_cache(path, CacheEntryData{"c", relu_plan(24)}));
  auto missing = remove_from_cache(path, {"a", "zz"});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::not_found);
  CHECK(PlanCache::open(path)->size() == 3);  // nothing removed on error
  auto r = remove_from_cache(path, {"b"});
  REQUIRE(r);
  std::vector<std::string> kept = r->kept;  // in key order: compare as a set
  std::sort(kept.begin(), kept.end());
  CHECK(kept == std::vector<std::string>{"a", "c"});
  REQUIRE(r->dropped.size() == 1);
  CHECK(r->dropped[0].name == "b");
  auto cache = PlanCache::open(path);
  REQUIRE(cache);
  CHECK(cache->size() == 2);
  CHECK_FALSE(cache->find("b"));
  CHECK(cache->find("a"));
  CHECK(cache->find("c"));
}

TEST_CASE("gc drops damaged, stale and unwanted entries, and dead writers' temp files") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  REQUIRE(add_to_cache(path, CacheEntryData{"a", relu_plan(8)}));
  REQUIRE(add_to_cache(path, CacheEntryData{"b", relu_plan(16)}));
  REQUIRE(add_to_cache(path, CacheEntryData{"c", relu_plan(24)}));

  SUBCASE("nothing to drop: the file is not rewritten") {
    auto before = std::filesystem::last_write_time(path);
    auto r = gc_cache(path, GcOptions{});
    REQUIRE(r);
    CHECK(r->kept.size() == 3);
    CHECK(r->dropped.empty());
    CHECK(std::filesystem::last_write_time(path) == before);
  }
  SUBCASE("a damaged entry is dropped, the others survive, and add works again") {
    auto cache = PlanCache::open(path);
    REQUIRE(cache);
    CacheEntryInfo b;
    for (size_t i = 0; i < cache->size(); ++i)
      if (cache->entry(i).name == "b") b = cache->entry(i);
    std::vector<uint8_t> v = test::read_bytes(path);
    v[b.offset + b.size / 2] ^= 0x40;
    test::write_bytes(path, v);
    // Adding refuses to rewrite a cache with a damaged entry...
    CHECK_FALSE(add_to_cache(path, CacheEntryData{"d", relu_plan(32)}));
    // ...gc drops exactly that entry, with the reason...
    auto r = gc_cache(path, GcOptions{});
    REQUIRE(r);
    REQUIRE(r->dropped.size() == 1);
    CHECK(r->dropped[0].name == "b");
    CHECK(r->dropped[0].reason.find("checksum mismatch") != std::string::npos);
    CHECK(r->kept.size() == 2);
    // ...and then adding works.
    REQUIRE(add_to_cache(path, CacheEntryData{"d", relu_plan(32)}));
    CHECK(PlanCache::open(path)->size() == 3);
  }
  SUBCASE("stale entries: another planner version") {
    GcOptions o;
    o.planner_version = "99.0";
    o.dry_run = true;
    auto r = gc_cache(path, o);
    REQUIRE(r);
    CHECK(r->dropped.size() == 3);
    CHECK(r->dropped[0].reason.find("stale: planner") != std::string::npos);
    CHECK(PlanCache::open(path)->size() == 3);  // dry run wrote nothing
  }
  SUBCASE("keep list") {
    GcOptions o;
    o.keep = {"c"};
    auto r = gc_cache(path, o);
    REQUIRE(r);
    CHECK(r->kept == std::vector<std::string>{"c"});
    CHECK(r->dropped.size() == 2);
    CHECK(PlanCache::open(path)->size() == 1);
  }
  SUBCASE("temp files of dead writers are deleted, live ones kept") {
    // PID 2^22+7 is above PID_MAX_LIMIT (2^22), so never a live process; our own PID is alive.
    std::string dead = path + ".tmp.4194311";
    std::string live = path + ".tmp." + std::to_string(::getpid());
    test::write_bytes(dead, {1, 2, 3});
    test::write_bytes(live, {1, 2, 3});
    auto r = gc_cache(path, GcOptions{});
    REQUIRE(r);
    CHECK(r->removed_temp_files == std::vector<std::string>{dead});
    CHECK_FALSE(std::filesystem::exists(dead));
    CHECK(std::filesystem::exists(live));
  }
  SUBCASE("a damaged index is not collected") {
    std::vector<uint8_t> v = test::read_bytes(path);
    v[80] ^= 1;
    test::write_bytes(path, v);
    auto r = gc_cache(path, GcOptions{});
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("remove the file") != std::string::npos);
    CHECK(test::read_bytes(path) == v);
  }
}

TEST_CASE("write_cache works for every entry count (index size independent of offsets)") {
  // Regression: the index was sized with a first offset of 0, which FlatBuffers omits as the
  // default, so some entry counts failed with "cache index size changed between passes".
  test::TempDir dir;
  std::vector<CacheEntryData> entries;
  for (int n = 1; n <= 40; ++n) {
    entries.push_back(CacheEntryData{"p" + std::to_string(n), relu_plan(4 * n)});
    std::string path = dir.file("c" + std::to_string(n) + ".mpc");
    auto w = write_cache(path, entries);
    INFO("entries: ", n, " ", (w ? std::string() : w.error().to_string()));
    REQUIRE(w);
    auto cache = PlanCache::open(path);
    REQUIRE(cache);
    CHECK(cache->size() == static_cast<size_t>(n));
    CHECK(cache->find("p" + std::to_string(n)));
  }
}
