// meshplan's logging hook: one process-wide sink for the libraries' messages. The libraries
// print nothing themselves; without a sink (the default) messages are not even formatted.
#pragma once

#include <string_view>

#include "meshplan/schemas/error.hpp"

namespace meshplan {

enum class LogLevel : int { debug = 0, info = 1, warning = 2, error = 3, off = 4 };

/// Receives one message (no trailing newline). May be called from several threads at once.
using LogSink = void (*)(LogLevel level, std::string_view message, void* user);

/// Routes messages at `min_level` and above to `sink` with `user`; a null sink or
/// LogLevel::off silences meshplan (the default). Thread-safe.
void set_log_sink(LogSink sink, void* user, LogLevel min_level = LogLevel::info);
/// True when a message at `level` would reach a sink (cheap: one atomic load).
bool log_enabled(LogLevel level);
/// Sends `message` to the sink if `level` is enabled.
void log_message(LogLevel level, std::string_view message);
/// "debug", "info", "warning", "error" or "off".
const char* to_string(LogLevel level);

/// Formats and sends a message only when `level` is enabled.
template <class... Args>
void log(LogLevel level, Args&&... args) {
  if (log_enabled(level)) log_message(level, str(std::forward<Args>(args)...));
}

}  // namespace meshplan
