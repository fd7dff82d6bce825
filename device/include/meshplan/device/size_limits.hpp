// The size limits every tool applies to a tensor shape, checked without overflow.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "meshplan/device/types.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// Largest dimension of any tensor (dims are in [1, 2^31)).
inline constexpr int64_t kMaxDimension = (int64_t{1} << 31) - 1;
/// Most elements one tensor may hold (2^32: 16 GiB as host f32, more than any chip's DRAM). With
/// this bound, tile padding, byte sizes, page counts and addresses of a tensor fit in 64 bits.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 32;

/// "[2x3x4]" (a rank-0 shape prints as "[]").
inline std::string shape_limit_text(std::span<const int64_t> shape) {
  // Appends only: GCC 12 reports a false -Wrestrict for `"x" + std::string` once this is
  // flattened into the plan verifier.
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  s += ']';
  return s;
}

/// The element count of `shape` when it lies within the limits: rank at most kMaxRank, every dim
/// in [1, kMaxDimension], at most kMaxTensorElements elements. Otherwise an invalid_argument
/// error naming the shape, the offending size and the limit (no prefix: callers add what and
/// where). Pure; never overflows.
inline Result<int64_t> checked_volume(std::span<const int64_t> shape) {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    return fail(ErrorCode::invalid_argument, "shape ", shape_limit_text(shape), " has rank ",
                shape.size(), ", more than the limit of ", kMaxRank);
  for (int64_t d : shape)
    if (d < 1 || d > kMaxDimension)
      return fail(ErrorCode::invalid_argument, "shape ", shape_limit_text(shape), " has dimension ",
                  d, ", outside [1, ", kMaxDimension, "]");
  int64_t volume = 1;
  bool overflow = false;
  for (int64_t d : shape) overflow = overflow || __builtin_mul_overflow(volume, d, &volume);
  if (overflow)
    return fail(ErrorCode::invalid_argument, "shape ", shape_limit_text(shape),
                " holds more than 2^63 elements; the limit is ", kMaxTensorElements);
  if (volume > kMaxTensorElements)
    return fail(ErrorCode::invalid_argument, "shape ", shape_limit_text(shape), " holds ", volume,
                " elements, more than the limit of ", kMaxTensorElements);
  return volume;
}

}  // namespace meshplan::device
