#include "meshplan/schemas/log.hpp"

#include <atomic>
#include <mutex>

namespace meshplan {

namespace {

struct Sink {
  std::mutex mutex;  // Guards sink and user; min_level is read without it.
  LogSink sink = nullptr;
  void* user = nullptr;
  std::atomic<int> min_level{static_cast<int>(LogLevel::off)};
};

Sink& the_sink() {
  static Sink s;
  return s;
}

}  // namespace

void set_log_sink(LogSink sink, void* user, LogLevel min_level) {
  Sink& s = the_sink();
  std::lock_guard lock(s.mutex);
  s.sink = sink;
  s.user = user;
  s.min_level.store(sink ? static_cast<int>(min_level) : static_cast<int>(LogLevel::off),
                    std::memory_order_release);
}

bool log_enabled(LogLevel level) {
  return level != LogLevel::off &&
         static_cast<int>(level) >= the_sink().min_level.load(std::memory_order_acquire);
}

void log_message(LogLevel level, std::string_view message) {
  if (!log_enabled(level)) return;
  Sink& s = the_sink();
  LogSink sink;
  void* user;
  {
    std::lock_guard lock(s.mutex);
    sink = s.sink;
    user = s.user;
  }
  if (sink) sink(level, message, user);
}

const char* to_string(LogLevel level) {
  switch (level) {
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warning:
      return "warning";
    case LogLevel::error:
      return "error";
    case LogLevel::off:
      return "off";
  }
  return "unknown";
}

}  // namespace meshplan
