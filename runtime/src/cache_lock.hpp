// The writers' lock of a plan cache: an exclusive flock on PATH.lock held for one rewrite.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "meshplan/schemas/error.hpp"

namespace meshplan::runtime {

/// Holds PATH.lock exclusively while alive; acquire() waits at most MESHPLAN_CACHE_LOCK_TIMEOUT
/// seconds (default 60) and names the holder's pid when it gives up. Writers (add, remove, gc) take
/// it around their read-modify-write so that concurrent writers never lose each other's entries.
/// Readers never take it: they map whole files that are replaced atomically.
class CacheLock {
 public:
  static Result<CacheLock> acquire(const std::string& cache_path) {
    std::string lock_path = cache_path + ".lock";
    int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return fail(ErrorCode::io, "cannot open lock file '", lock_path, "': ", std::strerror(errno));
    // Poll with a non-blocking flock so that a holder that never lets go (stopped, hung) costs
    // a bounded wait and an error naming it, not a hang.
    double timeout = lock_timeout_seconds();
    auto start = std::chrono::steady_clock::now();
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK) {
        std::string msg = str("cannot lock '", lock_path, "': ", std::strerror(errno));
        ::close(fd);
        return fail(ErrorCode::io, msg);
      }
      std::chrono::duration<double> waited = std::chrono::steady_clock::now() - start;
      if (waited.count() >= timeout) {
        std::string holder = read_holder(fd);
        ::close(fd);
        return fail(ErrorCode::resource_exhausted, "plan cache '", cache_path,
                    "' is locked by another writer (", holder.empty() ? "pid unknown" : holder,
                    "); gave up after ", timeout, " s (set ", kTimeoutVariable, " to wait longer)");
      }
      ::usleep(10'000);
    }
    // Name ourselves as the holder for writers that time out waiting.
    std::string pid = str("pid ", ::getpid(), "\n");
    if (::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
      // The pid is a courtesy for error messages; the lock holds without it.
    }
    return CacheLock(fd);
  }

  /// Environment variable giving the lock wait in seconds (default kDefaultTimeout).
  static constexpr const char* kTimeoutVariable = "MESHPLAN_CACHE_LOCK_TIMEOUT";
  static constexpr double kDefaultTimeout = 60;

  /// The configured wait: MESHPLAN_CACHE_LOCK_TIMEOUT when it is a number >= 0, else 60 s.
  static double lock_timeout_seconds() {
    const char* text = std::getenv(kTimeoutVariable);
    if (!text || !*text) return kDefaultTimeout;
    char* end = nullptr;
    double v = std::strtod(text, &end);
    return (end && *end == '\0' && v >= 0 && v < 1e9) ? v : kDefaultTimeout;
  }
  CacheLock(CacheLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  CacheLock& operator=(CacheLock&&) = delete;
  ~CacheLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  explicit CacheLock(int fd) : fd_(fd) {}
  /// "pid N" of the process holding the flock on `fd`'s file: from /proc/locks when Linux
  /// lists it, else as the last writer recorded it in the file if that process still runs;
  /// empty when unknown.
  static std::string read_holder(int fd) {
    struct stat st;
    if (::fstat(fd, &st) == 0) {
      char id[64];
      std::snprintf(id, sizeof id, " %02x:%02x:%llu ", major(st.st_dev), minor(st.st_dev),
                    static_cast<unsigned long long>(st.st_ino));
      std::ifstream locks("/proc/locks");
      for (std::string line; std::getline(locks, line);) {
        // "1: FLOCK  ADVISORY  WRITE 29580 fe:00:10960935 0 EOF"
        size_t at = line.find(id);
        if (line.find("FLOCK") == std::string::npos || at == std::string::npos) continue;
        size_t start = line.rfind(' ', at - 1);
        if (start != std::string::npos) return "pid " + line.substr(start + 1, at - start - 1);
      }
    }
    char buf[32] = {};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    std::string text(buf, n > 0 ? static_cast<size_t>(n) : 0);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
    if (!text.starts_with("pid ") || text.size() < 5) return {};
    for (char c : text.substr(4))
      if (c < '0' || c > '9') return {};
    if (text.size() > 12 || ::kill(static_cast<pid_t>(std::stol(text.substr(4))), 0) != 0)
      return {};  // that writer has gone: it is not the holder
    return text;
  }
  int fd_;
};

/// PATH.tmp.PID files whose writer process no longer exists. Called with the lock held, so no
/// live add/remove/gc can own one; a live process with that PID keeps its file.
inline std::vector<std::string> remove_dead_temp_files(const std::string& path) {
  std::vector<std::string> removed;
  std::filesystem::path target(path);
  std::filesystem::path dir =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string prefix = target.filename().string() + ".tmp.";
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = f.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::string pid_text = name.substr(prefix.size());
    if (pid_text.empty() ||
        !std::all_of(pid_text.begin(), pid_text.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    if (pid_text.size() > 9) continue;  // not a pid (and std::stol would throw)
    pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    if (std::filesystem::remove(f.path(), rm)) removed.push_back(f.path().string());
  }
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace meshplan::runtime
