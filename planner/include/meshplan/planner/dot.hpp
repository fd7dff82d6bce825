// The planned graph as Graphviz text (`meshplan-compile --emit=dot`): one node per op with its
// config and result layout, one node per graph argument and per plan output, edges labelled with
// the tensor's shape and memory; moves the planner inserted (reshards, spills) are marked.
#pragma once

#include <string>
#include <string_view>

#include "meshplan/schemas/schemas.hpp"

namespace meshplan::planner {

/// Renders `plan` as a DOT digraph named `name`. Node ids: `op<I>` for op I (schedule order),
/// `arg<T>` for argument tensor T (inputs, parameters, constants), `out<K>` for output K.
/// Reshards are orange and labelled "[reshard]", spills red and labelled "[spill]".
/// Deterministic; every string from the plan is escaped. Precondition: `plan` passed
/// runtime::verify_plan (or came from planner::compile).
std::string render_dot(const fb::Plan& plan, std::string_view name);

/// Escapes text for a double-quoted DOT string (quotes, backslashes, control characters).
std::string dot_escape(std::string_view text);

}  // namespace meshplan::planner
