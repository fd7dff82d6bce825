// Lowering of a per-device StableHLO program to planner::Graph: the driver, values and
// constants, elementwise ops, broadcasts and the shape ops. dot_general, reduce, convolution
// and meshplan.* custom calls are in stablehlo_lower_ops.cpp.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

#include "import/meshplan_custom_call.hpp"
#include "import/stablehlo_lower_internal.hpp"
#include "import/stablehlo_ops.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

namespace lowering {

bool Folded::splat() const {
  return std::all_of(data.begin(), data.end(), [&](float x) {
    return x == data.front() && std::signbit(x) == std::signbit(data.front());
  });
}

bool dims_ok(const std::vector<int64_t>& dims, size_t rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(d)]) return false;
    seen[static_cast<size_t>(d)] = true;
  }
  return true;
}

Result<DType> dtype_of(const TensorType& t, const Location& loc) {
  const std::string& e = t.element;
  // Wider and narrower types compute in the device's nearest dtype: f64 and f16 in f32 (every
  // f16 value is an f32 value), signed integers in i32, unsigned ones in u32. Constants are
  // range-checked when converted (fold_constant); i8/i16/ui8/ui16 results are wrapped to their
  // width after the ops that can leave it (wrap_narrow).
  if (e == "f32" || e == "f64" || e == "f16") return DType::f32;
  if (e == "bf16") return DType::bf16;
  if (e == "i32" || e == "i64" || e == "i16" || e == "i8") return DType::i32;
  if (e == "ui32" || e == "ui64" || e == "ui16" || e == "ui8") return DType::u32;
  return fail(ErrorCode::unimplemented, loc.str(), ": unimplemented: element type ", t.element,
              " has no meshplan dtype");
}

const Op* Lowering::def(ValueId v) const {
  OpId o = m_.values[v].def;
  return o == kNone ? nullptr : &m_.ops[o];
}

std::unexpected<Error> Lowering::unimplemented(const Op& op, std::string_view what) const {
  return fail(ErrorCode::unimplemented, op.loc.str(), ": unimplemented: ", what);
}

const Folded* Lowering::folded(ValueId v) const {
  auto it = folded_.find(v);
  return it == folded_.end() ? nullptr : &it->second;
}

Result<GValue> Lowering::new_value(std::vector<int64_t> shape, DType dtype, std::string prefix) {
  planner::Value pv;
  pv.name = prefix + std::to_string(g_.values.size());
  pv.shape = std::move(shape);
  pv.dtype = dtype;
  g_.values.push_back(std::move(pv));
  return static_cast<GValue>(g_.values.size() - 1);
}

Result<GValue> Lowering::emit(OpKind kind, std::vector<GValue> operands,
                              std::vector<Attribute> attrs, std::vector<int64_t> shape,
                              DType dtype) {
  planner::Op op;
  op.name = "op" + std::to_string(g_.ops.size());
  op.kind = kind;
  op.operands = std::move(operands);
  std::sort(attrs.begin(), attrs.end(),
            [](const Attribute& a, const Attribute& b) { return a.name < b.name; });
  op.attributes = std::move(attrs);
  GValue r = MESHPLAN_TRY(new_value(std::move(shape), dtype));
  op.results = {r};
  g_.ops.push_back(std::move(op));
  return r;
}

Result<GValue> Lowering::emit_for(const Op& op, OpKind kind, std::vector<GValue> operands,
                                  std::vector<Attribute> attrs) {
  const TensorType& t = type(op.results[0]);
  DType dt = MESHPLAN_TRY(dtype_of(t, op.loc));
  GValue r = MESHPLAN_TRY(emit(kind, std::move(operands), std::move(attrs), t.shape, dt));
  bind(op.results[0], r);
  return r;
}

Result<GValue> Lowering::constant(const Folded& f, DType dtype) {
  GValue c = MESHPLAN_TRY(new_value(f.shape, dtype, "c"));
  planner::Value& v = g_.values[c];
  v.kind = ArgKind::constant;
  v.data = f.data;
  v.argument = static_cast<int>(g_.arguments.size());
  g_.arguments.push_back(c);
  return c;
}

Result<GValue> Lowering::reshape(GValue v, const std::vector<int64_t>& shape) {
  if (g_.values[v].shape == shape) return v;
  const DType dt = g_.values[v].dtype;
  if (shape.empty()) {
    // The device reshapes to rank 1 and more: a one-element tensor becomes rank 0 by a min
    // over its one element (exact: min(+inf, x) is x, -0.0 and NaN included).
    GValue one = MESHPLAN_TRY(reshape(v, {1}));
    return emit(OpKind::reduce_min, {one}, {{"dims", std::vector<int64_t>{0}}}, {}, dt);
  }
  return emit(OpKind::reshape, {v}, {{"shape", shape}}, shape, dt);
}

