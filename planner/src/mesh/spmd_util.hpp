// Helpers shared by the mesh passes (internal to planner/src).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// True when the function body holds an sdy.manual_computation (a solved graph).
bool has_manual_computation(const Module& m, const Func& f);
/// The sharding a value has now: its producer's (per-value or target sharding), its function
/// argument annotation, or its manual computation's in_sharding; nullopt when none.
std::optional<TensorSharding> sharding_of(const Module& m, ValueId v);
/// `{"x", "y":(1)2}`, for messages.
std::string axes_text(const std::vector<AxisRef>& axes);
/// Bytes each device of a group sends over its bottleneck link for one collective of a local
/// program (see CommStats): (N-1)/N of the group's tensor, twice for all_reduce, the local
/// tensor for a collective_permute that moves anything.
double collective_bytes(const Module& m, const Op& op, const CollectiveInfo& c);

/// Checks that an entry function holding an sdy.manual_computation is that manual computation
/// alone: its operands are the arguments in order and the return gives its results in order
/// (the per-device program's boundary); else a located "unimplemented" error.
Status check_manual_entry(const Module& m);
/// A partial manual computation in the entry (manual axes a strict subset of the mesh axes of
/// size > 1): lowers its body over the free axes (propagation, explicit reshards, collectives,
/// local shapes) so that it becomes a manual computation over every mesh axis whose in/out
/// shardings name the manual axes, then the free axes chosen. Collectives written in the body
/// must run over manual axes only. A full manual computation only gets checked; one with
/// manual_axes={} (the pipeline's wrapped form) is left to the later passes.
Status lower_partial_manual(Module& m);

/// The module's global mesh: its first mesh with axes that is not maximal ("" when none).
std::string global_mesh_name(const Module& m);
/// insert_explicit_reshards (spmd.hpp) with the global mesh given: the mesh single-device
/// (maximal-mesh) ops move their operands and results through, replicated. `shardy_rules`:
/// the `sdy-insert-explicit-reshards` stage, which takes Shardy's rules where they differ from
/// the mesh pipeline's (shardy_stage_rule: dynamic slices keep the dims they do not slice).
/// `from` without the devices of `minus`: an axis partly covered by a sub-axis of `minus`
/// keeps the sub-axes around it (`{"x", "y"}` without `{"x":(1)2}` of "x"=4: `{"x":(2)2, "y"}`);
/// Shardy's axis set difference.
/// Axes sorted as the mesh lists them (sub-axes by pre-size), adjacent sub-axes merged.
std::vector<AxisRef> mesh_order(const AxisMath& math, std::vector<AxisRef> axes);
std::vector<AxisRef> axes_minus(const AxisMath& math, const std::vector<AxisRef>& from,
                                const std::vector<AxisRef>& minus);

Status insert_explicit_reshards(Module& m, const std::string& global, bool shardy_rules,
                                const std::function<bool(OpId)>& only = nullptr);

/// Shardy's explicit unreduced moves in the entry function's body: an sdy.reshard (or a
/// function result) whose sharding adds unreduced axes to its operand's, keeping the operand's
/// own, becomes [sdy.reshard,] sdy.replicated_to_unreduced (the added axes the operand does
/// not shard) and sdy.sharded_to_unreduced (those it shards), each when needed.
Status expand_unreduced_reshards(Module& m);

}  // namespace meshplan::planner::shlo
