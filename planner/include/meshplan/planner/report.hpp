// The plan report: one self-contained HTML file (no network resources) that shows what the
// planner decided: the op table with layouts and configs, an SVG map of L1 over the schedule,
// the simulated timeline, and a policy comparison when several plans of one graph are given.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "meshplan/schemas/error.hpp"
#include "meshplan/schemas/schemas.hpp"

namespace meshplan::planner {

/// One plan to report on: its verified FlatBuffer and a label (usually the policy).
struct ReportPlan {
  const fb::Plan* plan;
  std::string label;
};

/// Renders plans[0] in full and, if there are several, a comparison of all of them.
/// Preconditions: every plan passed runtime::verify_plan (or came from planner::compile).
Result<std::string> render_report(std::span<const ReportPlan> plans);

/// Escapes text for HTML/XML content and attribute values.
std::string html_escape(std::string_view text);

}  // namespace meshplan::planner