Result<GValue> Lowering::permute(GValue v, const std::vector<int64_t>& perm) {
  std::vector<int64_t> iota(perm.size());
  std::iota(iota.begin(), iota.end(), 0);
  if (perm == iota) return v;
  std::vector<int64_t> shape;
  for (int64_t p : perm) shape.push_back(g_.values[v].shape[static_cast<size_t>(p)]);
  return emit(OpKind::permute, {v}, {{"perm", perm}}, shape, g_.values[v].dtype);
}

Result<GValue> Lowering::use(ValueId v, const Op& user) {
  if (auto it = map_.find(v); it != map_.end()) return it->second;
  const TensorType& t = type(v);
  if (std::ranges::find(t.shape, 0) != t.shape.end())
    return fail(ErrorCode::unimplemented, user.loc.str(), ": unimplemented: ", user.name,
                " reads the zero-size value ", type_string(t),
                " (no device buffer holds zero bytes; zero-size operands are supported where the "
                "result is empty too, and in concatenate, reduce, pad, dot_general, "
                "dynamic_update_slice and scatter)");
  if (auto it = pending_.find(v); it != pending_.end()) {
    // Materialise: source * ones, where ones spans only the broadcast dims.
    std::vector<int64_t> src = g_.values[it->second].shape;
    src.insert(src.begin(), t.shape.size() - std::min(src.size(), t.shape.size()), 1);
    Folded ones;
    for (size_t d = 0; d < t.shape.size(); ++d) ones.shape.push_back(src[d] == 1 ? t.shape[d] : 1);
    ones.data.assign(static_cast<size_t>(device::volume(ones.shape)), 1.0f);
    DType dt = g_.values[it->second].dtype;
    GValue c = MESHPLAN_TRY(constant(ones, dt));
    GValue r = MESHPLAN_TRY(emit(OpKind::multiply, {it->second, c}, {}, t.shape, dt));
    return map_[v] = r;
  }
  if (const Folded* f = folded(v)) {
    const Op* d = def(v);
    // Folded booleans (masks) become bf16 0/1 constants.
    DType dt = t.element == "i1" ? DType::bf16 : MESHPLAN_TRY(dtype_of(t, d ? d->loc : user.loc));
    return map_[v] = MESHPLAN_TRY(constant(*f, dt));
  }
  if (const Op* d = def(v); d && d->name == "stablehlo.compare") {  // Lowered on first use.
    MESHPLAN_TRY(lower_compare(*this, *d));
    if (auto it = map_.find(v); it != map_.end()) return it->second;
  }
  if (const Op* d = def(v))
    return fail(ErrorCode::unimplemented, d->loc.str(), ": unimplemented: ", d->name, " (used by ",
                user.name, " at ", user.loc.str(), ") has no meshplan op");
  return fail(ErrorCode::internal, user.loc.str(), ": an operand of ", user.name,
              " is not a value of the lowered program");
}

Result<GValue> Lowering::use_broadcasting(ValueId v, const Op& user) {
  if (map_.count(v)) return map_[v];
  if (auto it = pending_.find(v); it != pending_.end()) return it->second;
  if (const Folded* f = folded(v); f && f->splat() && f->data.size() > 1) {
    const Op* d = def(v);
    DType dt = type(v).element == "i1" ? DType::bf16
                                       : MESHPLAN_TRY(dtype_of(type(v), d ? d->loc : user.loc));
    return MESHPLAN_TRY(constant(Folded{{1}, {f->data.front()}}, dt));
  }
  return use(v, user);
}

}  // namespace lowering

