// Checking device results against the host reference, and deterministic test inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "meshplan/runtime/executable.hpp"

namespace meshplan::runtime {

/// Inputs for `plan` drawn uniformly from [-1, 1) by a generator seeded with `seed`; weights
/// (second operands of matmul, linear, conv2d) are scaled by sqrt(3 / fan-in).
std::vector<Tensor> random_inputs(const PlanRef& plan, uint64_t seed);
std::vector<TensorView> views_of(const std::vector<Tensor>& tensors);

/// Default tolerance of check_outputs: bf16 keeps 8 significant bits, so results that went
/// through bf16 storage between ops are compared relative to the output's scale.
inline constexpr double kDefaultTolerance = 0.03;

struct CheckReport {
  double max_abs_error = 0.0;   ///< Largest |device - reference| over all outputs.
  double scale = 0.0;           ///< Largest |reference| over all outputs.
  double relative_error = 0.0;  ///< max_abs_error / max(scale, 1).
  bool ok = false;              ///< relative_error <= tolerance and shapes match.
};

/// Compares device outputs with reference outputs.
CheckReport check_outputs(const std::vector<Tensor>& device, const std::vector<Tensor>& reference,
                          double tolerance);

}  // namespace meshplan::runtime
