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

/// How much of a plan verify_plan() checks.
enum class VerifyMode {
  /// Everything: identifier, size prefix, the FlatBuffers verifier (every offset, vector and
  /// string in bounds), format major, and the plan's invariants. For bytes of unknown origin.
  full,
  /// For bytes whose XXH3-128 matched the checksum a writer stored after running `full` on them
  /// (PlanCache entries): skips only the FlatBuffers structural verifier (~2.5x the checksum's
  /// time for a 10,000-op plan, ~60% of a `full` verification), and still checks identifier,
  /// size prefix, format major and every invariant that depends on this runtime (op kinds and
  /// arities, enum
  /// ranges, tensor indices, shapes, segments). Not a defence against deliberately forged files
  /// with recomputed checksums: use `full` (PlanCacheOptions) when the cache is untrusted.
  checksummed,
};

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
  friend Result<PlanRef> verify_plan(std::span<const uint8_t>, std::string_view, VerifyMode);
  const fb::Plan* plan_ = nullptr;
  std::span<const uint8_t> bytes_;
  std::string_view name_;
};

/// Verifies plan bytes before any use: identifier MPLN, size prefix within the bytes, the
/// FlatBuffers verifier (explicit depth and table limits), format major version, and the
/// plan's own invariants (op kinds and arities, tensor indices, shapes, segments in range).
/// `what` names the plan in errors. Allocation-free.
Result<PlanRef> verify_plan(std::span<const uint8_t> bytes, std::string_view what,
                            VerifyMode mode = VerifyMode::full);

}  // namespace meshplan::runtime
