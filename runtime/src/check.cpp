// Reference comparison and random inputs.
#include "meshplan/runtime/check.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace meshplan::runtime {

std::vector<Tensor> random_inputs(const PlanRef& plan, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<Tensor> out;
  for (uint32_t id : *plan.plan().inputs()) {
    device::TensorPlacement t = plan.placement(id);
    Tensor x(std::vector<int64_t>(t.shape.begin(), t.shape.end()));
    // Parameters are scaled by 1/sqrt(fan-in), as initialisers do, so activations stay O(1).
    const fb::TensorPlan* tp = plan.plan().tensors()->Get(id);
    float scale = 1.0f;
    if (tp->role() == fb::TensorRole::parameter && t.shape.size() >= 2)
      scale = 1.0f / std::sqrt(static_cast<float>(t.shape[t.shape.size() - 2]));
    for (float& v : x.data) v = dist(rng) * scale;
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<TensorView> views_of(const std::vector<Tensor>& tensors) {
  std::vector<TensorView> v;
  for (const Tensor& t : tensors) v.push_back(t.view());
  return v;
}

CheckReport check_outputs(const std::vector<Tensor>& device, const std::vector<Tensor>& reference, double tolerance) {
  CheckReport r;
  bool shapes_ok = device.size() == reference.size();
  for (size_t i = 0; shapes_ok && i < device.size(); ++i) {
    r.max_abs_error = std::max(r.max_abs_error, max_abs_diff(device[i], reference[i]));
    r.scale = std::max(r.scale, max_abs(reference[i]));
  }
  r.relative_error = r.max_abs_error / std::max(r.scale, 1.0);
  r.ok = shapes_ok && r.relative_error <= tolerance;
  return r;
}

}  // namespace meshplan::runtime
