// Lowering of StableHLO's masks and bounds: compare -> eq .. ge, select -> where (or maximum /
// minimum for select(compare(a, b), a, b)), clamp -> clamp (constant bounds) or a maximum /
// minimum pair, and the i1 values they pass around (convert, and / or / not). Booleans (i1) have no
// meshplan dtype: a lowered i1 value is 0/1 in the dtype of the values that made it (compare's
// operands), and a folded i1 constant becomes bf16 (0 and 1 are exact).
#include <algorithm>
#include <cassert>
#include <cmath>
#include <optional>

#include "import/stablehlo_lower_internal.hpp"
#include "meshplan/device/op_cases.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

/// EQ .. GE from compare's direction (`GT` or `#stablehlo<comparison_direction GT>`).
std::optional<OpKind> comparison_kind(const Op& cmp) {
  const Attr* d = cmp.prop("comparison_direction");
  std::string dir = d ? d->text : "";
  if (auto sp = dir.rfind(' '); sp != std::string::npos) dir = dir.substr(sp + 1);
  static const std::pair<std::string_view, OpKind> kDirs[] = {
      {"EQ", OpKind::eq}, {"NE", OpKind::ne}, {"LT", OpKind::lt},
      {"LE", OpKind::le}, {"GT", OpKind::gt}, {"GE", OpKind::ge}};
  for (const auto& [name, kind] : kDirs)
    if (dir.starts_with(name)) return kind;
  return std::nullopt;
}

/// compare_type when written (`FLOAT` or `#stablehlo<comparison_type FLOAT>`), else "".
std::string compare_type(const Op& cmp) {
  const Attr* t = cmp.prop("compare_type");
  std::string s = t ? t->text : "";
  if (auto sp = s.rfind(' '); sp != std::string::npos) s = s.substr(sp + 1);
  while (!s.empty() && (s.back() == '>' || s.back() == ')')) s.pop_back();
  return s;
}

bool relation(OpKind k, float a, float b) {
  switch (k) {
    case OpKind::eq:
      return a == b;
    case OpKind::ne:
      return a != b;
    case OpKind::lt:
      return a < b;
    case OpKind::le:
      return a <= b;
    case OpKind::gt:
      return a > b;
    case OpKind::ge:
      return a >= b;
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE_(family, compare, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      break;  // comparison_kind() yields compare ops only.
  }
  assert(false && "relation: not a compare op");
  return false;
}

/// Element `i` of `f` broadcast to `n` elements (StableHLO operands match the result's shape,
/// except select's and clamp's scalar operands).
float at(const Folded& f, size_t i) {
  return f.data.size() == 1 ? f.data[0] : f.data[i];
}

/// dtype of op's result: its element type's, or for i1 the dtype of graph value `like`.
Result<DType> result_dtype(Lowering& l, const Op& op, GValue like) {
  if (l.type(op.results[0]).element == "i1") return l.graph().values[like].dtype;
  return dtype_of(l.type(op.results[0]), op.loc);
}

/// Graph values of `op`'s operands for an op that broadcasts numpy-style; operands that do not
/// broadcast to the result's shape that way are materialised (use()).
Result<std::vector<GValue>> broadcast_operands(Lowering& l, const Op& op,
                                               const std::vector<ValueId>& values) {
  const auto& out = l.type(op.results[0]).shape;
  // Folded i1 operands take the dtype of a lowered i1 operand (0 and 1 are exact in any), so
  // that masks made on device and folded masks combine.
  std::optional<DType> bool_dtype;
  for (ValueId v : values)
    if (l.type(v).element == "i1" && !l.folded(v)) {
      bool_dtype = l.graph().values[MESHPLAN_TRY(l.use_broadcasting(v, op))].dtype;
      break;
    }
  std::vector<GValue> g;
  for (ValueId v : values) {
    const Folded* f = l.folded(v);
    if (bool_dtype && f && l.type(v).element == "i1")
      g.push_back(MESHPLAN_TRY(l.constant(
          f->splat() && !f->data.empty() ? Folded{{1}, {f->data.front()}} : *f, *bool_dtype)));
    else
      g.push_back(MESHPLAN_TRY(l.use_broadcasting(v, op)));
  }
  std::vector<int64_t> shape = l.graph().values[g[0]].shape;
  bool ok = true;
  for (size_t i = 1; i < g.size() && ok; ++i) {
    auto s = device::broadcast_shapes(shape, l.graph().values[g[i]].shape);
    ok = s.has_value();
    if (ok) shape = *s;
  }
  if (!ok || shape != out) {
    g.clear();
    for (ValueId v : values) g.push_back(MESHPLAN_TRY(l.use(v, op)));
  }
  return g;
}

/// A one-element graph constant `v` in `dtype`.
Result<GValue> scalar(Lowering& l, float v, DType dtype) {
  return l.constant(Folded{{1}, {v}}, dtype);
}

}  // namespace

