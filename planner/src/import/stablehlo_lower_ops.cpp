// Lowering of the structured StableHLO ops: dot_general -> (permute/reshape) matmul,
// reduce -> reduce_sum / reduce_max / reduce_min / reduce_prod, convolution -> (permutes around)
// conv2d, stablehlo.custom_call @meshplan.* -> the meshplan op of that name with its
// attributes, and the integer bit ops (and/or/xor/not, shifts, popcnt, count_leading_zeros,
// bitcast_convert).
#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "import/meshplan_custom_call.hpp"
#include "import/stablehlo_lower_internal.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

const std::vector<int64_t>& ints(const Op& op, const char* name) {
  static const std::vector<int64_t> kEmpty;
  const Attr* a = op.prop(name);
  return a ? a->ints : kEmpty;
}

/// An attribute written either inherent (`<{...}>`) or discardable (`{...}`).
const Attr* any_attr(const Op& op, std::string_view name) {
  const Attr* a = op.prop(name);
  return a ? a : op.attr(name);
}

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

int64_t product(const std::vector<int64_t>& shape, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= shape[static_cast<size_t>(d)];
  return p;
}

std::vector<int64_t> cat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

}  // namespace

namespace {

/// Integer dot_general: matmul computes in floating point, so integers are multiplied
/// elementwise in their 32-bit words, [batch..., M, K, 1] * [batch..., 1, K, N], and summed
/// over K, both wrapping modulo 2^32 as integer arithmetic does. The product tensor is
/// batch*M*K*N elements: larger contractions are refused.
Status lower_integer_dot(Lowering& l, const Op& op, const std::vector<int64_t>& lb,
                         const std::vector<int64_t>& lc, const std::vector<int64_t>& rb,
                         const std::vector<int64_t>& rc, int64_t m, int64_t k, int64_t n) {
  const TensorType &lt = l.type(op.operands[0]), &rt = l.type(op.operands[1]),
                   &ot = l.type(op.results[0]);
  DType dt = MESHPLAN_TRY(dtype_of(ot, op.loc));
  auto types = [&] { return str(" (", lt.element, " x ", rt.element, " -> ", ot.element, ")"); };
  DType ldt = MESHPLAN_TRY(dtype_of(lt, op.loc)), rdt = MESHPLAN_TRY(dtype_of(rt, op.loc));
  auto is_int = [](DType d) { return d == DType::i32 || d == DType::u32; };
  if (!is_int(ldt) || !is_int(rdt))
    return l.unimplemented(op, str("stablehlo.dot_general of mixed integer and floating-point "
                                   "operands",
                                   types(), " (both operands integer, or convert first)"));
  std::vector<int64_t> batch;
  for (int64_t d : lb) batch.push_back(lt.shape[static_cast<size_t>(d)]);
  constexpr int64_t kMaxProducts = int64_t{1} << 20;
  const int64_t products = device::volume(batch) * m * k * n;
  if (products > kMaxProducts)
    return l.unimplemented(
        op, str("stablehlo.dot_general on integers", types(), " with ", products,
                " products (integer dot_general is computed elementwise, up to ", kMaxProducts,
                " products; matmul computes only floating point)"));
  std::vector<int64_t> lfree, rfree;
  for (int64_t d = 0; d < static_cast<int64_t>(lt.shape.size()); ++d)
    if (!contains(lb, d) && !contains(lc, d)) lfree.push_back(d);
  for (int64_t d = 0; d < static_cast<int64_t>(rt.shape.size()); ++d)
    if (!contains(rb, d) && !contains(rc, d)) rfree.push_back(d);
  auto operand = [&](size_t i, DType from, std::vector<int64_t> perm,
                     std::vector<int64_t> shape) -> Result<GValue> {
    GValue v = MESHPLAN_TRY(l.use(op.operands[i], op));
    if (from != dt)  // i32 <-> u32: the same words; the product's words do not depend on sign
      v = MESHPLAN_TRY(l.emit(OpKind::bitcast, {v},
                              {{"dtype", std::string(device::dtype_name(dt))}},
                              i == 0 ? lt.shape : rt.shape, dt));
    return l.reshape(MESHPLAN_TRY(l.permute(v, perm)), shape);
  };
  GValue a = MESHPLAN_TRY(operand(0, ldt, cat(cat(lb, lfree), lc), cat(batch, {m, k, 1})));
  GValue b = MESHPLAN_TRY(operand(1, rdt, cat(cat(rb, rc), rfree), cat(batch, {1, k, n})));
  GValue p = MESHPLAN_TRY(l.emit(OpKind::multiply, {a, b}, {}, cat(batch, {m, k, n}), dt));
  const int64_t kdim = static_cast<int64_t>(batch.size()) + 1;
  GValue s = MESHPLAN_TRY(l.emit(OpKind::reduce_sum, {p}, {{"dims", std::vector<int64_t>{kdim}}},
                                 cat(batch, {m, n}), dt));
  l.bind(op.results[0], MESHPLAN_TRY(l.reshape(s, ot.shape)));
  return {};
}

}  // namespace

