// The planner's front door: a model file or text (graph.json or StableHLO/Shardy) and the
// options meshplan-compile takes -> the graph to plan, its chip and options, and the plan.
// meshplan-compile, the Python bindings and the model zoo all plan through it, so the pipeline
// choice (JSON or StableHLO import, single chip or mesh, Shardy propagation, the stop stage)
// is made in one place.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/mesh_annotations.hpp"
#include "meshplan/planner/planner.hpp"

namespace meshplan::planner {

/// A model: a file (.mlir: StableHLO text; anything else: graph.json), or text in memory
/// (StableHLO unless its first non-blank character is '{').
struct ModelSource {
  std::string path;                 ///< The file, or for text the name its errors carry.
  std::optional<std::string> text;  ///< Set: the model's text (path only names it).

  static ModelSource file(std::string path) { return {std::move(path), std::nullopt}; }
  static ModelSource from_text(std::string text, std::string name = "<text>") {
    return {std::move(name), std::move(text)};
  }
  /// True for StableHLO (see above).
  bool mlir() const;
};

/// A printed module instead of a plan (meshplan-compile --emit=sdy|stablehlo).
enum class ModuleOutput { none, sdy, stablehlo };

/// How a note reached the caller: the parser's warnings carry their own location; the
/// pipeline's notes and the communication summary start with the model's name.
enum class NoteKind { located, summary };

/// meshplan-compile's options for one model (its --flags in parentheses).
struct FileOptions {
  /// The planning chip (--device): a built-in name or a device JSON file; empty: wormhole_b0,
  /// or the chip of a mesh JSON file (given, it must be that chip).
  std::string device;
  /// The mesh (--mesh): RxC, n300, t3k, galaxy[:ring|:linear] or MESH.json; empty: a .mlir
  /// module's own sdy.mesh decides, a graph.json plans on one chip unless it is annotated.
  std::string mesh;
  bool presharded = false;                  ///< (--presharded) sharded arguments arrive split.
  std::vector<std::string> argument_types;  ///< (--arg-types) input|parameter|constant each.
  /// (--stop-after) a mesh stage (import ... close, sdy-propagation) or a per-chip stage
  /// (candidates, layout, spills, memory, emit); empty: the whole pipeline.
  std::string stop_after;
  std::string propagation;  ///< (--propagation) the strategy of stop_after=sdy-propagation.
  /// (--explicit-reshards) "full" or "partial": the version of
  /// stop_after=sdy-insert-explicit-reshards; empty: full. The mesh pipeline runs the full one.
  std::string explicit_reshards;
  ModuleOutput print_module = ModuleOutput::none;  ///< (--emit=sdy|stablehlo)
  std::vector<std::string> conv2d_overrides;       ///< (--override-conv2d-config) lists.
  PlannerOptions planner;  ///< Policy, beam, spills, weights, overrides (options.mesh is set here).
  /// The graph's name where the model gives none: a .mlir module (its entry function is
  /// "main") always, a graph.json without a name. Empty: a .mlir model is named after its
  /// file's stem, a graph.json without a name stays unnamed.
  std::string name;
  /// Called with each note as it arises (meshplan-compile prints them to stderr); unset: dropped.
  std::function<void(NoteKind, const std::string&)> on_note;
};

/// An imported model, ready for compile(model.graph, model.chip, model.options).
struct ImportedModel {
  /// Set when the options asked for a printed module (print_module, stop_after=
  /// sdy-propagation): the module's text; nothing else is imported.
  std::optional<std::string> module_text;
  Graph graph;            ///< The graph to plan: a graph.json, or the per-device program.
  device::ChipDesc chip;  ///< The planning chip.
  /// options.planner with the mesh set; prepare_plan() adds the conv2d overrides.
  PlannerOptions options;
};

/// Imports `source` as meshplan-compile does: a .mlir module, or an annotated graph.json (or
/// any graph.json with a mesh larger than 1x1, or print_module) exported to StableHLO/Shardy,
/// runs the mesh pipeline to options.stop_after and lowers the per-device program to the graph
/// IR; a plain graph.json (or a per-device program) is taken as it is. Errors name the model,
/// the option (--mesh, --device, --propagation, --stop-after) or the mesh shapes that disagree.
Result<ImportedModel> import_model(const ModelSource& source, const FileOptions& options);

/// The same for a global graph with annotations in memory (the zoo's mesh models).
Result<ImportedModel> import_annotated(AnnotatedGraph annotated, const FileOptions& options);

/// Applies options.conv2d_overrides to `model`'s graph and output overrides (plan_file() does
/// it after the import; meshplan-compile prints --emit=graph-json in between).
Status prepare_plan(ImportedModel& model, const FileOptions& options);

/// A planned model: the import, and the plan (or the per-chip stage's JSON) when one was asked
/// for (no plan when the import printed a module).
struct FilePlan {
  ImportedModel model;
  std::optional<std::string> stage_json;  ///< stop_after = a per-chip stage before emit.
  std::optional<CompiledPlan> plan;
};

/// import_model(), prepare_plan(), then compile() (or stage_json() for a per-chip stop_after).
Result<FilePlan> plan_file(const ModelSource& source, const FileOptions& options = {});
inline Result<FilePlan> plan_file(const std::string& path, const FileOptions& options = {}) {
  return plan_file(ModelSource::file(path), options);
}

}  // namespace meshplan::planner