Status fold_compare(Lowering& l, const Op& op) {
  const Folded* a = l.folded(op.operands[0]);
  const Folded* b = l.folded(op.operands[1]);
  if (!a || !b) return {};  // Lowered when a user needs it (lower_compare).
  auto kind = comparison_kind(op);
  if (!kind) return lower_compare(l, op);  // Reports the bad direction.
  Folded r{l.type(op.results[0]).shape, {}};
  size_t n = static_cast<size_t>(device::volume(r.shape));
  for (size_t i = 0; i < n; ++i) r.data.push_back(relation(*kind, at(*a, i), at(*b, i)) ? 1 : 0);
  l.fold(op.results[0], std::move(r));
  return {};
}

Status lower_compare(Lowering& l, const Op& op) {
  auto kind = comparison_kind(op);
  if (!kind)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.compare: comparison_direction is not one of EQ, NE, LT, LE, GT, GE");
  std::string type = compare_type(op);
  if (!type.empty() && type != "FLOAT" && type != "SIGNED" && type != "UNSIGNED")
    return l.unimplemented(op, str("stablehlo.compare with compare_type ", type,
                                   " (FLOAT, SIGNED and UNSIGNED lower)"));
  std::vector<GValue> g = MESHPLAN_TRY(broadcast_operands(l, op, op.operands));
  // The result is 0/1 in the operands' dtype (TTNN's eq .. ge do the same).
  DType dt = l.graph().values[g[0]].dtype;
  if (l.graph().values[g[1]].dtype != dt)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.compare: operands lower to different dtypes (", device::dtype_name(dt),
                ", ", device::dtype_name(l.graph().values[g[1]].dtype), ")");
  GValue r = MESHPLAN_TRY(l.emit(*kind, g, {}, l.type(op.results[0]).shape, dt));
  l.bind(op.results[0], r);
  return {};
}

Status lower_select(Lowering& l, const Op& op) {
  ValueId cond = op.operands[0], x = op.operands[1], y = op.operands[2];
  const Folded* fc = l.folded(cond);
  const Folded* fx = l.folded(x);
  const Folded* fy = l.folded(y);
  if (fc && fx && fy) {
    Folded r{l.type(op.results[0]).shape, {}};
    size_t n = static_cast<size_t>(device::volume(r.shape));
    for (size_t i = 0; i < n; ++i) r.data.push_back(at(*fc, i) != 0 ? at(*fx, i) : at(*fy, i));
    l.fold(op.results[0], std::move(r));
    return {};
  }
  if (fc && fc->splat() && !fc->data.empty()) {  // A constant predicate picks one side.
    l.bind(op.results[0], MESHPLAN_TRY(l.use(fc->data.front() != 0 ? x : y, op)));
    return {};
  }
  // select(compare(a, b, dir), a|b, b|a) is exactly maximum(a, b) or minimum(a, b).
  if (const Op* cmp = l.def(cond); cmp && cmp->name == "stablehlo.compare") {
    ValueId a = cmp->operands[0], b = cmp->operands[1];
    bool same = x == a && y == b, swapped = x == b && y == a;
    auto dir = comparison_kind(*cmp);
    bool greater = dir == OpKind::gt || dir == OpKind::ge;
    bool less = dir == OpKind::lt || dir == OpKind::le;
    std::string type = compare_type(*cmp);
    if ((same || swapped) && (greater || less) && type != "TOTALORDER") {
      OpKind kind = (greater == same) ? OpKind::maximum : OpKind::minimum;
      std::vector<GValue> g = MESHPLAN_TRY(broadcast_operands(l, op, {a, b}));
      MESHPLAN_TRY(l.emit_for(op, kind, g));
      return {};
    }
  }
  std::vector<GValue> g = MESHPLAN_TRY(broadcast_operands(l, op, op.operands));
  DType dt = MESHPLAN_TRY(result_dtype(l, op, g[1]));
  GValue r = MESHPLAN_TRY(l.emit(OpKind::where, g, {}, l.type(op.results[0]).shape, dt));
  l.bind(op.results[0], r);
  return {};
}

