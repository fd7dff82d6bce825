// Text helpers the printer shares with attribute printing (stablehlo_print_attr.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// `"text"` with MLIR string escapes.
std::string quote(std::string_view s);
/// `{"x", "y":(1)2}`.
std::string axes_string(const std::vector<AxisRef>& axes);

}  // namespace meshplan::planner::shlo
