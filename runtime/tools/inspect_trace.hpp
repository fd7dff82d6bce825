// meshplan-run's plan views: `inspect` (a readable table, or JSON through the plan schema) and
// --trace (Chrome trace / Perfetto JSON of a run's simulated timeline).
#pragma once

#include <string>

#include "meshplan/runtime/executable.hpp"

namespace meshplan::tools {

/// One line per op: index, name, kind, config, result placement (buffer, layout), grid, address,
/// bytes per bank/core, planner's estimated time; then the plan's header and metrics.
std::string inspect_table(const runtime::PlanRef& plan);
/// The plan as JSON, printed by FlatBuffers from the embedded plan schema.
Result<std::string> inspect_json(const runtime::PlanRef& plan);
/// Chrome trace JSON ("traceEvents"): process = chip, thread = core group (ops grouped by the
/// number of cores they ran on), one complete event per op with its simulated duration;
/// to_memory_config ops are in category "reshard".
std::string chrome_trace(const runtime::PlanRef& plan, const runtime::RunResult& run,
                         const std::string& chip_name);

}  // namespace meshplan::tools