namespace {

using lowering::dtype_of;
using lowering::Folded;
using lowering::GValue;
using lowering::Lowering;

/// StableHLO elementwise ops with a meshplan op of the same meaning (numpy broadcasting):
/// ops.def's stablehlo column.
std::optional<OpKind> elementwise_kind(std::string_view name) {
  std::optional<OpKind> k = device::op_from_stablehlo(name);
  if (k && !device::is_pointwise(*k)) return std::nullopt;
  return k;
}

const std::vector<int64_t>& ints(const Op& op, const char* name) {
  static const std::vector<int64_t> kEmpty;
  const Attr* a = op.prop(name);
  return a ? a->ints : kEmpty;
}

bool is_splat_zero(const Lowering& l, ValueId v) {
  const Folded* f = l.folded(v);
  return f && !f->data.empty() && f->splat() && f->data.front() == 0.0f;
}

Result<Folded> fold_constant(const Lowering& l, const Op& op) {
  const Attr* a = op.prop("value");
  if (!a || a->kind != Attr::Kind::dense || !a->text.empty())
    return l.unimplemented(op, "stablehlo.constant whose value is not a decoded dense literal");
  Folded f;
  f.shape = l.type(op.results[0]).shape;
  const std::string& e = l.type(op.results[0]).element;
  // The range of the dtype the value is computed in (integers are folded as floats, exact to
  // 2^24; integer types beyond that range would wrap or round on the device).
  const bool is_uint = e.starts_with("ui");
  const bool is_int = (e.starts_with("i") && e != "i1") || is_uint;
  const auto narrow = lowering::narrow_range(e);  // i8 .. ui16: their own range
  const double lo = narrow ? narrow->first : is_uint ? 0.0 : -2147483648.0;
  const double hi = narrow ? narrow->second : is_uint ? 4294967295.0 : 2147483647.0;
  size_t n = static_cast<size_t>(device::volume(f.shape));
  // A literal of as many values as the (local) result holds, or a splat. On a mesh, an
  // sdy.constant the partitioner sharded keeps its global literal: its piece is not taken.
  if (a->values.size() != 1 && a->values.size() != n)
    return l.unimplemented(op, str(op.name, " of ", a->values.size(), " values whose result ",
                                   type_string(l.type(op.results[0])), " holds ", n,
                                   " (a sharded constant other than a splat)"));
  for (size_t i = 0; i < n; ++i) {
    double v = a->values.size() == 1 ? a->values[0] : a->values.at(i);
    bool out = is_int ? v < lo || v > hi : std::isfinite(v) && std::isinf(static_cast<float>(v));
    if (e != "i1" && out)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": stablehlo.constant: value ",
                  is_int ? std::to_string(static_cast<int64_t>(v)) : std::to_string(v), " of type ",
                  e, " (element ", i, ") is outside the range of ",
                  narrow    ? e
                  : is_uint ? "u32"
                  : is_int  ? "i32"
                            : "f32",
                  narrow ? "" : ", the device dtype it is computed in");
    f.data.push_back(static_cast<float>(v));
  }
  return f;
}

Folded fold_iota(const Lowering& l, const Op& op) {
  Folded f;
  f.shape = l.type(op.results[0]).shape;
  const Attr* a = op.prop("iota_dimension");
  size_t dim = a ? static_cast<size_t>(a->i) : 0;
  int64_t inner = 1;
  for (size_t d = dim + 1; d < f.shape.size(); ++d) inner *= f.shape[d];
  int64_t n = device::volume(f.shape);
  for (int64_t i = 0; i < n; ++i)
    f.data.push_back(dim < f.shape.size() ? static_cast<float>((i / inner) % f.shape[dim]) : 0);
  return f;
}

/// broadcast_in_dim of a folded value, folded.
Folded fold_broadcast(const Folded& in, const std::vector<int64_t>& dims,
                      const std::vector<int64_t>& out_shape) {
  Folded out{out_shape, std::vector<float>(static_cast<size_t>(device::volume(out_shape)))};
  std::vector<int64_t> idx(out_shape.size());
  for (size_t f = 0; f < out.data.size(); ++f) {
    int64_t rem = static_cast<int64_t>(f);
    for (size_t d = out_shape.size(); d-- > 0;) {
      idx[d] = rem % out_shape[d];
      rem /= out_shape[d];
    }
    int64_t src = 0;
    for (size_t d = 0; d < in.shape.size(); ++d)
      src = src * in.shape[d] + (in.shape[d] == 1 ? 0 : idx[static_cast<size_t>(dims[d])]);
    out.data[f] = in.data[static_cast<size_t>(src)];
  }
  return out;
}

