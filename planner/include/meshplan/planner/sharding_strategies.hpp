// Shardy's propagation strategies as separately selectable passes, and the module that
// Shardy's own propagation pipeline prints (so that meshplan can be diffed against Shardy).
#pragma once

#include <optional>
#include <string_view>

#include "meshplan/planner/sharding.hpp"

namespace meshplan::planner::shlo {

/// The levels of Shardy's conflict-resolution hierarchy (propagation.md, "Conflict resolution
/// hierarchy"); each level runs the one below it in a loop.
enum class PropagationStrategy {
  /// Only axes every operand and result agree on (the longest compatible major axes); an axis
  /// two factors of one op want goes to neither. No priorities.
  basic,
  /// As basic within a factor, but an axis two factors want goes to the factor whose source
  /// tensor is largest (ties: the first factor).
  aggressive,
  /// Aggressive, first through pass-through ops (elementwise, reshape, ...), then all ops.
  op_priority,
  /// Op-priority once per user priority p0, p1, ...: iteration i uses dims of priority <= i.
  user_priority,
  /// User-priority, then the pipeline's export: shardings closed, priorities dropped,
  /// sharding constraints become reshards, sharding groups and barriers leave.
  pipeline,
};

/// Parses a module for the `sdy-propagation` stage: as parse_module, but `stablehlo.while`
/// loops and `stablehlo.optimization_barrier`s stay as written (Shardy propagates through
/// them; the mesh passes get them unrolled and dropped), `func.call` and private functions
/// stay, and `!stablehlo.token` is read as a type.
Result<Module> parse_module_for_propagation(std::string_view text, std::string file = "<input>");
Result<Module> parse_module_file_for_propagation(const std::string& path);

/// "basic", "aggressive", "op-priority", "user-priority", "pipeline", or nullopt.
std::optional<PropagationStrategy> strategy_from_name(std::string_view name);
std::string_view strategy_name(PropagationStrategy strategy);

/// Propagation on the entry function with one strategy. Values it gives no axis keep the
/// sharding they had (none when they had none), as Shardy leaves them.
Result<PropagationStats> propagate(Module& module, PropagationStrategy strategy);

/// The `sdy-propagation` stage: checks the stated shardings, propagates with `strategy` and,
/// for `pipeline`, applies the export Shardy's propagation pipeline ends with. No manual
/// computation is added and no explicit reshards are inserted.
Status run_sdy_propagation(Module& module, PropagationStrategy strategy);

}  // namespace meshplan::planner::shlo
