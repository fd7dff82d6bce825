// meshplan-server: a small inference server that embeds the runtime (never the planner). At
// start-up it maps a plan cache, verifies every plan, binds each to a chip (of --backend, default
// the emulator) of every worker thread and runs it once there (warm-up), and prints how long that
// took; then it serves the line protocol of protocol.hpp on a loopback TCP socket and/or stdin
// until `quit`, SIGTERM or SIGINT. `reload` on the admin channel loads the cache file again the
// same way and swaps the new plans in; requests already accepted finish on the plans they were
// accepted under.
//
//   meshplan-server CACHE.mpc [--threads N] [--port P] [--stdin] [--verify full|checksummed]
//                   [--device FILE.json]... [--core-threads K] [--backend NAME]
//                   [--max-connections C]
//
// Without --port it serves stdin (responses on stdout) and stops at end of input. With --port it
// listens on 127.0.0.1:P (0: a free port) and prints "listening on 127.0.0.1:PORT"; --stdin
// serves stdin as well (its end of input then closes only that session). Every client session
// is read by its own thread; requests go to one queue served by N worker threads (default 4),
// each owning its chips and executables, so runs proceed in parallel (each chip runs its cores
// on K host threads, default 1, so N workers use N cores). Damaged cache entries are
// skipped at start-up and the others are served. At most C TCP connections (default 64) are
// open at once: one more gets a single error line naming the limit and is closed. The reader
// thread of a connection is joined as soon as the connection ends, not at shutdown.
//
// Under mpirun (built with MPI; docs/mpi.md) rank 0 serves with one worker thread and the mesh
// plans run on MpiMeshes spread over every rank; the other ranks follow rank 0's mesh runs
// (ranks.hpp) until rank 0 stops.
#include <fcntl.h>
#include <mimalloc-new-delete.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"
#include "meshplan/device/descriptor_json.hpp"
#include "meshplan/device/emulator_backend.hpp"
#include "plans.hpp"
#include "protocol.hpp"
#include "ranks.hpp"
#include "session.hpp"

using namespace meshplan;
using Clock = std::chrono::steady_clock;

namespace {

// Stop requests (quit, SIGTERM, SIGINT) write one byte to this pipe and never drain it, so every
// thread polling its read end wakes up, now and later.
std::atomic<bool> g_stop{false};
int g_wake[2] = {-1, -1};

void request_stop() {
  if (!g_stop.exchange(true)) {
    char c = 1;
    ssize_t ignored = ::write(g_wake[1], &c, 1);  // async-signal-safe
    (void)ignored;
  }
}

extern "C" void on_signal(int) {
  request_stop();
}

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

using server::Session;

/// Limits of a session, from the command line (seconds).
struct Timeouts {
  double idle = 60;      ///< No request and nothing in flight: the connection is closed.
  double request = 30;   ///< A started request line, or unread replies, may wait this long.
  double shutdown = 10;  ///< After a stop request: queued work is answered for this long.
};

struct Job {
  std::shared_ptr<Session> session;
  size_t id;
  std::string line;
  std::shared_ptr<server::Plans> plans;  ///< The plans being served when it was accepted.
};

class Server {
 public:
  /// Serves `plans`; `reload` loads `reload_options` (strict) and swaps the result in, except
  /// under MPI (`mpi`), where the ranks would have to reload together.
  Server(std::shared_ptr<server::Plans> plans, server::LoadOptions reload_options, bool mpi,
         Timeouts timeouts, size_t max_line)
      : plans_(std::move(plans)),
        reload_options_(std::move(reload_options)),
        mpi_(mpi),
        timeouts_(timeouts),
        max_line_(max_line) {
    reload_options_.strict = true;
  }

