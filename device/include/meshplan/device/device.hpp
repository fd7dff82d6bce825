// The device abstraction the runtime programs against, in the spirit of IREE's HAL: the emulator
// is the first backend; NullDevice shows the surface a hardware backend fills in.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/placement.hpp"
#include "meshplan/device/types.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

/// One op to run: kind, config and the placements of its operands and results.
struct OpLaunch {
  OpKind kind;
  std::string_view name;
  std::span<const TensorPlacement* const> operands;
  std::span<const TensorPlacement* const> results;
  OpConfig config;
};

/// What a launch cost on the device's simulated clock.
struct OpTiming {
  uint64_t duration_ns = 0;
  uint64_t compute_ns = 0;
  uint64_t dram_ns = 0;
  uint32_t cores_used = 0;
};

/// A chip. Not thread-safe: callers serialise access (the runtime's Executable does).
class Device {
 public:
  virtual ~Device() = default;
  virtual const ChipDesc& descriptor() const = 0;
  /// Reserves `t`'s buffer at t.address (fixed in advance by the planner).
  virtual Status allocate(const TensorPlacement& t) = 0;
  virtual Status deallocate(const TensorPlacement& t) = 0;
  /// Frees every buffer and resets the clock.
  virtual void reset() = 0;
  /// Writes row-major host values (volume(t.shape) of them) into t's buffer in t's layout.
  virtual Status write(const TensorPlacement& t, std::span<const float> host) = 0;
  /// Reads t's buffer back into row-major host values.
  virtual Status read(const TensorPlacement& t, std::span<float> host) = 0;
  /// Runs one op; advances the simulated clock by its duration.
  virtual Result<OpTiming> launch(const OpLaunch& op) = 0;
  /// Simulated time since reset, in nanoseconds.
  virtual uint64_t now_ns() const = 0;
};

/// A backend that implements nothing: every call answers unimplemented.
class NullDevice final : public Device {
 public:
  explicit NullDevice(ChipDesc chip) : chip_(std::move(chip)) {}
  const ChipDesc& descriptor() const override { return chip_; }
  Status allocate(const TensorPlacement&) override { return unimplemented("allocate"); }
  Status deallocate(const TensorPlacement&) override { return unimplemented("deallocate"); }
  void reset() override {}
  Status write(const TensorPlacement&, std::span<const float>) override {
    return unimplemented("write");
  }
  Status read(const TensorPlacement&, std::span<float>) override { return unimplemented("read"); }
  Result<OpTiming> launch(const OpLaunch&) override { return unimplemented("launch"); }
  uint64_t now_ns() const override { return 0; }

 private:
  static std::unexpected<Error> unimplemented(const char* what) {
    return fail(ErrorCode::unimplemented, "null device: ", what,
                " is not implemented by this backend");
  }
  ChipDesc chip_;
};

}  // namespace meshplan::device
