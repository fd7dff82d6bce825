// Shardy's partial explicit reshards (sdy-insert-explicit-reshards with
// enable-full-version=false) and the hook into the full pass it uses (internal).
#pragma once

#include <functional>

#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

/// The full explicit-reshards pass (insert_explicit_reshards) on the entry function, resolving
/// only the ops `only` selects (all when `only` is empty); the others, the return included, stay
/// as they are.
Status insert_explicit_reshards_on(Module& m, const std::function<bool(OpId)>& only);

/// The partial version on the entry function, which leaves sharding conflicts to a later
/// partitioner: partial sums (unreduced axes) are all-reduced where a use, a manual
/// computation's boundary or a function result does not keep them; a dot whose operands agree
/// and whose result differs from them on one dim that holds exactly the contracting axes
/// computes that dim as the operands hold it and is resharded after; a result that keeps
/// partial sums gets an all_reduce over the reduction axes it does not keep; a concatenate
/// whose operands are sharded otherwise than its result is resolved as the full version does.
/// Every other op, and function results, keep their shardings even where they conflict.
/// A reduction whose result keeps partial sums while its operands disagree along the reduced
/// dims is a located error.
Status insert_explicit_reshards_partial(Module& m);

}  // namespace meshplan::planner::shlo