Status lower_dot_general(Lowering& l, const Op& op) {
  const auto& lb = ints(op, "lhs_batching_dimensions");
  const auto& rb = ints(op, "rhs_batching_dimensions");
  const auto& lc = ints(op, "lhs_contracting_dimensions");
  const auto& rc = ints(op, "rhs_contracting_dimensions");
  const auto& ls = l.type(op.operands[0]).shape;
  const auto& rs = l.type(op.operands[1]).shape;
  if (!op.prop("lhs_contracting_dimensions") || lb.size() != rb.size() || lc.size() != rc.size())
    return l.unimplemented(op, "stablehlo.dot_general without matching batching/contracting dims");
  if (!dims_ok(cat(lb, lc), ls.size()) || !dims_ok(cat(rb, rc), rs.size()))
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.dot_general: batching/contracting dims are not distinct dims of its "
                "operands");
  for (size_t i = 0; i < lb.size(); ++i)
    if (ls[static_cast<size_t>(lb[i])] != rs[static_cast<size_t>(rb[i])])
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": stablehlo.dot_general: batching dims differ in size");
  for (size_t i = 0; i < lc.size(); ++i)
    if (ls[static_cast<size_t>(lc[i])] != rs[static_cast<size_t>(rc[i])])
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": stablehlo.dot_general: contracting dims differ in size");
  std::vector<int64_t> lfree, rfree;
  for (int64_t d = 0; d < static_cast<int64_t>(ls.size()); ++d)
    if (!contains(lb, d) && !contains(lc, d)) lfree.push_back(d);
  for (int64_t d = 0; d < static_cast<int64_t>(rs.size()); ++d)
    if (!contains(rb, d) && !contains(rc, d)) rfree.push_back(d);
  std::vector<int64_t> batch;
  for (int64_t d : lb) batch.push_back(ls[static_cast<size_t>(d)]);
  const int64_t m = product(ls, lfree), k = product(ls, lc), n = product(rs, rfree);
  DType dt = MESHPLAN_TRY(dtype_of(l.type(op.results[0]), op.loc));
  if (dt == DType::i32 || dt == DType::u32)
    return lower_integer_dot(l, op, lb, lc, rb, rc, m, k, n);
  // lhs as [batch..., M, K] (or [batch..., K, M] with transpose_a when that needs no permute).
  GValue a = MESHPLAN_TRY(l.use(op.operands[0], op));
  bool ta = false;
  std::vector<int64_t> a_shape;
  std::vector<int64_t> a_natural = cat(cat(lb, lfree), lc), a_trans = cat(cat(lb, lc), lfree);
  if (lb.empty() && !lfree.empty() && lc.size() == 1 && is_identity(a_natural)) {
    a_shape = ls;  // Leading free dims act as matmul batch dims over an unbatched rhs.
  } else if (!is_identity(a_natural) && is_identity(a_trans)) {
    ta = true;
    a_shape = cat(batch, {k, m});
  } else {
    a = MESHPLAN_TRY(l.permute(a, a_natural));
    a_shape = cat(batch, {m, k});
  }
  a = MESHPLAN_TRY(l.reshape(a, a_shape));
  // rhs as [batch..., K, N] (or [batch..., N, K] with transpose_b).
  GValue b = MESHPLAN_TRY(l.use(op.operands[1], op));
  bool tb = false;
  std::vector<int64_t> b_natural = cat(cat(rb, rc), rfree), b_trans = cat(cat(rb, rfree), rc);
  if (!is_identity(b_natural) && is_identity(b_trans)) {
    tb = true;
    b = MESHPLAN_TRY(l.reshape(b, cat(batch, {n, k})));
  } else {
    b = MESHPLAN_TRY(l.permute(b, b_natural));
    b = MESHPLAN_TRY(l.reshape(b, cat(batch, {k, n})));
  }
  std::vector<Attribute> attrs;
  if (ta) attrs.push_back({"transpose_a", true});
  if (tb) attrs.push_back({"transpose_b", true});
  std::vector<int64_t> mm_shape(a_shape.begin(), a_shape.end() - 2);
  mm_shape.push_back(ta ? a_shape[a_shape.size() - 1] : a_shape[a_shape.size() - 2]);
  mm_shape.push_back(n);
  GValue r = MESHPLAN_TRY(l.emit(OpKind::matmul, {a, b}, attrs, mm_shape, dt));
  const auto& out = l.type(op.results[0]).shape;
  l.bind(op.results[0], MESHPLAN_TRY(l.reshape(r, out)));
  return {};
}

/// Rank-0 value `v` as an operand broadcasting against a rank-`rank` result (all-ones shape).
Result<GValue> join_operand(Lowering& l, ValueId v, const Op& user, size_t rank) {
  GValue c = MESHPLAN_TRY(l.use(v, user));
  if (rank == 0) return c;
  return l.reshape(c, std::vector<int64_t>(rank, 1));
}

namespace {

/// One result of a reduce: `input` reduced over the op's dimensions from `init_value` by
/// `body` (the name of the binary op the region computes of the result's two arguments, or
/// empty when it computes none).
Status lower_reduce_one(Lowering& l, const Op& op, ValueId input, ValueId init_value,
                        ValueId result, std::string_view body) {
  // The reduction and how a non-identity init joins its result.
  struct Kind {
    std::string_view body;
    OpKind reduce, join;
    float identity;
  };
  constexpr float kInf = std::numeric_limits<float>::infinity();
  static const Kind kKinds[] = {
      {"stablehlo.add", OpKind::reduce_sum, OpKind::add, 0.0f},
      {"stablehlo.maximum", OpKind::reduce_max, OpKind::maximum, -kInf},
      {"stablehlo.minimum", OpKind::reduce_min, OpKind::minimum, kInf},
      {"stablehlo.multiply", OpKind::reduce_prod, OpKind::multiply, 1.0f}};
  const Kind* kind = nullptr;
  for (const Kind& k : kKinds)
    if (body == k.body) kind = &k;
  if (!kind)
    return l.unimplemented(
        op, str("stablehlo.reduce with a ", body.empty() ? std::string_view("missing") : body,
                " region (only add, maximum, minimum and multiply lower)"));
  const Folded* init = l.folded(init_value);
  if (init && init->data.size() != 1)
    return l.unimplemented(op, "stablehlo.reduce whose init value is not one value");
  const auto& dims = ints(op, "dimensions");
  if (!dims_ok(dims, l.type(input).shape.size()))
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.reduce: dimensions are not distinct dims of its operand");
  GValue x = MESHPLAN_TRY(l.use(input, op));
  const auto& out = l.type(result).shape;
  const DType dt = MESHPLAN_TRY(dtype_of(l.type(result), op.loc));
  GValue r = x;
  if (!dims.empty()) r = MESHPLAN_TRY(l.emit(kind->reduce, {x}, {{"dims", dims}}, out, dt));
  if (!init) {  // A computed init joins the result once, by the region's op.
    GValue c = MESHPLAN_TRY(join_operand(l, init_value, op, out.size()));
    l.bind(result, MESHPLAN_TRY(l.emit(kind->join, {r, c}, {}, out, dt)));
    return {};
  }
  float v = init->data.front();
  // The largest finite value is the identity of min (and the lowest of max) for f32 inputs.
  bool identity =
      v == kind->identity ||
      (kind->reduce == OpKind::reduce_max && v == std::numeric_limits<float>::lowest()) ||
      (kind->reduce == OpKind::reduce_min && v == std::numeric_limits<float>::max());
  if (!identity) {
    // A non-identity init joins the result once.
    GValue c = MESHPLAN_TRY(l.constant(Folded{{1}, {v}}, dt));
    r = MESHPLAN_TRY(l.emit(kind->join, {r, c}, {}, out, dt));
  }
  l.bind(result, r);
  return {};
}

/// The op of `op`'s region that result `i` of `n` returns when it is a binary op of exactly
/// that result's two region arguments (accumulator i and value n + i), else null.
const Op* own_binary_body(const Module& m, const Op& op, size_t i, size_t n) {
  if (op.regions.size() != 1) return nullptr;
  const Block& b = op.regions[0];
  if (b.args.size() != 2 * n || b.ops.empty()) return nullptr;
  const Op& ret = m.ops[b.ops.back()];
  if (ret.operands.size() != n) return nullptr;
  const OpId d = m.values[ret.operands[i]].def;
  if (d == kNone || std::find(b.ops.begin(), b.ops.end(), d) == b.ops.end()) return nullptr;
  const Op& body = m.ops[d];
  const ValueId a = b.args[i], x = b.args[n + i];
  bool own = body.operands.size() == 2 && body.results.size() == 1 &&
             ((body.operands[0] == a && body.operands[1] == x) ||
              (body.operands[0] == x && body.operands[1] == a));
  return own ? &body : nullptr;
}

}  // namespace

