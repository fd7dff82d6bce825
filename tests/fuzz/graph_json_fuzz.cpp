// Fuzz target: the graph JSON readers (meshplan's strict reader of the common form, and
// flatbuffers::Parser against graph.fbs for the rest), validation, the key, and planning for a
// chip for graphs up to a size cap: the path meshplan-compile takes for a graph.json. Nothing may
// crash or trip a sanitizer, and whatever the strict reader accepts, flatbuffers' parser must
// accept as the same graph (both buffers printed as JSON by the same parser must match).
#include <flatbuffers/idl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/graph_json_fast.hpp"
#include "meshplan/schemas/schemas.hpp"

#include "meshplan/device/descriptor.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"

using namespace meshplan;

namespace {

// The strict reader against flatbuffers' parser on the same text.
void check_fast_reader(const std::string& text) {
  flatbuffers::FlatBufferBuilder fast;
  if (!planner::read_graph_json_fast(text, fast)) return;
  flatbuffers::Parser parser;
  std::string schema(schemas::kGraphSchemaText);
  if (!parser.Parse(schema.c_str(), nullptr, "graph.fbs")) std::abort();
  std::string fast_json, full_json;
  bool parsed = parser.Parse(text.c_str(), nullptr, "fuzz.json");
  if (parsed) {
    flatbuffers::Verifier v(fast.GetBufferPointer(), fast.GetSize());
    parsed = fb::VerifyGraphBuffer(v) &&
             flatbuffers::GenerateText(parser, fast.GetBufferPointer(), &fast_json) &&
             flatbuffers::GenerateText(parser, parser.builder_.GetBufferPointer(), &full_json);
  }
  if (!parsed || fast_json != full_json) {
    std::fprintf(stderr, "strict graph.json reader disagrees with flatbuffers' parser (%s)\n%s\n",
                 parsed ? "different graphs" : parser.error_.c_str(), text.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  check_fast_reader(text);
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
