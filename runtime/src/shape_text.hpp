// Shape text for the runtime's error messages: [2x3x4].
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace meshplan::runtime {

inline std::string shape_text(std::span<const int64_t> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace meshplan::runtime
