// A verified plan: FlatBuffer accessors over mapped bytes, never copied.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "meshplan/device/placement.hpp"
#include "meshplan/schemas/error.hpp"
#include "meshplan/schemas/hash.hpp"
#include "meshplan/schemas/schemas.hpp"

namespace meshplan::runtime {

class PlanCache;

/// A plan that passed verify_plan(). Points into memory owned elsewhere (a PlanCache's mapping
/// or a caller's buffer), which must outlive it. Cheap to copy.
class PlanRef {
 public:
  PlanRef() = default;
  const fb::Plan& plan() const { return *plan_; }
  std::span<const uint8_t> bytes() const { return bytes_; }
  Hash128 key() const;
  std::string_view name() const { return name_; }
  /// Constant segment `i`'s bytes.
  std::span<const uint8_t> segment(uint32_t i) const;
  /// Device placement of tensor `id`; views into the plan.
  device::TensorPlacement placement(uint32_t id) const;

 private:
  friend class PlanCache;
  /// A PlanRef over bytes that already passed verify_plan() (a cache entry verified earlier).
  static PlanRef trusted(std::span<const uint8_t> bytes);

 private:
  friend Result<PlanRef> verify_plan(std::span<const uint8_t>, std::string_view);
  const fb::Plan* plan_ = nullptr;
  std::span<const uint8_t> bytes_;
  std::string_view name_;
};

/// Verifies plan bytes before any use: identifier MPLN, size prefix within the bytes, the
/// FlatBuffers verifier (explicit depth and table limits), format major version, and the
/// plan's own invariants (op kinds and arities, tensor indices, shapes, segments in range).
/// `what` names the plan in errors. Allocation-free.
Result<PlanRef> verify_plan(std::span<const uint8_t> bytes, std::string_view what);

}  // namespace meshplan::runtime