  /// Serves session `s`: reads request lines (at most kMaxInFlight of its requests queued at
  /// once), writes its replies as the client takes them, and closes it when the client ends its
  /// input, stays idle past the idle timeout, leaves a request line or its replies waiting past
  /// the request timeout, or lets kMaxQueuedReplyBytes of replies pile up. After a stop request
  /// it reads nothing more and flushes replies for at most the shutdown timeout.
  void read_session(const std::shared_ptr<Session>& s) {
    set_nonblocking(s->in_fd());
    if (s->out_fd() != s->in_fd()) set_nonblocking(s->out_fd());
    std::string buf;          // received bytes not yet handled: whole lines, then a partial one
    bool discarding = false;  // inside a line that exceeded max_line_
    bool eof = false, input_done = false;
    char chunk[1 << 16];
    auto last_input = Clock::now(), last_output = last_input;
    Clock::time_point partial_since{}, stop_at{};
    auto seconds_since = [](Clock::time_point t) {
      return std::chrono::duration<double>(Clock::now() - t).count();
    };
    // Handles buffered whole lines while the session has room in flight.
    auto drain = [&] {
      size_t start = 0;
      while (!input_done && s->in_flight.load() < server::kMaxInFlight) {
        size_t nl = buf.find('\n', start);
        if (nl == std::string::npos) break;
        size_t from = start;
        start = nl + 1;
        if (discarding) {
          discarding = false;
          continue;
        }
        if (nl - from > max_line_) {
          too_long(*s);
          continue;
        }
        if (!handle(s, buf.substr(from, nl - from))) input_done = true;
      }
      buf.erase(0, start);
      if (input_done) buf.clear();
      bool whole_line = buf.find('\n') != std::string::npos;
      if (!whole_line && buf.size() > max_line_) {
        if (!discarding) too_long(*s);
        discarding = true;
        buf.clear();
      }
      if (eof && !whole_line && !input_done) {  // a last line without '\n' still counts
        if (!discarding && !buf.empty()) handle(s, buf);
        buf.clear();
        input_done = true;
      }
      bool partial = !whole_line && (!buf.empty() || discarding);
      if (!partial)
        partial_since = {};
      else if (partial_since == Clock::time_point{})
        partial_since = Clock::now();
    };
    while (true) {
      drain();
      if (!s->flush()) {  // the client is gone, or its unread replies overflowed
        if (s->overflowed()) dropped_++;
        return;
      }
      bool stopping = g_stop.load();
      if (stopping && stop_at == Clock::time_point{}) stop_at = Clock::now();
      size_t pending = s->pending();
      if (pending == 0) last_output = Clock::now();
      bool busy = s->in_flight.load() > 0 || pending > 0;
      if ((stopping || input_done) && !busy) return;
      if (stopping && seconds_since(stop_at) > timeouts_.shutdown) return;
      if (pending > 0 && seconds_since(last_output) > timeouts_.request) {
        dropped_++;
        return;  // replies unread for too long: a client that will not read
      }
      if (!stopping && !input_done) {
        if (!busy && buf.empty() && !discarding && seconds_since(last_input) > timeouts_.idle) {
          s->send(str("error #", s->next_id(), " resource_exhausted: idle for more than ",
                      timeouts_.idle, " s; closing the connection"));
          s->flush();
          return;
        }
        if (partial_since != Clock::time_point{} &&
            seconds_since(partial_since) > timeouts_.request) {
          s->send(str("error #", s->next_id(),
                      " resource_exhausted: request line unfinished after ", timeouts_.request,
                      " s; closing the connection"));
          s->flush();
          return;
        }
      }
      bool whole_line = buf.find('\n') != std::string::npos;
      bool read_more = !stopping && !eof && !input_done && !whole_line &&
                       s->in_flight.load() < server::kMaxInFlight;
      pollfd fds[4];
      int n = 0;
      fds[n++] = {stopping ? -1 : g_wake[0], POLLIN, 0};  // stays readable once written
      fds[n++] = {s->notify_fd(), POLLIN, 0};
      int in_at = -1, out_at = -1;
      if (read_more) {
        in_at = n;
        fds[n++] = {s->in_fd(), POLLIN, 0};
      }
      if (s->pending() > 0) {
        if (in_at >= 0 && s->out_fd() == s->in_fd()) {
          fds[in_at].events |= POLLOUT;
          out_at = in_at;
        } else {
          out_at = n;
          fds[n++] = {s->out_fd(), POLLOUT, 0};
        }
      }
      // Wake at least every 100 ms to check the timeouts.
      if (::poll(fds, static_cast<nfds_t>(n), 100) < 0 && errno != EINTR) return;
      if (out_at >= 0 && out_at != in_at && (fds[out_at].revents & (POLLERR | POLLHUP))) return;
      if (in_at < 0 || !(fds[in_at].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(s->in_fd(), chunk, sizeof chunk);
      if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (got <= 0) {
        eof = true;
        continue;
      }
      last_input = Clock::now();
      buf.append(chunk, static_cast<size_t>(got));
    }
  }

  /// Body of worker thread `w`: answers queued run requests, each on worker `w` of the plans it
  /// was accepted under, until the queue is closed and empty.
  void work(size_t w) {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      Result<std::string> r =
          fail(ErrorCode::resource_exhausted, "the server is stopping; request not run");
      bool expired = g_stop.load() && stop_deadline_passed();
      if (!expired) {
        try {
          r = job.plans->workers[w]->run(job.line);
        } catch (const std::bad_alloc&) {
          r = fail(ErrorCode::resource_exhausted, "out of host memory running the request");
        }
      }
      if (r) {
        served_++;
        job.session->send(str("ok #", job.id, " ", *r));
      } else {
        failed_++;
        job.session->send(str("error #", job.id, " ", r.error().to_string()));
      }
      job.session->in_flight--;
    }
  }

  /// Whether the shutdown timeout has passed since the first stop request seen by a worker.
  bool stop_deadline_passed() {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_seen_ == Clock::time_point{}) stop_seen_ = Clock::now();
    return std::chrono::duration<double>(Clock::now() - stop_seen_).count() > timeouts_.shutdown;
  }

