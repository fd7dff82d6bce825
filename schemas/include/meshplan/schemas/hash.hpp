// XXH3-128 hashing for plan keys and checksums, and the format's version constants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace meshplan {

/// A 128-bit hash value; ordered by (hi, lo) as the cache index is.
struct Hash128 {
  uint64_t lo = 0;
  uint64_t hi = 0;
  friend auto operator<=>(const Hash128&, const Hash128&) = default;
  friend bool operator==(const Hash128&, const Hash128&) = default;
  /// 32 lowercase hex digits, high half first.
  std::string hex() const;
  /// Parses 32 hex digits (as printed by hex()); false on anything else.
  static bool parse(std::string_view text, Hash128* out);
};

inline bool key_less(const Hash128& a, const Hash128& b) {
  return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
}

/// One-shot XXH3-128 of a byte range.
Hash128 xxh3_128(const void* data, size_t size);

/// Streaming XXH3-128 with helpers that append fixed-width little-endian fields, so that
/// canonical encodings are unambiguous (strings and arrays are length-prefixed).
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  Hasher& bytes(const void* data, size_t size);
  Hasher& u8(uint8_t v) { return bytes(&v, 1); }
  Hasher& u32(uint32_t v) { return bytes(&v, 4); }
  Hasher& u64(uint64_t v) { return bytes(&v, 8); }
  Hasher& i64(int64_t v) { return bytes(&v, 8); }
  Hasher& f64(double v) { return bytes(&v, 8); }
  Hasher& string(std::string_view s) { return u64(s.size()).bytes(s.data(), s.size()); }
  Hasher& hash(const Hash128& h) { return u64(h.lo).u64(h.hi); }
  Hash128 digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Plan format version written by this build: a reader accepts any minor of its major.
inline constexpr uint16_t kPlanFormatMajor = 1;
inline constexpr uint16_t kPlanFormatMinor = 4;
/// Version of the planner's algorithms; part of every plan key, so new planners miss old plans.
inline constexpr std::string_view kPlannerVersion = "0.5.0";

}  // namespace meshplan
