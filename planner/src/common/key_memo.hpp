// A memo keyed by byte strings through a fixed-size hash: OpQuery's validation and cost memos.
// Lookups hash the key once (XXH3-64) and compare the full key bytes only on a hash match, so a
// lookup allocates nothing and never confuses two keys; keys live in one arena.
#pragma once

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace meshplan::planner {

/// XXH3-64 of a key's bytes.
inline uint64_t key_hash(std::string_view key) {
  return XXH3_64bits(key.data(), key.size());
}

/// Open-addressing map from key bytes to T. References to values stay valid until the memo dies
/// (values live in a deque). Not thread-safe.
template <typename T>
class KeyMemo {
 public:
  /// The value stored under `key` (whose key_hash() is `h`), or nullptr.
  T* find(uint64_t h, std::string_view key) {
    if (slots_.empty()) return nullptr;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == 0) return nullptr;
      if (s.hash == h && s.length == key.size() &&
          std::memcmp(keys_.data() + s.offset, key.data(), key.size()) == 0)
        return &values_[s.value - 1];
    }
  }

  /// Stores `value` under `key` (not present yet) and returns it.
  T& insert(uint64_t h, std::string_view key, T value) {
    if (2 * (values_.size() + 1) > slots_.size()) grow();
    size_t i = h & mask_;
    while (slots_[i].value != 0) i = (i + 1) & mask_;
    values_.push_back(std::move(value));
    slots_[i] = Slot{h, keys_.size(), key.size(), values_.size()};
    keys_.append(key);
    return values_.back();
  }

  size_t size() const { return values_.size(); }

 private:
  struct Slot {
    uint64_t hash = 0;
    size_t offset = 0, length = 0;
    size_t value = 0;  // index + 1 into values_; 0 = empty
  };
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 1024 : 2 * old.size(), Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.value == 0) continue;
      size_t i = s.hash & mask_;
      while (slots_[i].value != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  std::string keys_;
  std::deque<T> values_;
};

}  // namespace meshplan::planner
