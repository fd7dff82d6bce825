// The inference server example: the stdin session, the loopback TCP server with concurrent
// pipelined clients whose answers are checked against the host reference and a local run, bad
// requests answered with errors while serving goes on, and clean shutdown by `quit` and SIGTERM;
// the connection limit (one over it refused with the limit named) and closed connections' reader
// threads joined while serving; ring and linear plans of one model served on their own meshes.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "e2e/server_client.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::server_test;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// What the server must answer for `run NAME random SEED`, from a local run on the same
/// emulated chip (bit-identical), after checking that local run against the host reference.
struct Expected {
  std::string shape, sum, absmax, xxh;
  double ref_sum = 0, ref_l1 = 0;
};

Expected expect(const runtime::PlanCache& cache, const std::string& name, uint64_t seed) {
  auto plan = cache.find(name);
  REQUIRE(plan);
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto exe = runtime::Executable::bind(*plan, **dev);
  REQUIRE(exe);
  auto inputs = runtime::random_inputs(*plan, seed);
  auto views = runtime::views_of(inputs);
  auto run = (*exe)->run(views);
  REQUIRE(run);
  auto ref = runtime::run_reference(*plan, views);
  REQUIRE(ref);
  REQUIRE(runtime::check_outputs(run->outputs, *ref, runtime::kDefaultTolerance).ok);
  const runtime::Tensor& t = run->outputs.at(0);
  Expected e;
  double sum = 0, absmax = 0;
  for (float v : t.data) {
    sum += v;
    absmax = std::max(absmax, static_cast<double>(std::fabs(v)));
  }
  for (float v : ref->at(0).data) {
    e.ref_sum += v;
    e.ref_l1 += std::fabs(v);
  }
  char buf[64];
  for (size_t d = 0; d < t.shape.size(); ++d)
    e.shape += (d ? "x" : "") + std::to_string(t.shape[d]);
  std::snprintf(buf, sizeof buf, "%.9g", sum);
  e.sum = buf;
  std::snprintf(buf, sizeof buf, "%.9g", absmax);
  e.absmax = buf;
  e.xxh = xxh3_128(t.data.data(), t.data.size() * sizeof(float)).hex();
  return e;
}

}  // namespace

TEST_CASE("meshplan-server on stdin: start-up report, requests from several threads, errors") {
  test::TempDir dir;
  std::string cache = make_cache(dir);
  std::string requests = dir.file("requests.txt");
  std::string text = "list\n";
  for (int i = 0; i < 30; ++i)
    text += (i % 3 ? "run mlp " : "run tiny random ") + std::to_string(i) + "\n";
  text += "run tiny --input=2x3xf32=[[1,-2,3],[-4,5,-6]]\n";
  text += "run tiny --input=x=2x3xf32\n";  // values missing
  text +=
      "run nope\nrun tiny --input=3x3xf32=1\nfrobnicate\nquit\nrun mlp\n";  // after quit: ignored
  test::write_bytes(requests, std::vector<uint8_t>(text.begin(), text.end()));
  auto out = test::run_shell(kBin + "/examples/meshplan-server " + cache +
                             " --threads 4 --shutdown-timeout 300 < " + requests);
  INFO(out.text);
  CHECK(out.status == 0);
  CHECK(out.text.find("ready: 2 of 2 plans from") != std::string::npos);
  CHECK(out.text.find("2 bound on 4 worker threads in") != std::string::npos);
  CHECK(out.text.find("ok #0 plans=2 mlp tiny\n") != std::string::npos);
  CHECK(count(out.text, "\nok #") == 32);  // list + 31 runs
  CHECK(out.text.find("tiny device_us=") != std::string::npos);
  // relu of the given input: 1 + 3 + 5, largest 5.
  CHECK(out.text.find("outputs=1 out0=2x3 sum0=9 absmax0=5 xxh0=") != std::string::npos);
  CHECK(count(out.text, "\nerror #") == 4);
  CHECK(out.text.find("error #32 invalid_argument: input 0 ('x'): no values given, 6 expected "
                      "for shape [2x3] (--input=2x3xf32=VALUES, one value to fill it, or "
                      "2x3xf32=base64:DATA)") != std::string::npos);
  CHECK(out.text.find("error #33 not_found: no plan named 'nope' (serving: mlp, tiny)") !=
        std::string::npos);
  CHECK(out.text.find("shape [3x3] does not match the plan's [2x3]") != std::string::npos);
  CHECK(out.text.find("error #35 invalid_argument: expected 'run NAME") != std::string::npos);
  CHECK(out.text.find("bye #36") != std::string::npos);
  CHECK(out.text.find("done: 31 served, 4 failed") != std::string::npos);
}

