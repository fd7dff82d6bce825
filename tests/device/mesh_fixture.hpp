// Helpers for the mesh tests: per-chip tensors allocated on a Mesh, and index arithmetic for the
// host references (written from the definitions, independently of the Mesh's block copies).
#pragma once

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/formats.hpp"

namespace meshplan::test {

/// One DRAM-interleaved tensor per chip at `address`, shape given per chip. Not movable: the
/// placements view its names and shapes.
class ChipTensors {
 public:
  ChipTensors(device::Mesh& mesh, std::string name, const std::vector<std::vector<int64_t>>& shapes,
              device::DType dtype, uint64_t address, bool allocate = true)
      : name_(std::move(name)), shapes_(shapes) {
    for (size_t i = 0; i < shapes_.size(); ++i) {
      placements_.push_back(
          device::make_interleaved(name_, shapes_[i], dtype, device::BufferType::dram, address));
      if (allocate) REQUIRE(mesh.chip(static_cast<int>(i)).allocate(placements_.back()));
    }
  }
  ChipTensors(const ChipTensors&) = delete;
  ChipTensors& operator=(const ChipTensors&) = delete;
  device::PerChip all() const { return placements_; }
  const device::TensorPlacement& operator[](size_t i) const { return placements_[i]; }
  const std::vector<int64_t>& shape(size_t i) const { return shapes_[i]; }

 private:
  std::string name_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<device::TensorPlacement> placements_;
};

inline std::vector<std::vector<int64_t>> same_shape(const device::Mesh& mesh,
                                                    std::vector<int64_t> shape) {
  return std::vector<std::vector<int64_t>>(static_cast<size_t>(mesh.size()), shape);
}

/// Values exact in bf16 (so any dtype round-trips them), different on every chip.
inline std::vector<float> chip_values(const std::vector<int64_t>& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-4.0f, 4.0f);
  std::vector<float> v(static_cast<size_t>(device::volume(shape)));
  for (float& x : v) x = device::round_bf16(d(rng));
  return v;
}

inline std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> m(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    m[d] = flat % shape[d];
    flat /= shape[d];
  }
  return m;
}

inline int64_t ravel(const std::vector<int64_t>& m, const std::vector<int64_t>& shape) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + m[d];
  return f;
}

}  // namespace meshplan::test
