// The writers' lock of a plan cache: an exclusive flock on PATH.lock held for one rewrite.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "meshplan/schemas/error.hpp"

namespace meshplan::runtime {

/// Holds PATH.lock exclusively while alive. Writers (add, remove, gc) take it around their
/// read-modify-write so that concurrent writers never lose each other's entries. Readers never
/// take it: they map whole files that are replaced atomically.
class CacheLock {
 public:
  static Result<CacheLock> acquire(const std::string& cache_path) {
    std::string lock_path = cache_path + ".lock";
    int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return fail(ErrorCode::io, "cannot open lock file '", lock_path, "': ", std::strerror(errno));
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      std::string msg = str("cannot lock '", lock_path, "': ", std::strerror(errno));
      ::close(fd);
      return fail(ErrorCode::io, msg);
    }
    return CacheLock(fd);
  }
  CacheLock(CacheLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  CacheLock& operator=(CacheLock&&) = delete;
  ~CacheLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  explicit CacheLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace meshplan::runtime