TEST_CASE("meshplan-server takes and returns tensors as base64 of little-endian f32") {
  test::TempDir dir;
  std::string cache = make_cache(dir);
  // [[1,-2,3],[-4,5,-6]] and its relu [[1,0,3],[0,5,0]] as little-endian f32, in base64
  // (worked out with Python's base64 and NumPy).
  const std::string x = "AACAPwAAAMAAAEBAAACAwAAAoEAAAMDA", r = "AACAPwAAAAAAAEBAAAAAAAAAoEAAAAAA";
  std::string text = "run tiny --input=x=2x3xf32=base64:" + x + " tensors\n";  // by name
  text += "run tiny --input=2x3xf32=base64:" + x + " tensors\n";               // in order
  text += "run tiny --input=2x3xf32=base64:" + x.substr(4) + "\n";             // short
  text += "run tiny --input=2x3xf32=base64:" + std::string(x.size(), '!') + "\n";
  text += "run tiny --input=y=2x3xf32=base64:" + x + "\n";
  text += "run tiny --input=x=@/etc/passwd\n";
  text += "reload\nrun tiny --input=2x3xf32=base64:" + x + " tensors\n";  // stdin is the admin
  std::string requests = dir.file("requests.txt");
  test::write_bytes(requests, std::vector<uint8_t>(text.begin(), text.end()));
  auto out =
      test::run_shell(kBin + "/examples/meshplan-server " + cache + " --threads 1 < " + requests);
  INFO(out.text);
  CHECK(out.status == 0);
  CHECK(out.text.find("warm-up") != std::string::npos);
  CHECK(out.text.find(" sum0=9 absmax0=5 ") != std::string::npos);
  CHECK(out.text.find("error #2 invalid_argument: input 0 ('x'): 28 base64 characters, expected "
                      "32 for 24 bytes of f32") != std::string::npos);
  CHECK(out.text.find("error #3 invalid_argument: input 0 ('x'): the data after base64: is not "
                      "base64") != std::string::npos);
  CHECK(out.text.find("error #4 invalid_argument: plan 'tiny' has no input named 'y'") !=
        std::string::npos);
  CHECK(out.text.find("error #5 invalid_argument: file inputs") != std::string::npos);
  CHECK(out.text.find("ok #6 reloaded plans=2 bound=2 ms=") != std::string::npos);
  CHECK(out.text.find("ok #7 tiny ") != std::string::npos);
  CHECK(count(out.text, "name0=r tensor0=2x3xf32=base64:" + r + "\n") == 3);
}

