// meshplan-server's admin `reload` with real loopback clients: a plan rewritten under the same
// name by meshplan-compile is served after reload (its tensors equal to a local run and to
// values worked out by hand), requests pipelined around the reload are all answered, and a
// reload of a damaged, partly damaged or missing cache keeps serving the old plans and names
// the file.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "e2e/server_client.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::server_test;

namespace {

// [[1,-2,3],[-4,5,-6]] as little-endian f32 in base64, and two functions of it: relu
// [[1,0,3],[0,5,0]] and negation [[-1,2,-3],[4,-5,6]] (worked out with Python's struct and
// base64).
const std::string kX = "AACAPwAAAMAAAEBAAACAwAAAoEAAAMDA";
const std::string kRelu = "AACAPwAAAAAAAEBAAAAAAAAAoEAAAAAA";
const std::string kNeg = "AACAvwAAAEAAAEDAAACAQAAAoMAAAMBA";
const std::string kRequest = "run tiny --input=x=2x3xf32=base64:" + kX + " tensors";

/// The base64 data of a reply's first tensor ("" when it has none).
std::string tensor_of(const std::string& reply) {
  const std::string field = " tensor0=2x3xf32=base64:";
  size_t at = reply.find(field);
  return at == std::string::npos
             ? ""
             : reply.substr(at + field.size(), reply.find(' ', at + 1) - at - field.size());
}

/// XXH3-128 (hex) of plan `name`'s output for x, run locally from the cache file on a fresh
/// emulated chip: what the server must answer after loading that file.
std::string local_digest(const std::string& cache, const std::string& name) {
  auto opened = runtime::PlanCache::open(cache);
  REQUIRE(opened);
  auto plan = opened->find(name);
  REQUIRE(plan);
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto exe = runtime::Executable::bind(*plan, **dev);
  REQUIRE(exe);
  runtime::Tensor x({2, 3});
  x.data = {1, -2, 3, -4, 5, -6};
  std::vector<runtime::Tensor> inputs{x};
  auto views = runtime::views_of(inputs);
  auto run = (*exe)->run(views);
  REQUIRE(run);
  const runtime::Tensor& out = run->outputs.at(0);
  return xxh3_128(out.data.data(), out.data.size() * sizeof(float)).hex();
}

/// Rewrites the cache's "tiny" entry with graph `kind` of x (same name, same input).
void compile_tiny(const test::TempDir& dir, const std::string& cache, const std::string& kind) {
  std::string graph = R"({ name: "tiny", arguments: [{ value: { name: "x", shape: [2, 3],
      dtype: "bf16" } }], ops: [{ kind: ")" +
                      kind + R"(", operands: ["x"], results: [{ name: "r" }] }], outputs: ["r"] })";
  std::string file = dir.file(kind + ".json");
  test::write_bytes(file, std::vector<uint8_t>(graph.begin(), graph.end()));
  REQUIRE(test::run_shell(kBin + "/planner/meshplan-compile " + file + " -o " + cache).status == 0);
}

/// Replaces `path` with `bytes` as cache writers do (a new file renamed over it): a file
/// rewritten in place would change the pages the server has mapped.
void replace_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  test::write_bytes(path + ".new", bytes);
  std::filesystem::rename(path + ".new", path);
}

}  // namespace

