// stablehlo.reduce_window and stablehlo.select_and_scatter (generic form, as JAX prints them).
// reduce_window with a max body over the H and W of an NHWC bf16 tensor (flax/JAX max pooling)
// becomes max_pool2d (tt-metal's pools read bf16 only); every other window (f32 max pooling;
// sum, min, product bodies; strides, base and window dilations, negative or positive padding;
// cumsum-style windows) becomes strided slices of the padded input combined elementwise, so the
// existing ops' kernels, references, timing and sharding rules apply unchanged. select_and_scatter
// (the max-pool gradient) replays the spec's sequential selection over the window offsets with
// compares and wheres, then places each offset's share back with zero-interleaving and sums.
#include <algorithm>
#include <cmath>
#include <limits>

#include "import/stablehlo_lower_internal.hpp"
#include "meshplan/device/op_cases.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

/// Windows with more positions than this are refused: each position costs a slice and an
/// elementwise op in the graph.
constexpr int64_t kMaxWindowPositions = 256;
/// select_and_scatter costs about ten ops per window position.
constexpr int64_t kMaxSelectPositions = 64;

const Attr* any_attr(const Op& op, std::string_view name) {
  const Attr* a = op.prop(name);
  return a ? a : op.attr(name);
}

/// The combining op of a two-argument region `return op(arg0, arg1)` (either order).
std::optional<OpKind> binary_body(const Module& m, const Block& b) {
  if (b.args.size() != 2 || b.ops.size() != 2) return std::nullopt;
  const Op& f = m.ops[b.ops[0]];
  const Op& ret = m.ops[b.ops[1]];
  if (ret.name != "stablehlo.return" || ret.operands.size() != 1 || f.results.size() != 1 ||
      ret.operands[0] != f.results[0] || f.operands.size() != 2)
    return std::nullopt;
  bool args = (f.operands[0] == b.args[0] && f.operands[1] == b.args[1]) ||
              (f.operands[0] == b.args[1] && f.operands[1] == b.args[0]);
  if (!args) return std::nullopt;
  if (f.name == "stablehlo.add") return OpKind::add;
  if (f.name == "stablehlo.maximum") return OpKind::maximum;
  if (f.name == "stablehlo.minimum") return OpKind::minimum;
  if (f.name == "stablehlo.multiply") return OpKind::multiply;
  return std::nullopt;
}