Status lower_broadcast(Lowering& l, const Op& op) {
  const auto& dims = ints(op, "broadcast_dimensions");
  const auto& in = l.type(op.operands[0]).shape;
  const auto& out = l.type(op.results[0]).shape;
  if (dims.size() != in.size() || !lowering::dims_ok(dims, out.size()))
    return l.unimplemented(op,
                           "stablehlo.broadcast_in_dim whose dims do not name every operand dim");
  for (size_t i = 0; i < in.size(); ++i)
    if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(out.size()) ||
        (in[i] != 1 && in[i] != out[static_cast<size_t>(dims[i])]))
      return l.unimplemented(op, "stablehlo.broadcast_in_dim with inconsistent dims");
  if (const Folded* f = l.folded(op.operands[0])) {
    l.fold(op.results[0], fold_broadcast(*f, dims, out));
    return {};
  }
  // Operand dims in result order (permute if dims are not increasing), then reshape to the
  // result's rank with 1 in the new dims: numpy broadcasting then does the rest.
  std::vector<int64_t> order(in.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return dims[static_cast<size_t>(a)] < dims[static_cast<size_t>(b)];
  });
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  x = MESHPLAN_TRY(l.permute(x, order));
  std::vector<int64_t> aligned(out.size(), 1);
  for (size_t i = 0; i < in.size(); ++i) aligned[static_cast<size_t>(dims[i])] = in[i];
  if (aligned.empty()) aligned = {1};
  // Trailing-aligned operands already broadcast numpy-style: no reshape needed.
  bool trailing = !in.empty();
  for (size_t i = 0; i < in.size(); ++i)
    trailing &= dims[i] == static_cast<int64_t>(out.size() - in.size() + i);
  if (!trailing) x = MESHPLAN_TRY(l.reshape(x, aligned));
  if (aligned == out)  // Only unit dims added: a reshape (rank-changing when trailing-aligned).
    l.bind(op.results[0], MESHPLAN_TRY(l.reshape(x, out)));
  else
    l.defer_broadcast(op.results[0], x);
  return {};
}

Status lower_binary(Lowering& l, const Op& op, OpKind kind) {
  const auto& out = l.type(op.results[0]).shape;
  GValue a = MESHPLAN_TRY(l.use_broadcasting(op.operands[0], op));
  GValue b = MESHPLAN_TRY(l.use_broadcasting(op.operands[1], op));
  auto shape = device::broadcast_shapes(l.graph().values[a].shape, l.graph().values[b].shape);
  if (!shape || *shape != out) {
    a = MESHPLAN_TRY(l.use(op.operands[0], op));
    b = MESHPLAN_TRY(l.use(op.operands[1], op));
  }
  MESHPLAN_TRY(l.emit_for(op, kind, {a, b}));
  return {};
}

/// A folded integer -> 32/64-bit integer convert with values outside the result type's range
/// (-1 -> ui32, 3000000000 -> i32): folded values are floats, which do not hold the wrapped
/// words (-1 -> 4294967295), so ui32 and i32 are converted on the device (whose i32 <-> u32
/// typecast wraps modulo 2^32); ui64 and i64 are computed in 32 bits and would not wrap modulo
/// 2^64, so they are refused.
Result<bool> folded_convert_wraps(const Lowering& l, const Op& op, const Folded& f) {
  const std::string& e = l.type(op.results[0]).element;
  const std::string& from = l.type(op.operands[0]).element;
  bool int_from = (from.starts_with("i") && from != "i1") || from.starts_with("ui");
  bool is_unsigned = e.starts_with("ui");
  if ((e != "ui32" && e != "ui64" && e != "i32" && e != "i64") || !int_from ||
      std::none_of(f.data.begin(), f.data.end(), [&](float x) {
        return is_unsigned ? x < 0 : static_cast<double>(x) > 2147483647.0;
      }))
    return false;
  if (e == "ui64" || e == "i64")
    return l.unimplemented(
        op, str("stablehlo.convert of ", from, " values to ", e, " that wrap in the 32-bit word ",
                e, " is computed in (it would not wrap modulo 2^64)"));
  return true;
}

Status lower_convert(Lowering& l, const Op& op) {
  const Folded* f = l.folded(op.operands[0]);
  if (f && MESHPLAN_TRY(folded_convert_wraps(l, op, *f))) f = nullptr;
  if (f) {
    const std::string& e = l.type(op.results[0]).element;
    Folded c = *f;
    for (float& x : c.data)
      x = e == "i1"                                   ? (x != 0 ? 1.0f : 0.0f)
          : e.starts_with("i") || e.starts_with("ui") ? std::trunc(x)
                                                      : x;
    l.fold(op.results[0], std::move(c));
    return {};
  }
  if (l.type(op.results[0]).element == "i1" || l.type(op.operands[0]).element == "i1")
    return lowering::lower_convert_bool(l, op);
  // 64-bit integers live in 32-bit words: a computed signed value converted to ui64 (a negative
  // one is 2^64 - |x|) would wrap at 32 bits. (Unsigned values to i64, as JAX converts gather
  // indices, are exact below 2^31.)
  if (l.type(op.results[0]).element == "ui64" && l.type(op.operands[0]).element.starts_with("i"))
    return l.unimplemented(
        op, str("stablehlo.convert of computed ", l.type(op.operands[0]).element,
                " values to ui64 (64-bit integers are computed in 32-bit words, where a negative "
                "value would wrap at 2^32; constants convert exactly)"));
  DType to = MESHPLAN_TRY(dtype_of(l.type(op.results[0]), op.loc));
  DType from = MESHPLAN_TRY(dtype_of(l.type(op.operands[0]), op.loc));
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  if (to == from) {
    l.bind(op.results[0], x);
    return {};
  }
  MESHPLAN_TRY(
      l.emit_for(op, OpKind::typecast, {x}, {{"dtype", std::string(device::dtype_name(to))}}));
  return {};
}