  void close_queue() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
    }
    cv_.notify_all();
  }
  size_t served() const { return served_.load(); }
  size_t failed() const { return failed_.load(); }
  size_t dropped() const { return dropped_.load(); }
  size_t reloads() const { return reloads_.load(); }

 private:
  std::shared_ptr<server::Plans> current() {
    std::lock_guard<std::mutex> lock(mu_);
    return plans_;
  }

  /// `reload`: loads the cache file again beside the plans being served (map, verify every
  /// entry, bind on every worker's chips, warm up), then swaps the new plans in. Requests
  /// accepted before the swap finish on the old plans, which are freed with the last of them.
  /// If the file is missing or any entry is damaged, or binding or warm-up fails, the old plans
  /// stay and the error names the file. One reload at a time; the session waits for its reply.
  void reload(Session& s, size_t id) {
    std::lock_guard<std::mutex> one_at_a_time(reload_mu_);
    auto refuse = [&](const Error& e) {
      failed_++;
      std::string line = str("error #", id, " ", e.to_string());
      std::fprintf(stderr, "meshplan-server: %s\n", server::escape_line(e.to_string()).c_str());
      s.send(line);
    };
    if (mpi_)
      return refuse(Error{ErrorCode::unimplemented,
                          "reload is not available under mpirun (every rank would have to load "
                          "the new plans together); restart the job to serve a new cache"});
    auto t0 = Clock::now();
    Result<std::shared_ptr<server::Plans>> next = server::load_plans(reload_options_);
    Status warmed = next && reload_options_.warm_up ? server::warm_up(**next) : Status{};
    if (!next || !warmed) {
      Error e = !next ? next.error() : warmed.error();
      e.message = str("reload of ", reload_options_.path, " failed; still serving the ",
                      current()->bound(), " plans loaded before: ", e.message);
      return refuse(e);
    }
    if (g_stop.load())
      return refuse(Error{ErrorCode::resource_exhausted,
                          "the server is stopping; the reloaded plans are not swapped in"});
    const server::Plans& p = **next;
    for (const std::string& why : p.unbound)
      std::fprintf(stderr, "meshplan-server: not serving: %s\n", server::escape_line(why).c_str());
    {
      std::lock_guard<std::mutex> lock(mu_);
      plans_ = *next;
    }
    reloads_++;
    std::string text = str("reloaded plans=", p.names.size(), " bound=", p.bound());
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  " ms=%.3f open_ms=%.3f verify_ms=%.3f bind_ms=%.3f warm_up_ms=%.3f",
                  ms_between(t0, Clock::now()), p.open_ms, p.verify_ms, p.bind_ms, p.warm_up_ms);
    text += buf;
    std::fprintf(stderr, "meshplan-server: %s from %s\n", text.c_str(),
                 reload_options_.path.c_str());
    s.send(str("ok #", id, " ", text));
  }

  void too_long(Session& s) {
    failed_++;
    s.send(str("error #", s.next_id(), " invalid_argument: request line longer than ", max_line_,
               " bytes"));
  }

  /// One request line; false when the session must stop reading (quit).
  bool handle(const std::shared_ptr<Session>& s, std::string line) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos) return true;
    line.erase(0, first);
    size_t id = s->next_id();
    if ((line == "quit" || line == "reload") && !s->admin()) {
      failed_++;
      s->send(str("error #", id, " invalid_argument: ", line,
                  " is accepted only from the admin channel (stdin, or TCP when the server runs "
                  "with --remote-admin)"));
      return true;
    }
    if (line == "quit") {
      s->send(str("bye #", id));
      request_stop();
      return false;
    }
    if (line == "reload") {
      reload(*s, id);
      return true;
    }
    std::shared_ptr<server::Plans> plans = current();
    if (line == "list") {
      std::string text = str("ok #", id, " plans=", plans->names.size());
      for (const std::string& n : plans->names)
        text += " " + server::escape_line(n, server::kMaxEchoedName);
      s->send(text);
      return true;
    }
    if (line.starts_with("run ")) {
      std::string name = line.substr(4, line.find(' ', 4) - 4);
      if (auto d = plans->damaged.find(name); d != plans->damaged.end()) {
        failed_++;
        s->send(str("error #", id, " corrupt: plan '",
                    server::escape_line(name, server::kMaxEchoedName),
                    "' is damaged in the cache and not served: ", d->second));
        return true;
      }
    }
    s->in_flight++;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(Job{s, id, std::move(line), std::move(plans)});
    }
    cv_.notify_one();
    return true;
  }

  static void set_nonblocking(int fd) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  }

  std::shared_ptr<server::Plans> plans_;  // guarded by mu_: what new requests are served by
  server::LoadOptions reload_options_;
  bool mpi_;
  std::mutex reload_mu_;  // one reload at a time
  Timeouts timeouts_;
  size_t max_line_;                ///< Longest request line (--max-request-bytes).
  Clock::time_point stop_seen_{};  // guarded by mu_
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool closing_ = false;
  std::atomic<size_t> served_{0}, failed_{0}, dropped_{0}, reloads_{0};
};

