// Unreduced values in the `sdy-propagation` stage's pipeline strategy, as Shardy documents
// them (sdy_dialect.md, TensorShardingAttr `unreduced`; AllReduceOp): a value whose sharding
// has `unreduced={...}` axes holds partial results over those axes, and a use that does not
// keep them unreduced first needs an `sdy.all_reduce` over them.
#pragma once

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// Inserts an `sdy.all_reduce` before each use of a value whose sharding has unreduced axes
/// that the use does not keep: a `sdy.reshard` keeps the axes its target lists as unreduced,
/// a `func.return` the ones of the function's result sharding, any other op the ones its
/// first result lists. The all_reduce reduces the axes the use drops, in the value's order;
/// its out sharding is the value's with only the kept axes unreduced. It sits right before
/// the use, in the use's block (loop bodies and branches too).
void insert_unreduced_all_reduces(Module& m);

}  // namespace meshplan::planner::shlo