Status lower_reduce(Lowering& l, const Op& op) {
  const size_t n = op.results.size();
  if (n == 0 || op.operands.size() != 2 * n)
    return l.unimplemented(op, str("stablehlo.reduce of ", op.operands.size(), " operands and ", n,
                                   " results (expected n inputs and n inits)"));
  const Module& m = l.module();
  if (n > 1) {
    // A variadic reduce whose results each combine only their own arguments (as jax.lax.reduce
    // of a tuple prints it) is n independent reduces; otherwise an argmax/argmin rule.
    std::vector<const Op*> bodies;
    for (size_t i = 0; i < n; ++i) bodies.push_back(own_binary_body(m, op, i, n));
    if (std::ranges::find(bodies, nullptr) != bodies.end()) return lower_arg_reduce(l, op);
    for (size_t i = 0; i < n; ++i)
      MESHPLAN_TRY(lower_reduce_one(l, op, op.operands[i], op.operands[n + i], op.results[i],
                                    bodies[i]->name));
    return {};
  }
  const Block* region = op.regions.size() == 1 ? &op.regions[0] : nullptr;
  // One reduce: its region is exactly the binary op and the return.
  const Op* body = region && region->ops.size() == 2 ? own_binary_body(m, op, 0, 1) : nullptr;
  if (body)
    return lower_reduce_one(l, op, op.operands[0], op.operands[1], op.results[0], body->name);
  // Otherwise the region may still compute maximum or minimum of its arguments, written with
  // compare and select (region_reduction judges it by its values, NaN included).
  if (auto kind = region ? region_reduction(m, *region) : std::nullopt)
    return lower_reduce_one(l, op, op.operands[0], op.operands[1], op.results[0], *kind);
  if (region && !region->ops.empty()) {
    const Op& first = m.ops[region->ops[0]];
    return l.unimplemented(
        op, str("stablehlo.reduce with a ", first.name,
                " region that computes none of add, maximum, minimum and multiply of its two "
                "arguments (and/or on i1; maximum/minimum also written with compare and select, "
                "NaN propagating)"));
  }
  return lower_reduce_one(l, op, op.operands[0], op.operands[1], op.results[0], {});
}

namespace {

/// `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` -> three lists of tokens.
std::optional<std::array<std::vector<std::string>, 3>> conv_layout(std::string_view text) {
  std::array<std::vector<std::string>, 3> out;
  size_t part = 0;
  size_t i = 0;
  while (i < text.size() && part < 3) {
    size_t open = text.find('[', i);
    if (open == std::string_view::npos) break;
    size_t close = text.find(']', open);
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view body = text.substr(open + 1, close - open - 1);
    size_t s = 0;
    while (s <= body.size()) {
      size_t c = body.find(',', s);
      if (c == std::string_view::npos) c = body.size();
      std::string tok(body.substr(s, c - s));
      tok.erase(std::remove_if(tok.begin(), tok.end(), [](char ch) { return std::isspace(ch); }),
                tok.end());
      if (!tok.empty()) out[part].push_back(tok);
      s = c + 1;
    }
    ++part;
    i = close + 1;
  }
  if (part != 3) return std::nullopt;
  return out;
}

/// All integers in `text`, in order (for window fields and padding).
std::vector<int64_t> all_ints(std::string_view text) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < text.size();) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) ||
        (text[i] == '-' && i + 1 < text.size() &&
         std::isdigit(static_cast<unsigned char>(text[i + 1])))) {
      int64_t v = 0;
      auto [p, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
      if (ec != std::errc()) break;
      out.push_back(v);
      i = static_cast<size_t>(p - text.data());
    } else {
      ++i;
    }
  }
  return out;
}

/// The list of `key = [...]` (or `key = [[...]]`) inside a pretty window `{...}`.
std::optional<std::vector<int64_t>> window_field(std::string_view window, std::string_view key) {
  size_t at = 0;
  while ((at = window.find(key, at)) != std::string_view::npos) {
    bool word_start = at == 0 || !(std::isalnum(static_cast<unsigned char>(window[at - 1])) ||
                                   window[at - 1] == '_');
    size_t after = at + key.size();
    while (after < window.size() && window[after] == ' ') ++after;
    if (word_start && after < window.size() && window[after] == '=') {
      size_t open = window.find('[', after);
      if (open == std::string_view::npos) return std::nullopt;
      int depth = 0;
      size_t e = open;
      for (; e < window.size(); ++e) {
        if (window[e] == '[') ++depth;
        if (window[e] == ']' && --depth == 0) break;
      }
      return all_ints(window.substr(open, e - open + 1));
    }
    at = after;
  }
  return std::nullopt;
}

int64_t position(const std::vector<std::string>& layout, std::string_view tok) {
  for (size_t i = 0; i < layout.size(); ++i)
    if (layout[i] == tok) return static_cast<int64_t>(i);
  return -1;
}

}  // namespace

