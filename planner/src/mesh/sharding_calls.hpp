// func.call in the `sdy-propagation` stage, as Shardy treats it (sdy_import_passes.md,
// -sdy-flatten-call-graph; sdy_export_passes.md, -sdy-unflatten-call-graph): the call graph is
// flattened so that every call has its own callee, propagation sees through calls, and the
// callees that end with the same origin and shardings are merged again.
#pragma once

#include <string>
#include <vector>

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// What inline_for_propagation changed, for restore_calls to undo.
struct CallView {
  bool active = false;
  Block entry_body;                                ///< The entry's body as written.
  std::vector<std::vector<ValueId>> operands;      ///< Every op's operands as written.
  std::vector<std::vector<Block>> regions;         ///< Every op's regions as written.
  std::vector<std::pair<ValueId, ValueId>> subst;  ///< Inlined value -> the value it stands for.
  std::vector<std::string> origin;                 ///< Per function: the function it copies.
};

/// Gives every call after the first to a function its own copy of the callee (and of what the
/// callee calls), named `name_N` with one counter for the module; callees come before callers.
Status flatten_call_graph(Module& m, CallView& view);

/// Replaces the entry's body by the body with every call expanded (callee arguments stand for
/// the call's operands, call results for the callee's returned values), so that propagation
/// runs on one block. The ops are the functions' own ops, not copies.
Status inline_for_propagation(Module& m, CallView& view);

/// Puts the functions back: shardings stay on their ops; a call's results and its callee's
/// results take the sharding of the value the callee returns, the callee's arguments that of
/// the call's operands (shardings stated on the callee stay). The callee's result shardings
/// are set only with `callee_results` (Shardy's export sets them; a strategy alone does not).
void restore_calls(Module& m, CallView& view, bool callee_results);

/// Calls whose callees have the same origin and the same argument and result shardings call
/// the first such callee (calls in module order); callees no call reaches any more leave.
void unflatten_call_graph(Module& m, const CallView& view);

}  // namespace meshplan::planner::shlo
