// Shardy's export passes one at a time (sdy_export_passes.md), so that meshplan's rewrite of a
// propagated module can be diffed against Shardy's pass of the same name.
#pragma once

#include <optional>
#include <string_view>

#include "meshplan/planner/sharding.hpp"

namespace meshplan::planner::shlo {

/// The export passes a `--stop-after=sdy-NAME` stage runs alone on a module as written.
enum class ExportPass {
  /// `sdy.sharding_constraint` -> `sdy.reshard` with the same sharding and attributes.
  sharding_constraint_to_reshard,
  /// `sdy.sharding_group` ops leave.
  remove_sharding_groups,
  /// `sdy.sharding_rule` attributes leave.
  drop_sharding_rules,
  /// Every sharding closed: open dims close, priorities and `replicated={...}` axes leave.
  close_shardings,
  /// meshplan's explicit reshards (spmd.hpp, insert_explicit_reshards) on the entry function.
  insert_explicit_reshards,
  /// meshplan's reshard -> collective rewrite (spmd.hpp, reshards_to_collectives).
  reshard_to_collectives,
};

/// "sdy-sharding-constraint-to-reshard", "sdy-remove-sharding-groups", "sdy-drop-sharding-rules",
/// "sdy-close-shardings", "sdy-insert-explicit-reshards", "sdy-reshard-to-collectives" (Shardy's
/// pass flags), or nullopt.
std::optional<ExportPass> export_pass_from_name(std::string_view name);
/// The stage names export_pass_from_name takes, comma-separated (for messages).
std::string_view export_pass_names();

/// Which version of sdy-insert-explicit-reshards runs (Shardy's `enable-full-version` option).
enum class ExplicitReshards {
  /// Every op ends with agreeing shardings, function results with their declared sharding.
  full,
  /// Only what a later partitioner cannot do: partial sums a use drops are all-reduced, a dot
  /// result is resharded where that spares a reduce-scatter of a larger operand, calls and
  /// concatenates fed other shardings are resolved as in the full version; other conflicts and
  /// function results stay as they are.
  partial,
};

/// "full" or "partial" (--explicit-reshards), or nullopt.
std::optional<ExplicitReshards> explicit_reshards_from_name(std::string_view name);

/// The options of the export passes.
struct ExportOptions {
  ExplicitReshards explicit_reshards = ExplicitReshards::full;  ///< sdy-insert-explicit-reshards
};

/// Runs one export pass on every function of the module (each seen on the mesh its shardings
/// name first); the shardings were checked when the module was read.
Status run_sdy_export_pass(Module& module, ExportPass pass, const ExportOptions& options = {});

}  // namespace meshplan::planner::shlo