Result<ConvSpec> conv_spec(const Op& op, bool allow_lhs_dilation, bool allow_batch_groups) {
  auto bad = [&](std::string_view what) {
    return fail(ErrorCode::unimplemented, op.loc.str(), ": unimplemented: ", what);
  };
  const Attr* dn = op.prop("dim_numbers");
  if (!dn) dn = any_attr(op, "dimension_numbers");
  auto layout = dn ? conv_layout(dn->text) : std::nullopt;
  if (!layout || op.operands.size() != 2)
    return bad("stablehlo.convolution without readable dim_numbers");
  const auto& [lin, ker, lout] = *layout;
  if (lin.size() != 4 || ker.size() != 4 || lout.size() != 4)
    return bad(
        "stablehlo.convolution that is not 1-D, 2-D or 3-D (4-D and more are not supported)");
  ConvSpec c;
  c.in_perm = {position(lin, "b"), position(lin, "0"), position(lin, "1"), position(lin, "f")};
  c.w_perm = {position(ker, "o"), position(ker, "0"), position(ker, "1"), position(ker, "i")};
  for (const std::string& t : lout) c.out_perm.push_back(position({"b", "0", "1", "f"}, t));
  for (auto* p : {&c.in_perm, &c.w_perm, &c.out_perm})
    if (contains(*p, -1)) return bad("stablehlo.convolution dim_numbers " + dn->text);
  // Window: pretty `window = {stride = [..], pad = [[..], [..]], ...}` or generic properties.
  std::vector<int64_t> lhs_dil = {1, 1}, reverse;
  if (const Attr* w = op.prop("window")) {
    if (auto v = window_field(w->text, "stride")) c.stride = *v;
    if (auto v = window_field(w->text, "pad")) c.pad = *v;
    if (auto v = window_field(w->text, "rhs_dilate")) c.dilation = *v;
    if (auto v = window_field(w->text, "lhs_dilate")) lhs_dil = *v;
    if (auto v = window_field(w->text, "reverse")) reverse = *v;
  } else {
    if (const Attr* a = any_attr(op, "window_strides")) c.stride = a->ints;
    if (const Attr* a = any_attr(op, "rhs_dilation")) c.dilation = a->ints;
    if (const Attr* a = any_attr(op, "lhs_dilation")) lhs_dil = a->ints;
    if (const Attr* a = any_attr(op, "padding")) {
      c.pad.clear();
      for (double x : a->values) c.pad.push_back(static_cast<int64_t>(x));
    }
  }
  if (c.stride.size() != 2 || c.pad.size() != 4 || c.dilation.size() != 2 || lhs_dil.size() != 2)
    return bad("stablehlo.convolution window that is not 2-D");
  if (lhs_dil != std::vector<int64_t>{1, 1} && !allow_lhs_dilation)
    return bad("stablehlo.convolution with lhs_dilate (a transposed convolution)");
  if (std::any_of(lhs_dil.begin(), lhs_dil.end(), [](int64_t x) { return x < 1; }))
    return bad("stablehlo.convolution with lhs_dilate < 1");
  c.lhs_dilation = lhs_dil;
  if (std::any_of(reverse.begin(), reverse.end(), [](int64_t x) { return x != 0; }))
    return bad("stablehlo.convolution with a reversed window");
  if (std::any_of(c.pad.begin(), c.pad.end(), [](int64_t x) { return x < 0; }))
    return bad("stablehlo.convolution with negative padding");
  if (const Attr* a = any_attr(op, "feature_group_count")) c.groups = a->i;
  if (const Attr* a = any_attr(op, "batch_group_count"); a && a->i != 1) {
    if (!allow_batch_groups || a->i < 1)
      return bad("stablehlo.convolution with batch_group_count > 1");
    c.batch_groups = a->i;
  }
  if (c.groups < 1) return bad("stablehlo.convolution with feature_group_count < 1");
  if (c.groups != 1 && c.batch_groups != 1)
    return bad("stablehlo.convolution with both feature_group_count and batch_group_count > 1");
  return c;
}

namespace {

/// A 1-D convolution as the 2-D one with a unit spatial dim `1` right after `0` in every
/// list (whose position in input, kernel and output `unit` gives) and the window extended by
/// stride 1, no padding, no dilation. nullopt when the convolution is not 1-D.
std::optional<Op> lift_conv_1d(const Op& op, std::array<size_t, 3>& unit) {
  const Attr* dn = op.prop("dim_numbers");
  if (!dn) dn = any_attr(op, "dimension_numbers");
  auto layout = dn ? conv_layout(dn->text) : std::nullopt;
  if (!layout) return std::nullopt;
  for (const auto& list : *layout)
    if (list.size() != 3) return std::nullopt;
  std::string text;
  for (size_t k = 0; k < 3; ++k) {
    text += k == 0 ? "[" : k == 1 ? "]x[" : "]->[";
    for (size_t i = 0; i < 3; ++i) {
      const std::string& t = (*layout)[k][i];
      text += (i ? ", " : "") + t;
      if (t == "0") {
        text += ", 1";
        unit[k] = i + 1;
      }
    }
  }
  text += "]";
  Op lifted = op;
  Attr d;
  d.kind = Attr::Kind::opaque;
  d.text = text;
  lifted.set_prop("dim_numbers", d);
  auto join = [](const std::vector<int64_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s;
  };
  if (const Attr* w = op.prop("window")) {
    std::string t;
    auto field = [&](const char* key, int64_t extra) {
      if (auto v = window_field(w->text, key)) {
        v->push_back(extra);
        t += (t.empty() ? "" : ", ") + std::string(key) + " = [" + join(*v) + "]";
      }
    };
    field("stride", 1);
    field("lhs_dilate", 1);
    field("rhs_dilate", 1);
    field("reverse", 0);
    if (auto v = window_field(w->text, "pad"); v && v->size() == 2)
      t += (t.empty() ? "" : ", ") + std::string("pad = [[") + join(*v) + "], [0, 0]]";
    Attr nw;
    nw.kind = Attr::Kind::opaque;
    nw.text = "{" + t + "}";
    lifted.set_prop("window", nw);
  } else {
    for (const char* k : {"window_strides", "rhs_dilation", "lhs_dilation"})
      if (const Attr* a = any_attr(op, k)) {
        std::vector<int64_t> v = a->ints;
        v.push_back(1);
        lifted.set_prop(k, Attr::ints_array(v));
      }
    if (const Attr* a = any_attr(op, "padding")) {
      Attr p = *a;
      p.values.push_back(0);
      p.values.push_back(0);
      lifted.set_prop("padding", p);
    }
  }
  return lifted;
}

}  // namespace

