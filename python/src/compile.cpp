#include "compile.hpp"

#include <filesystem>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/descriptor_json.hpp"
#include "meshplan/device/mesh_spec.hpp"
#include "meshplan/planner/export_stablehlo.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/prepare_weights.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::python {

namespace {

/// A path when it names an existing file and has no newline; else model text.
bool is_path(const std::string& source) {
  if (source.empty() || source.find('\n') != std::string::npos || source.size() > 4096)
    return false;
  std::error_code ec;
  return std::filesystem::is_regular_file(source, ec);
}

/// graph.json text starts with '{'; anything else is StableHLO text.
bool is_json_text(const std::string& text) {
  size_t at = text.find_first_not_of(" \t\r\n");
  return at != std::string::npos && text[at] == '{';
}

Result<device::ChipDesc> resolve_chip(const std::string& device) {
  if (device.ends_with(".json")) return device::load_chip_file(device);
  return device::builtin_chip(device);
}

/// The per-device program of a StableHLO module, lowered to the graph IR.
Result<planner::Graph> lower(planner::shlo::Module module,
                             const planner::shlo::PipelineOptions& options) {
  MESHPLAN_TRY(planner::shlo::run_pipeline(module, options));
  return planner::shlo::lower_to_graph(module);
}

}  // namespace

Result<CompiledModel> compile_model(const CompileRequest& request) {
  const bool path = is_path(request.source);
  const std::string what = path ? request.source : std::string("<text>");
  device::MeshSpec spec;
  std::optional<device::MeshDesc> mesh_file;
  device::ChipDesc chip;
  if (request.mesh) {
    auto parsed = device::parse_mesh_spec(*request.mesh);
    if (!parsed) return std::unexpected(with_context(parsed.error(), "mesh"));
    spec = *parsed;
  }
  if (!spec.file.empty()) {
    mesh_file = MESHPLAN_TRY(device::load_mesh_file(spec.file));
    spec.rows = mesh_file->rows;
    spec.cols = mesh_file->cols;
    spec.topology = mesh_file->topology;
    chip = mesh_file->chip;
  } else {
    chip = MESHPLAN_TRY(resolve_chip(request.device));
  }
  const int64_t rows = spec.rows, cols = spec.cols;

  CompiledModel out;
  planner::Graph graph;
  const bool mlir = path ? request.source.ends_with(".mlir") : !is_json_text(request.source);
  if (mlir) {
    planner::shlo::Module module =
        path ? MESHPLAN_TRY(planner::shlo::parse_module_file(request.source))
             : MESHPLAN_TRY(planner::shlo::parse_module(request.source));
    planner::shlo::PipelineOptions options;
    options.mesh_rows = rows;
    options.mesh_cols = cols;
    graph = MESHPLAN_TRY(lower(std::move(module), options));
    graph.name = path ? std::filesystem::path(request.source).stem().string() : "model";
  } else {
    planner::AnnotatedGraph annotated =
        path ? MESHPLAN_TRY(planner::load_annotated_graph_file(request.source))
             : MESHPLAN_TRY(planner::import_annotated_graph_json(request.source, what));
    const bool per_device = !annotated.graph.mesh.single_chip();
    if (per_device || (annotated.annotations.empty() && rows * cols == 1)) {
      graph = std::move(annotated.graph);
    } else {
      planner::MeshAnnotations& ann = annotated.annotations;
      if (ann.axes.empty() && rows * cols > 1) ann.axes = {{"model", rows}, {"batch", cols}};
      if (request.mesh && !ann.axes.empty() && ann.rows() * ann.cols() != rows * cols)
        return fail(ErrorCode::incompatible, what, ": the graph is annotated for a ", ann.rows(),
                    "x", ann.cols(), " mesh but mesh ", *request.mesh, " has ", rows * cols,
                    " chips");
      auto module = planner::export_stablehlo(annotated.graph, ann);
      if (!module) return std::unexpected(with_context(module.error(), what));
      std::string name = annotated.graph.name;
      graph = MESHPLAN_TRY(lower(std::move(*module), planner::pipeline_options(ann, rows, cols)));
      graph.name = name;
    }
    if (graph.name.empty())
      graph.name = path ? std::filesystem::path(request.source).stem().string() : "model";
  }

  planner::PlannerOptions options;
  if (request.policy) options.policy = *request.policy;
  if (request.weight_dtype) {
    auto dtype = planner::parse_weight_dtype(*request.weight_dtype);
    if (!dtype) return std::unexpected(with_context(dtype.error(), "weight_dtype"));
    options.weight_dtype = *dtype;
  }
  options.weight_dtype_overrides = request.weight_dtype_overrides;
  if (!graph.mesh.single_chip() || rows * cols > 1) {
    if (mesh_file) {
      options.mesh = mesh_file;
    } else if (spec.topology) {
      device::MeshDesc mesh = device::default_mesh(chip, graph.mesh.rows, graph.mesh.cols);
      mesh.topology = *spec.topology;
      options.mesh = mesh;
    }
  }
  auto plan = planner::compile(graph, chip, options);
  if (!plan) return std::unexpected(with_context(plan.error(), what));
  out.plan = std::move(*plan);
  out.name = graph.name;
  return out;
}

}  // namespace meshplan::python