/// The identity of a combining op: the init value that changes nothing (-0 for add: +0 would
/// turn a window of -0 into +0).
bool is_identity(OpKind k, float v) {
  switch (k) {
    case OpKind::add:
      return v == 0.0f && std::signbit(v);
    case OpKind::maximum:
      return v == -std::numeric_limits<float>::infinity();
    case OpKind::minimum:
      return v == std::numeric_limits<float>::infinity();
    case OpKind::multiply:
      return v == 1.0f;
    // Binary ops binary_body() does not take as a combiner: no identity.
    case OpKind::subtract:
    case OpKind::divide:
    case OpKind::atan2:
    case OpKind::power:
    case OpKind::remainder:
    case OpKind::bitwise_and:
    case OpKind::bitwise_or:
    case OpKind::bitwise_xor:
    case OpKind::shift_left:
    case OpKind::shift_right_arithmetic:
    case OpKind::shift_right_logical:
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE_(family, eltwise_binary, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      return false;
  }
  return false;
}

/// The window attributes, each with one entry per operand dim (defaults filled in).
struct Window {
  std::vector<int64_t> dims, strides, base, dil, lo, hi;
};

Result<Window> read_window(const Lowering& l, const Op& op, size_t rank, bool dilations) {
  auto list = [&](const char* name, std::vector<int64_t>& out, bool required) -> Status {
    const Attr* a = any_attr(op, name);
    if (!a) {
      if (required)
        return l.unimplemented(op, str(op.name, " without ", name, " (one entry per dim)"));
      out.assign(rank, 1);
      return {};
    }
    out = a->ints;
    if (out.empty())
      for (double v : a->values) out.push_back(static_cast<int64_t>(v));
    if (out.size() != rank)
      return l.unimplemented(op, str(op.name, ": ", name, " has ", out.size(),
                                     " entries for a rank-", rank, " operand (one entry per dim)"));
    for (int64_t v : out)
      if (v < 1) return l.unimplemented(op, str(op.name, ": ", name, " entry ", v, " is not >= 1"));
    return {};
  };
  Window w;
  MESHPLAN_TRY(list("window_dimensions", w.dims, true));
  MESHPLAN_TRY(list("window_strides", w.strides, false));
  if (dilations) {
    MESHPLAN_TRY(list("base_dilations", w.base, false));
    MESHPLAN_TRY(list("window_dilations", w.dil, false));
  } else {
    w.base.assign(rank, 1);
    w.dil.assign(rank, 1);
    for (const char* k : {"base_dilations", "window_dilations"})
      if (any_attr(op, k)) return l.unimplemented(op, str(op.name, " has no attribute ", k));
  }
  w.lo.assign(rank, 0);
  w.hi.assign(rank, 0);
  if (const Attr* p = any_attr(op, "padding")) {
    std::vector<double> v = p->values;
    if (v.empty())
      for (int64_t i : p->ints) v.push_back(static_cast<double>(i));
    if (p->kind == Attr::Kind::dense && v.size() == 1 && rank > 0)
      v.assign(2 * rank, v[0]);  // A splat: dense<0> : tensor<Rx2xi64>.
    if (v.size() != 2 * rank)
      return l.unimplemented(op, str(op.name, ": padding has ", v.size(), " values for a rank-",
                                     rank, " operand (a dense<...> : tensor<", rank, "x2xi64>)"));
    for (size_t d = 0; d < rank; ++d) {
      w.lo[d] = static_cast<int64_t>(v[2 * d]);
      w.hi[d] = static_cast<int64_t>(v[2 * d + 1]);
    }
  }
  return w;
}

/// A [1]-shaped (or full) constant block filled with `v`.
Result<GValue> filled(Lowering& l, const std::vector<int64_t>& shape, float v, DType dt) {
  Folded f;
  f.shape = shape;
  f.data.assign(static_cast<size_t>(device::volume(shape)), v);
  return l.constant(f, dt);
}

Result<GValue> slice(Lowering& l, GValue x, std::vector<int64_t>& shape,
                     const std::vector<int64_t>& begin, const std::vector<int64_t>& step,
                     const std::vector<int64_t>& out) {
  std::vector<int64_t> end(shape.size());
  bool whole = true;
  for (size_t d = 0; d < shape.size(); ++d) {
    end[d] = out[d] == 0 ? begin[d] : begin[d] + (out[d] - 1) * step[d] + 1;
    whole = whole && begin[d] == 0 && out[d] == shape[d] && (step[d] == 1 || out[d] <= 1);
  }
  if (whole) return x;
  DType dt = l.graph().values[x].dtype;
  GValue r = MESHPLAN_TRY(
      l.emit(OpKind::slice, {x}, {{"begins", begin}, {"ends", end}, {"steps", step}}, out, dt));
  shape = out;
  return r;
}

/// Edge padding of dim d by lo / hi (negative: cropping) with `fill`.
Result<GValue> pad_dim(Lowering& l, GValue x, std::vector<int64_t>& shape, size_t d, int64_t lo,
                       int64_t hi, float fill) {
  DType dt = l.graph().values[x].dtype;
  if (lo < 0 || hi < 0) {
    std::vector<int64_t> begin(shape.size(), 0), step(shape.size(), 1), out = shape;
    begin[d] = std::max<int64_t>(-lo, 0);
    out[d] = std::max<int64_t>(shape[d] - begin[d] - std::max<int64_t>(-hi, 0), 0);
    x = MESHPLAN_TRY(slice(l, x, shape, begin, step, out));
    lo = std::max<int64_t>(lo, 0);
    hi = std::max<int64_t>(hi, 0);
  }
  if (lo == 0 && hi == 0) return x;
  std::vector<GValue> parts;
  std::vector<int64_t> next = shape;
  for (int64_t width : {lo, int64_t{-1}, hi}) {
    if (width < 0) {
      if (shape[d] > 0) parts.push_back(x);
      continue;
    }
    if (width == 0) continue;
    std::vector<int64_t> block = shape;
    block[d] = width;
    parts.push_back(MESHPLAN_TRY(filled(l, block, fill, dt)));
  }
  next[d] = shape[d] + lo + hi;
  shape = next;
  if (parts.size() == 1) return l.reshape(parts[0], shape);
  return l.emit(OpKind::concat, parts, {{"axis", static_cast<int64_t>(d)}}, shape, dt);
}

}  // namespace