/// Non-negative edge padding: concatenations with constant blocks of the padding value.
Status lower_pad(Lowering& l, const Op& op) {
  if (op.operands.size() != 2)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.pad takes an operand and a padding value");
  const Folded* value = l.folded(op.operands[1]);
  if (!value || value->data.size() != 1) return lowering::lower_pad_general(l, op);
  const auto& lo = ints(op, "edge_padding_low");
  const auto& hi = ints(op, "edge_padding_high");
  const auto& in = ints(op, "interior_padding");
  std::vector<int64_t> shape = l.type(op.operands[0]).shape;
  bool ok = lo.size() == shape.size() && hi.size() == shape.size() &&
            (in.empty() || in.size() == shape.size());
  for (size_t d = 0; ok && d < shape.size(); ++d)
    ok = lo[d] >= 0 && hi[d] >= 0 && (in.empty() || in[d] == 0);
  if (!ok) return lowering::lower_pad_general(l, op);
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  DType dt = l.graph().values[x].dtype;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (lo[d] == 0 && hi[d] == 0) continue;
    std::vector<GValue> parts;
    for (int64_t width : {lo[d], int64_t{-1}, hi[d]}) {
      if (width < 0) {
        parts.push_back(x);
        continue;
      }
      if (width == 0) continue;
      Folded block;
      block.shape = shape;
      block.shape[d] = width;
      block.data.assign(static_cast<size_t>(device::volume(block.shape)), value->data[0]);
      parts.push_back(MESHPLAN_TRY(l.constant(block, dt)));
    }
    shape[d] += lo[d] + hi[d];
    x = MESHPLAN_TRY(l.emit(OpKind::concat, parts, {{"axis", static_cast<int64_t>(d)}}, shape, dt));
  }
  l.bind(op.results[0], x);
  return {};
}