namespace {

/// A 3-D convolution as a sum over the kernel's depth taps of 2-D convolutions: tap kd takes
/// the input depth slices od * stride + kd * dilation (zero-padded, lhs-dilated) as a batch of
/// N * OD images and the kernel's kd-th [KH, KW] window; the KD results are added.
Status lower_convolution_3d(Lowering& l, const Op& op,
                            const std::array<std::vector<std::string>, 3>& layout) {
  auto bad = [&](std::string_view what) {
    return l.unimplemented(op, str("stablehlo.convolution (3-D) ", what));
  };
  const auto& [lin, ker, lout] = layout;
  std::vector<int64_t> in_perm, w_perm, out_perm;
  for (const char* t : {"b", "0", "1", "2", "f"}) in_perm.push_back(position(lin, t));
  for (const char* t : {"o", "0", "1", "2", "i"}) w_perm.push_back(position(ker, t));
  for (const std::string& t : lout) out_perm.push_back(position({"b", "0", "1", "2", "f"}, t));
  for (auto* p : {&in_perm, &w_perm, &out_perm})
    if (contains(*p, -1)) return bad("with unreadable dim_numbers");
  std::vector<int64_t> stride = {1, 1, 1}, pad = {0, 0, 0, 0, 0, 0}, dil = {1, 1, 1},
                       lhs = {1, 1, 1}, reverse;
  if (const Attr* w = op.prop("window")) {
    if (auto v = window_field(w->text, "stride")) stride = *v;
    if (auto v = window_field(w->text, "pad")) pad = *v;
    if (auto v = window_field(w->text, "rhs_dilate")) dil = *v;
    if (auto v = window_field(w->text, "lhs_dilate")) lhs = *v;
    if (auto v = window_field(w->text, "reverse")) reverse = *v;
  } else {
    if (const Attr* a = any_attr(op, "window_strides")) stride = a->ints;
    if (const Attr* a = any_attr(op, "rhs_dilation")) dil = a->ints;
    if (const Attr* a = any_attr(op, "lhs_dilation")) lhs = a->ints;
    if (const Attr* a = any_attr(op, "padding")) {
      pad.clear();
      for (double x : a->values) pad.push_back(static_cast<int64_t>(x));
    }
  }
  if (stride.size() != 3 || pad.size() != 6 || dil.size() != 3 || lhs.size() != 3)
    return bad("whose window is not 3-D");
  if (std::any_of(reverse.begin(), reverse.end(), [](int64_t x) { return x != 0; }))
    return bad("with a reversed window");
  for (int64_t v : pad)
    if (v < 0) return bad("with negative padding");
  for (const auto* v : {&stride, &dil, &lhs})
    for (int64_t x : *v)
      if (x < 1) return bad("with a stride or dilation < 1");
  int64_t groups = 1;
  if (const Attr* a = any_attr(op, "feature_group_count")) groups = a->i;
  if (const Attr* a = any_attr(op, "batch_group_count"); a && a->i != 1)
    return bad("with batch_group_count > 1");
  if (groups < 1) return bad("with feature_group_count < 1");
  const std::vector<int64_t>& out = l.type(op.results[0]).shape;
  if (device::volume(out) == 0) return bad("with an empty result");
  DType dt = MESHPLAN_TRY(dtype_of(l.type(op.results[0]), op.loc));
  GValue x = MESHPLAN_TRY(l.permute(MESHPLAN_TRY(l.use(op.operands[0], op)), in_perm));
  GValue w = MESHPLAN_TRY(l.permute(MESHPLAN_TRY(l.use(op.operands[1], op)), w_perm));
  std::vector<int64_t> xs = l.graph().values[x].shape;
  const std::vector<int64_t> ws = l.graph().values[w].shape;
  for (size_t d = 0; d < 3; ++d) x = MESHPLAN_TRY(interior_pad(l, x, xs, d + 1, lhs[d], 0.0f));
  // Depth padding: zero blocks before and after (H and W padding is conv2d's).
  if (pad[0] > 0 || pad[1] > 0) {
    std::vector<GValue> parts;
    for (int64_t width : {pad[0], int64_t{-1}, pad[1]}) {
      if (width == 0) continue;
      if (width < 0) {
        parts.push_back(x);
        continue;
      }
      Folded z;
      z.shape = xs;
      z.shape[1] = width;
      z.data.assign(static_cast<size_t>(device::volume(z.shape)), 0.0f);
      parts.push_back(MESHPLAN_TRY(l.constant(z, l.graph().values[x].dtype)));
    }
    xs[1] += pad[0] + pad[1];
    x = MESHPLAN_TRY(
        l.emit(OpKind::concat, parts, {{"axis", int64_t{1}}}, xs, l.graph().values[x].dtype));
  }
  std::vector<int64_t> o5(5);
  for (size_t d = 0; d < 5; ++d) o5[static_cast<size_t>(out_perm[d])] = out[d];
  const int64_t n = xs[0], od = o5[1];
  if (od < 1 || (od - 1) * stride[0] + (ws[1] - 1) * dil[0] + 1 > xs[1])
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.convolution: the result's depth ", od,
                " does not fit the padded input's ", xs[1]);
  std::vector<Attribute> attrs = {{"stride", std::vector<int64_t>{stride[1], stride[2]}},
                                  {"padding", std::vector<int64_t>{pad[2], pad[3], pad[4], pad[5]}},
                                  {"dilation", std::vector<int64_t>{dil[1], dil[2]}}};
  if (groups != 1) attrs.push_back({"groups", groups});
  const std::vector<int64_t> img = {n * od, xs[2], xs[3], xs[4]};
  const std::vector<int64_t> r2 = {n * od, o5[2], o5[3], o5[4]};
  GValue acc = kNone;
  for (int64_t kd = 0; kd < ws[1]; ++kd) {
    std::vector<int64_t> begin = {0, kd * dil[0], 0, 0, 0}, end = xs,
                         steps = {1, stride[0], 1, 1, 1}, sl = xs;
    end[1] = begin[1] + (od - 1) * stride[0] + 1;
    sl[1] = od;
    GValue xk = MESHPLAN_TRY(l.emit(OpKind::slice, {x},
                                    {{"begins", begin}, {"ends", end}, {"steps", steps}}, sl,
                                    l.graph().values[x].dtype));
    xk = MESHPLAN_TRY(l.reshape(xk, img));
    std::vector<int64_t> wb = {0, kd, 0, 0, 0}, we = ws, wsl = ws;
    we[1] = kd + 1;
    wsl[1] = 1;
    GValue wk = MESHPLAN_TRY(
        l.emit(OpKind::slice, {w},
               {{"begins", wb}, {"ends", we}, {"steps", std::vector<int64_t>{1, 1, 1, 1, 1}}}, wsl,
               l.graph().values[w].dtype));
    wk = MESHPLAN_TRY(l.reshape(wk, {ws[0], ws[2], ws[3], ws[4]}));
    GValue r = MESHPLAN_TRY(l.emit(OpKind::conv2d, {xk, wk}, attrs, r2, dt));
    acc = acc == kNone ? r : MESHPLAN_TRY(l.emit(OpKind::add, {acc, r}, {}, r2, dt));
  }
  acc = MESHPLAN_TRY(l.reshape(acc, o5));
  l.bind(op.results[0], MESHPLAN_TRY(l.permute(acc, out_perm)));
  return {};
}

}  // namespace

