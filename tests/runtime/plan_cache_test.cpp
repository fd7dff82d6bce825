// Plan cache: write, open, find, verify; and every kind of damage gives a clear error, never a
// crash, and never loses the entries that are still good.
#include "meshplan/runtime/plan_cache.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/cache_edit.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::runtime;

namespace {

/// A plan for a one-op graph whose input width is `width` (distinct widths, distinct keys).
std::vector<uint8_t> plan_bytes(int width, const std::string& name = "g") {
  std::string json =
      R"({ name: ")" + name + R"(", arguments: [{ value: { name: "x", shape: [4, )" +
      std::to_string(width) +
      R"(], dtype: "bf16" } }], ops: [{ kind: "relu", operands: ["x"], results: [{ name: "y" }] }], outputs: ["y"] })";
  auto g = planner::import_graph_json(json);
  REQUIRE(g);
  auto p =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE(p);
  return p->bytes;
}

Hash128 key_of(const std::vector<uint8_t>& bytes) {
  auto ref = verify_plan(bytes, "test");
  REQUIRE(ref);
  return ref->key();
}

}  // namespace

TEST_CASE("write, open, find by key and by name") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  std::vector<CacheEntryData> entries;
  std::vector<Hash128> keys;
  for (int i = 0; i < 20; ++i) {
    entries.push_back(CacheEntryData{"plan" + std::to_string(19 - i), plan_bytes(8 + i)});
    keys.push_back(key_of(entries.back().plan));
  }
  REQUIRE(write_cache(path, entries));
  auto cache = PlanCache::open(path);
  REQUIRE(cache);
  CHECK(cache->size() == 20);
  for (int i = 0; i < 20; ++i) {
    auto by_key = cache->find(keys[i]);
    REQUIRE(by_key);
    CHECK(by_key->key() == keys[i]);
    CHECK(reinterpret_cast<uintptr_t>(by_key->bytes().data()) % 64 == 0);
    auto by_name = cache->find("plan" + std::to_string(19 - i));
    REQUIRE(by_name);
    CHECK(by_name->key() == keys[i]);
    CHECK(by_name->bytes().data() ==
          by_key->bytes().data());  // zero copy: both point into the mapping
  }
  for (size_t i = 1; i < cache->size(); ++i)
    CHECK(key_less(cache->entry(i - 1).key, cache->entry(i).key));
  auto missing = cache->find("nope");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::not_found);
  CHECK(missing.error().message.find("'nope'") != std::string::npos);
  auto missing_key = cache->find(Hash128{1, 2});
  REQUIRE_FALSE(missing_key);
  CHECK(missing_key.error().message.find(Hash128{1, 2}.hex()) != std::string::npos);
  CHECK(cache->entry(0).device == "wormhole_b0");
  CHECK(cache->entry(0).policy == "dram");
}

TEST_CASE("an empty cache opens") {
  test::TempDir dir;
  REQUIRE(write_cache(dir.file("empty.mpc"), {}));
  auto cache = PlanCache::open(dir.file("empty.mpc"));
  REQUIRE(cache);
  CHECK(cache->size() == 0);
  CHECK_FALSE(cache->find("x"));
}

TEST_CASE("add_to_cache adds, replaces by name, keeps another name of one key as an alias") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  REQUIRE(add_to_cache(path, CacheEntryData{"a", plan_bytes(8)}));
  REQUIRE(add_to_cache(path, CacheEntryData{"b", plan_bytes(16)}));
  REQUIRE(add_to_cache(path, CacheEntryData{"a", plan_bytes(24)}));  // same name: replaced
  REQUIRE(add_to_cache(path, CacheEntryData{"c", plan_bytes(16)}));  // same key as b: alias
  auto cache = PlanCache::open(path);
  REQUIRE(cache);
  CHECK(cache->size() == 3);
  CHECK(cache->find("a")->key() == key_of(plan_bytes(24)));
  auto b = cache->find("b");
  auto c = cache->find("c");
  REQUIRE(b);
  REQUIRE(c);
  CHECK(b->key() == key_of(plan_bytes(16)));
  CHECK(b->bytes().data() == c->bytes().data());  // stored once
  auto by_key = cache->find(key_of(plan_bytes(16)));
  REQUIRE(by_key);
  CHECK(by_key->bytes().data() == b->bytes().data());
  // Two entries share the plan's offset; the file holds two plans, not three.
  std::set<uint64_t> offsets;
  for (size_t i = 0; i < cache->size(); ++i) offsets.insert(cache->entry(i).offset);
  CHECK(offsets.size() == 2);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp." + std::to_string(::getpid())));

  // Removing one name keeps the other; replacing one name by another plan leaves the alias.
  REQUIRE(remove_from_cache(path, {"b"}));
  auto after = PlanCache::open(path);
  REQUIRE(after);
  CHECK(after->size() == 2);
  CHECK_FALSE(after->find("b"));
  CHECK(after->find("c")->key() == key_of(plan_bytes(16)));
  REQUIRE(add_to_cache(path, CacheEntryData{"d", plan_bytes(16)}));
  REQUIRE(add_to_cache(path, CacheEntryData{"d", plan_bytes(32)}));
  auto last = PlanCache::open(path);
  REQUIRE(last);
  CHECK(last->find("c")->key() == key_of(plan_bytes(16)));
  CHECK(last->find("d")->key() == key_of(plan_bytes(32)));
}

