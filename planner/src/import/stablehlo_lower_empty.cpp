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
//                       the operand(s) unchanged (nothing is written);
//   reduce_window       the init value broadcast to the result (every window holds only
//                       padding) for maximum, minimum, and, or; add with init 0; multiply with 1;
//   select_and_scatter with an empty source
//                       the init value broadcast to the result (nothing is scattered);
//   convolution         zeros for an empty kernel (no product); for an empty input (windows in
//                       its zero padding) the sum of 0 * w over each output feature's kernel.
// Any other op with an empty operand and a non-empty result is refused at the op's location, so
// no other lowering sees an empty operand.
#include <algorithm>
#include <cmath>

#include "import/stablehlo_lower_internal.hpp"
#include "meshplan/device/op_semantics.hpp"

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

/// The name of the one computing op of `op`'s region `r` (`stablehlo.add` for a region of an
/// add and its return), or "" when the region is anything else.
std::string region_op(const Lowering& l, const Op& op, size_t r) {
  if (op.regions.size() <= r || op.regions[r].ops.size() != 2) return "";
  const Op& body = l.module().ops[op.regions[r].ops[0]];
  const Op& ret = l.module().ops[op.regions[r].ops[1]];
  if (body.results.size() != 1 || ret.operands.size() != 1 || ret.operands[0] != body.results[0])
    return "";
  return body.name;
}

/// The bracketed groups of convolution dim_numbers (`[b, 0, f]x[0, i, o]->[b, 0, f]`).
std::vector<std::vector<std::string>> conv_dims(std::string_view text) {
  std::vector<std::vector<std::string>> parts;
  std::string cur;
  for (char ch : text) {
    if (ch == '[') {
      parts.emplace_back();
      cur.clear();
    } else if ((ch == ',' || ch == ']') && !parts.empty()) {
      if (!cur.empty()) parts.back().push_back(cur);
      cur.clear();
    } else if (ch != ' ') {
      cur += ch;
    }
  }
  return parts;
}

/// A convolution with an empty operand and a non-empty result. An empty kernel contributes no
/// product: zeros. An empty input (the windows lie in its zero padding) with a non-empty kernel
/// gives, for output feature o, the sum of 0 * w over the whole kernel slice of o: 0, or NaN
/// where that slice holds an infinity or NaN; computed so on the device.
Status lower_empty_convolution(Lowering& l, const Op& op) {
  const auto& shape = l.type(op.results[0]).shape;
  if (is_empty(l, op.operands[1])) {
    l.fold(op.results[0],
           Folded{shape, std::vector<float>(static_cast<size_t>(device::volume(shape)), 0.0f)});
    return {};
  }
  const Attr* dn = op.prop("dim_numbers");
  auto parts = conv_dims(dn ? std::string_view(dn->text) : std::string_view());
  const auto& ws = l.type(op.operands[1]).shape;
  auto at = [](const std::vector<std::string>& p, std::string_view s) {
    return static_cast<size_t>(std::ranges::find(p, s) - p.begin());
  };
  if (parts.size() != 3 || parts[1].size() != ws.size() || parts[2].size() != shape.size() ||
      at(parts[1], "o") >= ws.size() || at(parts[2], "f") >= shape.size())
    return l.unimplemented(op,
                           "stablehlo.convolution of a zero-size input whose dim_numbers "
                           "name no kernel output feature and result feature dims");
  const size_t o = at(parts[1], "o"), f = at(parts[2], "f");
  DType dt = MESHPLAN_TRY(dtype_of(l.type(op.results[0]), op.loc));
  GValue w = MESHPLAN_TRY(l.use(op.operands[1], op));
  GValue zero = MESHPLAN_TRY(l.constant(Folded{std::vector<int64_t>(ws.size(), 1), {0.0f}}, dt));
  GValue z = MESHPLAN_TRY(l.emit(OpKind::multiply, {w, zero}, {}, ws, dt));
  std::vector<int64_t> dims;
  for (size_t d = 0; d < ws.size(); ++d)
    if (d != o) dims.push_back(static_cast<int64_t>(d));
  if (!dims.empty())
    z = MESHPLAN_TRY(l.emit(OpKind::reduce_sum, {z}, {{"dims", dims}}, {ws[o]}, dt));
  std::vector<int64_t> aligned(shape.size(), 1);
  aligned[f] = ws[o];
  z = MESHPLAN_TRY(l.reshape(z, aligned));
  if (aligned == shape)
    l.bind(op.results[0], z);
  else
    l.defer_broadcast(op.results[0], z);
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
  if (n == "stablehlo.reduce_window" && op.operands.size() == 2 && op.results.size() == 1) {
    // Every window holds only padding (init values): the result is the body folded over
    // init values, which is the init itself for an idempotent body or an identity init.
    const std::string body = region_op(l, op, 0);
    const Folded* init = l.folded(op.operands[1]);
    const float c = init && init->data.size() == 1 ? init->data.front() : NAN;
    if (body == "stablehlo.maximum" || body == "stablehlo.minimum" || body == "stablehlo.and" ||
        body == "stablehlo.or" || (body == "stablehlo.add" && c == 0.0f) ||
        (body == "stablehlo.multiply" && c == 1.0f)) {
      MESHPLAN_TRY(bind_broadcast(l, op, op.results[0], op.operands[1]));
      return true;
    }
    return l.unimplemented(
        op, str("stablehlo.reduce_window of the zero-size ", type_string(l.type(op.operands[0])),
                " with a ", body.empty() ? std::string("non-simple") : body,
                " body and this init value (supported: maximum, minimum, and, or; add with init "
                "0; multiply with init 1)"));
  }
  if (n == "stablehlo.select_and_scatter" && op.operands.size() == 3 &&
      !is_empty(l, op.operands[0]) && is_empty(l, op.operands[1])) {
    // No source value is scattered: every element is the init value.
    MESHPLAN_TRY(bind_broadcast(l, op, op.results[0], op.operands[2]));
    return true;
  }
  if (n == "stablehlo.convolution" && op.operands.size() == 2) {
    MESHPLAN_TRY(lower_empty_convolution(l, op));
    return true;
  }
  // No other lowering sees an empty operand: refused here, at the op.
  const ValueId e = *std::ranges::find_if(op.operands, [&](ValueId v) { return is_empty(l, v); });
  return l.unimplemented(
      op, str(n, " of the zero-size ", type_string(l.type(e)),
              " with a non-empty result (a zero-size operand is supported where the result is "
              "empty too, and in concatenate, reduce, pad, dot_general, dynamic_update_slice, "
              "scatter, reduce_window, select_and_scatter and convolution)"));
}

}  // namespace meshplan::planner::shlo::lowering