TEST_CASE("meshplan-server on a loopback port: concurrent clients get the reference's answers") {
  test::TempDir dir;
  std::string cache = make_cache(dir);
  ServerProcess server(
      {cache, "--port", "0", "--threads", "3", "--remote-quit", "--max-request-bytes", "1048576"});
  INFO(server.log);
  REQUIRE(server.port > 0);
  CHECK(server.log.find("ready: 2 of 2 plans from") != std::string::npos);

  auto opened = runtime::PlanCache::open(cache);
  REQUIRE(opened);
  constexpr int kClients = 4, kPerClient = 6;
  std::map<std::pair<std::string, uint64_t>, Expected> expected;
  for (int c = 0; c < kClients; ++c)
    for (int r = 0; r < kPerClient; ++r) {
      std::string name = r % 2 ? "tiny" : "mlp";
      uint64_t seed = 100 * c + r;
      expected[{name, seed}] = expect(*opened, name, seed);
    }
  std::vector<std::map<size_t, std::string>> answers(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      std::vector<std::string> reqs;
      for (int r = 0; r < kPerClient; ++r)
        reqs.push_back(std::string("run ") + (r % 2 ? "tiny" : "mlp") + " random " +
                       std::to_string(100 * c + r));
      answers[c] = exchange(server.port, reqs, reqs.size());
    });
  for (auto& t : clients) t.join();
  for (int c = 0; c < kClients; ++c) {
    REQUIRE(answers[c].size() == kPerClient);
    for (int r = 0; r < kPerClient; ++r) {
      const std::string& line = answers[c][r];
      CAPTURE(line);
      std::string name = r % 2 ? "tiny" : "mlp";
      REQUIRE(line.rfind("ok #" + std::to_string(r) + " " + name + " ", 0) == 0);
      auto f = fields(line);
      const Expected& e = expected[{name, static_cast<uint64_t>(100 * c + r)}];
      CHECK(f["outputs"] == "1");
      CHECK(f["out0"] == e.shape);
      CHECK(f["sum0"] == e.sum);
      CHECK(f["absmax0"] == e.absmax);
      CHECK(f["xxh0"] == e.xxh);
      // And against the f32 host reference directly, at bf16 tolerance.
      CHECK(std::fabs(std::stod(f["sum0"]) - e.ref_sum) <= 0.03 * std::max(1.0, e.ref_l1));
    }
  }

  // Bad requests get error lines; the session and the server go on serving.
  std::string long_line = "run tiny " + std::string(1100000, 'x');
  auto bad = exchange(
      server.port,
      {"run nope", "run tiny --input=3x3xf32=1", "\x01\x02garbage\xff", "run mlp random notanumber",
       "run tiny --input=@/etc/passwd", "run tiny random 99999999999999999999999", long_line,
       "run tiny --input=2x3xf32=1,2", "run tiny random 7 check", "list"},
      10);
  REQUIRE(bad.size() == 10);
  CHECK(bad[0].find("error #0 not_found: no plan named 'nope'") == 0);
  CHECK(bad[1].find("error #1 invalid_argument: input 0 ('x'): shape [3x3] does not match the "
                    "plan's [2x3]") == 0);
  CHECK(bad[2].find("error #2 invalid_argument: expected 'run NAME") == 0);
  CHECK(bad[3].find("error #3 invalid_argument: seed 'notanumber' is not a 64-bit number") == 0);
  CHECK(bad[4].find("error #4 invalid_argument: file inputs") == 0);
  CHECK(bad[5].find("error #5 invalid_argument: seed '99999999999999999999999'") == 0);
  CHECK(bad[6].find("error #6 invalid_argument: request line longer than") == 0);
  CHECK(bad[7].find("error #7 invalid_argument: input 0 ('x'): --input '2x3xf32': 2 values "
                    "given, 6 expected (or one value to fill the tensor)") == 0);
  CHECK(bad[8].find("ok #8 tiny ") == 0);
  REQUIRE(fields(bad[8]).count("rel_err") == 1);
  CHECK(std::stod(fields(bad[8])["rel_err"]) <= runtime::kDefaultTolerance);
  CHECK(bad[9] == "ok #9 plans=2 mlp tiny");

  // quit stops the server cleanly: acknowledged, queued work answered, exit status 0.
  auto bye = exchange(server.port, {"quit"}, 1);
  CHECK(bye[0] == "bye #0");
  CHECK(server.wait() == 0);
  CHECK(server.log.find("done: " + std::to_string(kClients * kPerClient + 1) +
                        " served, 8 failed") != std::string::npos);
}

TEST_CASE("meshplan-server stops cleanly on SIGTERM, and refuses to start on a bad cache") {
  test::TempDir dir;
  std::string cache = make_cache(dir);
  {
    ServerProcess server({cache, "--port", "0", "--threads", "2", "--verify", "full"});
    INFO(server.log);
    REQUIRE(server.port > 0);
    auto one = exchange(server.port, {"run tiny random 3"}, 1);
    CHECK(one[0].find("ok #0 tiny ") == 0);
    REQUIRE(::kill(server.pid, SIGTERM) == 0);
    CHECK(server.wait() == 0);
    CHECK(server.log.find("done: 1 served, 0 failed") != std::string::npos);
  }
  auto missing =
      test::run_shell(kBin + "/examples/meshplan-server " + dir.file("none.mpc") + " --port 0");
  CHECK(missing.status == 1);
  CHECK(missing.text.find("none.mpc") != std::string::npos);
  auto bad_flag = test::run_shell(kBin + "/examples/meshplan-server " + cache + " --threads 0");
  CHECK(bad_flag.status == 1);
  CHECK(bad_flag.text.find("--threads takes a number from 1 to 256") != std::string::npos);
}

