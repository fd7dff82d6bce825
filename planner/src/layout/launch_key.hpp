// The bytes that identify an OpModel launch for memos (OpQuery's, and the policies' own memos of
// their choices per launch): kind, config, shapes and layouts, names aside.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "meshplan/planner/candidates.hpp"

namespace meshplan::planner {

/// Writes the launch's key into `buffer` and returns a view of it (valid until `buffer` changes).
/// Everything OpModel looks at is in it, so equal keys get equal answers.
std::string_view launch_key(std::string& buffer, const Graph& graph, device::OpKind kind,
                            std::span<const ValueId> operands,
                            std::span<const TensorLayout* const> operand_layouts, ValueId result,
                            const TensorLayout& result_layout, const device::OpConfig& config);

}  // namespace meshplan::planner