TEST_CASE("meshplan-server reload: a plan rewritten under the same name is served after it") {
  test::TempDir dir;
  std::string cache = make_cache(dir);
  ServerProcess server({cache, "--port", "0", "--threads", "2", "--remote-admin"});
  INFO(server.log);
  REQUIRE(server.port > 0);
  int client = connect_to(server.port), admin = connect_to(server.port);

  std::string before = ask(client, kRequest);
  CHECK(before.rfind("ok #0 tiny ", 0) == 0);
  CHECK(tensor_of(before) == kRelu);
  CHECK(fields(before)["xxh0"] == local_digest(cache, "tiny"));

  // meshplan-compile replaces the entry (a new file renamed over the old; the server still maps
  // the old one). Until reload the server answers with the old plan.
  compile_tiny(dir, cache, "neg");
  CHECK(tensor_of(ask(client, kRequest)) == kRelu);

  // Requests pipelined on another connection while the reload runs: each is answered, by the
  // old plan or the new one, never with an error.
  int busy = connect_to(server.port);
  std::string burst;
  for (int i = 0; i < 8; ++i) burst += kRequest + "\n";
  send_all(busy, burst);
  std::string reloaded = ask(admin, "reload");
  CHECK(reloaded.rfind("ok #0 reloaded plans=2 bound=2 ms=", 0) == 0);
  std::string pending, line;
  for (int i = 0; i < 8; ++i) {
    REQUIRE(read_line(busy, &pending, &line, 30));
    CAPTURE(line);
    CHECK(line.rfind("ok #", 0) == 0);
    CHECK((tensor_of(line) == kRelu || tensor_of(line) == kNeg));
  }
  ::close(busy);

  std::string after = ask(client, kRequest);
  CHECK(after.rfind("ok #2 tiny ", 0) == 0);
  CHECK(tensor_of(after) == kNeg);
  CHECK(fields(after)["xxh0"] == local_digest(cache, "tiny"));
  CHECK(ask(client, "run mlp random 3").rfind("ok #3 mlp ", 0) == 0);

  CHECK(ask(admin, "quit") == "bye #1");
  ::close(client);
  ::close(admin);
  CHECK(server.wait() == 0);
  CHECK(server.log.find("meshplan-server: reloaded plans=2 bound=2 ms=") != std::string::npos);
  CHECK(server.log.find("; reloads: 1") != std::string::npos);
}

TEST_CASE("meshplan-server reload of a damaged or missing cache keeps serving the old plans") {
  test::TempDir dir;
  std::string cache = make_cache(dir);
  ServerProcess server({cache, "--port", "0", "--threads", "1", "--remote-admin"});
  INFO(server.log);
  REQUIRE(server.port > 0);
  int fd = connect_to(server.port);
  CHECK(tensor_of(ask(fd, kRequest)) == kRelu);
  const std::vector<uint8_t> good = test::read_bytes(cache);

  // Not a cache at all.
  std::string garbage = "this is not a plan cache";
  replace_file(cache, std::vector<uint8_t>(garbage.begin(), garbage.end()));
  std::string r = ask(fd, "reload");
  CAPTURE(r);
  CHECK(r.rfind("error #1 corrupt: reload of " + cache +
                    " failed; still serving the 2 plans loaded before: ",
                0) == 0);
  CHECK(tensor_of(ask(fd, kRequest)) == kRelu);

  // Missing.
  std::filesystem::remove(cache);
  r = ask(fd, "reload");
  CAPTURE(r);
  CHECK(r.rfind("error #3 not_found: reload of " + cache + " failed", 0) == 0);
  CHECK(tensor_of(ask(fd, kRequest)) == kRelu);

  // A new tiny whose bytes are damaged: the index is sound, the entry fails its checksum. Its
  // graph name, after the index, is the last "tiny" in the file.
  replace_file(cache, good);
  compile_tiny(dir, cache, "neg");
  std::vector<uint8_t> bytes = test::read_bytes(cache);
  std::string text(bytes.begin(), bytes.end());
  size_t at = text.rfind("tiny");
  REQUIRE(at != std::string::npos);
  bytes[at] ^= 0x20;
  replace_file(cache, bytes);
  r = ask(fd, "reload");
  CAPTURE(r);
  CHECK(r.rfind("error #5 corrupt: reload of " + cache + " failed", 0) == 0);
  CHECK(r.find("('tiny') fails verification") != std::string::npos);
  CHECK(tensor_of(ask(fd, kRequest)) == kRelu);
  CHECK(ask(fd, "list") == "ok #7 plans=2 mlp tiny");

  // Repaired: the next reload serves the new plan.
  replace_file(cache, good);
  compile_tiny(dir, cache, "neg");
  CHECK(ask(fd, "reload").rfind("ok #8 reloaded plans=2 bound=2 ", 0) == 0);
  CHECK(tensor_of(ask(fd, kRequest)) == kNeg);
  CHECK(ask(fd, "quit") == "bye #10");
  ::close(fd);
  CHECK(server.wait() == 0);
  CHECK(server.log.find("done: 5 served, 3 failed") != std::string::npos);
}
