// The planner's front door (plan_file.hpp): the pipeline choice for one model, made once.
#include "meshplan/planner/plan_file.hpp"

#include <cstdio>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/descriptor_json.hpp"
#include "meshplan/device/mesh_spec.hpp"
#include "meshplan/planner/explain.hpp"
#include "meshplan/planner/export_stablehlo.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/policies.hpp"
#include "meshplan/planner/sharding_export.hpp"
#include "meshplan/planner/sharding_strategies.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner {

bool ModelSource::mlir() const {
  if (!text) return path.ends_with(".mlir");
  size_t at = text->find_first_not_of(" \t\r\n");
  return at == std::string::npos || (*text)[at] != '{';
}

namespace {

/// A path's file name without its extension (a/mlp.json -> mlp).
std::string stem(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string file = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = file.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? file : file.substr(0, dot);
}

void note(const FileOptions& options, NoteKind kind, const std::string& text) {
  if (options.on_note) options.on_note(kind, text);
}

/// --device NAME|FILE.json: a built-in chip, or a device JSON file (schemas/device.fbs).
Result<device::ChipDesc> resolve_chip(const std::string& device) {
  if (device.ends_with(".json")) return device::load_chip_file(device);
  return device::builtin_chip(device);
}

/// What the mesh option says before the graph is known: the chip count and shape for the mesh
/// pipeline, the topology if written, and a mesh JSON file's descriptor (whose chip plans).
struct MeshArg {
  bool given = false;
  device::MeshSpec spec;                 // 1x1 when no mesh is given
  std::optional<device::MeshDesc> file;  // a MESH.json
  device::ChipDesc chip;                 // the planning chip
};

Result<MeshArg> resolve_mesh(const FileOptions& options) {
  MeshArg m;
  const std::string device = options.device.empty() ? "wormhole_b0" : options.device;
  if (!options.mesh.empty()) {
    m.given = true;
    auto spec = device::parse_mesh_spec(options.mesh);
    if (!spec) return std::unexpected(with_context(spec.error(), "--mesh"));
    m.spec = *spec;
  }
  if (m.spec.file.empty()) {
    m.chip = MESHPLAN_TRY(resolve_chip(device));
    return m;
  }
  auto file = device::load_mesh_file(m.spec.file);
  if (!file) return std::unexpected(with_context(file.error(), "--mesh"));
  m.file = *file;
  m.spec.rows = file->rows;
  m.spec.cols = file->cols;
  m.spec.topology = file->topology;
  m.chip = file->chip;
  if (!options.device.empty()) {
    device::ChipDesc given = MESHPLAN_TRY(resolve_chip(device));
    if (given.hash() != m.chip.hash())
      return fail(ErrorCode::invalid_argument, "--device ", device, " (chip ", given.name,
                  ") is not the chip of --mesh ", m.spec.file, " (", m.chip.name,
                  "): give one of them");
  }
  return m;
}

/// options.mesh for the lowered graph: a mesh JSON file's descriptor (compile() checks its shape
/// against the graph's), or for a written topology the default mesh of the graph's shape (its
/// own mesh declaration decides the shape) with that topology; else none (the default mesh).
std::optional<device::MeshDesc> planning_mesh_of(const MeshArg& m, const Graph& graph) {
  if (graph.mesh.single_chip() && m.spec.rows * m.spec.cols == 1) return std::nullopt;
  if (m.file) return m.file;
  if (!m.spec.topology) return std::nullopt;
  device::MeshDesc mesh = device::default_mesh(m.chip, graph.mesh.rows, graph.mesh.cols);
  mesh.topology = *m.spec.topology;
  return mesh;
}

bool prints_module(const FileOptions& options) {
  return options.print_module != ModuleOutput::none;
}

/// Shardy's own propagation, printed as Shardy prints it: the module's mesh, no pipeline.
Result<std::string> sdy_propagation(shlo::Module& module, const FileOptions& options) {
  std::string name = options.propagation.empty() ? "pipeline" : options.propagation;
  auto strategy = shlo::strategy_from_name(name);
  if (!strategy)
    return fail(ErrorCode::invalid_argument, "--propagation: unknown strategy '", name,
                "' (basic, aggressive, op-priority, user-priority, pipeline)");
  if (!prints_module(options))
    return fail(ErrorCode::invalid_argument, "--stop-after=sdy-propagation needs --emit=sdy");
  const size_t noted = module.notes.size();
  MESHPLAN_TRY(shlo::run_sdy_propagation(module, *strategy));
  for (size_t i = noted; i < module.notes.size(); ++i)  // the stage's warnings
    note(options, NoteKind::located, module.notes[i]);
  return shlo::print_module(module);
}

/// A StableHLO model (`module`, or parsed from `source`): the mesh pipeline, then either the
/// printed module (into model.module_text) or the per-device program lowered into model.graph.
Status run_module(const ModelSource& source, const FileOptions& options,
                  shlo::PipelineOptions pipeline, std::optional<shlo::Module> exported,
                  ImportedModel& model) {
  // Shardy's own propagation sees loops and barriers as written; the mesh passes get them
  // unrolled and dropped.
  const bool sdy_stage = options.stop_after == "sdy-propagation" ||
                         shlo::export_pass_from_name(options.stop_after).has_value();
  shlo::Module module;
  if (exported)
    module = std::move(*exported);
  else if (source.text)
    module = sdy_stage ? MESHPLAN_TRY(shlo::parse_module_for_propagation(*source.text))
                       : MESHPLAN_TRY(shlo::parse_module(*source.text));
  else
    module = sdy_stage ? MESHPLAN_TRY(shlo::parse_module_file_for_propagation(source.path))
                       : MESHPLAN_TRY(shlo::parse_module_file(source.path));
  for (const std::string& n : module.notes) note(options, NoteKind::located, n);
  // A per-chip stage (stop_after=layout...) runs the whole mesh pipeline first.
  const bool mesh_stage = !options.stop_after.empty() && !plan_stage_from_name(options.stop_after);
  std::string stage = mesh_stage                                        ? options.stop_after
                      : options.print_module == ModuleOutput::stablehlo ? "import"
                                                                        : "close";
  if (!options.propagation.empty() && stage != "sdy-propagation")
    return fail(ErrorCode::invalid_argument,
                "--propagation selects the strategy of --stop-after=sdy-propagation");
  shlo::ExportOptions export_options;
  if (!options.explicit_reshards.empty()) {
    auto version = shlo::explicit_reshards_from_name(options.explicit_reshards);
    if (!version)
      return fail(ErrorCode::invalid_argument, "--explicit-reshards: unknown version '",
                  options.explicit_reshards, "' (full, partial)");
    // The partial version leaves conflicts to a partitioner the mesh pipeline does not have.
    if (*version == shlo::ExplicitReshards::partial && stage != "sdy-insert-explicit-reshards")
      return fail(
          ErrorCode::invalid_argument,
          "--explicit-reshards=partial applies to --stop-after=sdy-insert-explicit-reshards "
          "only (the mesh pipeline resolves every conflict: full)");
    export_options.explicit_reshards = *version;
  }
  if (stage == "sdy-propagation") {
    model.module_text = MESHPLAN_TRY(sdy_propagation(module, options));
    return {};
  }
  if (auto pass = shlo::export_pass_from_name(stage)) {
    // One of Shardy's export passes alone, on the module as written.
    if (!prints_module(options))
      return fail(ErrorCode::invalid_argument, "--stop-after=", stage, " needs --emit=sdy");
    MESHPLAN_TRY(shlo::run_sdy_export_pass(module, *pass, export_options));
    model.module_text = shlo::print_module(module);
    return {};
  }
  auto stop = shlo::stage_from_name(stage);
  if (!stop) return fail(ErrorCode::invalid_argument, "--stop-after: unknown stage '", stage, "'");
  pipeline.stop_after = *stop;
  pipeline.argument_types.insert(pipeline.argument_types.end(), options.argument_types.begin(),
                                 options.argument_types.end());
  std::vector<std::string> notes;
  pipeline.notes = &notes;
  MESHPLAN_TRY(shlo::run_pipeline(module, pipeline));
  if (prints_module(options)) {
    model.module_text = shlo::print_module(module);
    return {};
  }
  // The compile summary of a planned module: what the passes decided, what each collective
  // costs.
  const std::string& name = source.path.empty() ? module.file : source.path;
  for (const std::string& n : notes) note(options, NoteKind::summary, str(name, ": ", n));
  if (pipeline.stop_after == shlo::Stage::close && module.main_mesh() &&
      module.main_mesh()->devices() > 1) {
    // What each reshard and partial-sum reduction costs: bytes each chip sends over its link.
    shlo::CommStats comm = MESHPLAN_TRY(shlo::communication(module));
    for (const auto& c : comm.ops) {
      std::string groups = c.kind == "collective_permute" ? "" : str(" on groups of ", c.group);
      char bytes[64];
      std::snprintf(bytes, sizeof bytes, "%.0f", c.bytes);
      note(options, NoteKind::summary,
           str(name, ": ", c.kind, groups, " at ", c.loc.str(), ": ", bytes, " bytes per chip"));
    }
    char bytes[64];
    std::snprintf(bytes, sizeof bytes, "%.0f", comm.bytes);
    note(options, NoteKind::summary,
         str(name, ": communication ", bytes, " bytes per chip in ", comm.ops.size(),
             " collectives"));
  }
  model.graph = MESHPLAN_TRY(shlo::lower_to_graph(module));
  return {};
}

/// An annotated graph: as it is (a single-chip graph, a per-device program), or exported to
/// StableHLO/Shardy and through the mesh pipeline.
Status import_graph(const ModelSource& source, AnnotatedGraph annotated, const MeshArg& mesh_arg,
                    const FileOptions& options, ImportedModel& model) {
  const int64_t rows = mesh_arg.spec.rows, cols = mesh_arg.spec.cols;
  // A per-device program (its graph has a mesh: collectives already placed) is planned as it
  // is; the mesh option then only describes the mesh it runs on.
  const GraphMesh& own = annotated.graph.mesh;
  const bool per_device = !own.single_chip();
  const bool mesh = prints_module(options) ||
                    (!per_device && (!annotated.annotations.empty() || rows * cols > 1));
  if (!mesh) {
    if (per_device && mesh_arg.given && own.rows * own.cols != rows * cols)
      return fail(ErrorCode::incompatible, source.path,
                  ": the graph is a per-device program for a ", own.rows, "x", own.cols,
                  " mesh but --mesh ", options.mesh, " has ", rows * cols, " chips");
    model.graph = std::move(annotated.graph);
    return {};
  }
  MeshAnnotations& ann = annotated.annotations;
  if (ann.axes.empty() && rows * cols > 1) ann.axes = {{"model", rows}, {"batch", cols}};
  if (mesh_arg.given && !ann.axes.empty() && ann.rows() * ann.cols() != rows * cols)
    return fail(ErrorCode::incompatible, source.path, ": the graph is annotated for a ", ann.rows(),
                "x", ann.cols(), " mesh but --mesh ", options.mesh, " has ", rows * cols, " chips");
  auto module = export_stablehlo(annotated.graph, ann);
  if (!module) return std::unexpected(with_context(module.error(), source.path));
  MESHPLAN_TRY(
      run_module(source, options, pipeline_options(ann, rows, cols), std::move(*module), model));
  if (!model.module_text) model.graph.name = annotated.graph.name;  // Not the entry function's.
  return {};
}

/// The planner options of an imported graph: options.planner with the mesh set.
void finish(const MeshArg& mesh_arg, const FileOptions& options, ImportedModel& model) {
  model.chip = mesh_arg.chip;
  model.options = options.planner;
  if (!model.module_text) model.options.mesh = planning_mesh_of(mesh_arg, model.graph);
}

}  // namespace

