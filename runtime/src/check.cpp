// Reference comparison and random inputs.
#include "meshplan/runtime/check.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "meshplan/runtime/input_transform.hpp"
#include "meshplan/runtime/mesh_plan.hpp"

namespace meshplan::runtime {

namespace {

/// Fan-in of a weight, from the first op that reads it as its second operand: conv2d weights
/// [O, KH, KW, I] -> KH*KW*I; matmul/linear [K, N] -> K (N when transposed). 0 if unknown.
int64_t fan_in(const PlanRef& plan, uint32_t id) {
  for (const fb::OpPlan* op : *plan.plan().ops()) {
    if (op->operands()->size() < 2 || op->operands()->Get(1) != id) continue;
    auto shape = plan.placement(id).shape;
    if (shape.size() < 2) return 0;
    auto kind = static_cast<device::OpKind>(op->kind());
    if (device::op_family(kind) == device::OpFamily::conv)  // [O, KH, KW, I] or [KH*KW*I, O]
      return shape.size() == 2 ? shape[0] : device::volume(shape.subspan(1));
    if (device::is_matmul_family(kind)) {
      bool transposed = op->config() && op->config()->transpose_b();
      return transposed ? shape[shape.size() - 1] : shape[shape.size() - 2];
    }
    return 0;
  }
  return 0;
}

}  // namespace

std::vector<Tensor> random_inputs(const PlanRef& plan, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<Tensor> out;
  for (uint32_t i = 0; i < plan.plan().inputs()->size(); ++i) {
    uint32_t id = plan.plan().inputs()->Get(i);
    // Host shapes: a mesh plan's inputs are the full tensors its boundary shards split.
    auto shape = user_input_shape(plan, i);
    Tensor x(std::vector<int64_t>(shape.begin(), shape.end()));
    if (boundary_shard(plan, i, false).type == device::MeshShardType::identity)
      x.data.resize(x.data.size() * static_cast<size_t>(mesh_rows(plan) * mesh_cols(plan)));
    // Weights are scaled by sqrt(3 / fan-in) (unit-variance outputs for uniform inputs, as
    // initialisers do) so that activations stay O(1) through deep models; other parameters
    // (biases, norm weights) stay in [-1, 1).
    const fb::TensorPlan* tp = plan.plan().tensors()->Get(id);
    float scale = 1.0f;
    if (tp->role() == fb::TensorRole::parameter)
      if (int64_t k = fan_in(plan, id); k > 0) scale = std::sqrt(3.0f / static_cast<float>(k));
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

CheckReport check_outputs(const std::vector<Tensor>& device, const std::vector<Tensor>& reference,
                          double tolerance) {
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