/// The open TCP connections, one reader thread each, at most `limit` at once. A reader that
/// ends (its client hung up or sent quit) files its id and pokes a pipe; the acceptor, which
/// polls that pipe, joins filed readers at once, so threads of closed connections never pile
/// up. All members but finish() are called from the acceptor thread only.
class Connections {
 public:
  Connections(size_t limit, bool remote_admin) : limit_(limit), remote_admin_(remote_admin) {
    if (::pipe2(done_, O_CLOEXEC | O_NONBLOCK) != 0) done_[0] = done_[1] = -1;
  }
  ~Connections() {
    join_all();
    for (int fd : done_)
      if (fd >= 0) ::close(fd);
  }
  /// Readable when a reader has ended (poll it, then call reap()).
  int done_fd() const { return done_[0]; }

  /// Joins the readers that have ended; returns how many.
  size_t reap() {
    char sink[64];
    while (done_[0] >= 0 && ::read(done_[0], sink, sizeof sink) > 0) {
    }
    std::vector<std::thread> ended;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (uint64_t id : finished_) {
        auto it = live_.find(id);
        if (it == live_.end()) continue;  // joined by join_all() already
        ended.push_back(std::move(it->second));
        live_.erase(it);
      }
      finished_.clear();
    }
    for (std::thread& t : ended) t.join();  // each has filed its id: it is returning
    reaped_ += ended.size();
    return ended.size();
  }

  /// Serves client socket `fd` on a new reader thread running `read(session)`, or, at the
  /// limit, answers one error line naming it and closes the socket. Reaps ended readers first.
  template <typename Read>
  void admit(int fd, Read read) {
    reap();
    auto session = std::make_shared<Session>(fd, fd, true, remote_admin_);
    std::lock_guard<std::mutex> lock(mu_);
    if (live_.size() >= limit_) {
      refused_++;
      Error e{ErrorCode::resource_exhausted,
              str("connection limit reached: this server reads at most ", limit_,
                  " connections at once (--max-connections ", limit_, "); try again later")};
      session->send(str("error #0 ", e.to_string()));
      session->flush();  // one short line into an empty socket buffer
      return;            // the session closes the socket
    }
    uint64_t id = next_id_++;
    accepted_++;
    live_.emplace(id, std::thread([this, id, session, read] {
                    read(session);
                    finish(id);
                  }));
  }

  /// Joins every reader (at shutdown, after a stop request made them return).
  void join_all() {
    std::map<uint64_t, std::thread> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      all.swap(live_);
      finished_.clear();
    }
    for (auto& [id, t] : all) t.join();
  }

  size_t accepted() const { return accepted_; }
  size_t refused() const { return refused_; }
  size_t reaped() const { return reaped_; }

 private:
  /// Called by reader `id` as its last act.
  void finish(uint64_t id) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      finished_.push_back(id);
    }
    char c = 1;
    ssize_t ignored = ::write(done_[1], &c, 1);  // full pipe: a wake-up is pending anyway
    (void)ignored;
  }

  size_t limit_;
  bool remote_admin_;
  int done_[2] = {-1, -1};
  std::mutex mu_;
  std::map<uint64_t, std::thread> live_;  // guarded by mu_
  std::vector<uint64_t> finished_;        // guarded by mu_: ended, not yet joined
  uint64_t next_id_ = 0;
  size_t accepted_ = 0, refused_ = 0, reaped_ = 0;
};

