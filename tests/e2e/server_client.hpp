// A loopback client of meshplan-server for the e2e tests: the server as a child process, line
// reads with deadlines, request/response exchanges, and the two-plan test cache.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace meshplan::server_test {

inline const std::string kBin = MESHPLAN_BINARY_DIR;
inline const std::string kTiny =
    R"({ name: "tiny", arguments: [{ value: { name: "x", shape: [2, 3], dtype: "bf16" } }],
    ops: [{ kind: "relu", operands: ["x"], results: [{ name: "r" }] }], outputs: ["r"] })";

/// A cache with the mlp example and a one-op relu plan.
inline std::string make_cache(const test::TempDir& dir) {
  std::string cache = dir.file("plans.mpc"), tiny = dir.file("tiny.json");
  test::write_bytes(tiny, std::vector<uint8_t>(kTiny.begin(), kTiny.end()));
  REQUIRE(test::run_shell(kBin + "/planner/meshplan-compile " +
                          test::source_path("examples/models/mlp.json") + " " + tiny + " -o " +
                          cache)
              .status == 0);
  return cache;
}

/// Reads one '\n'-terminated line from fd, waiting at most `seconds`; false on EOF or timeout.
inline bool read_line(int fd, std::string* pending, std::string* line, int seconds = 120) {
  while (true) {
    size_t nl = pending->find('\n');
    if (nl != std::string::npos) {
      *line = pending->substr(0, nl);
      pending->erase(0, nl + 1);
      return true;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, seconds * 1000) <= 0) return false;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    pending->append(buf, static_cast<size_t>(n));
  }
}

/// meshplan-server as a child process whose stdout and stderr come back through a pipe.
struct ServerProcess {
  pid_t pid = -1;
  int out = -1;
  std::string pending, log;
  int port = -1;

  explicit ServerProcess(const std::vector<std::string>& args) {
    // Everything the child needs is built before fork(): between fork and exec it may only
    // make async-signal-safe calls (another thread could hold the allocator's lock).
    std::string bin = kBin + "/examples/meshplan-server";
    std::vector<char*> argv;
    argv.push_back(bin.data());
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    int p[2];
    REQUIRE(::pipe(p) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::dup2(p[1], 1);
      ::dup2(p[1], 2);
      ::close(p[0]);
      int devnull = ::open("/dev/null", O_RDONLY);
      ::dup2(devnull, 0);
      ::execv(bin.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(p[1]);
    out = p[0];
    // Start-up lines up to "listening on 127.0.0.1:PORT".
    std::string line;
    while (port < 0 && read_line(out, &pending, &line)) {
      log += line + "\n";
      if (line.rfind("listening on 127.0.0.1:", 0) == 0) port = std::stoi(line.substr(23));
    }
  }
  /// Waits for the exit; returns the exit status (-1 if killed by a signal) and keeps the output.
  int wait() {
    std::string line;
    while (read_line(out, &pending, &line)) log += line + "\n";
    int st = 0;
    ::waitpid(pid, &st, 0);
    ::close(out);
    pid = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  ~ServerProcess() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      ::close(out);
    }
  }
};

/// A connected loopback client socket.
inline int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

/// A loopback client: sends every request at once, then collects one response per request,
/// keyed by request number.
inline std::map<size_t, std::string> exchange(int port, const std::vector<std::string>& requests,
                                              size_t expected_responses) {
  int fd = connect_to(port);
  std::string text;
  for (const std::string& r : requests) text += r + "\n";
  for (size_t at = 0; at < text.size();) {
    ssize_t n = ::send(fd, text.data() + at, text.size() - at, MSG_NOSIGNAL);
    REQUIRE(n > 0);
    at += static_cast<size_t>(n);
  }
  std::map<size_t, std::string> responses;
  std::string pending, line;
  while (responses.size() < expected_responses && read_line(fd, &pending, &line)) {
    size_t hash = line.find('#');
    REQUIRE(hash != std::string::npos);
    responses[std::stoul(line.substr(hash + 1))] = line;
  }
  ::close(fd);
  return responses;
}

/// key=value fields of a response line.
inline std::map<std::string, std::string> fields(const std::string& line) {
  std::map<std::string, std::string> f;
  std::istringstream in(line);
  for (std::string w; in >> w;)
    if (size_t eq = w.find('='); eq != std::string::npos) f[w.substr(0, eq)] = w.substr(eq + 1);
  return f;
}

/// Sends one request line and reads one response line.
inline std::string ask(int fd, const std::string& request) {
  std::string text = request + "\n", pending, line;
  REQUIRE(::send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size()));
  REQUIRE(read_line(fd, &pending, &line));
  return line;
}

/// Sends `text` whole (blocking socket).
inline void send_all(int fd, const std::string& text) {
  for (size_t at = 0; at < text.size();) {
    ssize_t n = ::send(fd, text.data() + at, text.size() - at, MSG_NOSIGNAL);
    REQUIRE(n > 0);
    at += static_cast<size_t>(n);
  }
}

}  // namespace meshplan::server_test
