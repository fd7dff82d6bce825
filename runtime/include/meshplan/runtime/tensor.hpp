// Host tensors: owning f32 tensors (64-byte aligned, from mimalloc) and views over caller memory.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "meshplan/device/host_memory.hpp"

namespace meshplan::runtime {

/// A view of a row-major f32 tensor in caller memory. The caller keeps both spans alive.
struct TensorView {
  std::span<const int64_t> shape;
  std::span<const float> data;
};

/// An owning row-major f32 host tensor.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float, device::AlignedAllocator<float>> data;

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> s);
  TensorView view() const { return TensorView{shape, data}; }
};

/// Largest |a - b| over two equally shaped tensors (infinity if shapes differ, or where one side
/// is NaN or infinite and the other is not the same; NaN against NaN and equal infinities agree).
double max_abs_diff(const Tensor& a, const Tensor& b);
/// Largest finite |x| in a tensor.
double max_abs(const Tensor& t);

}  // namespace meshplan::runtime