Result<ImportedModel> import_model(const ModelSource& source, const FileOptions& options) {
  const MeshArg mesh_arg = MESHPLAN_TRY(resolve_mesh(options));
  ImportedModel model;
  if (source.mlir()) {
    shlo::PipelineOptions pipeline;
    // Without a mesh the module's own sdy.mesh decides (1x1 when it declares none).
    pipeline.mesh_rows = mesh_arg.given ? mesh_arg.spec.rows : 0;
    pipeline.mesh_cols = mesh_arg.given ? mesh_arg.spec.cols : 0;
    pipeline.presharded_arguments = options.presharded;
    MESHPLAN_TRY(run_module(source, options, pipeline, std::nullopt, model));
    // Not the entry function's name ("main").
    if (!model.module_text)
      model.graph.name = options.name.empty() ? stem(source.path) : options.name;
  } else {
    AnnotatedGraph annotated =
        source.text ? MESHPLAN_TRY(import_annotated_graph_json(*source.text, source.path))
                    : MESHPLAN_TRY(load_annotated_graph_file(source.path));
    MESHPLAN_TRY(import_graph(source, std::move(annotated), mesh_arg, options, model));
    if (!model.module_text && model.graph.name.empty()) model.graph.name = options.name;
  }
  finish(mesh_arg, options, model);
  return model;
}