Status lower_op(Lowering& l, const Op& op) {
  const std::string& n = op.name;
  // sdy.constant is Shardy's constant (one copy per use, so that each can be sharded on its
  // own): the same value.
  if (n == "stablehlo.constant" || n == "sdy.constant") {
    Folded f = MESHPLAN_TRY(fold_constant(l, op));
    // Integers f32 does not hold (beyond 2^24, other than the dtype's largest value, which
    // folds as an identity) are built exactly on the device instead of folded.
    if (lowering::needs_word_constant(l, op)) return lowering::lower_word_constant(l, op);
    l.fold(op.results[0], std::move(f));
    return {};
  }
  if (is_chlo_decomposed(n)) return lowering::lower_chlo(l, op);
  if (n == "stablehlo.iota") {
    l.fold(op.results[0], fold_iota(l, op));
    return {};
  }
  if (n == "stablehlo.compare") return lowering::fold_compare(l, op);
  if (n == "stablehlo.select") return lowering::lower_select(l, op);
  if (n == "stablehlo.clamp") return lowering::lower_clamp(l, op);
  if ((n == "stablehlo.and" || n == "stablehlo.or" || n == "stablehlo.xor" ||
       n == "stablehlo.not") &&
      l.type(op.results[0]).element == "i1")
    return lowering::lower_logical(l, op);
  if (lowering::is_integer_bit_op(n)) return lowering::lower_integer_bit_op(l, op);
  if (n == "stablehlo.broadcast_in_dim") return lower_broadcast(l, op);
  if (n == "stablehlo.convert") return lower_convert(l, op);
  if (n == "stablehlo.maximum" &&
      (is_splat_zero(l, op.operands[0]) || is_splat_zero(l, op.operands[1]))) {
    ValueId x = is_splat_zero(l, op.operands[1]) ? op.operands[0] : op.operands[1];
    MESHPLAN_TRY(l.emit_for(op, OpKind::relu, {MESHPLAN_TRY(l.use(x, op))}));
    return {};
  }
  if (auto kind = elementwise_kind(n)) {
    if (op.operands.size() == 2) return lower_binary(l, op, *kind);
    GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
    if (l.type(op.results[0]).element == "i1") {
      // is_finite: booleans as 1/0 in the operand's dtype, as the compares make them.
      DType dt = l.graph().values[x].dtype;
      l.bind(op.results[0], MESHPLAN_TRY(l.emit(*kind, {x}, {}, l.type(op.results[0]).shape, dt)));
      return {};
    }
    MESHPLAN_TRY(l.emit_for(op, *kind, {x}));
    return {};
  }
  if (n == "stablehlo.reshape") {
    if (const Folded* f = l.folded(op.operands[0])) {
      l.fold(op.results[0], Folded{l.type(op.results[0]).shape, f->data});
      return {};
    }
    GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
    const auto& shape = l.type(op.results[0]).shape;
    l.bind(op.results[0], MESHPLAN_TRY(l.reshape(x, shape)));
    return {};
  }
  if (n == "stablehlo.transpose") {
    const auto& perm = ints(op, "permutation");
    if (perm.size() != l.type(op.operands[0]).shape.size() || !lowering::dims_ok(perm, perm.size()))
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": stablehlo.transpose: the permutation is not one of the operand's dims");
    GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
    l.bind(op.results[0], MESHPLAN_TRY(l.permute(x, ints(op, "permutation"))));
    return {};
  }
  if (n == "stablehlo.concatenate") {
    std::vector<GValue> xs;
    for (ValueId v : op.operands) xs.push_back(MESHPLAN_TRY(l.use(v, op)));
    const Attr* d = op.prop("dimension");
    if (!d) return l.unimplemented(op, "stablehlo.concatenate without a dimension");
    if (xs.size() == 1) {
      l.bind(op.results[0], xs[0]);
      return {};
    }
    if (xs.size() > static_cast<size_t>(device::kMaxOperands))
      return l.unimplemented(
          op, str("stablehlo.concatenate of ", xs.size(),
                  " operands (meshplan's concat takes at most ", device::kMaxOperands, ")"));
    MESHPLAN_TRY(l.emit_for(op, OpKind::concat, xs, {{"axis", d->i}}));
    return {};
  }
  if (n == "stablehlo.slice") {
    GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
    MESHPLAN_TRY(l.emit_for(op, OpKind::slice, {x},
                            {{"begins", ints(op, "start_indices")},
                             {"ends", ints(op, "limit_indices")},
                             {"steps", ints(op, "strides")}}));
    return {};
  }
  if (n == "stablehlo.dot_general") return lowering::lower_dot_general(l, op);
  if (n == "stablehlo.reduce" && lowering::logical_reduce_kind(l, op))
    return lowering::lower_reduce_logical(l, op);
  if (n == "stablehlo.reduce") return lowering::lower_reduce(l, op);
  if (n == "stablehlo.convolution") return lowering::lower_convolution(l, op);
  if (n == "stablehlo.reduce_window") return lowering::lower_reduce_window(l, op);
  if (n == "stablehlo.select_and_scatter") return lowering::lower_select_and_scatter(l, op);
  if (n == "stablehlo.custom_call") {
    // XLA writes a CHLO op StableHLO lacks as `custom_call @mhlo.<op>` (mhlo.attributes = {},
    // mhlo.version): the chlo op of one operand when meshplan lowers it.
    const std::string target = custom_call_target(op);
    if (target == "mhlo.topk") return lowering::lower_mhlo_topk(l, op);
    const Attr* attrs = op.attr("mhlo.attributes");
    const bool no_attrs = !attrs || (attrs->kind == Attr::Kind::dict && attrs->dict.empty());
    if (target.starts_with("mhlo.") && no_attrs && op.operands.size() == 1 &&
        op.results.size() == 1) {
      const std::string chlo = "chlo." + target.substr(5);
      if (elementwise_kind(chlo) || is_chlo_decomposed(chlo)) {
        Op as = op;
        as.name = chlo;
        return lower_op(l, as);
      }
    }
    return lowering::lower_custom_call(l, op);
  }
  if (n == "stablehlo.all_gather" || n == "stablehlo.all_reduce" ||
      n == "stablehlo.reduce_scatter" || n == "stablehlo.all_to_all" ||
      n == "stablehlo.collective_permute" || n == "stablehlo.collective_broadcast" ||
      n == "sdy.all_slice")
    return lowering::lower_collective(l, op);
  if (n == "stablehlo.pad") return lower_pad(l, op);
  if (n == "stablehlo.gather") return lowering::lower_gather(l, op);
  if (n == "stablehlo.reverse") return lowering::lower_reverse(l, op);
  if (n == "stablehlo.scatter") return lowering::lower_scatter(l, op);
  if (n == "stablehlo.sort") return lowering::lower_sort(l, op);
  if (n == "chlo.top_k") return lowering::lower_top_k(l, op);
  if (n == "stablehlo.reduce_precision") return lowering::lower_reduce_precision(l, op);
  if (n == "stablehlo.dynamic_slice") return lowering::lower_dynamic_slice(l, op);
  if (n == "stablehlo.dynamic_update_slice") return lowering::lower_dynamic_update_slice(l, op);
  if (n == "stablehlo.while")
    return l.unimplemented(
        op,
        "stablehlo.while whose trip count is not a compile-time constant (unrolled: a "
        "counter from a constant, compared LT/LE with a constant, incremented by a positive "
        "constant, up to 256 iterations)");
  if (n == "stablehlo.if" || n == "stablehlo.case")
    return l.unimplemented(op, str(n, " whose ", n == "stablehlo.if" ? "predicate" : "index",
                                   " is not a compile-time constant (constant ones fold)"));
  if (n == "stablehlo.optimization_barrier") {  // Only orders XLA's scheduling: the identity.
    for (size_t i = 0; i < op.results.size() && i < op.operands.size(); ++i)
      l.bind(op.results[i], MESHPLAN_TRY(l.use(op.operands[i], op)));
    return {};
  }
  return l.unimplemented(
      op,
      str(n,
          " has no meshplan op (meshplan lowers the elementwise ops, convert, constant, iota, "
          "broadcast_in_dim, reshape, transpose, concatenate, slice, pad, dot/dot_general, "
          "reduce (add/max/min/mul, and/or on i1, argmax/argmin), reduce_window, "
          "select_and_scatter, convolution, compare/select/clamp, gather, scatter, sort, "
          "chlo.top_k, reduce_precision, dynamic_slice, dynamic_update_slice, reverse, "
          "optimization_barrier, the collectives (collective_broadcast included) and @meshplan.* "
          "custom calls)"));
}

