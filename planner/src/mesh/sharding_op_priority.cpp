// Op-priority propagation: which ops and factors each round of the schedule lets through.
#include "mesh/sharding_op_priority.hpp"

#include <initializer_list>
#include <string_view>

#include "import/meshplan_custom_call.hpp"
#include "import/stablehlo_ops.hpp"
#include "meshplan/device/types.hpp"

namespace meshplan::planner::shlo {

namespace {

bool one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (s == n) return true;
  return false;
}

/// Ops the schedule treats as elementwise: StableHLO's elementwise ops (a bitcast_convert
/// only when it keeps the shape), pointwise CHLO ops, and Shardy's own ops that pass a value
/// through (barrier, constraint, reshard).
bool elementwise(const Module& m, const Op& op) {
  if (one_of(op.name, {"sdy.propagation_barrier", "sdy.sharding_constraint", "sdy.reshard"}))
    return true;
  std::string_view name = op.name;
  if (name.starts_with("stablehlo.")) {
    std::string_view n = name.substr(10);
    if (is_elementwise_unary(n) || is_elementwise_binary(n)) return true;
    if (one_of(n, {"convert", "compare", "select", "clamp", "cbrt", "tan", "is_finite", "popcnt",
                   "count_leading_zeros", "shift_left", "shift_right_arithmetic",
                   "shift_right_logical", "round_nearest_afz", "real", "imag", "complex",
                   "reduce_precision"}))
      return true;
    if (n == "bitcast_convert")
      return op.operands.size() == 1 && op.results.size() == 1 &&
             m.values[op.operands[0]].type.shape == m.values[op.results[0]].type.shape;
    return false;
  }
  std::optional<device::OpKind> direct = device::op_from_stablehlo(op.name);
  return direct && device::is_pointwise(*direct);
}

}  // namespace

OpPriorityInfo op_priority_info(const Module& m, const Op& op, const std::vector<int>& uses) {
  OpPriorityInfo info;
  const std::string target = op.name == "stablehlo.custom_call" ? custom_call_target(op) : "";
  info.elementwise = elementwise(m, op);
  if (info.elementwise || target == "MoveToHost" || target == "MoveToDevice" ||
      one_of(op.name, {"stablehlo.reshape", "stablehlo.transpose", "sdy.data_flow_edge",
                       "sdy.func_data_flow_edge", "stablehlo.optimization_barrier"}))
    info.kind = OpPriorityInfo::pass_through;
  else if (one_of(op.name, {"stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice"}))
    info.kind = OpPriorityInfo::forward_only;
  else if (op.name == "stablehlo.broadcast_in_dim")
    info.kind = OpPriorityInfo::broadcast;
  for (ValueId v : op.operands)
    if (!m.values[v].type.shape.empty() && uses[v] > 1) info.multi_use_operand = true;
  return info;
}

std::vector<uint8_t> op_priority_directions(const OpPriorityInfo& info, const FactorRule& rule,
                                            int round) {
  const size_t nf = rule.factor_sizes.size();
  std::vector<uint8_t> dirs(nf, kDirNone);
  uint8_t first = kDirNone;  // rounds 0 and 1: the op as a whole
  if (info.kind == OpPriorityInfo::pass_through)
    first = kDirBoth;
  else if (info.kind == OpPriorityInfo::forward_only)
    first = kDirForward;
  if (round == 0 && info.multi_use_operand) first = kDirNone;
  const uint8_t later = info.kind == OpPriorityInfo::broadcast ? kDirBackward : kDirBoth;
  for (size_t f = 0; f < nf; ++f) {
    uint8_t d = first;
    if (round >= 2 && !rule.reduction[f] && !rule.need_replication[f]) d |= later;
    if (round >= 3) d |= later;
    if (round >= 4) d |= kDirBoth;
    dirs[f] = d;
  }
  return dirs;
}

}  // namespace meshplan::planner::shlo