TEST_CASE("readers that mapped the old file keep working after a rewrite") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  REQUIRE(add_to_cache(path, CacheEntryData{"a", plan_bytes(8)}));
  auto old = PlanCache::open(path);
  REQUIRE(old);
  auto plan = old->find("a");
  REQUIRE(plan);
  REQUIRE(add_to_cache(path, CacheEntryData{"a", plan_bytes(40)}));
  CHECK(plan->plan().tensors()->Get(0)->shape()->Get(1) == 8);  // still the old mapping
  CHECK(old->find("a"));
  auto fresh = PlanCache::open(path);
  REQUIRE(fresh);
  CHECK(fresh->find("a")->plan().tensors()->Get(0)->shape()->Get(1) == 40);
}

TEST_CASE("a private copy survives its file being rewritten in place") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  REQUIRE(add_to_cache(path, CacheEntryData{"a", plan_bytes(8)}));
  auto copy = PlanCache::open(path, PlanCacheOptions{.private_copy = true});
  REQUIRE(copy);
  // Truncate and rewrite the same inode, as `cp other.mpc plans.mpc` does: a mapping of it
  // would fault on its next read.
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << "not a cache";
  }
  CHECK(std::filesystem::file_size(path) == 11);
  auto plan = copy->find("a");
  REQUIRE(plan);
  CHECK(plan->plan().tensors()->Get(0)->shape()->Get(1) == 8);
  CHECK(copy->entry(0).name == "a");
  // Opening the rewritten file, copied or mapped, is a clear error.
  for (bool private_copy : {true, false}) {
    auto again = PlanCache::open(path, PlanCacheOptions{.private_copy = private_copy});
    REQUIRE_FALSE(again);
    CHECK(again.error().code == ErrorCode::corrupt);
  }
}

TEST_CASE("damaged caches give clear errors") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  REQUIRE(
      write_cache(path, {CacheEntryData{"a", plan_bytes(8)}, CacheEntryData{"b", plan_bytes(16)}}));
  std::vector<uint8_t> good = test::read_bytes(path);
  std::string bad = dir.file("bad.mpc");

  SUBCASE("missing file") {
    auto c = PlanCache::open(dir.file("absent.mpc"));
    REQUIRE_FALSE(c);
    CHECK(c.error().code == ErrorCode::not_found);
  }
  SUBCASE("truncated anywhere") {
    for (size_t len : {size_t{0}, size_t{10}, size_t{63}, size_t{64}, size_t{100}, good.size() / 2,
                       good.size() - 1}) {
      test::write_bytes(
          bad, std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len)));
      auto c = PlanCache::open(bad);
      REQUIRE_FALSE(c);
      CHECK(c.error().code == ErrorCode::corrupt);
      CHECK(c.error().message.find("truncated") != std::string::npos);
    }
  }
  SUBCASE("not a cache") {
    std::vector<uint8_t> junk(200, 'x');
    test::write_bytes(bad, junk);
    auto c = PlanCache::open(bad);
    REQUIRE_FALSE(c);
    CHECK(c.error().message.find("bad magic") != std::string::npos);
  }
  SUBCASE("newer format major") {
    std::vector<uint8_t> v = good;
    v[8] = 2;  // major version lives after the 8-byte magic
    test::write_bytes(bad, v);
    auto c = PlanCache::open(bad);
    REQUIRE_FALSE(c);
    CHECK(c.error().code == ErrorCode::incompatible);
    CHECK(c.error().message.find("format 2.0") != std::string::npos);
  }
  SUBCASE("a bit flip in the index") {
    std::vector<uint8_t> v = good;
    v[80] ^= 0x10;
    test::write_bytes(bad, v);
    auto c = PlanCache::open(bad);
    REQUIRE_FALSE(c);
    CHECK(c.error().message.find("index checksum mismatch") != std::string::npos);
  }
  SUBCASE("a bit flip in one plan spoils that plan only") {
    auto cache = PlanCache::open(path);
    REQUIRE(cache);
    CacheEntryInfo a = cache->entry(0);
    std::string a_name(a.name);
    std::vector<uint8_t> v = good;
    v[a.offset + a.size / 2] ^= 0x01;
    test::write_bytes(bad, v);
    auto damaged = PlanCache::open(bad);
    REQUIRE(damaged);  // the index is fine
    auto pa = damaged->find(a_name);
    REQUIRE_FALSE(pa);
    CHECK(pa.error().code == ErrorCode::corrupt);
    CHECK(pa.error().message.find("checksum mismatch") != std::string::npos);
    CHECK(pa.error().message.find(a_name) != std::string::npos);
    CHECK(damaged->find(a_name == "a" ? "b" : "a"));  // the other entry still loads
  }
}

