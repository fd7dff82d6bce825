// graph.json: the JSON form of schemas/graph.fbs, read with flatbuffers::Parser against the
// embedded schema, and written back the same way.
#pragma once

#include <string>
#include <string_view>

#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/mesh_annotations.hpp"

namespace meshplan::planner {

/// Parses and validates a graph. `source_name` (a file path) prefixes error messages.
Result<Graph> import_graph_json(std::string_view json, std::string_view source_name = "<graph>");
/// Reads `path` and imports it.
Result<Graph> load_graph_file(const std::string& path);
/// Writes `graph` as graph.json text (importing it again gives an equal graph), with the
/// sharding annotations when given.
Result<std::string> export_graph_json(const Graph& graph, const MeshAnnotations& annotations = {});

/// Like import_graph_json, and also returns the optional sharding annotations (mesh_axes,
/// Argument.sharding, output_shardings); import_graph_json ignores them.
Result<AnnotatedGraph> import_annotated_graph_json(std::string_view json,
                                                   std::string_view source_name = "<graph>");
Result<AnnotatedGraph> load_annotated_graph_file(const std::string& path);

/// Reads a whole file into a string; errors name the path.
Result<std::string> read_text_file(const std::string& path);

}  // namespace meshplan::planner