TEST_CASE("meshplan-server serves plans for a custom chip given with --device FILE.json") {
  test::TempDir dir;
  std::string dev = dir.file("wh4x4.json"), cache = dir.file("c.mpc");
  std::string chip =
      R"({"chip": {"base": "wormhole_b0", "name": "wh4x4", "grid_x": 4, "grid_y": 4}})";
  test::write_bytes(dev, std::vector<uint8_t>(chip.begin(), chip.end()));
  REQUIRE(test::run_shell(kBin + "/planner/meshplan-compile " +
                          test::source_path("examples/models/mlp.json") + " -o " + cache +
                          " --policy greedy --device " + dev)
              .status == 0);
  std::string requests = dir.file("r.txt");
  std::string text = "run mlp random 5 check\n";
  test::write_bytes(requests, std::vector<uint8_t>(text.begin(), text.end()));
  std::string server = kBin + "/examples/meshplan-server " + cache + " --threads 2";
  auto without = test::run_shell(server + " < " + requests);
  INFO(without.text);
  CHECK(without.status == 0);
  CHECK(without.text.find("1 of 1 plans from") != std::string::npos);
  CHECK(without.text.find("and 0 bound") != std::string::npos);
  CHECK(without.text.find("not serving: plan 'mlp' targets device 'wh4x4'") != std::string::npos);
  CHECK(without.text.find("error #0 incompatible: plan 'mlp' is not served") != std::string::npos);
  auto with = test::run_shell(server + " --device " + dev + " < " + requests);
  INFO(with.text);
  CHECK(with.status == 0);
  CHECK(with.text.find("and 1 bound") != std::string::npos);
  CHECK(with.text.find("ok #0 mlp device_us=") != std::string::npos);
  CHECK(with.text.find(" rel_err=") != std::string::npos);
  CHECK(with.text.find("done: 1 served, 0 failed") != std::string::npos);
}

TEST_CASE("meshplan-server serves a mesh plan on an emulated t3k next to a single-chip plan") {
  test::TempDir dir;
  std::string cache = dir.file("c.mpc");
  for (const char* model : {"examples/models/tp_mlp_t3k.json", "examples/models/mlp.json"})
    REQUIRE(test::run_shell(kBin + "/planner/meshplan-compile " + test::source_path(model) +
                            " -o " + cache + " --policy greedy")
                .status == 0);
  std::string requests = dir.file("r.txt");
  std::string text = "list\n";
  for (int i = 0; i < 4; ++i) text += "run tp_mlp_t3k random " + std::to_string(i) + " check\n";
  text += "run mlp random 1 check\nrun tp_mlp_t3k --input=2x2xf32=1\nquit\n";
  test::write_bytes(requests, std::vector<uint8_t>(text.begin(), text.end()));
  // quit is read at once, and queued work is answered for --shutdown-timeout seconds after it:
  // generous, so that a slow (sanitized) build still answers all six requests.
  auto out = test::run_shell(kBin + "/examples/meshplan-server " + cache +
                             " --threads 2 --shutdown-timeout 300 < " + requests);
  INFO(out.text);
  CHECK(out.status == 0);
  CHECK(out.text.find("2 of 2 plans from") != std::string::npos);
  CHECK(out.text.find("and 2 bound") != std::string::npos);
  // Host-shaped output (the full 64x256, not a chip's shard), checked against the SPMD reference.
  CHECK(count(out.text, " tp_mlp_t3k device_us=") == 4);
  CHECK(count(out.text, "outputs=1 out0=64x256 ") == 4);
  size_t at = 0;
  int checked = 0;
  while ((at = out.text.find(" rel_err=", at)) != std::string::npos) {
    at += 9;
    CHECK(std::strtod(out.text.c_str() + at, nullptr) < runtime::kDefaultTolerance);
    ++checked;
  }
  CHECK(checked == 5);
  CHECK(out.text.find("plan 'tp_mlp_t3k' takes 3 inputs, 1 --input given") != std::string::npos);
  CHECK(out.text.find("done: 5 served, 1 failed") != std::string::npos);
}

namespace {

/// Threads of process `pid` (entries of /proc/PID/task).
size_t thread_count(pid_t pid) {
  size_t n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    (void)e;
    ++n;
  }
  return n;
}

/// Waits (up to a minute) until `pid` has `want` threads; returns the last count seen.
size_t wait_for_threads(pid_t pid, size_t want) {
  size_t n = thread_count(pid);
  for (int i = 0; i < 600 && n != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    n = thread_count(pid);
  }
  return n;
}

}  // namespace

