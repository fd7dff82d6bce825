// Host tensor helpers.
#include "meshplan/runtime/tensor.hpp"

#include <cmath>
#include <limits>

#include "meshplan/device/types.hpp"

namespace meshplan::runtime {

Tensor::Tensor(std::vector<int64_t> s)
    : shape(std::move(s)), data(static_cast<size_t>(device::volume(shape)), 0.0f) {}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape != b.shape || a.data.size() != b.data.size())
    return std::numeric_limits<double>::infinity();
  double m = 0.0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double x = a.data[i], y = b.data[i];
    // A NaN where the other side has a NaN, or the same infinity on both sides, is agreement
    // (functions such as asin or log give them for part of their domain); any other NaN or
    // infinity is an unbounded error.
    if ((std::isnan(x) && std::isnan(y)) || (std::isinf(x) && x == y)) continue;
    double d = std::fabs(x - y);
    if (!std::isfinite(d)) return std::numeric_limits<double>::infinity();
    m = std::max(m, d);
  }
  return m;
}

double max_abs(const Tensor& t) {
  double m = 0.0;
  for (float v : t.data)
    if (std::isfinite(v)) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

}  // namespace meshplan::runtime