TEST_CASE("every single-bit flip of a cache is caught or harmless, never a crash") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  REQUIRE(write_cache(path, {CacheEntryData{"a", plan_bytes(8)}}));
  std::vector<uint8_t> good = test::read_bytes(path);
  std::string bad = dir.file("bad.mpc");
  int opened = 0, rejected = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> v = good;
    v[i] ^= static_cast<uint8_t>(1u << (i % 8));
    test::write_bytes(bad, v);
    auto c = PlanCache::open(bad);
    if (!c) {
      ++rejected;
      continue;
    }
    auto p = c->find("a");
    if (p)
      ++opened;  // only possible where the flip hit padding that no checksum covers
    else
      ++rejected;
  }
  // Header, index and plan bytes are all covered; only alignment padding may flip unnoticed.
  CHECK(rejected > static_cast<int>(good.size()) * 9 / 10);
  CHECK(opened + rejected == static_cast<int>(good.size()));
}

TEST_CASE("verify_plan rejects foreign and damaged plan bytes") {
  std::vector<uint8_t> p = plan_bytes(8);
  CHECK(verify_plan(p, "ok"));
  SUBCASE("wrong identifier") {
    std::vector<uint8_t> v = p;
    std::memcpy(v.data() + 8, "XXXX", 4);
    auto r = verify_plan(v, "x");
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("wrong file identifier") != std::string::npos);
  }
  SUBCASE("truncated") {
    std::vector<uint8_t> v(p.begin(), p.begin() + 40);
    auto r = verify_plan(v, "x");
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("truncated") != std::string::npos);
  }
  SUBCASE("too short for a size prefix") {
    std::vector<uint8_t> v(p.begin(), p.begin() + 3);
    CHECK_FALSE(verify_plan(v, "x"));
  }
  SUBCASE("a size prefix with no room for the identifier (found by the fuzzer)") {
    // 8 bytes: prefix 1, then 4 bytes; the identifier would be read at bytes 8..11.
    std::vector<uint8_t> v = {0x01, 0x00, 0x00, 0x00, 'M', 'P', 'L', 'A'};
    auto r = verify_plan(v, "x");
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("truncated") != std::string::npos);
    std::vector<uint8_t> w = {0x04, 0x00, 0x00, 0x00, 0, 0, 0, 0, 'M', 'P', 'L', 'N'};
    auto r2 = verify_plan(w, "x");
    REQUIRE_FALSE(r2);
    CHECK(r2.error().message.find("truncated") != std::string::npos);
  }
  SUBCASE("every byte flipped: never a crash") {
    for (size_t i = 0; i < p.size(); ++i) {
      std::vector<uint8_t> v = p;
      v[i] ^= 0xff;
      auto r = verify_plan(v, "x");
      if (r) CHECK(r->plan().ops()->size() == 1);  // a flip the plan tolerates (e.g. in a name)
    }
  }
}

TEST_CASE("add_to_cache refuses to overwrite a damaged cache and leaves it as it was") {
  test::TempDir dir;
  std::string path = dir.file("plans.mpc");
  std::vector<uint8_t> junk(300, 0x5a);
  test::write_bytes(path, junk);
  auto r = add_to_cache(path, CacheEntryData{"a", plan_bytes(8)});
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("not overwriting") != std::string::npos);
  CHECK(test::read_bytes(path) == junk);
}
