// meshplan.compile(): a graph.json or StableHLO model (file or text) planned for a chip or mesh,
// the way meshplan-compile plans one model.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "meshplan/planner/planner.hpp"

namespace meshplan::python {

struct CompileRequest {
  std::string source;  ///< A path (.json / .mlir) or the model's text.
  std::string device = "wormhole_b0";
  std::optional<std::string> mesh;    ///< n300, t3k, galaxy, RxC[:ring|:linear] or MESH.json.
  std::optional<std::string> policy;  ///< Unset: PlannerOptions' default (greedy).
  /// Storage of matmul/linear weights: bf16 (unset: as given), bfp8_b, bfp4_b
  /// (PlannerOptions::weight_dtype), and "PATTERN=DTYPE" overrides.
  std::optional<std::string> weight_dtype;
  std::vector<std::string> weight_dtype_overrides;
};

struct CompiledModel {
  planner::CompiledPlan plan;
  std::string name;  ///< The graph's name, else the file's stem, else "model".
};

Result<CompiledModel> compile_model(const CompileRequest& request);

}  // namespace meshplan::python