Status lower_convolution(Lowering& l, const Op& op) {
  {
    const Attr* dn = op.prop("dim_numbers");
    if (!dn) dn = any_attr(op, "dimension_numbers");
    auto layout = dn ? conv_layout(dn->text) : std::nullopt;
    if (layout && (*layout)[0].size() == 5 && (*layout)[1].size() == 5 &&
        (*layout)[2].size() == 5 && l.type(op.operands[0]).shape.size() == 5)
      return lower_convolution_3d(l, op, *layout);
  }
  // 1-D: the 2-D convolution over a unit second spatial dim (reshapes only, exact).
  std::array<size_t, 3> unit{};
  std::optional<Op> lifted = lift_conv_1d(op, unit);
  ConvSpec c = MESHPLAN_TRY(conv_spec(lifted ? *lifted : op, true, true));
  std::vector<int64_t> xs = l.type(op.operands[0]).shape, ws = l.type(op.operands[1]).shape;
  std::vector<int64_t> out = l.type(op.results[0]).shape;
  if (lifted && xs.size() == 3 && ws.size() == 3 && out.size() == 3) {
    xs.insert(xs.begin() + static_cast<std::ptrdiff_t>(unit[0]), 1);
    ws.insert(ws.begin() + static_cast<std::ptrdiff_t>(unit[1]), 1);
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(unit[2]), 1);
  }
  if (xs.size() != 4 || ws.size() != 4 || out.size() != 4)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.convolution: dim_numbers do not match the operand ranks");
  if (device::volume(xs) == 0 || device::volume(ws) == 0 || device::volume(out) == 0)
    return l.unimplemented(op,
                           "stablehlo.convolution with an empty operand or result (zero-size "
                           "tensors are not supported)");
  DType dt = MESHPLAN_TRY(dtype_of(l.type(op.results[0]), op.loc));
  GValue x = MESHPLAN_TRY(l.reshape(MESHPLAN_TRY(l.use(op.operands[0], op)), xs));
  GValue w = MESHPLAN_TRY(l.reshape(MESHPLAN_TRY(l.use(op.operands[1], op)), ws));
  x = MESHPLAN_TRY(l.permute(x, c.in_perm));
  w = MESHPLAN_TRY(l.permute(w, c.w_perm));
  // lhs dilation (transposed convolution): zeros between the input's pixels, then a plain
  // convolution (the spec's definition: the input interior-padded with 0).
  std::vector<int64_t> x_nhwc = l.graph().values[x].shape;
  for (size_t d = 0; d < 2; ++d)
    x = MESHPLAN_TRY(interior_pad(l, x, x_nhwc, d + 1, c.lhs_dilation[d], 0.0f));
  std::vector<int64_t> nhwc(4);
  for (size_t d = 0; d < 4; ++d) nhwc[static_cast<size_t>(c.out_perm[d])] = out[d];
  std::vector<Attribute> attrs = {
      {"stride", c.stride}, {"padding", c.pad}, {"dilation", c.dilation}};
  if (c.groups != 1) attrs.push_back({"groups", c.groups});
  GValue r;
  if (c.batch_groups == 1) {
    r = MESHPLAN_TRY(l.emit(OpKind::conv2d, {x, w}, attrs, nhwc, dt));
  } else {
    // batch_group_count G (the spec): the batch and the kernel's output features split in G
    // contiguous groups, group g convolved with group g, results joined along the features.
    const int64_t g = c.batch_groups, n = x_nhwc[0], o = l.graph().values[w].shape[0];
    if (n % g != 0 || o % g != 0 || nhwc[0] * g != n || g > device::kMaxOperands)
      return l.unimplemented(
          op, str("stablehlo.convolution with batch_group_count ", g, " (supported: up to ",
                  device::kMaxOperands, " groups dividing the batch and the output features)"));
    std::vector<GValue> parts;
    for (int64_t k = 0; k < g; ++k) {
      std::vector<int64_t> xb = {k * (n / g), 0, 0, 0}, xe = x_nhwc;
      xe[0] = (k + 1) * (n / g);
      std::vector<int64_t> xsh = x_nhwc;
      xsh[0] = n / g;
      GValue xk = MESHPLAN_TRY(
          l.emit(OpKind::slice, {x},
                 {{"begins", xb}, {"ends", xe}, {"steps", std::vector<int64_t>{1, 1, 1, 1}}}, xsh,
                 l.graph().values[x].dtype));
      std::vector<int64_t> wshape = l.graph().values[w].shape, wb = {k * (o / g), 0, 0, 0};
      std::vector<int64_t> we = wshape;
      we[0] = (k + 1) * (o / g);
      wshape[0] = o / g;
      GValue wk = MESHPLAN_TRY(
          l.emit(OpKind::slice, {w},
                 {{"begins", wb}, {"ends", we}, {"steps", std::vector<int64_t>{1, 1, 1, 1}}},
                 wshape, l.graph().values[w].dtype));
      std::vector<int64_t> part = nhwc;
      part[3] = o / g;
      parts.push_back(MESHPLAN_TRY(l.emit(OpKind::conv2d, {xk, wk}, attrs, part, dt)));
    }
    r = MESHPLAN_TRY(l.emit(OpKind::concat, parts, {{"axis", int64_t{3}}}, nhwc, dt));
  }
  r = MESHPLAN_TRY(l.permute(r, c.out_perm));
  l.bind(op.results[0], MESHPLAN_TRY(l.reshape(r, l.type(op.results[0]).shape)));
  return {};
}

Status lower_custom_call(Lowering& l, const Op& op) {
  planner::Op call = MESHPLAN_TRY(meshplan_call_op(op));
  std::vector<GValue> operands;
  for (ValueId v : op.operands) operands.push_back(MESHPLAN_TRY(l.use(v, op)));
  MESHPLAN_TRY(l.emit_for(op, call.kind, operands, std::move(call.attributes)));
  return {};
}