Result<GValue> interior_pad(Lowering& l, GValue x, std::vector<int64_t>& shape, size_t d, int64_t f,
                            float fill) {
  if (f == 1 || shape[d] <= 1) return x;
  DType dt = l.graph().values[x].dtype;
  std::vector<int64_t> split = shape;
  split.insert(split.begin() + static_cast<std::ptrdiff_t>(d) + 1, 1);
  GValue s = MESHPLAN_TRY(l.reshape(x, split));
  std::vector<int64_t> gap = split;
  gap[d + 1] = f - 1;
  GValue z = MESHPLAN_TRY(filled(l, gap, fill, dt));
  std::vector<int64_t> joined = split;
  joined[d + 1] = f;
  GValue c = MESHPLAN_TRY(
      l.emit(OpKind::concat, {s, z}, {{"axis", static_cast<int64_t>(d) + 1}}, joined, dt));
  std::vector<int64_t> flat = shape;
  flat[d] = shape[d] * f;
  GValue r = MESHPLAN_TRY(l.reshape(c, flat));
  shape = flat;
  std::vector<int64_t> begin(shape.size(), 0), step(shape.size(), 1), out = shape;
  out[d] = (flat[d] / f - 1) * f + 1;
  return slice(l, r, shape, begin, step, out);
}

