// Fuzz target: the StableHLO/Shardy text to a plan, the whole path meshplan-compile takes for a
// .mlir: parse (with the semantic checks), print, the mesh pipeline, lowering to the graph IR
// (with validate()) and planning for a chip, for graphs up to a size cap. Nothing may crash or
// trip a sanitizer; errors are values.
#include <cstdint>
#include <string>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"

using namespace meshplan;

namespace {

/// Planning cost grows with tensor sizes; keep each run fast.
bool small_enough(const planner::Graph& g) {
  int64_t total = 0;
  for (const planner::Value& v : g.values) {
    int64_t n = 1;
    for (int64_t d : v.shape) {
      if (d <= 0 || d > (1 << 16)) return false;
      n *= d;
      if (n > (1 << 18)) return false;
    }
    total += n;
  }
  return total <= (1 << 20) && g.ops.size() <= 64;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto module = planner::shlo::parse_module(text, "fuzz.mlir");
  if (!module) return 0;
  (void)planner::shlo::print_module(*module);
  planner::shlo::Module global = *module;
  (void)planner::shlo::lower_to_graph(global);  // the single-device reading of the module
  if (!planner::shlo::run_pipeline(*module, planner::shlo::PipelineOptions{})) return 0;
  auto graph = planner::shlo::lower_to_graph(*module);
  if (!graph || !small_enough(*graph)) return 0;
  (void)planner::compile(*graph, device::wormhole_b0(),
                         planner::PlannerOptions::with_policy("dram"));
  return 0;
}