namespace {

/// A one-element constant (rank `rank`, broadcasting numpy-style) holding the 32-bit word `w`:
/// f32 carries integers exactly only to 2^24, so words above 0xffff are built on the device as
/// (w >> 16) << 16 | (w & 0xffff).
Result<GValue> word_constant(Lowering& l, uint32_t w, size_t rank, DType dt) {
  std::vector<int64_t> shape(rank, 1);
  auto small = [&](uint32_t v) { return l.constant(Folded{shape, {static_cast<float>(v)}}, dt); };
  if (w <= 0xffffu) return small(w);
  GValue hi = MESHPLAN_TRY(small(w >> 16));
  GValue sh =
      MESHPLAN_TRY(l.emit(OpKind::shift_left, {hi, MESHPLAN_TRY(small(16))}, {}, shape, dt));
  if ((w & 0xffffu) == 0) return sh;
  return l.emit(OpKind::bitwise_or, {sh, MESHPLAN_TRY(small(w & 0xffffu))}, {}, shape, dt);
}

/// popcnt of the words of `x` (Hacker's Delight 5-2: bit counts of pairs, nibbles, bytes, then
/// their sums); logical shifts, so the sign bit counts as a bit.
Result<GValue> popcount(Lowering& l, GValue x, const std::vector<int64_t>& shape, DType dt) {
  size_t rank = shape.size();
  auto bin = [&](OpKind k, GValue a, GValue b) { return l.emit(k, {a, b}, {}, shape, dt); };
  auto shr = [&](GValue a, uint32_t s) -> Result<GValue> {
    return bin(OpKind::shift_right_logical, a, MESHPLAN_TRY(word_constant(l, s, rank, dt)));
  };
  auto mask = [&](GValue a, uint32_t m) -> Result<GValue> {
    return bin(OpKind::bitwise_and, a, MESHPLAN_TRY(word_constant(l, m, rank, dt)));
  };
  // x - ((x >> 1) & 0x55555555): 2-bit counts.
  GValue v = MESHPLAN_TRY(
      bin(OpKind::subtract, x, MESHPLAN_TRY(mask(MESHPLAN_TRY(shr(x, 1)), 0x55555555u))));
  // (v & 0x33333333) + ((v >> 2) & 0x33333333): 4-bit counts.
  v = MESHPLAN_TRY(bin(OpKind::add, MESHPLAN_TRY(mask(v, 0x33333333u)),
                       MESHPLAN_TRY(mask(MESHPLAN_TRY(shr(v, 2)), 0x33333333u))));
  // (v + (v >> 4)) & 0x0f0f0f0f: byte counts.
  v = MESHPLAN_TRY(mask(MESHPLAN_TRY(bin(OpKind::add, v, MESHPLAN_TRY(shr(v, 4)))), 0x0f0f0f0fu));
  v = MESHPLAN_TRY(bin(OpKind::add, v, MESHPLAN_TRY(shr(v, 8))));
  v = MESHPLAN_TRY(bin(OpKind::add, v, MESHPLAN_TRY(shr(v, 16))));
  return mask(v, 0x3fu);
}

/// stablehlo.bitcast_convert between element types of one width, on the words they are stored
/// in: f32, i32 and ui32 are those words; i8/ui8 and i16/ui16 live sign- / zero-extended in
/// 32-bit words, so reading one as the other masks to the width or sign-extends from it; bf16's
/// bits are the upper half of its f32 value's word. Types computed in a device dtype of another
/// width (f16, f64, i64) do not hold their bits, and are refused.
Status lower_bitcast_convert(Lowering& l, const Op& op) {
  const TensorType& xt = l.type(op.operands[0]);
  const TensorType& rt = l.type(op.results[0]);
  const std::string &from = xt.element, &to = rt.element;
  if (from == to && xt.shape == rt.shape) {  // the same bits: the value itself
    l.bind(op.results[0], MESHPLAN_TRY(l.use(op.operands[0], op)));
    return {};
  }
  auto word = [](const std::string& e) { return e == "f32" || e == "i32" || e == "ui32"; };
  auto pair = [&](std::string_view a, std::string_view b) {
    return (from == a && to == b) || (from == b && to == a);
  };
  const bool narrow_ints = pair("i8", "ui8") || pair("i16", "ui16");
  const bool from_bf16 = from == "bf16" && (to == "ui16" || to == "i16");
  const bool to_bf16 = to == "bf16" && (from == "ui16" || from == "i16");
  if (rt.shape != xt.shape || !((word(from) && word(to)) || narrow_ints || from_bf16 || to_bf16))
    return l.unimplemented(
        op, str("stablehlo.bitcast_convert from ", from, " to ", to,
                " (supported between f32, i32 and ui32, between i8 and ui8, between i16 and "
                "ui16, and between bf16 and i16 or ui16, of one shape)"));
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  DType dt = MESHPLAN_TRY(dtype_of(rt, op.loc));
  const std::vector<int64_t>& shape = rt.shape;
  auto cast = [&](OpKind k, GValue v, DType d) {
    return l.emit(k, {v}, {{"dtype", std::string(device::dtype_name(d))}}, shape, d);
  };
  auto shift = [&](OpKind k, GValue v, uint32_t s) -> Result<GValue> {
    return l.emit(k, {v, MESHPLAN_TRY(word_constant(l, s, shape.size(), dt))}, {}, shape, dt);
  };
  if (word(from)) {
    MESHPLAN_TRY(
        l.emit_for(op, OpKind::bitcast, {x}, {{"dtype", std::string(device::dtype_name(dt))}}));
    return {};
  }
  if (to_bf16) {
    // The 16 bits as the upper half of an f32 word, whose value bf16 holds exactly.
    DType wt = MESHPLAN_TRY(dtype_of(xt, op.loc));
    GValue w = MESHPLAN_TRY(l.emit(OpKind::shift_left,
                                   {x, MESHPLAN_TRY(word_constant(l, 16, shape.size(), wt))}, {},
                                   shape, wt));
    MESHPLAN_TRY(l.emit_for(op, OpKind::typecast,
                            {MESHPLAN_TRY(cast(OpKind::bitcast, w, DType::f32))},
                            {{"dtype", std::string(device::dtype_name(DType::bf16))}}));
    return {};
  }
  GValue r;
  if (from_bf16) {
    // bf16 -> f32 is exact; the f32 word's upper half is the bf16 value's bits, shifted down
    // logically (ui16, zero-extended) or arithmetically (i16, sign-extended).
    GValue w = MESHPLAN_TRY(
        cast(OpKind::bitcast, MESHPLAN_TRY(cast(OpKind::typecast, x, DType::f32)), dt));
    r = MESHPLAN_TRY(
        shift(to == "i16" ? OpKind::shift_right_arithmetic : OpKind::shift_right_logical, w, 16));
  } else {
    const uint32_t bits = from.ends_with("8") ? 8 : 16;
    GValue w = MESHPLAN_TRY(cast(OpKind::bitcast, x, dt));
    if (to.starts_with("ui"))  // signed -> unsigned: the low bits, zero-extended
      r = MESHPLAN_TRY(l.emit(
          OpKind::bitwise_and,
          {w, MESHPLAN_TRY(word_constant(l, (1u << bits) - 1, shape.size(), dt))}, {}, shape, dt));
    else  // unsigned -> signed: the low bits, sign-extended
      r = MESHPLAN_TRY(shift(OpKind::shift_right_arithmetic,
                             MESHPLAN_TRY(shift(OpKind::shift_left, w, 32 - bits)), 32 - bits));
  }
  l.bind(op.results[0], r);
  return {};
}

bool is_32bit_word(const std::string& e) {
  return e == "i32" || e == "ui32";
}

}  // namespace

/// The constant's values as read (doubles hold every 32-bit integer exactly).
std::vector<double> constant_values(const Lowering& l, const Op& op) {
  const Attr* a = op.prop("value");
  std::vector<double> out;
  if (!a || a->values.empty()) return out;
  size_t n = static_cast<size_t>(device::volume(l.type(op.results[0]).shape));
  for (size_t i = 0; i < n; ++i)
    out.push_back(a->values.size() == 1 ? a->values[0] : a->values.at(i));
  return out;
}

bool needs_word_constant(const Lowering& l, const Op& op) {
  const std::string& e = l.type(op.results[0]).element;
  bool is_uint = e.starts_with("ui"), is_int = (e.starts_with("i") && e != "i1") || is_uint;
  if (!is_int) return false;
  double top = is_uint ? 4294967295.0 : 2147483647.0;
  for (double v : constant_values(l, op))
    if (static_cast<double>(static_cast<float>(v)) != v && v != top) return true;
  return false;
}