namespace {

/// Window offsets in row-major order over the window dims: offset k of dim d.
std::vector<int64_t> offset_of(int64_t k, const std::vector<int64_t>& dims) {
  std::vector<int64_t> o(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    o[d] = k % dims[d];
    k /= dims[d];
  }
  return o;
}

/// reduce_window max over H and W of NHWC as max_pool2d, when it is exactly that op. The pool
/// reads bf16 only (tt-metal's validate_pool2d, OpModel::validate): other dtypes take the
/// strided slices and elementwise maximums of the general path, exact in any dtype.
Result<bool> try_max_pool(Lowering& l, const Op& op, const Window& w, OpKind body, float init,
                          GValue x) {
  const auto& in = l.type(op.operands[0]).shape;
  const auto& out = l.type(op.results[0]).shape;
  if (body != OpKind::maximum || !is_identity(body, init) || in.size() != 4) return false;
  if (l.graph().values[x].dtype != DType::bf16) return false;
  for (size_t d : {size_t{0}, size_t{3}})
    if (w.dims[d] != 1 || w.strides[d] != 1 || w.dil[d] != 1 || w.lo[d] != 0 || w.hi[d] != 0)
      return false;
  for (size_t d = 0; d < 4; ++d)
    if (w.base[d] != 1 || w.lo[d] < 0 || w.hi[d] < 0) return false;
  std::vector<Attribute> attrs = {
      {"kernel", std::vector<int64_t>{w.dims[1], w.dims[2]}},
      {"stride", std::vector<int64_t>{w.strides[1], w.strides[2]}},
      {"dilation", std::vector<int64_t>{w.dil[1], w.dil[2]}},
      {"padding", std::vector<int64_t>{w.lo[1], w.hi[1], w.lo[2], w.hi[2]}}};
  // The pool's own rules (padding smaller than the window, the window fits) decide.
  device::OpConfig c;
  c.kernel[0] = static_cast<int32_t>(w.dims[1]), c.kernel[1] = static_cast<int32_t>(w.dims[2]);
  c.stride[0] = static_cast<int32_t>(w.strides[1]),
  c.stride[1] = static_cast<int32_t>(w.strides[2]);
  c.dilation[0] = static_cast<int32_t>(w.dil[1]), c.dilation[1] = static_cast<int32_t>(w.dil[2]);
  for (int i = 0; i < 4; ++i)
    c.padding[i] =
        static_cast<int32_t>(i < 2 ? (i == 0 ? w.lo[1] : w.hi[1]) : (i == 2 ? w.lo[2] : w.hi[2]));
  std::span<const int64_t> shapes[1] = {in};
  auto s = device::infer_shape(OpKind::max_pool2d, shapes, c);
  if (!s || *s != out) return false;
  MESHPLAN_TRY(l.emit_for(op, OpKind::max_pool2d, {x}, attrs));
  return true;
}

/// The comparison of a select-pair region (a0, a1, a2, a3 its arguments):
///   %c = compare DIR, a0, a2; %v = select %c, a0, a2; %w = select %c, a1, a3; return %v, %w
/// with DIR one of LT LE GT GE (not TOTALORDER): the pair whose first value compares DIR wins.
std::optional<OpKind> select_pair_body(const Module& m, const Block& b) {
  if (b.args.size() != 4 || b.ops.size() != 4) return std::nullopt;
  const Op &c = m.ops[b.ops[0]], &v = m.ops[b.ops[1]], &w = m.ops[b.ops[2]], &ret = m.ops[b.ops[3]];
  auto word = [](const Attr* a) {
    std::string s = a ? a->text : "";
    if (auto sp = s.rfind(' '); sp != std::string::npos) s = s.substr(sp + 1);
    while (!s.empty() && (s.back() == '>' || s.back() == ')')) s.pop_back();
    return s;
  };
  if (c.name != "stablehlo.compare" || c.results.size() != 1 ||
      c.operands != std::vector<ValueId>{b.args[0], b.args[2]} ||
      word(c.prop("compare_type")) == "TOTALORDER")
    return std::nullopt;
  auto is_select = [&](const Op& s, ValueId x, ValueId y) {
    return s.name == "stablehlo.select" && s.results.size() == 1 &&
           s.operands == std::vector<ValueId>{c.results[0], x, y};
  };
  if (!is_select(v, b.args[0], b.args[2]) || !is_select(w, b.args[1], b.args[3]) ||
      ret.name != "stablehlo.return" ||
      ret.operands != std::vector<ValueId>{v.results[0], w.results[0]})
    return std::nullopt;
  const std::string dir = word(c.prop("comparison_direction"));
  if (dir == "LT") return OpKind::lt;
  if (dir == "LE") return OpKind::le;
  if (dir == "GT") return OpKind::gt;
  if (dir == "GE") return OpKind::ge;
  return std::nullopt;
}

/// Two-input reduce_window whose region keeps the pair whose first value compares better (as
/// JAX's select_and_gather_add / argmin pooling emit it): a sequential fold from the inits over
/// the window positions in row-major order, each step a compare and two wheres.
Status lower_reduce_window_pair(Lowering& l, const Op& op) {
  auto refuse = [&](std::string_view why) {
    return l.unimplemented(
        op, str("stablehlo.reduce_window with 2 inputs ", why,
                " (supported: two inputs of one element type and shape, constant inits, a region "
                "`compare LT/LE/GT/GE` of the first values selecting both pairs, windows of at "
                "most ",
                kMaxWindowPositions, " positions)"));
  };
  std::optional<OpKind> cmp = select_pair_body(l.module(), op.regions[0]);
  if (!cmp) return refuse("whose region is not a compare selecting both values");
  const TensorType &t0 = l.type(op.operands[0]), &t1 = l.type(op.operands[1]);
  if (t0.element != t1.element || t0.shape != t1.shape)
    return refuse(str("of types ", t0.element, " and ", t1.element));
  const Folded *i0 = l.folded(op.operands[2]), *i1 = l.folded(op.operands[3]);
  if (!i0 || !i1 || i0->data.size() != 1 || i1->data.size() != 1)
    return refuse("whose init values are not constants");
  const std::vector<int64_t> in = t0.shape;
  const std::vector<int64_t>& out = l.type(op.results[0]).shape;
  const size_t rank = in.size();
  Window w = MESHPLAN_TRY(read_window(l, op, rank, true));
  int64_t positions = 1;
  for (size_t d = 0; d < rank; ++d) {
    int64_t padded = (in[d] == 0 ? 0 : (in[d] - 1) * w.base[d] + 1) + w.lo[d] + w.hi[d];
    int64_t span = (w.dims[d] - 1) * w.dil[d] + 1;
    int64_t want = padded < span ? 0 : (padded - span) / w.strides[d] + 1;
    if (padded < 0 || want != out[d] || l.type(op.results[1]).shape != out)
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": stablehlo.reduce_window: result dim ", d, " is ", out[d],
                  " but the window gives ", want);
    positions *= w.dims[d];
  }
  if (positions > kMaxWindowPositions) return refuse(str("of ", positions, " window positions"));
  if (device::volume(out) == 0 || device::volume(in) == 0 || rank == 0)
    return refuse("with an empty or rank-0 operand or result");
  GValue x[2];
  std::vector<int64_t> shape[2] = {in, in};
  DType dt = MESHPLAN_TRY(dtype_of(t0, op.loc));
  for (size_t i = 0; i < 2; ++i) {
    const float iv = (i == 0 ? i0 : i1)->data[0];
    x[i] = MESHPLAN_TRY(l.use(op.operands[i], op));
    for (size_t d = 0; d < rank; ++d) {
      x[i] = MESHPLAN_TRY(interior_pad(l, x[i], shape[i], d, w.base[d], iv));
      x[i] = MESHPLAN_TRY(pad_dim(l, x[i], shape[i], d, w.lo[d], w.hi[d], iv));
    }
  }
  GValue v = MESHPLAN_TRY(filled(l, out, i0->data[0], dt));
  GValue u = MESHPLAN_TRY(filled(l, out, i1->data[0], dt));
  for (int64_t k = 0; k < positions; ++k) {
    std::vector<int64_t> o = offset_of(k, w.dims), begin(rank);
    for (size_t d = 0; d < rank; ++d) begin[d] = o[d] * w.dil[d];
    std::vector<int64_t> s0 = shape[0], s1 = shape[1];
    GValue pv = MESHPLAN_TRY(slice(l, x[0], s0, begin, w.strides, out));
    GValue pu = MESHPLAN_TRY(slice(l, x[1], s1, begin, w.strides, out));
    GValue keep = MESHPLAN_TRY(l.emit(*cmp, {v, pv}, {}, out, dt));
    v = MESHPLAN_TRY(l.emit(OpKind::where, {keep, v, pv}, {}, out, dt));
    u = MESHPLAN_TRY(l.emit(OpKind::where, {keep, u, pu}, {}, out, dt));
  }
  l.bind(op.results[0], v);
  l.bind(op.results[1], u);
  return {};
}

}  // namespace

