// Fuzz target: the graph JSON reader (flatbuffers::Parser against graph.fbs, then validation),
// the key, and planning for a chip for graphs up to a size cap: the path meshplan-compile takes
// for a graph.json. Nothing may crash or trip a sanitizer.
#include <cstdint>
#include <string>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"

using namespace meshplan;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto graph = planner::import_graph_json(text, "fuzz.json");
  if (!graph) return 0;
  (void)planner::graph_key(*graph);
  // Planning cost grows with tensor sizes; keep each run fast.
  int64_t total = 0;
  for (const planner::Value& v : graph->values) {
    int64_t n = 1;
    for (int64_t d : v.shape) {
      if (d <= 0 || d > (1 << 16)) return 0;
      n *= d;
      if (n > (1 << 18)) return 0;
    }
    total += n;
  }
  if (total > (1 << 20) || graph->ops.size() > 64) return 0;
  (void)planner::compile(*graph, device::wormhole_b0(),
                         planner::PlannerOptions::with_policy("dram"));
  return 0;
}