Status lower_clamp(Lowering& l, const Op& op) {
  if (op.operands.size() != 3 || op.results.size() != 1)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.clamp takes (min, operand, max)");
  ValueId lo = op.operands[0], x = op.operands[1], hi = op.operands[2];
  const Folded* flo = l.folded(lo);
  const Folded* fhi = l.folded(hi);
  const Folded* fx = l.folded(x);
  if (flo && fhi && fx) {
    Folded r{l.type(op.results[0]).shape, {}};
    size_t n = static_cast<size_t>(device::volume(r.shape));
    for (size_t i = 0; i < n; ++i)
      r.data.push_back(std::min(std::max(at(*fx, i), at(*flo, i)), at(*fhi, i)));
    l.fold(op.results[0], std::move(r));
    return {};
  }
  auto constant_bound = [](const Folded* f) {
    return f && !f->data.empty() && f->splat() && !std::isnan(f->data.front());
  };
  if (constant_bound(flo) && constant_bound(fhi)) {
    double a = flo->data.front(), b = fhi->data.front();
    // StableHLO's clamp is min(max(x, min), max): with min > max every value becomes max.
    if (a > b) a = b;
    GValue gx = MESHPLAN_TRY(l.use(x, op));
    MESHPLAN_TRY(l.emit_for(op, OpKind::clamp, {gx}, {{"max", b}, {"min", a}}));
    return {};
  }
  // Tensor bounds: maximum with min, then minimum with max (both broadcast numpy-style).
  std::vector<GValue> g = MESHPLAN_TRY(broadcast_operands(l, op, {x, lo}));
  DType dt = MESHPLAN_TRY(dtype_of(l.type(op.results[0]), op.loc));
  const auto& out = l.type(op.results[0]).shape;
  GValue m = MESHPLAN_TRY(l.emit(OpKind::maximum, g, {}, out, dt));
  GValue h = MESHPLAN_TRY(l.use_broadcasting(hi, op));
  if (!device::broadcast_shapes(out, l.graph().values[h].shape)) h = MESHPLAN_TRY(l.use(hi, op));
  GValue r = MESHPLAN_TRY(l.emit(OpKind::minimum, {m, h}, {}, out, dt));
  l.bind(op.results[0], r);
  return {};
}

Status lower_logical(Lowering& l, const Op& op) {
  bool is_not = op.name == "stablehlo.not";
  std::vector<const Folded*> f;
  for (ValueId v : op.operands) f.push_back(l.folded(v));
  if (std::all_of(f.begin(), f.end(), [](const Folded* x) { return x != nullptr; })) {
    Folded r{l.type(op.results[0]).shape, {}};
    size_t n = static_cast<size_t>(device::volume(r.shape));
    for (size_t i = 0; i < n; ++i) {
      bool a = at(*f[0], i) != 0, b = is_not || at(*f[1], i) != 0;
      bool v = is_not                       ? !a
               : op.name == "stablehlo.and" ? a && b
               : op.name == "stablehlo.xor" ? a != b
                                            : a || b;
      r.data.push_back(v ? 1.0f : 0.0f);
    }
    l.fold(op.results[0], std::move(r));
    return {};
  }
  const auto& out = l.type(op.results[0]).shape;
  if (is_not) {  // 1 - x for 0/1 values, as x == 0.
    GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
    DType dt = l.graph().values[x].dtype;
    GValue zero = MESHPLAN_TRY(scalar(l, 0.0f, dt));
    l.bind(op.results[0], MESHPLAN_TRY(l.emit(OpKind::eq, {x, zero}, {}, out, dt)));
    return {};
  }
  // and = product, or = maximum, xor = inequality of 0/1 values.
  std::vector<GValue> g = MESHPLAN_TRY(broadcast_operands(l, op, op.operands));
  DType dt = l.graph().values[g[0]].dtype;
  if (l.graph().values[g[1]].dtype != dt)
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                ": i1 operands lower to different dtypes (", device::dtype_name(dt), ", ",
                device::dtype_name(l.graph().values[g[1]].dtype), ")");
  OpKind kind = op.name == "stablehlo.and"   ? OpKind::multiply
                : op.name == "stablehlo.xor" ? OpKind::ne
                                             : OpKind::maximum;
  l.bind(op.results[0], MESHPLAN_TRY(l.emit(kind, g, {}, out, dt)));
  return {};
}