struct Options {
  std::string cache;
  int threads = 4;
  unsigned core_threads = 1;  // the workers already run in parallel
  int port = -1;              // -1: no TCP
  bool stdin_too = false;
  runtime::VerifyMode verify = runtime::VerifyMode::checksummed;
  std::vector<std::string> devices;
  std::string backend{device::kEmulatorBackend};  // the registered backend chips open on
  size_t max_connections = 64;                    // TCP connections read at once
  Timeouts timeouts;
  bool remote_admin = false;                             // TCP clients may quit and reload
  size_t max_line_bytes = server::kDefaultMaxLineBytes;  // longest request line
  bool warm_up = true;  // run every plan once on every worker before serving
  bool threads_given = false;
};

constexpr const char* kSynopsis =
    "meshplan-server CACHE.mpc [--port P] [--stdin] [options]\n\n"
    "Serves the plans of CACHE.mpc: on 127.0.0.1:P with --port (0 picks a port), and on stdin\n"
    "without --port or with --stdin. Requests, one per line (examples/server/protocol.hpp):\n"
    "  run NAME [random SEED] [--input=[NAME=]SHAPExf32=VALUES|base64:DATA]... [check]\n"
    "      [tensors]\n"
    "  list | quit | reload";

constexpr const char* kFooter =
    "`tensors` returns each output's values (base64 of little-endian f32) after its digests.\n"
    "quit and reload (load CACHE.mpc again and swap its plans in) are accepted from stdin,\n"
    "and from TCP clients only with --remote-admin.\n"
    "Exit codes: 0 after quit, SIGTERM, SIGINT or the end of stdin; 1 on a start-up error.\n";

/// Options as text, checked after parsing so the messages name the option and its range.
struct TextOptions {
  std::string threads, core_threads, max_connections, port, verify;
  std::string idle, request, shutdown, max_request_bytes;
  bool no_warm_up = false;
};