Status lower_reduce_window(Lowering& l, const Op& op) {
  const Module& m = l.module();
  if (op.operands.size() == 4 && op.results.size() == 2 && op.regions.size() == 1)
    return lower_reduce_window_pair(l, op);
  auto refuse = [&](std::string_view why) {
    return l.unimplemented(
        op, str("stablehlo.reduce_window ", why,
                " (supported: one input, a region returning add/maximum/minimum/multiply of its "
                "two arguments, a constant init, windows of at most ",
                kMaxWindowPositions, " positions)"));
  };
  if (op.operands.size() != 2 || op.results.size() != 1 || op.regions.size() != 1)
    return refuse(str("with ", op.operands.size() / 2, " inputs"));
  std::optional<OpKind> body = binary_body(m, op.regions[0]);
  if (!body) return refuse("whose region is not one binary op of its arguments");
  const Folded* init = l.folded(op.operands[1]);
  if (!init || init->data.size() != 1) return refuse("whose init value is not a constant");
  const float iv = init->data[0];
  const std::vector<int64_t> in = l.type(op.operands[0]).shape;
  const std::vector<int64_t>& out = l.type(op.results[0]).shape;
  const size_t rank = in.size();
  Window w = MESHPLAN_TRY(read_window(l, op, rank, true));
  // The spec's result shape: padded, base-dilated input, dilated window, strided.
  int64_t positions = 1;
  for (size_t d = 0; d < rank; ++d) {
    int64_t padded = (in[d] == 0 ? 0 : (in[d] - 1) * w.base[d] + 1) + w.lo[d] + w.hi[d];
    int64_t span = (w.dims[d] - 1) * w.dil[d] + 1;
    int64_t want = padded < span ? 0 : (padded - span) / w.strides[d] + 1;
    if (padded < 0 || want != out[d])
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": stablehlo.reduce_window: result dim ", d, " is ", out[d],
                  " but the window gives ", want);
    positions *= w.dims[d];
  }
  if (positions > kMaxWindowPositions) return refuse(str("of ", positions, " window positions"));
  if (device::volume(out) == 0 || device::volume(in) == 0)
    return refuse("with an empty operand or result");
  if (rank == 0) return refuse("of a rank-0 operand");
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  if (MESHPLAN_TRY(try_max_pool(l, op, w, *body, iv, x))) return {};
  DType dt = l.graph().values[x].dtype;
  std::vector<int64_t> shape = in;
  for (size_t d = 0; d < rank; ++d) {
    x = MESHPLAN_TRY(interior_pad(l, x, shape, d, w.base[d], iv));
    x = MESHPLAN_TRY(pad_dim(l, x, shape, d, w.lo[d], w.hi[d], iv));
  }
  GValue acc = kNone;
  for (int64_t k = 0; k < positions; ++k) {
    std::vector<int64_t> o = offset_of(k, w.dims), begin(rank);
    for (size_t d = 0; d < rank; ++d) begin[d] = o[d] * w.dil[d];
    std::vector<int64_t> s = shape;
    GValue part = MESHPLAN_TRY(slice(l, x, s, begin, w.strides, out));
    acc = acc == kNone ? part : MESHPLAN_TRY(l.emit(*body, {acc, part}, {}, out, dt));
  }
  if (!is_identity(*body, iv)) {
    GValue c = MESHPLAN_TRY(filled(l, {1}, iv, dt));
    acc = MESHPLAN_TRY(l.emit(*body, {acc, c}, {}, out, dt));
  }
  l.bind(op.results[0], acc);
  return {};
}

