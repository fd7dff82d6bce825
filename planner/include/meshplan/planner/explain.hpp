// The per-chip pipeline made visible: its state after a stage as JSON (meshplan-compile
// --stop-after=STAGE --emit=plan-json), one op's candidates and why each was or was not chosen
// (--explain OP), and df-sharding's chains and ShardSolver state (--dump-solver).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/key.hpp"

namespace meshplan::planner {

/// The per-chip pipeline's stages, in order: candidate layouts per op, the policy's layouts
/// (moves inserted), spill management, the memory plan (packed, validated, addressed), the plan.
enum class PlanStage { candidates, layout, spills, memory, emit };

/// The stage named `name` (candidates, layout, spills, memory, emit), if any.
std::optional<PlanStage> plan_stage_from_name(std::string_view name);

/// The graph compile() hands the policies: conv2d weights prepared and spatial regions flattened
/// as `options` ask (prepare_weights, flatten_spatial).
Result<Graph> planning_graph(const Graph& graph, const PlannerOptions& options);

/// The pipeline's state after `stage` (not emit: the plan itself is that stage's output) as JSON.
/// `graph` is the planning graph (planning_graph()).
///   candidates: per op, its result's candidate layouts with their L1 bytes per core;
///   layout, spills: per op of the planned graph its origin (graph, reshard, spill), operands,
///     result, result layout and grid; the reshard and spill counts;
///   memory: as layout, with every tensor's address and bytes per bank and the high waters.
Result<std::string> stage_json(const Graph& graph, const device::ChipDesc& chip,
                               const PlannerOptions& options, PlanStage stage);

/// For the op named `op` of `graph` (the planning graph) as options.policy plans it: its operands'
/// planned layouts (and the moves feeding them), each candidate result layout with OpModel's
/// cost or its reason for rejecting it, the L1 it needs beside the L1 tensors live across the op
/// against the usable L1, df-sharding's chain for the op (state, failing edge), and the choice.
/// Fails (not_found) naming the op when the graph has none of that name.
Result<std::string> explain_op(const Graph& graph, const device::ChipDesc& chip,
                               const PlannerOptions& options, std::string_view op);

/// df-sharding's chains, states and reservations, and per chain the ShardSolver's configs,
/// bitsets and paths, naming the edge with no valid path when a chain fails.
Result<std::string> dump_solver(const Graph& graph, const device::ChipDesc& chip,
                                const PlannerOptions& options);

}  // namespace meshplan::planner
