// tt-metal's launch rules for the collectives that have them (all_gather, reduce_scatter,
// all_reduce, all_to_all, collective_permute), as a predicate on a per-chip operand shape:
// OpModel::validate applies them to a launch, and the StableHLO lowering asks them to replace a
// refused collective by an equivalent legal sequence.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "meshplan/device/types.hpp"

namespace meshplan::device {

/// Empty when tt-metal takes an all_gather, reduce_scatter, all_reduce, all_to_all or
/// collective_permute of a per-chip operand `shape` named `name` with `config` (its
/// collective_dim, split_dim, concat_dim, cluster_axis, mesh, reduce and pairs), else why not,
/// quoting tt-metal. Empty for every other kind.
std::string collective_launch_rule(OpKind kind, std::string_view name,
                                   std::span<const int64_t> shape, const OpConfig& config);

}  // namespace meshplan::device
