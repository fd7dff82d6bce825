// Fuzz target: the StableHLO/Shardy text parser, the printer and the lowering to the graph IR
// (lower_to_graph, with validate()). Nothing may crash or trip a sanitizer; errors are values.
#include <cstdint>
#include <string>

#include "meshplan/planner/spmd.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto module = meshplan::planner::shlo::parse_module(text, "fuzz.mlir");
  if (!module) return 0;
  (void)meshplan::planner::shlo::print_module(*module);
  (void)meshplan::planner::shlo::lower_to_graph(*module);
  return 0;
}
