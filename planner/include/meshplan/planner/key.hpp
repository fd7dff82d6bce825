// The plan key: XXH3-128 of a canonical encoding of the graph (op kinds, attributes, wiring by
// position, shapes, dtypes; never names), combined with the device, planner version and options.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/planner/graph.hpp"
#include "meshplan/schemas/hash.hpp"

namespace meshplan::planner {

/// Options that change plans (and therefore enter the key).
struct PlannerOptions {
  /// The layout policy (policy_names()). Greedy by default, as meshplan-compile and the Python
  /// bindings: within 1% of beam's simulated time on the example models at a fraction of its
  /// planning time, where dram (every tensor in DRAM, the simplest plan) is about 1.3x slower.
  std::string policy = "greedy";
  uint32_t beam_width = 8;
  /// Beam: operand-option combinations scored per op. 0 = as many as a binary op has,
  /// (beam_width + 2)^2 (its K kept entries and 2 reshards per operand, seed 002 §5.8.1's K x K);
  /// an op with more (a concat of many operands) keeps fewer options per operand, cutting the
  /// operand with the most first, until the product fits.
  uint32_t beam_max_combinations = 0;
  /// Beam: OpModel evaluations one op may need (its combinations times its result layouts); an
  /// op past it is planned greedily (K = 1, from its operands' best entries) and named in the
  /// plan's notes. 0 = no cap. Counts work, not time, so plans stay deterministic.
  uint32_t beam_max_evaluations = 65536;
  /// Bound on candidate layouts per tensor (seed 002 §3.1.2's max_legal_layouts).
  uint32_t max_legal_layouts = 64;
  /// Beam scoring: true = simulated device time (OpModel::cost), false = heuristic
  /// (bottleneck cores, then reshard count).
  bool beam_cost_mode = true;
  /// User-fixed result layouts, as "op_name=l1|dram" (tt-mlir override-output-layout).
  std::vector<std::string> output_overrides;
  /// Forced moves before an operand, as "op_name:operand=l1|dram" (tt-mlir insert-memreconfig).
  std::vector<std::string> memreconfig;
  /// L1 spill selection after greedy/beam/l1-interleaved: "belady" (farthest next use) or "dp"
  /// (optimal over the spill choice space, spill_dp.hpp).
  std::string spill = "belady";
  /// Run prepare_conv_weights (prepare_weights.hpp): conv2d weight arguments are planned in
  /// their prepared 2-D form and the plan records the host transform. Off: planned as given.
  bool prepare_weights = true;
  /// The mesh a mesh program (a graph whose mesh is not 1x1) is planned for: its topology,
  /// links and hop latency cost the collectives and are recorded in the plan's MeshInfo. Its
  /// shape must be the graph's and its chip the planning chip. Absent: device::default_mesh()
  /// of the graph's shape. Enters the key only where it differs from that default (so plans
  /// made without it keep their keys); ignored for single-chip graphs.
  std::optional<device::MeshDesc> mesh;
  /// Run flatten_spatial (flatten_spatial.hpp) on single-chip graphs: conv2d / pool regions are
  /// planned on flattened [1, 1, N*H*W, C] activations, as TTNN runs them; graph inputs only
  /// regions use are planned flat with a `reshape` host transform. Off: planned NHWC as given.
  bool flatten_spatial = true;
  /// Storage dtype of weight parameters (prepare_weights.hpp, weight_storage()): the parameters
  /// every use of which is the weight of a matmul or linear are stored, uploaded and read in it.
  /// bf16 (the default) keeps them as given; bf8b / bf4b quantize them. Enters the key only when
  /// not bf16 or with overrides, so default plans keep their keys.
  device::DType weight_dtype = device::DType::bf16;
  /// Per-weight exceptions, "PATTERN=dtype" in order (the last match wins): PATTERN, with `*`
  /// matching any run of characters, names the weight parameter or an op using it as weight.
  std::vector<std::string> weight_dtype_overrides;

  /// The default options with `name` as the policy.
  static PlannerOptions with_policy(std::string name) {
    PlannerOptions o;
    o.policy = std::move(name);
    return o;
  }
};

/// Hash of the graph alone. Renaming values or ops keeps it; any shape, dtype, attribute,
/// wiring or argument-kind change alters it.
Hash128 graph_key(const Graph& graph);

/// The cache key of a plan: graph key + device descriptor + planner version + options (with
/// options.mesh's descriptor hash when it is not device::default_mesh() of its shape).
Hash128 plan_key(const Hash128& graph_key, const device::ChipDesc& chip,
                 const PlannerOptions& options);

}  // namespace meshplan::planner
