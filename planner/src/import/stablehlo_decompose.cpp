// Ops the StableHLO spec defines by a decomposition into other StableHLO ops, rewritten into
// those ops when a module is read: batch_norm_inference / training / grad (the spec's
// formulas), get_dimension_size of a static dim (a constant) and dynamic_iota of a static
// result (an iota). Later passes (propagation, the reference, the lowering) see only the
// decomposed ops, so each computes, shards and prints as its parts do.
#include <string>
#include <vector>

#include "import/stablehlo_parser.hpp"

namespace meshplan::planner::shlo {

namespace {

/// An attribute written as an inherent property or in the discardable dictionary.
const Attr* either(const Op& op, std::string_view name) {
  const Attr* a = op.prop(name);
  return a ? a : op.attr(name);
}

/// Builds the ops replacing one op, appending them to `out`.
class Builder {
 public:
  Builder(Module& m, const Op& at, std::vector<OpId>& out) : m_(m), loc_(at.loc), out_(out) {}

  ValueId op(std::string name, std::vector<ValueId> operands, const TensorType& type,
             std::vector<NamedAttr> props = {}) {
    OpId o = m_.add_op(std::move(name), std::move(operands), {type}, loc_);
    m_.ops[o].props = std::move(props);
    out_.push_back(o);
    return m_.ops[o].results[0];
  }
  ValueId binary(const char* name, ValueId a, ValueId b) {
    return op(str("stablehlo.", name), {a, b}, m_.values[a].type);
  }
  ValueId splat(double v, const TensorType& type) {
    Attr d;
    d.kind = Attr::Kind::dense;
    d.type = type;
    d.values = {v};
    return op("stablehlo.constant", {}, type, {{"value", d}});
  }
  /// Rank-1 `v` broadcast along dim `f` of `type`.
  ValueId along(ValueId v, int64_t f, const TensorType& type) {
    return op("stablehlo.broadcast_in_dim", {v}, type,
              {{"broadcast_dimensions", Attr::ints_array({f})}});
  }
  /// Sum of `x` over every dim but `f` (a rank-1 result).
  ValueId sum_but(ValueId x, int64_t f) {
    const TensorType& t = m_.values[x].type;
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < static_cast<int64_t>(t.shape.size()); ++d)
      if (d != f) dims.push_back(d);
    TensorType scalar{{}, t.element};
    ValueId zero = splat(0.0, scalar);
    OpId r = m_.add_op("stablehlo.reduce", {x, zero},
                       {TensorType{{t.shape[static_cast<size_t>(f)]}, t.element}}, loc_);
    ValueId a0 = m_.add_value(scalar, kNone, 0), a1 = m_.add_value(scalar, kNone, 1);
    OpId add = m_.add_op("stablehlo.add", {a0, a1}, {scalar}, loc_);
    OpId ret = m_.add_op("stablehlo.return", {m_.ops[add].results[0]}, {}, loc_);
    m_.ops[r].props = {{"dimensions", Attr::ints_array(dims)}};
    m_.ops[r].regions.push_back(Block{{a0, a1}, {add, ret}});
    out_.push_back(r);
    return m_.ops[r].results[0];
  }
  /// The op that computed `v` now defines `result` instead (the replaced op's result, which
  /// its users read).
  void rename(ValueId v, ValueId result) {
    for (OpId o : out_)
      for (ValueId& u : m_.ops[o].operands)
        if (u == v) u = result;
    OpId d = m_.values[v].def;
    m_.ops[d].results[m_.values[v].index] = result;
    m_.values[result].def = d;
    m_.values[result].index = m_.values[v].index;
  }