Status lower_select_and_scatter(Lowering& l, const Op& op) {
  const Module& m = l.module();
  auto refuse = [&](std::string_view why) {
    return l.unimplemented(
        op,
        str("stablehlo.select_and_scatter ", why,
            " (supported: a select region returning compare GE, GT, LE or LT of its arguments, a "
            "scatter region returning add of its arguments, a constant init, windows of at "
            "most ",
            kMaxSelectPositions, " positions)"));
  };
  if (op.operands.size() != 3 || op.results.size() != 1 || op.regions.size() != 2)
    return refuse("with other than (operand, source, init)");
  // select: `%c = compare GE|GT|LE|LT, %a, %b [, FLOAT]; return %c` (max- and min-pool
  // gradients).
  const Block& sel = op.regions[0];
  OpKind select_kind = OpKind::ge;
  {
    bool ok = sel.args.size() == 2 && sel.ops.size() == 2;
    if (ok) {
      const Op& c = m.ops[sel.ops[0]];
      const Op& r = m.ops[sel.ops[1]];
      const Attr* dir = c.prop("comparison_direction");
      const Attr* ct = c.prop("compare_type");
      std::string d = dir ? dir->text : "";
      if (auto sp = d.rfind(' '); sp != std::string::npos) d = d.substr(sp + 1);
      while (!d.empty() && (d.back() == '>' || d.back() == ')')) d.pop_back();
      ok = c.name == "stablehlo.compare" && c.operands.size() == 2 && c.results.size() == 1 &&
           c.operands[0] == sel.args[0] && c.operands[1] == sel.args[1] &&
           r.name == "stablehlo.return" && r.operands.size() == 1 &&
           r.operands[0] == c.results[0] && (d == "GE" || d == "GT" || d == "LE" || d == "LT") &&
           !(ct && ct->text.find("TOTALORDER") != std::string::npos);
      select_kind = d == "GT"   ? OpKind::gt
                    : d == "LE" ? OpKind::le
                    : d == "LT" ? OpKind::lt
                                : OpKind::ge;
    }
    if (!ok) return refuse("whose select region is not compare GE/GT/LE/LT of its arguments");
  }
  std::optional<OpKind> scatter = binary_body(m, op.regions[1]);
  if (!scatter || *scatter != OpKind::add) return refuse("whose scatter region is not add");
  const Folded* init = l.folded(op.operands[2]);
  if (!init || init->data.size() != 1) return refuse("whose init value is not a constant");
  const float iv = init->data[0];
  const std::vector<int64_t> in = l.type(op.operands[0]).shape;
  const std::vector<int64_t> src = l.type(op.operands[1]).shape;
  const size_t rank = in.size();
  Window w = MESHPLAN_TRY(read_window(l, op, rank, false));
  int64_t positions = 1;
  std::vector<int64_t> padded(rank);
  for (size_t d = 0; d < rank; ++d) {
    padded[d] = in[d] + w.lo[d] + w.hi[d];
    int64_t want = padded[d] < w.dims[d] ? 0 : (padded[d] - w.dims[d]) / w.strides[d] + 1;
    if (w.lo[d] < 0 || w.hi[d] < 0) return refuse("with negative padding");
    if (src.size() != rank || src[d] != want)
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": stablehlo.select_and_scatter: source dim ", d, " is ",
                  src.size() == rank ? src[d] : -1, " but the window gives ", want);
    positions *= w.dims[d];
  }
  if (positions > kMaxSelectPositions) return refuse(str("of ", positions, " window positions"));
  if (rank == 0) return refuse("of a rank-0 operand");
  if (device::volume(in) == 0 || device::volume(src) == 0)
    return refuse("with an empty operand or source");
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  GValue source = MESHPLAN_TRY(l.use(op.operands[1], op));
  const DType dt = l.graph().values[x].dtype;
  if (l.graph().values[source].dtype != dt) return refuse("whose operand and source types differ");
  // The operand padded (padding is never selected: a compile-time validity mask says where
  // the real elements are).
  std::vector<int64_t> shape = in;
  for (size_t d = 0; d < rank; ++d) x = MESHPLAN_TRY(pad_dim(l, x, shape, d, w.lo[d], w.hi[d], 0));
  std::vector<int64_t> sst(rank, 1);
  for (size_t d = rank; d-- > 1;) sst[d - 1] = sst[d] * src[d];
  const int64_t nsrc = device::volume(src);
  // valid_k[i]: window i's element at offset k is a real element.
  auto valid_at = [&](int64_t k, int64_t i) {
    std::vector<int64_t> o = offset_of(k, w.dims);
    for (size_t d = 0; d < rank; ++d) {
      int64_t oi = (i / sst[d]) % src[d];
      int64_t p = oi * w.strides[d] + o[d] - w.lo[d];
      if (p < 0 || p >= in[d]) return false;
    }
    return true;
  };
  // Sequential selection, as the spec runs it: the first valid element is taken, then each
  // next valid element e replaces the current one c unless select(c, e).
  GValue cur = kNone, idx = kNone;
  std::vector<float> have(static_cast<size_t>(nsrc), 0.0f);
  for (int64_t k = 0; k < positions; ++k) {
    std::vector<int64_t> o = offset_of(k, w.dims);
    std::vector<int64_t> s = shape;
    GValue e = MESHPLAN_TRY(slice(l, x, s, o, w.strides, src));
    Folded vk{src, std::vector<float>(static_cast<size_t>(nsrc))};
    Folded hk{src, have};
    bool all_valid = true, all_have = true, none_have = true;
    for (int64_t i = 0; i < nsrc; ++i) {
      vk.data[static_cast<size_t>(i)] = valid_at(k, i) ? 1.0f : 0.0f;
      all_valid = all_valid && vk.data[static_cast<size_t>(i)] == 1.0f;
      all_have = all_have && have[static_cast<size_t>(i)] == 1.0f;
      none_have = none_have && have[static_cast<size_t>(i)] == 0.0f;
    }
    GValue kc = MESHPLAN_TRY(filled(l, {1}, static_cast<float>(k), dt));
    if (cur == kNone) {  // k = 0.
      cur = e;
      if (all_valid) {
        idx = MESHPLAN_TRY(filled(l, src, 0.0f, dt));
      } else {
        GValue none = MESHPLAN_TRY(filled(l, {1}, -1.0f, dt));
        idx = MESHPLAN_TRY(
            l.emit(OpKind::where, {MESHPLAN_TRY(l.constant(vk, dt)), kc, none}, {}, src, dt));
      }
    } else {
      // take = valid_k and (not have or not select(cur, e)).
      GValue keep = MESHPLAN_TRY(l.emit(select_kind, {cur, e}, {}, src, dt));
      GValue take;
      if (all_have) {
        take = MESHPLAN_TRY(
            l.emit(OpKind::eq, {keep, MESHPLAN_TRY(filled(l, {1}, 0, dt))}, {}, src, dt));
      } else {
        GValue kh =
            none_have ? MESHPLAN_TRY(filled(l, {1}, 0, dt)) : MESHPLAN_TRY(l.constant(hk, dt));
        GValue both = MESHPLAN_TRY(l.emit(OpKind::multiply, {keep, kh}, {}, src, dt));
        take = MESHPLAN_TRY(
            l.emit(OpKind::eq, {both, MESHPLAN_TRY(filled(l, {1}, 0, dt))}, {}, src, dt));
      }
      if (!all_valid)
        take = MESHPLAN_TRY(
            l.emit(OpKind::multiply, {take, MESHPLAN_TRY(l.constant(vk, dt))}, {}, src, dt));
      cur = MESHPLAN_TRY(l.emit(OpKind::where, {take, e, cur}, {}, src, dt));
      idx = MESHPLAN_TRY(l.emit(OpKind::where, {take, kc, idx}, {}, src, dt));
    }
    for (int64_t i = 0; i < nsrc; ++i)
      if (vk.data[static_cast<size_t>(i)] == 1.0f) have[static_cast<size_t>(i)] = 1.0f;
  }
  // Each offset's share: the source where that offset was selected, placed at stride * i +
  // offset in the padded operand; summed, cropped to the operand, then added to init.
  GValue zero = MESHPLAN_TRY(filled(l, {1}, 0, dt));
  GValue total = kNone;
  for (int64_t k = 0; k < positions; ++k) {
    std::vector<int64_t> o = offset_of(k, w.dims);
    GValue kc = MESHPLAN_TRY(filled(l, {1}, static_cast<float>(k), dt));
    GValue hit = MESHPLAN_TRY(l.emit(OpKind::eq, {idx, kc}, {}, src, dt));
    GValue share = MESHPLAN_TRY(l.emit(OpKind::where, {hit, source, zero}, {}, src, dt));
    std::vector<int64_t> s = src;
    for (size_t d = 0; d < rank; ++d) {
      share = MESHPLAN_TRY(interior_pad(l, share, s, d, w.strides[d], 0));
      share = MESHPLAN_TRY(pad_dim(l, share, s, d, o[d], padded[d] - o[d] - s[d], 0));
    }
    total =
        total == kNone ? share : MESHPLAN_TRY(l.emit(OpKind::add, {total, share}, {}, padded, dt));
  }
  std::vector<int64_t> s = padded;
  for (size_t d = 0; d < rank; ++d)
    total = MESHPLAN_TRY(pad_dim(l, total, s, d, -w.lo[d], -w.hi[d], 0));
  GValue c = MESHPLAN_TRY(filled(l, {1}, iv, dt));
  l.bind(op.results[0], MESHPLAN_TRY(l.emit(OpKind::add, {total, c}, {}, in, dt)));
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
