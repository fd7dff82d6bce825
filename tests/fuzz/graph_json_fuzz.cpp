// Fuzz target: the graph JSON reader (flatbuffers::Parser against graph.fbs, then validation).
// Valid graphs are also keyed. Nothing may crash or trip a sanitizer.
#include <cstdint>
#include <string>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/key.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto graph = meshplan::planner::import_graph_json(text, "fuzz.json");
  if (graph) (void)meshplan::planner::graph_key(*graph);
  return 0;
}