/// Graph validation names the lowered graph's internal ops and values ("op 'op3' (gelu): result
/// 'v7' ..."), which the module's author never wrote. Give the message the source op's
/// file:line:col and name instead, and drop the internal names.
Error locate_validation_error(Error e, const std::map<std::string, const Op*>& source) {
  const std::string& msg = e.message;
  size_t at = msg.find("op 'op");
  if (at == std::string::npos) return e;
  size_t end = msg.find('\'', at + 4);
  if (end == std::string::npos) return e;
  auto it = source.find(msg.substr(at + 4, end - at - 4));
  if (it == source.end()) return e;
  std::string rest = msg;
  std::string kind;
  if (at == 0) {  // "op 'opN' (kind)..." leads: replace the label by the source op
    size_t open = msg.find(" (", end);
    size_t close = open == end + 1 ? msg.find(')', open) : std::string::npos;
    if (close != std::string::npos) {
      kind = msg.substr(open + 2, close - open - 2);
      rest = msg.substr(close + 1);
    }
  }
  // Internal value and op names ('v12', 'op3') mean nothing in the module: drop them.
  std::string clean;
  for (size_t i = 0; i < rest.size();) {
    size_t q = rest.find(" '", i);
    if (q == std::string::npos) {
      clean += rest.substr(i);
      break;
    }
    size_t j = q + 2, digits = j;
    if (rest.compare(j, 2, "op") == 0)
      digits = j + 2;
    else if (j < rest.size() && rest[j] == 'v')
      digits = j + 1;
    size_t k = digits;
    while (k < rest.size() && std::isdigit(static_cast<unsigned char>(rest[k]))) ++k;
    bool internal = digits > j && k > digits && k < rest.size() && rest[k] == '\'';
    clean += rest.substr(i, q - i);
    if (internal) {
      i = k + 1;
    } else {
      clean += " '";
      i = q + 2;
    }
  }
  const Op& op = *it->second;
  e.message = str(op.loc.str(), ": ", op.name, kind.empty() ? "" : str(" (lowered to ", kind, ")"),
                  at == 0 ? "" : ": ", clean);
  return e;
}

}  // namespace

