// Sharding groups (`sdy.sharding_group %v group_id=N`) in the `sdy-propagation` stage, as
// Shardy documents them (sdy_dialect.md, ShardingGroupOp; sdy_import_passes.md,
// -sdy-sharding-group-import): every value of a group ends with one sharding.
#pragma once

#include <vector>

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// The import of sharding groups: checks that the values of a group have one shape and sit
/// in the same `sdy.manual_computation` (or in none); merges the groups that share a value
/// (the merged group takes the smallest id); renumbers the groups 0..N-1 keeping their order;
/// drops a second `sdy.sharding_group` of a value in the same group.
Status import_sharding_groups(Module& m);

/// The members of every group (index = group id after import_sharding_groups), in the order
/// of their `sdy.sharding_group` ops.
std::vector<std::vector<ValueId>> sharding_group_members(const Module& m);

/// What propagation starts from: when the members' shardings agree (shardings that are fully
/// open and unsharded say nothing), every member gets that sharding. When two members state
/// different shardings, a warning goes to `m.notes` and every member gets a fully open
/// `sdy.sharding_constraint` right after it, which takes its uses and its place in the group,
/// so that propagation may settle the group.
void sync_sharding_groups(Module& m);

}  // namespace meshplan::planner::shlo
