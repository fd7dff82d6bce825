// add_all_to_cache: many plans in one atomic write; replacement by name and aliases by key, among
// the new entries and against the cache's; invalid plans and damaged caches write nothing.
#include <doctest/doctest.h>

#include <algorithm>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/cache_edit.hpp"
#include "relu_plan.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::runtime;

namespace {

using testing::relu_plan;

std::vector<std::string> names_in(const std::string& path) {
  auto c = PlanCache::open(path);
  REQUIRE(c);
  std::vector<std::string> names;
  for (size_t i = 0; i < c->size(); ++i) names.emplace_back(c->entry(i).name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("add_all_to_cache writes every plan once, replaces by name and aliases by key") {
  test::TempDir dir;
  std::string path = dir.file("c.mpc");
  auto first = add_all_to_cache(path, {{"a", relu_plan(32)}, {"b", relu_plan(64)}});
  REQUIRE(first);
  CHECK(first->dropped.empty());
  CHECK(names_in(path) == std::vector<std::string>{"a", "b"});

  // Against the cache: "a" replaced by name; "b2" is the same plan as "b" (same key), so both
  // names stay, aliases of one stored plan.
  auto second =
      add_all_to_cache(path, {{"a", relu_plan(96)}, {"b2", relu_plan(64)}, {"c", relu_plan(128)}});
  REQUIRE(second);
  CHECK(second->dropped.empty());
  CHECK(names_in(path) == std::vector<std::string>{"a", "b", "b2", "c"});
  auto c = PlanCache::open(path);
  REQUIRE(c);
  auto a = c->find("a");
  REQUIRE(a);
  CHECK(a->key() == verify_plan(relu_plan(96), "a")->key());
  auto b = c->find("b");
  auto b2 = c->find("b2");
  REQUIRE(b);
  REQUIRE(b2);
  CHECK(b->key() == verify_plan(relu_plan(64), "b")->key());
  CHECK(b->bytes().data() == b2->bytes().data());  // one copy of the plan in the file

  // Among the new entries: two names of one plan are both kept.
  auto both = add_all_to_cache(path, {{"e1", relu_plan(224)}, {"e2", relu_plan(224)}});
  REQUIRE(both);
  CHECK(both->dropped.empty());
  auto e = PlanCache::open(path);
  REQUIRE(e);
  CHECK(e->find("e1"));
  CHECK(e->find("e2"));

  // Among the new entries: the later one wins and the earlier is reported.
  auto third = add_all_to_cache(path, {{"d", relu_plan(160)}, {"d", relu_plan(192)}});
  REQUIRE(third);
  REQUIRE(third->dropped.size() == 1);
  CHECK(third->dropped[0].name == "d");
  CHECK(third->dropped[0].reason == "replaced by 'd' (same name)");
  auto reopened = PlanCache::open(path);  // PlanRefs point into the mapping: keep it open
  REQUIRE(reopened);
  auto d = reopened->find("d");
  REQUIRE(d);
  CHECK(d->key() == verify_plan(relu_plan(192), "d")->key());
}

TEST_CASE("add_all_to_cache writes nothing for an invalid plan or over a damaged cache") {
  test::TempDir dir;
  std::string path = dir.file("c.mpc");
  REQUIRE(add_all_to_cache(path, {{"a", relu_plan(32)}}));
  std::vector<uint8_t> before = test::read_bytes(path);

  std::vector<uint8_t> bad = relu_plan(64);
  bad[9] ^= 0x40;  // inside the file identifier MPLN
  auto invalid = add_all_to_cache(path, {{"b", relu_plan(96)}, {"bad", bad}});
  REQUIRE(!invalid);
  CHECK(invalid.error().message.find("'bad'") != std::string::npos);
  CHECK(test::read_bytes(path) == before);

  std::vector<uint8_t> damaged = before;
  damaged[damaged.size() - 8] ^= 0x20;  // inside the last plan: its checksum no longer matches
  test::write_bytes(path, damaged);
  auto refused = add_all_to_cache(path, {{"b", relu_plan(96)}});
  REQUIRE(!refused);
  CHECK(refused.error().message.find("not rewriting") != std::string::npos);
  CHECK(test::read_bytes(path) == damaged);
}
