// XXH3-128 wrappers over libxxhash.
#include "meshplan/schemas/hash.hpp"

#include <xxhash.h>

namespace meshplan {

std::string Hash128::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = kDigits[(hi >> (4 * i)) & 0xf];
    out[31 - i] = kDigits[(lo >> (4 * i)) & 0xf];
  }
  return out;
}

bool Hash128::parse(std::string_view text, Hash128* out) {
  if (text.size() != 32) return false;
  uint64_t halves[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    char c = text[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return false;
    halves[i / 16] = (halves[i / 16] << 4) | static_cast<uint64_t>(d);
  }
  out->hi = halves[0];
  out->lo = halves[1];
  return true;
}

Hash128 xxh3_128(const void* data, size_t size) {
  XXH128_hash_t h = XXH3_128bits(data, size);
  return Hash128{h.low64, h.high64};
}

struct Hasher::State {
  XXH3_state_t* state = XXH3_createState();
  ~State() { XXH3_freeState(state); }
};

Hasher::Hasher() : state_(std::make_unique<State>()) {
  XXH3_128bits_reset(state_->state);
}
Hasher::~Hasher() = default;

Hasher& Hasher::bytes(const void* data, size_t size) {
  XXH3_128bits_update(state_->state, data, size);
  return *this;
}

Hash128 Hasher::digest() const {
  XXH128_hash_t h = XXH3_128bits_digest(state_->state);
  return Hash128{h.low64, h.high64};
}

}  // namespace meshplan