Status lower_word_constant(Lowering& l, const Op& op) {
  const TensorType& t = l.type(op.results[0]);
  DType dt = MESHPLAN_TRY(dtype_of(t, op.loc));
  Folded hi{t.shape, {}}, lo{t.shape, {}};
  for (double v : constant_values(l, op)) {
    // Range-checked by fold_constant: the word of v in two's complement.
    uint32_t w = v < 0 ? static_cast<uint32_t>(static_cast<int32_t>(v)) : static_cast<uint32_t>(v);
    hi.data.push_back(static_cast<float>(w >> 16));
    lo.data.push_back(static_cast<float>(w & 0xffffu));
  }
  GValue h = MESHPLAN_TRY(l.constant(hi, dt));
  GValue sh = MESHPLAN_TRY(l.emit(OpKind::shift_left,
                                  {h, MESHPLAN_TRY(word_constant(l, 16, t.shape.size(), dt))}, {},
                                  t.shape, dt));
  l.bind(op.results[0],
         MESHPLAN_TRY(
             l.emit(OpKind::bitwise_or, {sh, MESHPLAN_TRY(l.constant(lo, dt))}, {}, t.shape, dt)));
  return {};
}

bool is_integer_bit_op(std::string_view n) {
  for (std::string_view k :
       {"stablehlo.and", "stablehlo.or", "stablehlo.xor", "stablehlo.not", "stablehlo.shift_left",
        "stablehlo.shift_right_arithmetic", "stablehlo.shift_right_logical", "stablehlo.popcnt",
        "stablehlo.count_leading_zeros", "stablehlo.bitcast_convert"})
    if (n == k) return true;
  return false;
}

Status lower_integer_bit_op(Lowering& l, const Op& op) {
  const std::string& n = op.name;
  const TensorType& rt = l.type(op.results[0]);
  if (op.operands.empty() || op.results.size() != 1)
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", n,
                " takes operands and one result");
  const TensorType& xt = l.type(op.operands[0]);
  if (n == "stablehlo.bitcast_convert") return lower_bitcast_convert(l, op);
  if ((n == "stablehlo.and" || n == "stablehlo.or" || n == "stablehlo.xor" ||
       n == "stablehlo.not") &&
      rt.element == "i1")
    return lower_logical(l, op);
  // The device computes integers in 32-bit words. i8, i16, ui8 and ui16 live there sign- or
  // zero-extended (wrap_narrow brings every result back to that form), and act at their own
  // width as below; i64 and ui64 would not shift or count at theirs.
  const auto narrow = narrow_range(xt.element);
  if ((xt.element == "i64" || xt.element == "ui64") && rt.element == xt.element)
    return lower_wide_bit_op(l, op);  // stablehlo_lower_wide_bits.cpp
  if ((!is_32bit_word(xt.element) && !narrow) || rt.element != xt.element)
    return l.unimplemented(op, str(n, " on ", xt.element,
                                   " (the integer bit ops run on i8, i16, i32, ui8, ui16, ui32)"));
  DType dt = MESHPLAN_TRY(dtype_of(rt, op.loc));
  const std::vector<int64_t>& shape = rt.shape;
  const bool is_signed = !xt.element.starts_with("ui");
  const int bits =
      narrow
          ? static_cast<int>(std::bit_width(static_cast<uint64_t>(narrow->second - narrow->first)))
          : 32;
  // The narrow value's own bits (zero-extended), and those bits read as signed (sign-extended).
  auto own_bits = [&](GValue x) -> Result<GValue> {
    if (bits == 32 || !is_signed) return x;
    return l.emit(OpKind::bitwise_and,
                  {x, MESHPLAN_TRY(word_constant(l, (1u << bits) - 1, shape.size(), dt))}, {},
                  shape, dt);
  };
  auto sign_extended = [&](GValue x) -> Result<GValue> {
    if (bits == 32 || is_signed) return x;
    GValue s = MESHPLAN_TRY(word_constant(l, static_cast<uint32_t>(32 - bits), shape.size(), dt));
    x = MESHPLAN_TRY(l.emit(OpKind::shift_left, {x, s}, {}, shape, dt));
    return l.emit(OpKind::shift_right_arithmetic, {x, s}, {}, shape, dt);
  };
  if (n == "stablehlo.popcnt" || n == "stablehlo.count_leading_zeros") {
    GValue x = MESHPLAN_TRY(own_bits(MESHPLAN_TRY(l.use(op.operands[0], op))));
    if (n == "stablehlo.count_leading_zeros") {
      // Smear the highest set bit into every lower bit; the zeros left are the leading ones.
      for (uint32_t s : {1u, 2u, 4u, 8u, 16u}) {
        GValue sh = MESHPLAN_TRY(l.emit(OpKind::shift_right_logical,
                                        {x, MESHPLAN_TRY(word_constant(l, s, shape.size(), dt))},
                                        {}, shape, dt));
        x = MESHPLAN_TRY(l.emit(OpKind::bitwise_or, {x, sh}, {}, shape, dt));
      }
      x = MESHPLAN_TRY(l.emit(OpKind::bitwise_not, {x}, {}, shape, dt));
    }
    GValue count = MESHPLAN_TRY(popcount(l, x, shape, dt));
    if (n == "stablehlo.count_leading_zeros" && bits < 32)  // the word's extra zeros
      count = MESHPLAN_TRY(l.emit(
          OpKind::subtract,
          {count,
           MESHPLAN_TRY(word_constant(l, static_cast<uint32_t>(32 - bits), shape.size(), dt))},
          {}, shape, dt));
    l.bind(op.results[0], count);
    return {};
  }
  OpKind kind = *device::op_from_stablehlo(n);
  if (op.operands.size() == 1) {
    MESHPLAN_TRY(l.emit_for(op, kind, {MESHPLAN_TRY(l.use(op.operands[0], op))}));
    return {};
  }
  if (op.operands.size() != 2)
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", n, " takes two operands");
  GValue a = MESHPLAN_TRY(l.use_broadcasting(op.operands[0], op));
  GValue b = MESHPLAN_TRY(l.use_broadcasting(op.operands[1], op));
  auto bs = device::broadcast_shapes(l.graph().values[a].shape, l.graph().values[b].shape);
  if (!bs || *bs != shape || bits < 32) {
    a = MESHPLAN_TRY(l.use(op.operands[0], op));
    b = MESHPLAN_TRY(l.use(op.operands[1], op));
  }
  // Shifts at the narrow width: a logical shift moves the value's own bits, an arithmetic one
  // fills with its sign bit; amounts of the width or more leave 0 (or the sign fill) as in the
  // 32-bit word, and wrap_narrow takes the result back to the narrow type.
  if (n == "stablehlo.shift_right_logical") a = MESHPLAN_TRY(own_bits(a));
  if (n == "stablehlo.shift_right_arithmetic") a = MESHPLAN_TRY(sign_extended(a));
  MESHPLAN_TRY(l.emit_for(op, kind, {a, b}));
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
