// One client session of meshplan-server: a bounded, non-blocking reply queue that workers fill
// and the session's reader thread drains, so a client that does not read stalls only itself.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

namespace meshplan::server {

/// Reply bytes a session may have waiting for its client; past this it is dropped.
inline constexpr size_t kMaxQueuedReplyBytes = 4u << 20;
/// Requests of one session queued or running at once; its reader stops reading until one is
/// answered, so one pipelining client cannot fill the shared queue (per-client fairness).
inline constexpr int kMaxInFlight = 8;
/// Longest name (plan or other client text) echoed in a reply, in bytes.
inline constexpr size_t kMaxEchoedName = 256;

/// `text` made safe for one reply line: control bytes and DEL as \xNN, and
/// at most `max` bytes of input (then "...").
inline std::string escape_line(std::string_view text, size_t max = std::string::npos) {
  std::string out;
  out.reserve(std::min(text.size(), max) + 8);
  for (size_t i = 0; i < text.size(); ++i) {
    if (i == max) {
      out += "...";
      break;
    }
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

/// Where a client's requests come from and its replies go. send() is called from any thread
/// and never blocks; the reader thread writes queued replies when the client can take them.
class Session {
 public:
  /// `admin`: may send `quit` and `reload` (stdin, or TCP with --remote-admin).
  Session(int in_fd, int out_fd, bool owns_fd, bool admin)
      : in_(in_fd), out_(out_fd), owns_(owns_fd), admin_(admin) {
    if (::pipe2(notify_, O_CLOEXEC | O_NONBLOCK) != 0) notify_[0] = notify_[1] = -1;
  }
  ~Session() {
    if (owns_) ::close(in_);
    for (int fd : notify_)
      if (fd >= 0) ::close(fd);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  int in_fd() const { return in_; }
  int out_fd() const { return out_; }
  /// Readable when replies were queued since the reader last looked.
  int notify_fd() const { return notify_[0]; }
  bool admin() const { return admin_; }

  /// Queues one reply line (escaped: it stays one line). A session whose non-empty queue would
  /// pass kMaxQueuedReplyBytes is marked dropped and its replies are discarded from then on.
  void send(std::string_view line) {
    std::string text = escape_line(line);
    text += '\n';
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (dropped_) return;
      size_t queued = out_buf_.size() - out_at_;
      // One reply into an empty queue is always taken (a tensor reply may be long; the plan's
      // output sizes bound it); past that, unread replies are limited.
      if (queued > 0 && queued + text.size() > kMaxQueuedReplyBytes) {
        dropped_ = overflowed_ = true;
        out_buf_.clear();
        out_at_ = 0;
      } else {
        out_buf_ += text;
      }
    }
    char c = 1;
    ssize_t ignored = ::write(notify_[1], &c, 1);  // full pipe: a wake-up is pending anyway
    (void)ignored;
  }

  /// Writes queued replies without blocking (the fd is non-blocking). Returns false when the
  /// client is gone (write error) or the session was dropped.
  bool flush() {
    char sink[64];
    while (notify_[0] >= 0 && ::read(notify_[0], sink, sizeof sink) > 0) {
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (dropped_) return false;
    while (out_at_ < out_buf_.size()) {
      ssize_t n = ::write(out_, out_buf_.data() + out_at_, out_buf_.size() - out_at_);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        dropped_ = true;
        return false;
      }
      out_at_ += static_cast<size_t>(n);
    }
    if (out_at_ == out_buf_.size()) {
      out_buf_.clear();
      out_at_ = 0;
    } else if (out_at_ > (1u << 16)) {
      out_buf_.erase(0, out_at_);
      out_at_ = 0;
    }
    return true;
  }

  /// Bytes queued and not yet written.
  size_t pending() const {
    std::lock_guard<std::mutex> lock(mu_);
    return out_buf_.size() - out_at_;
  }
  bool dropped() const {
    std::lock_guard<std::mutex> lock(mu_);
    return dropped_;
  }
  /// Dropped because its replies passed kMaxQueuedReplyBytes (not because it hung up).
  bool overflowed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return overflowed_;
  }

  size_t next_id() { return next_id_++; }  // called by the session's reader thread only
  std::atomic<int> in_flight{0};           ///< Requests queued or running for this session.

 private:
  int in_, out_;
  bool owns_, admin_;
  int notify_[2] = {-1, -1};
  mutable std::mutex mu_;
  std::string out_buf_;  // guarded by mu_: replies from out_at_ on are unwritten
  size_t out_at_ = 0;
  bool dropped_ = false, overflowed_ = false;
  size_t next_id_ = 0;
};

}  // namespace meshplan::server
