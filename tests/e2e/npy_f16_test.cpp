// meshplan-run reads float16 .npy inputs (NumPy's '<f2'): exact conversion to float32,
// including the largest half, a subnormal and signed zero.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

const std::string kBin = MESHPLAN_BINARY_DIR;

/// A version-1 .npy file of `descr` with the given shape text and raw little-endian data.
std::vector<uint8_t> npy(const std::string& descr, const std::string& shape,
                         const std::vector<uint8_t>& data) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(data.begin(), data.end());
  return std::vector<uint8_t>(out.begin(), out.end());
}

}  // namespace

TEST_CASE("meshplan-run: float16 .npy inputs") {
  meshplan::test::TempDir dir;
  std::string graph = dir.file("g.json"), cache = dir.file("c.mpc");
  std::string json = R"({ "name": "id", "arguments": [
      { "value": { "name": "x", "shape": [1, 6], "dtype": "f32" } },
      { "value": { "name": "y", "shape": [1, 6], "dtype": "f32" } }],
    "ops": [{ "kind": "add", "operands": ["x", "y"], "results": [{ "name": "s", "dtype": "f32" }] }],
    "outputs": ["s"] })";
  meshplan::test::write_bytes(graph, std::vector<uint8_t>(json.begin(), json.end()));
  REQUIRE(meshplan::test::run_shell(kBin + "/planner/meshplan-compile " + graph + " -o " + cache +
                                    " --name id --policy dram")
              .status == 0);
  // 1.0, -2.0, 0.5, 65504 (largest half), 2^-24 (smallest subnormal), -0.0.
  std::vector<uint8_t> halves = {0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38,
                                 0xff, 0x7b, 0x01, 0x00, 0x00, 0x80};
  meshplan::test::write_bytes(dir.file("x.npy"), npy("<f2", "(1, 6)", halves));
  std::vector<uint8_t> zeros(6 * 4, 0);
  meshplan::test::write_bytes(dir.file("y.npy"), npy("<f4", "(1, 6)", zeros));
  auto r = meshplan::test::run_shell(kBin + "/runtime/meshplan-run " + cache +
                                     " --name id --input=@" + dir.file("x.npy") + " --input=@" +
                                     dir.file("y.npy") + " --output=@" + dir.file("s.npy"));
  INFO(r.text);
  REQUIRE(r.status == 0);
  std::vector<uint8_t> out = meshplan::test::read_bytes(dir.file("s.npy"));
  REQUIRE(out.size() > 6 * 4);
  float s[6];
  std::memcpy(s, out.data() + out.size() - sizeof s, sizeof s);
  CHECK(s[0] == 1.0f);
  CHECK(s[1] == -2.0f);
  CHECK(s[2] == 0.5f);
  CHECK(s[3] == 65504.0f);
  CHECK(s[4] == 5.9604644775390625e-08f);
  CHECK(s[5] == 0.0f);

  // Other dtypes are still refused, naming the three accepted ones.
  meshplan::test::write_bytes(dir.file("i.npy"), npy("<i2", "(1, 6)", halves));
  auto bad =
      meshplan::test::run_shell(kBin + "/runtime/meshplan-run " + cache + " --name id --input=@" +
                                dir.file("i.npy") + " --input=@" + dir.file("y.npy"));
  CHECK(bad.status == 1);
  CHECK(bad.text.find("float16 ('<f2')") != std::string::npos);
}