void add_options(tools::Cli& cli, Options& o, TextOptions& t) {
  CLI::App& app = cli.app();
  app.footer(kFooter);
  app.add_option("cache", o.cache, "The plan cache to serve")->required()->type_name("CACHE.mpc");
  app.add_option("--threads", t.threads, "Worker threads (1-256, default 4)")->type_name("N");
  app.add_option("--port", t.port, "Listen on 127.0.0.1:P (0: a free port, printed)")
      ->type_name("P");
  app.add_flag("--stdin", o.stdin_too, "Serve stdin as well as --port");
  app.add_option("--verify", t.verify, "How plans are verified at start-up (default checksummed)")
      ->type_name("full|checksummed");
  app.add_option("--device", o.devices, "A chip the plans may target (repeatable)")
      ->type_name("FILE.json")
      ->allow_extra_args(false);
  app.add_option("--backend", o.backend,
                 "Open the chips and meshes on this backend (default: emulator; under mpirun "
                 "mesh plans run on backend mpi)")
      ->type_name("NAME");
  app.add_option("--core-threads", t.core_threads,
                 "Host threads running each emulated chip's cores (1-64, default 1)")
      ->type_name("K");
  app.add_option("--max-connections", t.max_connections,
                 "TCP connections read at once (1-65536, default 64); one more gets an error "
                 "line and is closed")
      ->type_name("C");
  app.add_option("--max-request-bytes", t.max_request_bytes,
                 "Longest request line (1024-1073741824, default 16777216)")
      ->type_name("B");
  app.add_option("--idle-timeout", t.idle,
                 "Close a connection with nothing to do after S seconds (default 60)")
      ->type_name("S");
  app.add_option("--request-timeout", t.request,
                 "Close a connection whose request line or unread replies wait longer (default "
                 "30)")
      ->type_name("S");
  app.add_option("--shutdown-timeout", t.shutdown,
                 "After a stop, answer queued work for at most S seconds (default 10)")
      ->type_name("S");
  app.add_flag("--remote-admin,--remote-quit", o.remote_admin,
               "Accept quit and reload from TCP clients");
  app.add_flag("--no-warm-up", t.no_warm_up,
               "Skip running every plan once at start-up (a plan's first request then pays for "
               "what the first run sets up)");
}

Result<Options> finish_options(Options o, const TextOptions& t) {
  auto number = [](const std::string& flag, const std::string& text, long lo,
                   long hi) -> Result<long> {
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end || errno || v < lo || v > hi)
      return fail(ErrorCode::invalid_argument, flag, " takes a number from ", lo, " to ", hi,
                  ", not '", text, "'");
    return v;
  };
  auto seconds = [](const std::string& flag, const std::string& text) -> Result<double> {
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !(v > 0 && v <= 86400))
      return fail(ErrorCode::invalid_argument, flag,
                  " takes seconds greater than 0 and at most 86400, not '", text, "'");
    return v;
  };
  o.warm_up = !t.no_warm_up;
  o.threads_given = !t.threads.empty();
  if (!t.threads.empty())
    o.threads = static_cast<int>(MESHPLAN_TRY(number("--threads", t.threads, 1, 256)));
  if (!t.core_threads.empty())
    o.core_threads =
        static_cast<unsigned>(MESHPLAN_TRY(number("--core-threads", t.core_threads, 1, 64)));
  if (!t.max_connections.empty())
    o.max_connections =
        static_cast<size_t>(MESHPLAN_TRY(number("--max-connections", t.max_connections, 1, 65536)));
  if (!t.max_request_bytes.empty())
    o.max_line_bytes = static_cast<size_t>(
        MESHPLAN_TRY(number("--max-request-bytes", t.max_request_bytes, 1024, 1l << 30)));
  if (!t.port.empty()) o.port = static_cast<int>(MESHPLAN_TRY(number("--port", t.port, 0, 65535)));
  if (!t.idle.empty()) o.timeouts.idle = MESHPLAN_TRY(seconds("--idle-timeout", t.idle));
  if (!t.request.empty())
    o.timeouts.request = MESHPLAN_TRY(seconds("--request-timeout", t.request));
  if (!t.shutdown.empty())
    o.timeouts.shutdown = MESHPLAN_TRY(seconds("--shutdown-timeout", t.shutdown));
  if (!t.verify.empty()) {
    if (t.verify != "full" && t.verify != "checksummed")
      return fail(ErrorCode::invalid_argument, "--verify takes full or checksummed, not '",
                  t.verify, "'");
    o.verify = t.verify == "full" ? runtime::VerifyMode::full : runtime::VerifyMode::checksummed;
  }
  return o;
}

