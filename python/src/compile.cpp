#include "compile.hpp"

#include <filesystem>

#include "meshplan/planner/plan_file.hpp"
#include "meshplan/planner/prepare_weights.hpp"

namespace meshplan::python {

namespace {

/// A path when it names an existing file and has no newline; else model text.
bool is_path(const std::string& source) {
  if (source.empty() || source.find('\n') != std::string::npos || source.size() > 4096)
    return false;
  std::error_code ec;
  return std::filesystem::is_regular_file(source, ec);
}

}  // namespace

Result<CompiledModel> compile_model(const CompileRequest& request) {
  const bool path = is_path(request.source);
  const planner::ModelSource source = path ? planner::ModelSource::file(request.source)
                                           : planner::ModelSource::from_text(request.source);
  planner::FileOptions options;
  // A mesh JSON file names its chip; the device then is only the default one.
  if (!request.mesh || !request.mesh->ends_with(".json")) options.device = request.device;
  options.mesh = request.mesh.value_or("");
  if (request.policy) options.planner.policy = *request.policy;
  if (request.weight_dtype) {
    auto dtype = planner::parse_weight_dtype(*request.weight_dtype);
    if (!dtype) return std::unexpected(with_context(dtype.error(), "weight_dtype"));
    options.planner.weight_dtype = *dtype;
  }
  options.planner.weight_dtype_overrides = request.weight_dtype_overrides;
  // A model without a name (a .mlir module, a graph.json may have none) is named after its file.
  options.name = path ? std::filesystem::path(request.source).stem().string() : "model";
  planner::ImportedModel model = MESHPLAN_TRY(planner::import_model(source, options));
  auto plan = planner::compile(model.graph, model.chip, model.options);
  if (!plan) return std::unexpected(with_context(plan.error(), source.path));
  return CompiledModel{std::move(*plan), model.graph.name};
}

}  // namespace meshplan::python