 private:
  Module& m_;
  Location loc_;
  std::vector<OpId>& out_;
};

Status decompose_op(Module& m, OpId o, std::vector<OpId>& out) {
  if (is_einsum(m.ops[o].name)) return decompose_einsum(m, o, out);
  const Op op = m.ops[o];  // copied: building grows the arena
  const std::string& n = op.name;
  auto bad = [&](auto&&... what) {
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", n, ": ", what...);
  };
  if (n == "stablehlo.get_dimension_size") {
    const Attr* d = either(op, "dimension");
    if (op.operands.size() != 1 || op.results.size() != 1 || !d || d->kind != Attr::Kind::integer)
      return bad("expected one operand, one result and 'dimension'");
    const auto& shape = m.values[op.operands[0]].type.shape;
    if (d->i < 0 || d->i >= static_cast<int64_t>(shape.size()))
      return bad("dimension ", d->i, " is not a dim of a rank-", shape.size(), " operand");
    Op& c = m.ops[o];
    Attr v;
    v.kind = Attr::Kind::dense;
    v.type = m.values[op.results[0]].type;
    v.values = {static_cast<double>(shape[static_cast<size_t>(d->i)])};
    c.name = "stablehlo.constant";
    c.operands.clear();
    c.attrs.clear();
    c.props = {{"value", v}};
    out.push_back(o);
    return {};
  }
  if (n == "stablehlo.dynamic_iota") {  // A static result type: the shape operand agrees.
    const Attr* d = either(op, "iota_dimension");
    if (op.results.size() != 1 || !d || d->kind != Attr::Kind::integer)
      return bad("expected one result and 'iota_dimension'");
    Op& c = m.ops[o];
    Attr dim = *d;
    c.name = "stablehlo.iota";
    c.operands.clear();
    c.attrs.clear();
    c.props = {{"iota_dimension", dim}};
    out.push_back(o);
    return {};
  }
  // batch_norm_*: the feature dim f, epsilon, and the operand x.
  const Attr* fi = either(op, "feature_index");
  const Attr* eps = either(op, "epsilon");
  if (!fi || fi->kind != Attr::Kind::integer || !eps || eps->kind != Attr::Kind::floating)
    return bad("expected 'feature_index' (integer) and 'epsilon' (float)");
  const bool training = n == "stablehlo.batch_norm_training";
  const bool inference = n == "stablehlo.batch_norm_inference";
  if (op.operands.size() != (training ? 3u : 5u) || op.results.size() != (inference ? 1u : 3u))
    return bad("expected ", training ? 3 : 5, " operands and ", inference ? 1 : 3, " results");
  const TensorType xt = m.values[op.operands[0]].type;
  const int64_t f = fi->i;
  if (f < 0 || f >= static_cast<int64_t>(xt.shape.size()))
    return bad("feature_index ", f, " is not a dim of the rank-", xt.shape.size(), " operand");
  for (size_t i = 1; i < op.operands.size(); ++i) {
    const TensorType& t = m.values[op.operands[i]].type;
    bool ok = t.element == xt.element &&
              (n == "stablehlo.batch_norm_grad" && i == 4
                   ? t == xt
                   : t.shape == std::vector<int64_t>{xt.shape[static_cast<size_t>(f)]});
    if (!ok) return bad("operand ", i, " has type ", type_string(t));
  }
  int64_t count = 1;  // elements per feature
  for (size_t d = 0; d < xt.shape.size(); ++d)
    if (static_cast<int64_t>(d) != f) count *= xt.shape[d];
  Builder b(m, op, out);
  const TensorType ct = m.values[op.operands[1]].type;
  ValueId x = op.operands[0];
  if (inference || training) {
    // centered = x - mean; result = centered / sqrt(var + eps) * scale + offset.
    ValueId mean = inference ? op.operands[3] : kNone;
    ValueId var = inference ? op.operands[4] : kNone;
    if (mean == kNone) {  // training: the batch's mean and (biased) variance over non-f dims.
      ValueId size = b.splat(static_cast<double>(count), ct);
      mean = b.binary("divide", b.sum_but(x, f), size);
    }
    ValueId centered = b.binary("subtract", x, b.along(mean, f, xt));
    if (var == kNone) {
      ValueId size = b.splat(static_cast<double>(count), ct);
      var = b.binary("divide", b.sum_but(b.binary("multiply", centered, centered), f), size);
    }
    ValueId stddev =
        b.op("stablehlo.sqrt", {b.binary("add", b.along(var, f, xt), b.splat(eps->f, xt))}, xt);
    ValueId norm = b.binary("divide", centered, stddev);
    ValueId r = b.binary("add", b.binary("multiply", norm, b.along(op.operands[1], f, xt)),
                         b.along(op.operands[2], f, xt));
    b.rename(r, op.results[0]);
    if (training) {
      b.rename(mean, op.results[1]);
      b.rename(var, op.results[2]);
    }
    return {};
  }
  // batch_norm_grad(x, scale, mean, var, grad_output):
  //   norm = (x - mean) / sqrt(var + eps), grad_offset = sum(dy), grad_scale = sum(dy * norm),
  //   grad_operand = scale / sqrt(var + eps) * (dy - grad_offset / N - norm * grad_scale / N).
  ValueId dy = op.operands[4];
  ValueId stddev = b.op("stablehlo.sqrt",
                        {b.binary("add", b.along(op.operands[3], f, xt), b.splat(eps->f, xt))}, xt);
  ValueId norm =
      b.binary("divide", b.binary("subtract", x, b.along(op.operands[2], f, xt)), stddev);
  ValueId grad_offset = b.sum_but(dy, f);
  ValueId grad_scale = b.sum_but(b.binary("multiply", dy, norm), f);
  ValueId size = b.splat(static_cast<double>(count), xt);
  ValueId mean_dy = b.binary("divide", b.along(grad_offset, f, xt), size);
  ValueId mean_dy_norm =
      b.binary("multiply", norm, b.binary("divide", b.along(grad_scale, f, xt), size));
  ValueId inner = b.binary("subtract", b.binary("subtract", dy, mean_dy), mean_dy_norm);
  ValueId gx =
      b.binary("multiply", b.binary("divide", b.along(op.operands[1], f, xt), stddev), inner);
  b.rename(gx, op.results[0]);
  b.rename(grad_scale, op.results[1]);
  b.rename(grad_offset, op.results[2]);
  return {};
}

bool decomposed(std::string_view n) {
  return n == "stablehlo.batch_norm_inference" || n == "stablehlo.batch_norm_training" ||
         n == "stablehlo.batch_norm_grad" || n == "stablehlo.get_dimension_size" ||
         n == "stablehlo.dynamic_iota" || is_einsum(n);
}

Status decompose_block(Module& m, Block& block) {
  std::vector<OpId> out;
  for (OpId o : block.ops) {
    for (size_t r = 0; r < m.ops[o].regions.size(); ++r) {
      Block region = m.ops[o].regions[r];
      MESHPLAN_TRY(decompose_block(m, region));
      m.ops[o].regions[r] = std::move(region);
    }
    if (decomposed(m.ops[o].name))
      MESHPLAN_TRY(decompose_op(m, o, out));
    else
      out.push_back(o);
  }
  block.ops = std::move(out);
  return {};
}

}  // namespace

Status decompose_ops(Module& m) {
  bool any = false;
  for (const Op& op : m.ops) any = any || decomposed(op.name);
  if (!any) return {};
  for (Func& f : m.funcs) MESHPLAN_TRY(decompose_block(m, f.body));
  return {};
}

}  // namespace meshplan::planner::shlo