TEST_CASE("meshplan-server --max-connections refuses one over the limit and reaps closed ones") {
  test::TempDir dir;
  std::string cache = make_cache(dir);
  ServerProcess server(
      {cache, "--port", "0", "--threads", "1", "--max-connections", "2", "--remote-quit"});
  INFO(server.log);
  REQUIRE(server.port > 0);

  // Two connections fill the limit; both are served. Every thread the server keeps (main,
  // worker, acceptor) runs by now, plus one reader per connection.
  int a = connect_to(server.port), b = connect_to(server.port);
  CHECK(ask(a, "list") == "ok #0 plans=2 mlp tiny");
  CHECK(ask(b, "list") == "ok #0 plans=2 mlp tiny");
  const size_t idle = thread_count(server.pid) - 2;
  // A third gets one error line naming the limit, then end of stream.
  int c = connect_to(server.port);
  std::string pending, line;
  REQUIRE(read_line(c, &pending, &line));
  CHECK(line ==
        "error #0 resource_exhausted: connection limit reached: this server reads at most 2 "
        "connections at once (--max-connections 2); try again later");
  CHECK_FALSE(read_line(c, &pending, &line));
  ::close(c);
  CHECK(ask(a, "list") == "ok #1 plans=2 mlp tiny");  // the others go on

  // Closed connections give back their slot and their thread: ten more, one after another
  // (each once the server has seen the previous one end), all served, and after each the server
  // is back to no reader thread.
  ::close(a);
  ::close(b);
  CHECK(wait_for_threads(server.pid, idle) == idle);
  for (int i = 0; i < 10; ++i) {
    int d = connect_to(server.port);
    CHECK(ask(d, "run tiny random " + std::to_string(i)).rfind("ok #0 tiny ", 0) == 0);
    ::close(d);
    CHECK(wait_for_threads(server.pid, idle) == idle);
  }

  auto bye = exchange(server.port, {"quit"}, 1);
  CHECK(bye[0] == "bye #0");
  CHECK(server.wait() == 0);
  CHECK(server.log.find("done: 10 served, 0 failed; connections: 13 accepted, 1 refused over the "
                        "limit of 2, 12 reader threads joined as they closed") !=
        std::string::npos);
  auto bad = test::run_shell(kBin + "/examples/meshplan-server " + cache + " --max-connections 0");
  CHECK(bad.status == 1);
  CHECK(bad.text.find("--max-connections takes a number from 1 to 65536, not '0'") !=
        std::string::npos);
}

