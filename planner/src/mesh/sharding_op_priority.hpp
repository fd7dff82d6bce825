// Op-priority propagation (Shardy's op-based schedule, propagation.md): the whole program is
// propagated several times, each round letting more ops and factors through, in directions
// that grow from round to round (internal).
#pragma once

#include <cstdint>
#include <vector>

#include "meshplan/planner/sharding.hpp"

namespace meshplan::planner::shlo {

/// Directions a factor may propagate in through an op: bit 1 forward (operands decide the
/// results), bit 2 backward (results decide the operands). A direction that is not allowed
/// still limits the axes (a conflicting sharding on that side is not overridden).
inline constexpr uint8_t kDirNone = 0, kDirForward = 1, kDirBackward = 2, kDirBoth = 3;

/// Rounds of the op-priority schedule:
///  0. pass-through ops (elementwise, reshape, transpose, data-flow edges, host-offload
///     custom calls both ways; dynamic_slice / dynamic_update_slice forward only) none of whose
///     non-scalar operands has another use;
///  1. the same ops whatever the uses of their operands;
///  2. every op along its pass-through factors (not reduction or need-replication factors),
///     broadcast_in_dim backward only;
///  3. every factor of every op, broadcast_in_dim still backward only;
///  4. everything both ways.
/// Each round allows what the earlier rounds allowed.
inline constexpr int kOpPriorityRounds = 5;

/// Per op, what the schedule needs to know about it (computed once).
struct OpPriorityInfo {
  enum Kind : uint8_t { other, pass_through, forward_only, broadcast } kind = other;
  bool multi_use_operand = false;  ///< A non-scalar operand with more than one use.
  bool elementwise = false;        ///< Elementwise for the schedule (and sideways limits).
};

/// Classifies `op`; `uses[v]` counts the operand slots reading value v in the function (the
/// return and nested regions included).
OpPriorityInfo op_priority_info(const Module& m, const Op& op, const std::vector<int>& uses);

/// The directions of every factor of `rule` in `round` (union of rounds 0..round).
std::vector<uint8_t> op_priority_directions(const OpPriorityInfo& info, const FactorRule& rule,
                                            int round);

}  // namespace meshplan::planner::shlo
