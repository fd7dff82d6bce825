// graph.json: the JSON form of schemas/graph.fbs, read with flatbuffers::Parser against the
// embedded schema, and written back the same way.
#pragma once

#include <string>
#include <string_view>

#include "meshplan/planner/graph.hpp"

namespace meshplan::planner {

/// Parses and validates a graph. `source_name` (a file path) prefixes error messages.
Result<Graph> import_graph_json(std::string_view json, std::string_view source_name = "<graph>");
/// Reads `path` and imports it.
Result<Graph> load_graph_file(const std::string& path);
/// Writes `graph` as graph.json text (importing it again gives an equal graph).
Result<std::string> export_graph_json(const Graph& graph);

/// Reads a whole file into a string; errors name the path.
Result<std::string> read_text_file(const std::string& path);

}  // namespace meshplan::planner
