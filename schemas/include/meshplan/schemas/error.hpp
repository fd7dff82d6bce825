// meshplan::Error and Result: how every fallible function in meshplan reports failure.
#pragma once

#include <expected>
#include <sstream>
#include <string>
#include <utility>

namespace meshplan {

enum class ErrorCode {
  invalid_argument,    ///< Bad input: malformed graph, unknown op, shape mismatch, bad flag.
  not_found,           ///< A named thing (plan, file, value) does not exist.
  incompatible,        ///< Valid but made for something else: stale plan, other device.
  resource_exhausted,  ///< Out of L1 or DRAM.
  corrupt,             ///< Bytes that fail verification: truncated, bit flips, bad identifier.
  io,                  ///< The operating system refused (open, read, write, mmap, rename).
  unimplemented,       ///< A backend or op that does not do this (yet).
  internal,            ///< A meshplan bug: an invariant did not hold.
};

/// Name of an error code, e.g. "invalid_argument".
const char* to_string(ErrorCode code);

/// A failure: a code and a message naming what was wrong and where (op, value, file:line).
struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;

  /// "code: message", for printing.
  std::string to_string() const;
};

template <class T>
using Result = std::expected<T, Error>;
using Status = std::expected<void, Error>;

/// Concatenates any streamable values into a string (GCC 12 has no std::format).
template <class... Args>
std::string str(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

/// Builds the error side of a Result: `return fail(ErrorCode::not_found, "plan '", n, "'")`.
template <class... Args>
std::unexpected<Error> fail(ErrorCode code, Args&&... args) {
  return std::unexpected(Error{code, str(std::forward<Args>(args)...)});
}

/// Adds context in front of an error's message, keeping its code.
inline Error with_context(Error error, const std::string& context) {
  error.message = context + ": " + error.message;
  return error;
}

}  // namespace meshplan

/// Evaluates a Result/Status expression; on error returns it from the enclosing function,
/// otherwise yields the value. Uses a statement expression (GCC and Clang).
#define MESHPLAN_TRY(expr)                                                                      \
  ({                                                                                            \
    auto&& meshplan_try_result_ = (expr);                                                       \
    if (!meshplan_try_result_) return std::unexpected(std::move(meshplan_try_result_).error()); \
    std::move(meshplan_try_result_).value();                                                    \
  })
