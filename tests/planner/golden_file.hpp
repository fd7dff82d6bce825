// Golden files of plan digests: compared line by line, so a failure names the model and policy;
// MESHPLAN_UPDATE_GOLDEN=1 rewrites the file with the digests of the current code.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace meshplan::test {

inline void check_golden_lines(const std::string& path, const std::string& now) {
  if (const char* update = std::getenv("MESHPLAN_UPDATE_GOLDEN"); update && *update == '1') {
    std::ofstream(path) << now;
    MESSAGE("wrote ", path);
  }
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing ", path);
  std::stringstream want;
  want << in.rdbuf();
  std::istringstream a(now), b(want.str());
  std::string la, lb;
  while (std::getline(b, lb)) {
    REQUIRE(std::getline(a, la));
    CHECK(la == lb);
  }
  CHECK_FALSE(std::getline(a, la));
}

}  // namespace meshplan::test