/// 127.0.0.1:port, listening; port 0 lets the kernel pick. Returns the fd and the port.
Result<std::pair<int, int>> listen_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(ErrorCode::io, "socket: ", std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return fail(ErrorCode::io, "cannot listen on 127.0.0.1:", port, ": ", why);
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return std::pair<int, int>{fd, ntohs(addr.sin_port)};
}

Result<int> serve(Options opt) {
  // Start-up: open the cache, verify every entry, bind every plan on every worker's chips, warm
  // up; the time printed covers all of it.
  auto t0 = Clock::now();
  server::Ranks ranks = MESHPLAN_TRY(server::start_ranks());
  if (ranks.mpi) {
    // One worker: the ranks run the mesh plans in rank 0's order, one request at a time.
    if (opt.threads_given && opt.threads != 1)
      return fail(ErrorCode::invalid_argument, "--threads ", opt.threads,
                  ": under mpirun the server runs one worker thread (the ranks follow its "
                  "requests in order)");
    opt.threads = 1;
  }
  server::LoadOptions load;
  load.path = opt.cache;
  load.verify = opt.verify;
  load.threads = opt.threads;
  load.core_threads = opt.core_threads;
  for (std::string_view n : device::builtin_chip_names())
    load.chips.emplace(std::string(n), *device::builtin_chip(n));
  for (const std::string& file : opt.devices) {
    device::ChipDesc chip = MESHPLAN_TRY(device::load_chip_file(file));
    load.chips[chip.name] = chip;
  }
  MESHPLAN_TRY(server::register_backends());
  load.backends = server::Backends{opt.backend, server::mesh_backend(opt.backend)};
  load.mesh_only = ranks.rank != 0;
  load.warm_up = opt.warm_up;
  std::shared_ptr<server::Plans> plans = MESHPLAN_TRY(server::load_plans(load));
  // A damaged entry is skipped (clients asking for it hear why); the others are served.
  for (const auto& [name, why] : plans->damaged)
    std::fprintf(stderr, "meshplan-server: skipping entry '%s': %s\n",
                 server::escape_line(name, server::kMaxEchoedName).c_str(),
                 server::escape_line(why).c_str());
  server::Worker& first = *plans->workers[0];
  if (ranks.mpi) {
    MESHPLAN_TRY(server::compare_mesh_plans(first));
    first.set_hooks(server::mesh_run_hooks());
  }
  if (ranks.rank != 0) {
    // A follower: no clients, nothing on stdout; it runs rank 0's mesh runs until quit.
    if (!std::freopen("/dev/null", "w", stdout))
      return fail(ErrorCode::io, "rank ", ranks.rank, ": cannot silence stdout");
    if (opt.warm_up) MESHPLAN_TRY(first.warm_up(true));
    MESHPLAN_TRY(server::follow(first, g_stop, opt.timeouts.shutdown + 10));
    return 0;
  }
  // Warm-up: every worker runs every plan once, in parallel, so a client's first request on a
  // plan costs what its second does.
  if (load.warm_up) MESHPLAN_TRY(server::warm_up(*plans));
  for (const std::string& why : plans->unbound)
    std::fprintf(stderr, "meshplan-server: not serving: %s\n", why.c_str());

  if (ranks.mpi)
    std::printf("mpi: %zu mesh plans run over %d ranks; rank 0 (pid %d) serves\n",
                first.mesh_plan_names().size(), ranks.size, static_cast<int>(::getpid()));
  const server::Plans& p = *plans;
  std::printf(
      "ready: %zu of %zu plans from %s verified and %zu bound on %d worker threads in %.3f ms "
      "(open %.3f ms, verify %.3f ms, bind %.3f ms, warm-up %.3f ms)\n",
      p.names.size(), p.entries, opt.cache.c_str(), p.bound(), opt.threads,
      ms_between(t0, Clock::now()), p.open_ms, p.verify_ms, p.bind_ms, p.warm_up_ms);
  int listen_fd = -1;
  if (opt.port >= 0) {
    auto [fd, port] = MESHPLAN_TRY(listen_loopback(opt.port));
    listen_fd = fd;
    std::printf("listening on 127.0.0.1:%d\n", port);
  }
  std::fflush(stdout);

  Server server(std::move(plans), std::move(load), ranks.mpi, opt.timeouts, opt.max_line_bytes);
  std::vector<std::thread> pool;
  for (int w = 0; w < opt.threads; ++w)
    pool.emplace_back([&server, w] { server.work(static_cast<size_t>(w)); });
  Connections connections(opt.max_connections, opt.remote_admin);
  std::thread acceptor;
  if (listen_fd >= 0)
    acceptor = std::thread([&] {
      pollfd fds[3] = {
          {listen_fd, POLLIN, 0}, {g_wake[0], POLLIN, 0}, {connections.done_fd(), POLLIN, 0}};
      while (!g_stop.load()) {
        if (::poll(fds, 3, -1) < 0 && errno != EINTR) return;
        if (fds[1].revents) return;
        if (fds[2].revents) connections.reap();
        if (!(fds[0].revents & POLLIN)) continue;
        int c = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        connections.admit(c,
                          [&server](const std::shared_ptr<Session>& s) { server.read_session(s); });
      }
    });
  if (listen_fd < 0 || opt.stdin_too) {
    server.read_session(std::make_shared<Session>(STDIN_FILENO, STDOUT_FILENO, false, true));
    for (int fd : {STDIN_FILENO, STDOUT_FILENO})  // the final report is written blocking
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (listen_fd < 0) request_stop();  // stdin only: its end of input ends the server
  }
  // Wait for quit or a signal, then: stop reading, answer what is queued, exit.
  while (!g_stop.load()) {
    pollfd wake{g_wake[0], POLLIN, 0};
    ::poll(&wake, 1, -1);
  }
  if (acceptor.joinable()) acceptor.join();
  connections.join_all();
  server.close_queue();
  for (auto& t : pool) t.join();
  if (listen_fd >= 0) ::close(listen_fd);
  server::finish_ranks();  // the other ranks stop after the last request
  std::string tcp;
  if (listen_fd >= 0)
    tcp = str("; connections: ", connections.accepted(), " accepted, ", connections.refused(),
              " refused over the limit of ", opt.max_connections, ", ", connections.reaped(),
              " reader threads joined as they closed");
  if (server.dropped() > 0)
    tcp += str("; ", server.dropped(), " connections dropped for not reading their replies");
  if (server.reloads() > 0) tcp += str("; reloads: ", server.reloads());
  for (int fd : {STDIN_FILENO, STDOUT_FILENO})
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::printf("done: %zu served, %zu failed%s\n", server.served(), server.failed(), tcp.c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tools::Cli cli("meshplan-server", kSynopsis);
  Options parsed;
  TextOptions text;
  add_options(cli, parsed, text);
  if (auto exit = cli.parse(argc, argv)) return *exit;
  auto opt = finish_options(std::move(parsed), text);
  if (!opt) return cli.usage_error(opt.error().message);
  if (::pipe2(g_wake, O_CLOEXEC) != 0) {
    std::perror("meshplan-server: pipe");
    return 1;
  }
  ::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  auto status = serve(*opt);
  if (!status) {
    server::end_job_on_error(status.error());  // under mpirun: the other ranks stop too
    std::fprintf(stderr, "meshplan-server: error: %s\n", status.error().to_string().c_str());
    return 1;
  }
  return *status;
}
