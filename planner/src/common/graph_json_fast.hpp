// A strict, single-pass reader of graph.json's common form straight into a FlatBuffer.
#pragma once

#include <flatbuffers/flatbuffer_builder.h>

#include <string_view>

namespace meshplan::planner {

/// Reads `json` (a meshplan.fb.Graph in graph.json form) into `b` as a finished Graph buffer,
/// without flatbuffers' JSON parser (which formats every offset it stores through a string
/// stream: most of a large graph's import time).
///
/// It takes a strict subset of what that parser accepts: the fields name, arguments (value,
/// kind, data, sharding), ops (name, kind, operands, results, attributes), outputs and
/// output_shardings; keys quoted or bare; strings without escapes or control bytes;
/// enum values by name; JSON numbers; trailing commas. For anything else (other fields, mesh
/// tables, escapes, comments, unknown or repeated keys, a missing required field, malformed
/// text) it returns false and leaves `b` in an unspecified state: the caller parses the text with
/// flatbuffers' parser instead, whose errors name the line and column. So an accepted text gives
/// the buffer that parser would have built, and a refused one the error it gives.
/// Not thread-safe per builder; no state outside `b`.
bool read_graph_json_fast(std::string_view json, flatbuffers::FlatBufferBuilder& b);

}  // namespace meshplan::planner