TEST_CASE("meshplan-server serves a ring and a linear plan of one model on two meshes") {
  test::TempDir dir;
  std::string cache = dir.file("c.mpc");
  const std::string model = test::source_path("examples/models/tp_mlp_t3k.json");
  for (const char* mesh : {"t3k:ring", "t3k:linear"})
    REQUIRE(test::run_shell(kBin + "/planner/meshplan-compile " + model + " -o " + cache +
                            " --mesh " + mesh + " --name " + std::string(mesh).substr(4))
                .status == 0);
  std::string requests = dir.file("r.txt");
  std::string text = "run ring random 3 check\nrun linear random 3 check\nquit\n";
  test::write_bytes(requests, std::vector<uint8_t>(text.begin(), text.end()));
  auto out = test::run_shell(kBin + "/examples/meshplan-server " + cache +
                             " --threads 1 --shutdown-timeout 300 < " + requests);
  INFO(out.text);
  CHECK(out.status == 0);
  CHECK(out.text.find("and 2 bound") != std::string::npos);
  auto f = [&](const std::string& prefix) {
    size_t at = out.text.find(prefix);
    REQUIRE(at != std::string::npos);
    return fields(out.text.substr(at, out.text.find('\n', at) - at));
  };
  auto ring = f("ok #0 ring "), linear = f("ok #1 linear ");
  CHECK(ring["xxh0"] == linear["xxh0"]);  // same numerics
  CHECK(std::stod(ring["device_us"]) < std::stod(linear["device_us"]));
  CHECK(out.text.find("done: 2 served, 0 failed") != std::string::npos);
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE(
    "meshplan-server: a client that never reads is dropped, others are served, SIGTERM is "
    "bounded") {
  test::TempDir dir;
  std::string cache = make_cache(dir);
  ServerProcess server({cache, "--port", "0", "--threads", "2", "--request-timeout", "1",
                        "--shutdown-timeout", "1"});
  INFO(server.log);
  REQUIRE(server.port > 0);
  // The hog pipelines requests as fast as the server takes them and never reads a reply.
  std::atomic<bool> hog_dropped{false};
  std::thread hog([&] {
    int fd = connect_to(server.port);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    std::string burst;
    // Mostly list (answered by the reader itself, so replies pile up fast), some runs (which
    // go to the shared workers).
    for (int i = 0; i < 4096; ++i) burst += i % 64 ? "list\n" : "run tiny random 1\n";
    auto start = std::chrono::steady_clock::now();
    size_t at = 0;
    while (seconds_since(start) < 20) {
      ssize_t n = ::send(fd, burst.data() + at, burst.size() - at, MSG_NOSIGNAL);
      if (n > 0) {
        at = (at + static_cast<size_t>(n)) % burst.size();
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        hog_dropped = true;  // EPIPE / ECONNRESET: the server closed the connection
        break;
      }
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 50);
    }
    ::close(fd);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Meanwhile another client is answered promptly.
  auto t0 = std::chrono::steady_clock::now();
  int other = connect_to(server.port);
  send_all(other, "run tiny random 5\n");
  std::string pending, line;
  REQUIRE(read_line(other, &pending, &line, 10));
  CHECK(line.rfind("ok #0 tiny ", 0) == 0);
  CHECK(seconds_since(t0) < 5);
  ::close(other);
  hog.join();
  CHECK(hog_dropped.load());

  // SIGTERM while a connected client keeps a request line unfinished: the server still exits,
  // within the shutdown timeout plus a poll interval.
  int idle = connect_to(server.port);
  send_all(idle, "run ti");
  auto t1 = std::chrono::steady_clock::now();
  REQUIRE(::kill(server.pid, SIGTERM) == 0);
  CHECK(server.wait() == 0);
  CHECK(seconds_since(t1) < 4);
  CHECK(server.log.find("connections dropped for not reading their replies") != std::string::npos);
  ::close(idle);
}

TEST_CASE(
    "meshplan-server: idle and unfinished connections time out; quit needs the admin "
    "channel; a damaged entry is reported corrupt") {
  test::TempDir dir;
  std::string cache = make_cache(dir);
  // Damage the tiny plan's bytes: its graph name, after the index (the last "tiny" in the file).
  std::vector<uint8_t> bytes = test::read_bytes(cache);
  std::string text(bytes.begin(), bytes.end());
  size_t at = text.rfind("tiny");
  REQUIRE(at != std::string::npos);
  bytes[at] ^= 0x20;
  test::write_bytes(cache, bytes);

  ServerProcess server({cache, "--port", "0", "--threads", "1", "--max-connections", "2",
                        "--idle-timeout", "1", "--request-timeout", "1"});
  INFO(server.log);
  REQUIRE(server.port > 0);
  CHECK(server.log.find("ready: 1 of 2 plans") != std::string::npos);
  int a = connect_to(server.port), b = connect_to(server.port);
  std::string pa, pb, line;
  send_all(a, "run tiny random 1\nquit\nreload\nlist\n");
  REQUIRE(read_line(a, &pa, &line, 10));
  CHECK(line.rfind("error #0 corrupt: plan 'tiny' is damaged in the cache and not served: ", 0) ==
        0);
  REQUIRE(read_line(a, &pa, &line, 10));
  CHECK(line.rfind("error #1 invalid_argument: quit is accepted only from the admin channel", 0) ==
        0);
  REQUIRE(read_line(a, &pa, &line, 10));
  CHECK(line.rfind("error #2 invalid_argument: reload is accepted only from the admin channel",
                   0) == 0);
  REQUIRE(read_line(a, &pa, &line, 10));
  CHECK(line == "ok #3 plans=1 mlp");
  // b started a line and never finished it; a stays idle. Both are closed with a reason.
  send_all(b, "run ml");
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(read_line(b, &pb, &line, 10));
  CHECK(line ==
        "error #0 resource_exhausted: request line unfinished after 1 s; closing the "
        "connection");
  CHECK_FALSE(read_line(b, &pb, &line, 10));
  REQUIRE(read_line(a, &pa, &line, 10));
  CHECK(line == "error #4 resource_exhausted: idle for more than 1 s; closing the connection");
  CHECK_FALSE(read_line(a, &pa, &line, 10));
  CHECK(seconds_since(t0) < 5);
  ::close(a);
  ::close(b);
  // Their slots are free again: a new client is served.
  int c = connect_to(server.port);
  std::string pc;
  send_all(c, "run mlp random 2\n");
  REQUIRE(read_line(c, &pc, &line, 30));
  CHECK(line.rfind("ok #0 mlp ", 0) == 0);
  ::close(c);
  REQUIRE(::kill(server.pid, SIGTERM) == 0);
  CHECK(server.wait() == 0);
}
