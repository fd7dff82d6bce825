// Zero-size tensors (a dim of size 0, e.g. tensor<0x4xf32>). An empty tensor is a valid value
// in StableHLO, but no device buffer holds zero bytes, so the lowering never places one: an op
// whose results are all empty computes nothing and its results are folded (as values with no
// elements), and the ops that make a non-empty result from an empty operand are replaced by
// what the specification says they compute without it:
//   concatenate         the non-empty operands;
//   reduce              the init values broadcast to the result (a reduction over nothing);
//   pad                 the padding value broadcast to the result (no operand element lands);
//   dot_general         zeros (the contracting dim is empty: a sum of no products);
//   dynamic_update_slice, scatter with empty updates
//                       the operand(s) unchanged (nothing is written).
// Any other op with an empty operand and a non-empty result is refused at the op's location, so
// no other lowering sees an empty operand.
#include <algorithm>

#include "meshplan/device/op_semantics.hpp"
#include "stablehlo_lower_internal.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

bool is_empty(const Lowering& l, ValueId v) {
  const auto& s = l.type(v).shape;
  return std::ranges::find(s, 0) != s.end();
}

/// Result `r` of `op` is `x` (a module value, rank 0) broadcast to r's shape.
Status bind_broadcast(Lowering& l, const Op& op, ValueId r, ValueId x) {
  const auto& shape = l.type(r).shape;
  if (const Folded* f = l.folded(x)) {
    if (f->data.size() != 1)
      return l.unimplemented(op, str(op.name, " with a zero-size operand and a non-scalar fill"));
    l.fold(r, Folded{shape, std::vector<float>(static_cast<size_t>(device::volume(shape)),
                                               f->data.front())});
    return {};
  }
  if (!l.type(x).shape.empty())
    return l.unimplemented(op, str(op.name, " with a zero-size operand and a non-scalar fill"));
  GValue g = MESHPLAN_TRY(l.use(x, op));
  if (shape.empty()) {
    l.bind(r, g);
    return {};
  }
  // Rank-aligned ones, broadcast numpy-style by the consumer (materialised by use()).
  g = MESHPLAN_TRY(l.reshape(g, std::vector<int64_t>(shape.size(), 1)));
  if (device::volume(shape) == 1)
    l.bind(r, g);
  else
    l.defer_broadcast(r, g);
  return {};
}

}  // namespace

Result<bool> lower_empty(Lowering& l, const Op& op) {
  if (op.results.empty()) return false;
  const size_t empty_results = static_cast<size_t>(
      std::ranges::count_if(op.results, [&](ValueId r) { return is_empty(l, r); }));
  if (empty_results == op.results.size()) {
    // Nothing to compute: every result has no elements.
    for (ValueId r : op.results) l.fold(r, Folded{l.type(r).shape, {}});
    return true;
  }
  if (empty_results > 0)
    return l.unimplemented(op, str(op.name, " with both zero-size and non-empty results"));
  if (std::ranges::none_of(op.operands, [&](ValueId v) { return is_empty(l, v); })) return false;
  const std::string& n = op.name;
  if (n == "stablehlo.concatenate") {
    std::vector<GValue> xs;
    for (ValueId v : op.operands)
      if (!is_empty(l, v)) xs.push_back(MESHPLAN_TRY(l.use(v, op)));
    const Attr* d = op.prop("dimension");
    if (!d) return l.unimplemented(op, "stablehlo.concatenate without a dimension");
    if (xs.size() == 1) {
      l.bind(op.results[0], xs[0]);
      return true;
    }
    if (xs.size() > static_cast<size_t>(device::kMaxOperands))
      return l.unimplemented(op, str("stablehlo.concatenate of ", xs.size(),
                                     " non-empty operands (meshplan's concat takes at most ",
                                     device::kMaxOperands, ")"));
    MESHPLAN_TRY(l.emit_for(op, OpKind::concat, xs, {{"axis", d->i}}));
    return true;
  }
  if (n == "stablehlo.reduce") {
    // (inputs..., inits...): an input is empty and the result is not, so a reduced dim is empty.
    const size_t k = op.results.size();
    if (op.operands.size() != 2 * k)
      return l.unimplemented(op, "stablehlo.reduce whose operands are not inputs and inits");
    for (size_t i = 0; i < k; ++i) {
      if (is_empty(l, op.operands[k + i]))
        return l.unimplemented(op, "stablehlo.reduce with a zero-size init value");
      MESHPLAN_TRY(bind_broadcast(l, op, op.results[i], op.operands[k + i]));
    }
    return true;
  }
  if (n == "stablehlo.pad") {
    if (op.operands.size() != 2 || is_empty(l, op.operands[1]))
      return l.unimplemented(op, "stablehlo.pad without a scalar padding value");
    MESHPLAN_TRY(bind_broadcast(l, op, op.results[0], op.operands[1]));
    return true;
  }
  if (n == "stablehlo.dot_general" || n == "stablehlo.dot") {
    const auto& shape = l.type(op.results[0]).shape;
    l.fold(op.results[0],
           Folded{shape, std::vector<float>(static_cast<size_t>(device::volume(shape)), 0.0f)});
    return true;
  }
  if (n == "stablehlo.dynamic_update_slice" && op.operands.size() >= 2 &&
      !is_empty(l, op.operands[0]) && is_empty(l, op.operands[1])) {
    l.bind(op.results[0], MESHPLAN_TRY(l.use(op.operands[0], op)));
    return true;
  }
  if (n == "stablehlo.scatter" && op.operands.size() == 2 * op.results.size() + 1) {
    // (inputs..., indices, updates...): with no update element nothing is written.
    const size_t k = op.results.size();
    bool updates_empty = true, inputs_empty = false;
    for (size_t i = 0; i < k; ++i) {
      updates_empty &= is_empty(l, op.operands[k + 1 + i]);
      inputs_empty |= is_empty(l, op.operands[i]);
    }
    if (updates_empty && !inputs_empty) {
      for (size_t i = 0; i < k; ++i) l.bind(op.results[i], MESHPLAN_TRY(l.use(op.operands[i], op)));
      return true;
    }
  }
  // No other lowering sees an empty operand: refused here, at the op.
  const ValueId e = *std::ranges::find_if(op.operands, [&](ValueId v) { return is_empty(l, v); });
  return l.unimplemented(
      op, str(n, " of the zero-size ", type_string(l.type(e)),
              " with a non-empty result (a zero-size operand is supported where the result is "
              "empty too, and in concatenate, reduce, pad, dot_general, dynamic_update_slice and "
              "scatter)"));
}

}  // namespace meshplan::planner::shlo::lowering
