// Bad input never crashes: every prefix and many single-byte mutations of the seed modules
// either parse and run through the mesh pipeline, or fail with a located error.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "meshplan/planner/spmd.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

int attempt(const std::string& text) {
  auto m = parse_module(text, "fuzz.mlir");
  if (!m) {
    CHECK(m.error().message.starts_with("fuzz.mlir:"));
    return 0;
  }
  PipelineOptions o;
  o.mesh_rows = 1;
  o.mesh_cols = m->main_mesh() ? m->main_mesh()->devices() : 2;
  auto s = run_pipeline(*m, o);
  if (s) {
    auto again = parse_module(print_module(*m), "printed.mlir");
    CHECK_MESSAGE(again.has_value(), (again ? "" : again.error().message + "\n" + text));
  }
  return 1;
}

}  // namespace

TEST_CASE("truncated and mutated modules fail cleanly") {
  std::mt19937 rng(1234);
  const std::string junk = "{}[]<>()%@#\":,=x?-0123456789 \nabc";
  int parsed = 0, tried = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(test::source_path("tests/planner/golden"))) {
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    for (size_t n = 0; n < text.size(); n += 13, ++tried) parsed += attempt(text.substr(0, n));
    for (int k = 0; k < 60; ++k, ++tried) {
      std::string t = text;
      t[rng() % t.size()] = junk[rng() % junk.size()];
      parsed += attempt(t);
    }
  }
  CHECK(tried > 1000);
  CHECK(parsed > 0);
}
