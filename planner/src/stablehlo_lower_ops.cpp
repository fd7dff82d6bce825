// Lowering of the structured StableHLO ops: dot_general -> (permute/reshape) matmul,
// reduce -> reduce_sum / reduce_max / reduce_min / reduce_prod, convolution -> (permutes around)
// conv2d, and stablehlo.custom_call @meshplan.* -> the meshplan op of that name with its
// attributes.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>

#include "meshplan/device/op_semantics.hpp"
#include "meshplan_custom_call.hpp"
#include "stablehlo_lower_internal.hpp"

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
  if (out.empty()) return l.unimplemented(op, "stablehlo.dot_general with a rank-0 result");
  l.bind(op.results[0], MESHPLAN_TRY(l.reshape(r, out)));
  return {};
}

Status lower_reduce(Lowering& l, const Op& op) {
  if (op.operands.size() > 2) return lower_arg_reduce(l, op);
  if (op.operands.size() != 2 || op.results.size() != 1 || op.regions.size() != 1)
    return l.unimplemented(op, "stablehlo.reduce of more than one input");
  const Module& m = l.module();
  const Block& region = op.regions[0];
  const Op* body = region.ops.empty() ? nullptr : &m.ops[region.ops[0]];
  bool simple = body && region.ops.size() == 2 && region.args.size() == 2 &&
                body->operands.size() == 2 && m.ops[region.ops[1]].operands.size() == 1 &&
                m.ops[region.ops[1]].operands[0] == body->results[0] &&
                ((body->operands[0] == region.args[0] && body->operands[1] == region.args[1]) ||
                 (body->operands[0] == region.args[1] && body->operands[1] == region.args[0]));
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
    if (simple && body->name == k.body) kind = &k;
  if (!kind)
    return l.unimplemented(
        op, str("stablehlo.reduce with a ", body ? body->name : std::string("missing"),
                " region (only add, maximum, minimum and multiply lower)"));
  const Folded* init = l.folded(op.operands[1]);
  if (!init || init->data.size() != 1)
    return l.unimplemented(op, "stablehlo.reduce whose init value is not a constant");
  const auto& dims = ints(op, "dimensions");
  if (!dims_ok(dims, l.type(op.operands[0]).shape.size()))
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.reduce: dimensions are not distinct dims of its operand");
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  const auto& out = l.type(op.results[0]).shape;
  float v = init->data.front();
  GValue r = x;
  if (dims.empty()) {
    l.bind(op.results[0], x);
  } else {
    r = MESHPLAN_TRY(l.emit_for(op, kind->reduce, {x}, {{"dims", dims}}));
  }
  // The largest finite value is the identity of min (and the lowest of max) for f32 inputs.
  bool identity =
      v == kind->identity ||
      (kind->reduce == OpKind::reduce_max && v == std::numeric_limits<float>::lowest()) ||
      (kind->reduce == OpKind::reduce_min && v == std::numeric_limits<float>::max());
  if (!identity) {
    // A non-identity init joins the result once.
    DType dt = MESHPLAN_TRY(dtype_of(l.type(op.results[0]), op.loc));
    GValue c = MESHPLAN_TRY(l.constant(Folded{{1}, {v}}, dt));
    GValue j = MESHPLAN_TRY(l.emit(kind->join, {r, c}, {}, out, dt));
    l.bind(op.results[0], j);
  }
  return {};
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

Result<ConvSpec> conv_spec(const Op& op) {
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
    return bad("stablehlo.convolution that is not 2-D (conv2d only)");
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
  if (lhs_dil != std::vector<int64_t>{1, 1})
    return bad("stablehlo.convolution with lhs_dilate (a transposed convolution)");
  if (std::any_of(reverse.begin(), reverse.end(), [](int64_t x) { return x != 0; }))
    return bad("stablehlo.convolution with a reversed window");
  if (std::any_of(c.pad.begin(), c.pad.end(), [](int64_t x) { return x < 0; }))
    return bad("stablehlo.convolution with negative padding");
  if (const Attr* a = any_attr(op, "feature_group_count")) c.groups = a->i;
  if (const Attr* a = any_attr(op, "batch_group_count"); a && a->i != 1)
    return bad("stablehlo.convolution with batch_group_count > 1");
  if (c.groups < 1) return bad("stablehlo.convolution with feature_group_count < 1");
  return c;
}

Status lower_convolution(Lowering& l, const Op& op) {
  ConvSpec c = MESHPLAN_TRY(conv_spec(op));
  if (l.type(op.operands[0]).shape.size() != 4 || l.type(op.operands[1]).shape.size() != 4 ||
      l.type(op.results[0]).shape.size() != 4)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.convolution: 2-D dim_numbers on operands that are not rank 4");
  GValue x = MESHPLAN_TRY(l.permute(MESHPLAN_TRY(l.use(op.operands[0], op)), c.in_perm));
  GValue w = MESHPLAN_TRY(l.permute(MESHPLAN_TRY(l.use(op.operands[1], op)), c.w_perm));
  const auto& out = l.type(op.results[0]).shape;
  std::vector<int64_t> nhwc(4);
  for (size_t d = 0; d < 4; ++d) nhwc[static_cast<size_t>(c.out_perm[d])] = out[d];
  DType dt = MESHPLAN_TRY(dtype_of(l.type(op.results[0]), op.loc));
  std::vector<Attribute> attrs = {
      {"stride", c.stride}, {"padding", c.pad}, {"dilation", c.dilation}};
  if (c.groups != 1) attrs.push_back({"groups", c.groups});
  GValue r = MESHPLAN_TRY(l.emit(OpKind::conv2d, {x, w}, attrs, nhwc, dt));
  l.bind(op.results[0], MESHPLAN_TRY(l.permute(r, c.out_perm)));
  return {};
}

Status lower_custom_call(Lowering& l, const Op& op) {
  planner::Op call = MESHPLAN_TRY(meshplan_call_op(op));
  std::vector<GValue> operands;
  for (ValueId v : op.operands) operands.push_back(MESHPLAN_TRY(l.use(v, op)));
  MESHPLAN_TRY(l.emit_for(op, call.kind, operands, std::move(call.attributes)));
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
