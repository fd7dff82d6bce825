// Graph IR -> StableHLO/Shardy module: the front door of the mesh pipeline for graphs built with
// GraphBuilder or read from graph.json. Ops with a StableHLO op of the same meaning become that op
// (matmul -> dot_general, elementwise ops with explicit broadcast_in_dim for numpy broadcasting,
// fused activations as separate ops, relu -> maximum with a zero constant, reduce_sum/max ->
// reduce with a region, reshape, permute -> transpose, concat -> concatenate, slice, typecast ->
// convert); every other op becomes `"stablehlo.custom_call"` with call_target_name =
// "meshplan.<op>" and one `meshplan.<attr>` attribute per graph attribute (MESH-SPEC §2).
#pragma once

#include <string>
#include <vector>

#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/mesh_annotations.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner {

/// The module for `global` (a single-device graph with global shapes): entry @main with one
/// argument per graph argument (in order, `ttcore.argument_type` from ArgKind; constants stay
/// arguments) and one result per graph output. With annotations.axes it declares
/// `sdy.mesh @mesh`, and arguments / results carry their `sdy.sharding`. Errors: an annotation
/// naming an unknown argument or axis, an axis used twice, a sharded dim its axes do not
/// divide, a rank mismatch, a dtype StableHLO lacks (bf8b).
Result<shlo::Module> export_stablehlo(const Graph& global, const MeshAnnotations& annotations = {});

/// print_module(export_stablehlo(...)): the text whose lines the module's locations
/// ("GRAPH.export.mlir:line:col", in errors of later passes) refer to.
Result<std::string> export_stablehlo_text(const Graph& global,
                                          const MeshAnnotations& annotations = {});

/// Pipeline options for an exported graph: the mesh size from the annotations (or rows x cols
/// when they name no axes).
shlo::PipelineOptions pipeline_options(const MeshAnnotations& annotations, int64_t rows = 1,
                                       int64_t cols = 1);

/// The shape of a --mesh text (device::parse_mesh_spec forms: "n300" 1x2, "t3k" 2x4, "galaxy"
/// 8x4, "RxC", each with an optional ":ring"/":linear", or a mesh JSON file). Sets rows and cols.
Status parse_mesh_size(std::string_view text, int64_t* rows, int64_t* cols);

}  // namespace meshplan::planner
