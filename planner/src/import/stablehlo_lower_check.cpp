// StableHLO interpreter checks (`stablehlo.custom_call @check.expect_*`, as the JAX-generated
// test programs carry them): each check's two tensors become extra plan outputs whose names hold
// the check record (docs/formats.md, "Check outputs"); the runtime compares them after a run.
#include <algorithm>

#include "import/meshplan_custom_call.hpp"
#include "import/stablehlo_lower_internal.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

/// The call targets with the interpreter's meaning (two operands: actual, expected; no result).
constexpr std::string_view kCheckTargets[] = {"check.expect_close", "check.expect_eq",
                                              "check.expect_almost_eq"};

bool supported_check(std::string_view target) {
  return std::ranges::find(kCheckTargets, target) != std::end(kCheckTargets);
}

/// A distinct graph value equal to `v` (the device's reshape to the same shape, exact), so that
/// a check output has a name of its own even when it is a program result or input as well.
Result<GValue> copy_value(Lowering& l, GValue v) {
  const auto shape = l.graph().values[v].shape;
  const DType dt = l.graph().values[v].dtype;
  if (shape.empty()) return l.reshape(MESHPLAN_TRY(l.reshape(v, {1})), {});
  return l.emit(OpKind::reshape, {v}, {{"shape", shape}}, shape, dt);
}

}  // namespace

bool is_check_call(const Op& op) {
  return custom_call_target(op).starts_with("check.");
}

Result<std::optional<PendingCheck>> lower_check(Lowering& l, const Op& op) {
  const std::string target = custom_call_target(op);
  if (!supported_check(target))
    return l.unimplemented(op, str("stablehlo.custom_call @", target,
                                   ": meshplan runs the interpreter checks @check.expect_close, "
                                   "@check.expect_eq and @check.expect_almost_eq"));
  if (op.operands.size() != 2 || !op.results.empty())
    return l.unimplemented(
        op, str("stablehlo.custom_call @", target, " with ", op.operands.size(), " operands and ",
                op.results.size(), " results (a check takes actual and expected, no result)"));
  const TensorType& a = l.type(op.operands[0]);
  const TensorType& e = l.type(op.operands[1]);
  if (a.shape != e.shape || a.element != e.element)
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": stablehlo.custom_call @", target,
                " compares ", type_string(a), " with ", type_string(e),
                " (a check compares tensors of one type)");
  if (std::ranges::find(a.shape, 0) != a.shape.end()) return std::nullopt;  // vacuously true
  PendingCheck c;
  c.kind = target.substr(std::string_view("check.").size());
  c.element = a.element;
  c.loc = op.loc.str();
  c.actual = MESHPLAN_TRY(l.use(op.operands[0], op));
  c.expected = MESHPLAN_TRY(l.use(op.operands[1], op));
  return c;
}

Status add_check_outputs(Lowering& l, const std::vector<PendingCheck>& checks) {
  Graph& g = l.graph();
  std::vector<bool> claimed(g.values.size(), false);
  for (GValue v : g.outputs) claimed[v] = true;
  for (GValue v : g.arguments)
    if (g.values[v].kind != ArgKind::constant) claimed[v] = true;
  for (size_t i = 0; i < checks.size(); ++i) {
    const PendingCheck& c = checks[i];
    for (auto [v, role] : {std::pair{c.actual, "actual"}, std::pair{c.expected, "expected"}}) {
      GValue out = v;
      if (claimed[v]) out = MESHPLAN_TRY(copy_value(l, v));
      claimed.resize(g.values.size(), false);
      claimed[out] = true;
      g.values[out].name = str("check:", i, ":", c.kind, ":", c.element, ":", role, "@", c.loc);
      g.outputs.push_back(out);
    }
  }
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