Result<Graph> lower_to_graph(const Module& m) {
  const Func* f = m.entry();
  if (!f) return fail(ErrorCode::invalid_argument, m.file, ": no function to lower");
  Lowering l(m);
  Graph& g = l.graph();
  g.name = f->name;
  const Block* body = &f->body;
  std::vector<ValueId> args;
  for (const ArgInfo& a : f->args) args.push_back(a.value);
  std::vector<ArgKind> kinds(args.size(), ArgKind::input);
  for (size_t i = 0; i < f->args.size(); ++i)
    for (const auto& [k, v] : f->args[i].attrs)
      if (k == "ttcore.argument_type")
        kinds[i] = v.text.find("parameter") != std::string::npos  ? ArgKind::parameter
                   : v.text.find("constant") != std::string::npos ? ArgKind::constant
                                                                  : ArgKind::input;
  const Op* manual = nullptr;
  for (OpId o : f->body.ops)
    if (m.ops[o].name == "sdy.manual_computation" && m.ops[o].regions.size() == 1) {
      manual = &m.ops[o];
      body = &m.ops[o].regions[0];
      args = body->args;
    }
  size_t program_args = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorType& t = m.values[args[i]].type;
    if (std::ranges::find(t.shape, 0) != t.shape.end()) {
      // A zero-size argument holds no data: the plan takes no input for it (on a mesh, no
      // chip's piece: lower_boundary gives it no shard either).
      l.fold(args[i], Folded{t.shape, {}});
      continue;
    }
    ++program_args;
    // A boolean argument (a mask) arrives as bf16 0/1 values: nonzero is true.
    DType dt = m.values[args[i]].type.element == "i1"
                   ? DType::bf16
                   : MESHPLAN_TRY(lowering::dtype_of(m.values[args[i]].type, f->loc));
    GValue pv = MESHPLAN_TRY(l.new_value(m.values[args[i]].type.shape, dt, "arg"));
    g.values[pv].name = "arg" + std::to_string(i);
    // A ttcore `constant` argument still arrives from the host: it has no data here.
    g.values[pv].kind = i < kinds.size() && kinds[i] != ArgKind::constant ? kinds[i]
                        : i < kinds.size()                                ? ArgKind::parameter
                                                                          : ArgKind::input;
    g.values[pv].argument = static_cast<int>(g.arguments.size());
    g.arguments.push_back(pv);
    l.bind(args[i], pv);
  }
  std::map<std::string, const Op*> source;  // lowered op name -> the module op it came from
  std::vector<lowering::PendingCheck> checks;
  std::vector<lowering::PendingOverflow> overflows;
  for (OpId o : body->ops) {
    const Op& op = m.ops[o];
    size_t first = g.ops.size();
    if (lowering::is_check_call(op)) {
      if (auto c = MESHPLAN_TRY(lowering::lower_check(l, op))) checks.push_back(std::move(*c));
    } else if (op.name == "func.return" || op.name == "sdy.return") {
      for (size_t i = 0; i < op.operands.size(); ++i) {
        const TensorType& t = m.values[op.operands[i]].type;
        if (std::ranges::find(t.shape, 0) != t.shape.end())
          return fail(ErrorCode::unimplemented, op.loc.str(), ": unimplemented: result ", i,
                      " of @", f->name, " is the zero-size ", type_string(t),
                      " (a plan has no zero-size outputs)");
        g.outputs.push_back(MESHPLAN_TRY(l.use(op.operands[i], op)));
      }
    } else if (!MESHPLAN_TRY(lowering::lower_empty(l, op))) {
      MESHPLAN_TRY(lower_op(l, op));
      MESHPLAN_TRY(lowering::wrap_narrow(l, op));
      MESHPLAN_TRY(lowering::check_wide(l, op, first, overflows));
    }
    for (size_t k = first; k < g.ops.size(); ++k) source.emplace(g.ops[k].name, &op);
  }
  MESHPLAN_TRY(lowering::lower_boundary(g, m, manual, program_args));
  // Checks compare whole tensors on the host: on one chip every value is whole.
  if (!checks.empty() && !g.mesh.single_chip())
    return fail(ErrorCode::unimplemented, checks.front().loc,
                ": unimplemented: a check in a program on a ", g.mesh.rows, "x", g.mesh.cols,
                " mesh (checks run on single-chip programs)");
  MESHPLAN_TRY(lowering::add_check_outputs(l, checks));
  // Overflow checks read whole values on the host, like checks.
  if (!overflows.empty() && !g.mesh.single_chip())
    return fail(ErrorCode::unimplemented, overflows.front().loc, ": unimplemented: ",
                overflows.front().op, " of 64-bit integers in a program on a ", g.mesh.rows, "x",
                g.mesh.cols,
                " mesh (64-bit integers are computed in 32-bit words; the check that a result "
                "stays in their range runs on single-chip programs)");
  MESHPLAN_TRY(lowering::add_overflow_outputs(l, overflows));
  if (auto valid = validate(g); !valid)
    return std::unexpected(locate_validation_error(valid.error(), source));
  return std::move(g);
}

}  // namespace meshplan::planner::shlo