Result<ImportedModel> import_annotated(AnnotatedGraph annotated, const FileOptions& options) {
  const MeshArg mesh_arg = MESHPLAN_TRY(resolve_mesh(options));
  ImportedModel model;
  const ModelSource source = ModelSource::from_text("", annotated.graph.name);
  MESHPLAN_TRY(import_graph(source, std::move(annotated), mesh_arg, options, model));
  finish(mesh_arg, options, model);
  return model;
}

Status prepare_plan(ImportedModel& model, const FileOptions& options) {
  return apply_conv2d_config_overrides(model.graph, options.conv2d_overrides,
                                       model.options.output_overrides);
}

Result<FilePlan> plan_file(const ModelSource& source, const FileOptions& options) {
  FilePlan out;
  out.model = MESHPLAN_TRY(import_model(source, options));
  if (out.model.module_text) return out;
  MESHPLAN_TRY(prepare_plan(out.model, options));
  const auto stage = plan_stage_from_name(options.stop_after);
  if (stage && *stage != PlanStage::emit) {
    Graph planning = MESHPLAN_TRY(planning_graph(out.model.graph, out.model.options));
    out.stage_json = MESHPLAN_TRY(stage_json(planning, out.model.chip, out.model.options, *stage));
    return out;
  }
  out.plan = MESHPLAN_TRY(compile(out.model.graph, out.model.chip, out.model.options));
  return out;
}

}  // namespace meshplan::planner