std::optional<bool> logical_reduce_kind(const Lowering& l, const Op& op) {
  const Module& m = l.module();
  if (op.operands.size() != 2 || op.results.size() != 1 || op.regions.size() != 1 ||
      l.type(op.operands[0]).element != "i1")
    return std::nullopt;
  const auto kind = region_reduction(m, op.regions[0]);
  if (!kind || (*kind != "stablehlo.and" && *kind != "stablehlo.or")) return std::nullopt;
  return *kind == "stablehlo.and";
}

Status lower_reduce_logical(Lowering& l, const Op& op) {
  const bool is_and = *logical_reduce_kind(l, op);
  const Folded* init = l.folded(op.operands[1]);
  if (init && init->data.size() != 1)
    return l.unimplemented(op, "stablehlo.reduce of i1 whose init value is not one value");
  const Attr* da = op.prop("dimensions");
  const std::vector<int64_t> dims = da ? da->ints : std::vector<int64_t>{};
  if (!dims_ok(dims, l.type(op.operands[0]).shape.size()))
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.reduce: dimensions are not distinct dims of its operand");
  const auto& out = l.type(op.results[0]).shape;
  if (!init) {  // A computed init joins the result once: and = min, or = max of 0/1 values.
    GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
    const DType dt = l.graph().values[x].dtype;
    const OpKind kind = is_and ? OpKind::reduce_min : OpKind::reduce_max;
    if (!dims.empty()) x = MESHPLAN_TRY(l.emit(kind, {x}, {Attribute{"dims", dims}}, out, dt));
    GValue c = MESHPLAN_TRY(join_operand(l, op.operands[1], op, out.size()));
    if (l.graph().values[c].dtype != dt)
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": stablehlo.reduce: i1 operand and init lower to different dtypes");
    l.bind(op.results[0],
           MESHPLAN_TRY(l.emit(is_and ? OpKind::minimum : OpKind::maximum, {x, c}, {}, out, dt)));
    return {};
  }
  const bool v = init->data.front() != 0;
  if (v != is_and) {  // and with false, or with true: the init whatever the input.
    l.fold(op.results[0], Folded{out, std::vector<float>(static_cast<size_t>(device::volume(out)),
                                                         v ? 1.f : 0.f)});
    return {};
  }
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  if (dims.empty()) {
    l.bind(op.results[0], x);
    return {};
  }
  // all = min, any = max of 0/1 values (exact).
  const DType dt = l.graph().values[x].dtype;
  l.bind(op.results[0], MESHPLAN_TRY(l.emit(is_and ? OpKind::reduce_min : OpKind::reduce_max, {x},
                                            {Attribute{"dims", dims}}, out, dt)));
  return {};
}

Status lower_convert_bool(Lowering& l, const Op& op) {
  const std::string& from = l.type(op.operands[0]).element;
  const std::string& to = l.type(op.results[0]).element;
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  DType xd = l.graph().values[x].dtype;
  if (to == "i1") {  // x != 0, 0/1 in x's dtype.
    if (from == "i1") {
      l.bind(op.results[0], x);
      return {};
    }
    GValue zero = MESHPLAN_TRY(scalar(l, 0.0f, xd));
    GValue r = MESHPLAN_TRY(l.emit(OpKind::ne, {x, zero}, {}, l.type(op.results[0]).shape, xd));
    l.bind(op.results[0], r);
    return {};
  }
  // From i1 (0/1 in xd) to a number type: a cast when the dtypes differ.
  DType td = MESHPLAN_TRY(dtype_of(l.type(op.results[0]), op.loc));
  if (td == xd) {
    l.bind(op.results[0], x);
    return {};
  }
  MESHPLAN_TRY(
      l.emit_for(op, OpKind::typecast, {x}, {{"dtype", std::string(device::dtype_name(td))}}));
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
