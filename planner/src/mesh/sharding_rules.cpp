// Per-op factor rules (einsum-like: "m k, k n -> m n") and the axis arithmetic they need.
#include "meshplan/planner/sharding.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <numeric>
#include <sstream>

#include "import/meshplan_custom_call.hpp"
#include "import/stablehlo_gather.hpp"
#include "import/stablehlo_ops.hpp"
#include "mesh/sharding_rules_shardy.hpp"

namespace meshplan::planner::shlo {

namespace {

bool in(std::string_view s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

class RuleBuilder {
 public:
  int factor(int64_t size, bool need_replication = false) {
    r.factor_sizes.push_back(size);
    r.reduction.push_back(false);
    r.need_replication.push_back(need_replication);
    return static_cast<int>(r.factor_sizes.size() - 1);
  }
  FactorRule r;
};

std::string_view short_name(const Op& op) {
  std::string_view n = op.name;
  if (n.starts_with("stablehlo.")) n.remove_prefix(10);
  return n;
}

const std::vector<int64_t>& shape_of(const Module& m, ValueId v) {
  return m.values[v].type.shape;
}

/// A factor name of an `#sdy.op_sharding_rule`: one letter, maybe `_N` (`z_1`).
std::string factor_name(std::string_view t, size_t& i) {
  std::string name(1, t[i++]);
  if (i < t.size() && t[i] == '_') {
    name += t[i++];
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) name += t[i++];
  }
  return name;
}

/// The rule an op states in `sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [j])->([i])
/// {i=8, j=4}, reduction={j}, ...>` (sdy_dialect.md, OpShardingRuleAttr): factors are named by
/// letters in the order of their sizes; need_replication, permutation and blocked factors are
/// never sharded here.
Result<FactorRule> stated_rule(const Op& op, const Attr& a) {
  std::string t =
      a.kind == Attr::Kind::opaque || a.kind == Attr::Kind::string ? a.text : attr_string(a);
  auto bad = [&](std::string_view why) {
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": sdy.sharding_rule of '", op.name,
                "': ", why);
  };
  size_t i = t.find('(');
  if (i == std::string::npos) return bad("no '(' opening the operand factors");
  std::vector<std::vector<std::vector<std::string>>> sides[2];
  for (int side = 0; side < 2; ++side) {
    if (side == 1) {
      i = t.find("->", i);
      if (i == std::string::npos || (i = t.find('(', i)) == std::string::npos)
        return bad("no '->(' before the result factors");
    }
    ++i;  // past '('
    std::vector<std::vector<std::vector<std::string>>> tensors;
    while (i < t.size() && t[i] != ')') {
      if (t[i] == '[') {
        std::vector<std::vector<std::string>> dims;
        ++i;
        std::vector<std::string> dim;
        bool any = false;
        while (i < t.size() && t[i] != ']') {
          if (t[i] == ',') {
            dims.push_back(std::move(dim));
            dim.clear();
            ++i;
          } else if (std::isalpha(static_cast<unsigned char>(t[i]))) {
            dim.push_back(factor_name(t, i));
            any = true;
          } else {
            ++i;
          }
        }
        if (any || !dims.empty()) dims.push_back(std::move(dim));
        tensors.push_back(std::move(dims));
      }
      ++i;
    }
    sides[side] = std::move(tensors);
  }
  size_t brace = t.find('{', i);
  if (brace == std::string::npos) return bad("no '{' listing the factor sizes");
  size_t close = t.find('}', brace);
  std::vector<std::string> names;
  RuleBuilder b;
  for (size_t k = brace + 1; k < close;) {
    if (!std::isalpha(static_cast<unsigned char>(t[k]))) {
      ++k;
      continue;
    }
    std::string name = factor_name(t, k);
    size_t eq = t.find('=', k);
    if (eq == std::string::npos || eq > close) return bad("a factor size without '='");
    k = eq + 1;
    int64_t size = 0;
    while (k < close && std::isdigit(static_cast<unsigned char>(t[k])))
      size = size * 10 + (t[k++] - '0');
    names.push_back(name);
    b.factor(size);
  }
  auto index = [&](const std::string& n) -> int {
    auto it = std::find(names.begin(), names.end(), n);
    return it == names.end() ? -1 : static_cast<int>(it - names.begin());
  };
  for (std::string_view kind : {"reduction", "need_replication", "permutation", "blocked"}) {
    size_t at = t.find(std::string(kind), close);
    if (at == std::string::npos) continue;
    size_t ob = t.find('{', at), cb = t.find('}', at);
    for (size_t k = ob + 1; ob != std::string::npos && k < cb;) {
      if (!std::isalpha(static_cast<unsigned char>(t[k]))) {
        ++k;
        continue;
      }
      int f = index(factor_name(t, k));
      if (f < 0) return bad("an unknown factor in " + std::string(kind));
      if (kind == "reduction")
        b.r.reduction[static_cast<size_t>(f)] = true;
      else
        b.r.need_replication[static_cast<size_t>(f)] = true;
    }
  }
  for (int side = 0; side < 2; ++side)
    for (const auto& tensor : sides[side]) {
      std::vector<std::vector<int>> dims;
      for (const auto& dim : tensor) {
        std::vector<int> fs;
        for (const std::string& n : dim) {
          int f = index(n);
          if (f < 0) return bad("factor '" + n + "' has no size");
          fs.push_back(f);
        }
        dims.push_back(std::move(fs));
      }
      (side == 0 ? b.r.operands : b.r.results).push_back(std::move(dims));
    }
  if (b.r.operands.size() != op.operands.size() || b.r.results.size() != op.results.size())
    return bad("it lists a different number of operands or results than the op has");
  return b.r;
}

/// Every tensor gets one factor per dim shared with all others (same shapes).
FactorRule elementwise(const Module& m, const Op& op) {
  RuleBuilder b;
  const std::vector<int64_t>& shape =
      shape_of(m, op.results.empty() ? op.operands[0] : op.results[0]);
  std::vector<std::vector<int>> dims;
  for (int64_t d : shape) dims.push_back({b.factor(d)});
  for (ValueId v : op.operands)
    b.r.operands.push_back(shape_of(m, v).size() == shape.size()
                               ? dims
                               : std::vector<std::vector<int>>(shape_of(m, v).size()));
  for (size_t i = 0; i < op.results.size(); ++i) b.r.results.push_back(dims);
  b.r.pass_through = true;
  return b.r;
}

/// chlo.top_k: like a sort along the last dim (which needs replication; the result's k-sized
/// last dim is a factor of its own), the other dims pass through to both results.
FactorRule top_k_rule(const Module& m, const Op& op) {
  RuleBuilder b;
  const std::vector<int64_t>& in_shape = shape_of(m, op.operands[0]);
  std::vector<std::vector<int>> in_d, out_d;
  for (size_t d = 0; d + 1 < in_shape.size(); ++d) in_d.push_back({b.factor(in_shape[d])});
  out_d = in_d;
  if (!in_shape.empty()) {
    in_d.push_back({b.factor(in_shape.back(), true)});
    const std::vector<int64_t>& out_shape = shape_of(m, op.results[0]);
    out_d.push_back({b.factor(out_shape.empty() ? 1 : out_shape.back(), true)});
  }
  b.r.operands.push_back(in_d);
  for (size_t i = 0; i < op.results.size(); ++i) b.r.results.push_back(out_d);
  return b.r;
}

/// Separate factors for every tensor: nothing propagates through the op.
FactorRule opaque(const Module& m, const Op& op, bool need_replication) {
  RuleBuilder b;
  for (ValueId v : op.operands) {
    std::vector<std::vector<int>> dims;
    for (int64_t d : shape_of(m, v)) dims.push_back({b.factor(d, need_replication)});
    b.r.operands.push_back(dims);
  }
  for (ValueId v : op.results) {
    std::vector<std::vector<int>> dims;
    for (int64_t d : shape_of(m, v)) dims.push_back({b.factor(d, need_replication)});
    b.r.results.push_back(dims);
  }
  return b.r;
}

/// gather: the batch dims of the start indices pass through to the result's batch dims (each
/// device gathers for its own rows); the operand, the index vector, batching and offset dims
/// need replication (the lowered program addresses the whole operand).
Result<FactorRule> gather_rule(const Module& m, const Op& op) {
  GatherDims g = MESHPLAN_TRY(read_gather_dims(op));
  RuleBuilder b;
  const auto& os = shape_of(m, op.operands[0]);
  const auto& is = shape_of(m, op.operands[1]);
  const auto& out = shape_of(m, op.results[0]);
  auto has = [](const std::vector<int64_t>& v, size_t d) {
    return std::find(v.begin(), v.end(), static_cast<int64_t>(d)) != v.end();
  };
  std::vector<std::vector<int>> o(os.size()), i(is.size()), r(out.size());
  for (size_t d = 0; d < os.size(); ++d) o[d] = {b.factor(os[d], true)};
  std::vector<size_t> batch_dims;  // result dims not in offset_dims, in order
  for (size_t d = 0; d < out.size(); ++d)
    if (!has(g.offset_dims, d)) batch_dims.push_back(d);
  size_t k = 0;
  for (size_t d = 0; d < is.size(); ++d) {
    if (static_cast<int64_t>(d) == g.index_vector_dim) {
      i[d] = {b.factor(is[d], true)};
      continue;
    }
    size_t rd = k < batch_dims.size() ? batch_dims[k] : out.size();
    ++k;
    if (has(g.start_indices_batching_dims, d) || rd >= out.size() || out[rd] != is[d]) {
      i[d] = {b.factor(is[d], true)};
      continue;
    }
    i[d] = r[rd] = {b.factor(is[d])};
  }
  for (size_t d = 0; d < out.size(); ++d)
    if (r[d].empty()) r[d] = {b.factor(out[d], true)};
  b.r.operands = {o, i};
  b.r.results = {r};
  return b.r;
}

Result<FactorRule> reshape_rule(const Module& m, const Op& op) {
  RuleBuilder b;
  const auto& in_shape = shape_of(m, op.operands[0]);
  const auto& out_shape = shape_of(m, op.results[0]);
  // A reshape from or to an empty tensor relates no dims: both sides replicated.
  if (std::ranges::find(in_shape, 0) != in_shape.end() ||
      std::ranges::find(out_shape, 0) != out_shape.end())
    return opaque(m, op, true);
  std::vector<std::vector<int>> in_dims(in_shape.size()), out_dims(out_shape.size());
  size_t i = 0, o = 0;
  int64_t ri = i < in_shape.size() ? in_shape[0] : 1, ro = o < out_shape.size() ? out_shape[0] : 1;
  // Walk both shapes, splitting sizes by their gcd: each common piece is one factor.
  while (i < in_shape.size() || o < out_shape.size()) {
    if (i < in_shape.size() && ri == 1 && in_shape[i] == 1) {
      in_dims[i].push_back(b.factor(1));
      if (++i < in_shape.size()) ri = in_shape[i];
      continue;
    }
    if (o < out_shape.size() && ro == 1 && out_shape[o] == 1) {
      out_dims[o].push_back(b.factor(1));
      if (++o < out_shape.size()) ro = out_shape[o];
      continue;
    }
    if (i >= in_shape.size() || o >= out_shape.size()) break;
    int64_t g = std::gcd(ri, ro);
    if (g == 1) {
      // Sizes that share no factor (e.g. 6 -> 4x... ): the rest must stay replicated.
      for (; i < in_shape.size(); ++i) in_dims[i].push_back(b.factor(in_shape[i], true));
      for (; o < out_shape.size(); ++o) out_dims[o].push_back(b.factor(out_shape[o], true));
      break;
    }
    int f = b.factor(g);
    in_dims[i].push_back(f);
    out_dims[o].push_back(f);
    ri /= g;
    ro /= g;
    if (ri == 1 && ++i < in_shape.size()) ri = in_shape[i];
    if (ro == 1 && ++o < out_shape.size()) ro = out_shape[o];
  }
  b.r.operands.push_back(in_dims);
  b.r.results.push_back(out_dims);
  b.r.pass_through = true;
  return b.r;
}

Result<std::vector<int64_t>> ints_prop(const Op& op, std::string_view name) {
  const Attr* a = op.prop(name);
  if (!a || a->kind != Attr::Kind::dense_array)
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name, " needs the attribute ",
                name);
  return a->ints;
}

}  // namespace

std::string FactorRule::print() const {
  // Factors are lettered in order of first appearance, operands first.
  std::vector<int> letter(factor_sizes.size(), -1);
  int next = 0;
  for (const auto* list : {&operands, &results})
    for (const auto& t : *list)
      for (const auto& dim : t)
        for (int f : dim)
          if (letter[static_cast<size_t>(f)] < 0) letter[static_cast<size_t>(f)] = next++;
  for (auto& l : letter)
    if (l < 0) l = next++;
  auto name = [&](int f) {
    return std::string(1, static_cast<char>('a' + letter[static_cast<size_t>(f)] % 26));
  };
  auto names = [&](const std::vector<std::vector<int>>& dims) {
    std::string s;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (d) s += " ";
      if (dims[d].size() != 1) s += "(";
      for (size_t k = 0; k < dims[d].size(); ++k) s += (k ? " " : "") + name(dims[d][k]);
      if (dims[d].size() != 1) s += ")";
    }
    return s;
  };
  std::string s;
  for (size_t i = 0; i < operands.size(); ++i) s += (i ? ", " : "") + names(operands[i]);
  s += " -> ";
  for (size_t i = 0; i < results.size(); ++i) s += (i ? ", " : "") + names(results[i]);
  std::vector<size_t> order(factor_sizes.size());
  for (size_t f = 0; f < order.size(); ++f) order[static_cast<size_t>(letter[f])] = f;
  s += " {";
  for (size_t i = 0; i < order.size(); ++i) {
    size_t f = order[i];
    s += str(i ? " " : "", name(static_cast<int>(f)), "=", factor_sizes[f]);
    if (reduction[f]) s += "(reduction)";
    if (need_replication[f]) s += "(need_replication)";
  }
  return s + "}";
}

Result<FactorRule> sharding_rule(const Module& m, const Op& op) {
  std::string_view n = short_name(op);
  const bool stablehlo = std::string_view(op.name).starts_with("stablehlo.");
  if (const Attr* stated = op.attr("sdy.sharding_rule")) return stated_rule(op, *stated);
  // Elementwise: the parser's and printer's op lists (one truth), plus convert/compare/select/
  // clamp (whose scalar bounds take no factors).
  // Also every op ops.def lowers one-to-one to a pointwise device op (chlo.erf, ...).
  std::optional<device::OpKind> direct = device::op_from_stablehlo(op.name);
  if ((stablehlo && (is_elementwise_unary(n) || is_elementwise_binary(n) ||
                     in(n, {"convert", "compare", "select", "clamp"}))) ||
      (direct && device::is_pointwise(*direct)) || is_chlo_decomposed(op.name) ||
      op.name == "stablehlo.reduce_precision" || op.name == "sdy.sharding_constraint" ||
      op.name == "sdy.reshard" || op.name == "sdy.propagation_barrier" ||
      op.name == "sdy.data_flow_edge" || op.name == "sdy.func_data_flow_edge")
    return elementwise(m, op);
  // An optimization barrier passes each operand through to its result.
  if (op.name == "stablehlo.optimization_barrier" && op.operands.size() == op.results.size()) {
    RuleBuilder b;
    for (ValueId v : op.operands) {
      std::vector<std::vector<int>> dims;
      for (int64_t d : shape_of(m, v)) dims.push_back({b.factor(d)});
      b.r.operands.push_back(dims);
      b.r.results.push_back(dims);
    }
    b.r.pass_through = true;
    return b.r;
  }
  // sdy.constant (Shardy's shardable constant): its result's dims are free factors.
  if (op.name == "sdy.constant") return elementwise(m, op);
  if (op.name == "chlo.top_k") return top_k_rule(m, op);
  if (!stablehlo)
    return fail(ErrorCode::unimplemented, op.loc.str(), ": no sharding rule for '", op.name, "'");
  if (n == "custom_call" && meshplan_call_kind(op)) return meshplan_call_rule(m, op);
  if (auto r = registry_rule(m, op)) return *r;
  RuleBuilder b;
  if (n == "reshape") return reshape_rule(m, op);
  if (n == "constant") {
    // Constants stay replicated: a sharded literal would need slicing per device.
    return opaque(m, op, true);
  }
  if (n == "iota") {
    const Attr* d = op.prop("iota_dimension");
    FactorRule r = opaque(m, op, false);
    if (d) r.need_replication[static_cast<size_t>(d->i)] = true;
    return r;
  }
  if (n == "broadcast_in_dim") {
    auto dims = MESHPLAN_TRY(ints_prop(op, "broadcast_dimensions"));
    const auto& in_shape = shape_of(m, op.operands[0]);
    const auto& out_shape = shape_of(m, op.results[0]);
    if (dims.size() != in_shape.size())
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": broadcast_in_dim: dims has ",
                  dims.size(), " entries for an operand of rank ", in_shape.size());
    std::vector<std::vector<int>> out(out_shape.size()), in_d(in_shape.size());
    for (size_t d = 0; d < out_shape.size(); ++d) out[d].push_back(b.factor(out_shape[d]));
    for (size_t d = 0; d < in_shape.size(); ++d) {
      size_t od = static_cast<size_t>(dims[d]);
      if (od >= out_shape.size())
        return fail(ErrorCode::invalid_argument, op.loc.str(), ": broadcast_in_dim: bad dim");
      if (in_shape[d] == out_shape[od])
        in_d[d] = out[od];
      else
        in_d[d].push_back(b.factor(in_shape[d], true));
    }
    b.r.operands.push_back(in_d);
    b.r.results.push_back(out);
    b.r.pass_through = true;
    return b.r;
  }
  if (n == "transpose") {
    auto perm = MESHPLAN_TRY(ints_prop(op, "permutation"));
    const auto& in_shape = shape_of(m, op.operands[0]);
    if (perm.size() != in_shape.size())
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": transpose: permutation has the wrong rank");
    std::vector<std::vector<int>> in_d(in_shape.size()), out(perm.size());
    for (size_t d = 0; d < in_shape.size(); ++d) in_d[d].push_back(b.factor(in_shape[d]));
    for (size_t d = 0; d < perm.size(); ++d) out[d] = in_d[static_cast<size_t>(perm[d])];
    b.r.operands.push_back(in_d);
    b.r.results.push_back(out);
    b.r.pass_through = true;
    return b.r;
  }
  if (n == "concatenate" || n == "slice") {
    // The concatenated / sliced dims need replication; the others pass through.
    FactorRule r = elementwise(m, op);
    const auto& out_shape = shape_of(m, op.results[0]);
    for (size_t d = 0; d < out_shape.size(); ++d) {
      bool changes = false;
      for (ValueId v : op.operands) changes |= shape_of(m, v)[d] != out_shape[d];
      if (n == "concatenate")
        changes |= op.prop("dimension") && static_cast<size_t>(op.prop("dimension")->i) == d;
      if (!changes) continue;
      int f = static_cast<int>(r.factor_sizes.size());
      r.factor_sizes.push_back(out_shape[d]);
      r.reduction.push_back(false);
      r.need_replication.push_back(true);
      r.need_replication[static_cast<size_t>(r.results[0][d][0])] = true;
      for (auto& operand : r.operands) operand[d] = {f};
    }
    r.pass_through = false;
    return r;
  }
  if (n == "dot_general") {
    auto lb = MESHPLAN_TRY(ints_prop(op, "lhs_batching_dimensions"));
    auto rb = MESHPLAN_TRY(ints_prop(op, "rhs_batching_dimensions"));
    auto lc = MESHPLAN_TRY(ints_prop(op, "lhs_contracting_dimensions"));
    auto rc = MESHPLAN_TRY(ints_prop(op, "rhs_contracting_dimensions"));
    const auto& ls = shape_of(m, op.operands[0]);
    const auto& rs = shape_of(m, op.operands[1]);
    if (lb.size() != rb.size() || lc.size() != rc.size())
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": dot_general: lhs and rhs dimension lists differ");
    std::vector<std::vector<int>> l(ls.size()), r(rs.size()), out;
    for (size_t i = 0; i < lb.size(); ++i) {
      int f = b.factor(ls[static_cast<size_t>(lb[i])]);
      l[static_cast<size_t>(lb[i])] = {f};
      r[static_cast<size_t>(rb[i])] = {f};
      out.push_back({f});
    }
    // Result factors before contracting ones, as propagation resolves factors in order.
    for (size_t d = 0; d < ls.size(); ++d)
      if (l[d].empty() && std::find(lc.begin(), lc.end(), static_cast<int64_t>(d)) == lc.end())
        out.push_back(l[d] = {b.factor(ls[d])});
    for (size_t d = 0; d < rs.size(); ++d)
      if (r[d].empty() && std::find(rc.begin(), rc.end(), static_cast<int64_t>(d)) == rc.end())
        out.push_back(r[d] = {b.factor(rs[d])});
    for (size_t i = 0; i < lc.size(); ++i) {
      int f = b.factor(ls[static_cast<size_t>(lc[i])]);
      b.r.reduction[static_cast<size_t>(f)] = true;
      l[static_cast<size_t>(lc[i])] = {f};
      r[static_cast<size_t>(rc[i])] = {f};
    }
    b.r.operands = {l, r};
    b.r.results = {out};
    return b.r;
  }
  if (n == "reduce_window" || n == "select_and_scatter") {
    // As Shardy's rule: a dim the window does not touch (size 1, stride 1, no padding or
    // dilation) is one factor of operand, source and result; a windowed dim has its own factor
    // per tensor, each needing replication. The init scalar has no dims.
    const auto& in_shape = shape_of(m, op.operands[0]);
    auto entry = [&](const char* name, size_t d, int64_t dflt) -> int64_t {
      const Attr* a = op.prop(name) ? op.prop(name) : op.attr(name);
      if (!a) return dflt;
      if (std::string_view(name) == "padding") {
        if (a->values.size() == 1) return static_cast<int64_t>(a->values[0]);
        return 2 * d + 1 < a->values.size()
                   ? static_cast<int64_t>(a->values[2 * d] != 0 || a->values[2 * d + 1] != 0)
                   : 1;
      }
      return d < a->ints.size() ? a->ints[d] : -1;
    };
    // Operands (N inputs, then N inits, for reduce_window; operand, source, init for
    // select_and_scatter) and results: the inits have no dims.
    const size_t ins = n == "reduce_window" ? op.operands.size() / 2 : 2;
    const size_t tensors = ins + op.results.size();
    std::vector<std::vector<std::vector<int>>> dims(tensors);
    for (size_t d = 0; d < in_shape.size(); ++d) {
      bool plain = entry("window_dimensions", d, -1) == 1 && entry("window_strides", d, 1) == 1 &&
                   entry("base_dilations", d, 1) == 1 && entry("window_dilations", d, 1) == 1 &&
                   entry("padding", d, 0) == 0;
      int shared = plain ? b.factor(in_shape[d]) : -1;
      for (size_t t = 0; t < tensors; ++t) {
        ValueId v = t < ins ? op.operands[t] : op.results[t - ins];
        const auto& sh = shape_of(m, v);
        dims[t].push_back({plain ? shared : b.factor(d < sh.size() ? sh[d] : 1, true)});
      }
    }
    for (size_t t = 0; t < ins; ++t) b.r.operands.push_back(dims[t]);
    while (b.r.operands.size() < op.operands.size()) b.r.operands.push_back({});  // inits
    for (size_t t = ins; t < tensors; ++t) b.r.results.push_back(dims[t]);
    return b.r;
  }
  // jnp.argmax's two-input reduce and edge padding: replicated (no factor is shared).
  if ((n == "reduce" && op.operands.size() > 2) || n == "pad") return opaque(m, op, true);
  if (n == "reduce") {
    auto dims = MESHPLAN_TRY(ints_prop(op, "dimensions"));
    const auto& in_shape = shape_of(m, op.operands[0]);
    std::string body;
    if (op.regions.size() == 1 && !op.regions[0].ops.empty())
      body = m.ops[op.regions[0].ops[0]].name;
    if (body == "stablehlo.add")
      b.r.reduction_kind = "sum";
    else if (body == "stablehlo.maximum")
      b.r.reduction_kind = "max";
    else if (body == "stablehlo.minimum")
      b.r.reduction_kind = "min";
    // No collective multiplies (or ands, ors, ...) partial results: the reduced dims of any
    // other reduction must be replicated.
    const bool other = !in(body, {"stablehlo.add", "stablehlo.maximum", "stablehlo.minimum"});
    std::vector<std::vector<int>> in_d(in_shape.size()), out;
    for (size_t d = 0; d < in_shape.size(); ++d) {
      bool reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
      int f = b.factor(in_shape[d], reduced && other);
      in_d[d] = {f};
      if (reduced)
        b.r.reduction[static_cast<size_t>(f)] = !other;
      else
        out.push_back({f});
    }
    b.r.operands = {in_d, {}};
    b.r.results = {out};
    return b.r;
  }
  if (n == "convolution") {
    // dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]
    const Attr* dn = op.prop("dim_numbers");
    if (!dn)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": convolution without dim_numbers");
    const Attr* groups = op.attr("feature_group_count");
    const Attr* bgroups = op.attr("batch_group_count");
    // Grouped (feature or batch groups): every dim replicated, with the reshards that needs.
    if ((groups && groups->i != 1) || (bgroups && bgroups->i != 1)) return opaque(m, op, true);
    std::vector<std::vector<std::string>> parts(3);
    size_t k = 0;
    std::string cur;
    for (char c : dn->text) {
      if (c == '[')
        cur.clear();
      else if (c == ',' || c == ']') {
        if (!cur.empty()) parts[k].push_back(cur);
        cur.clear();
        if (c == ']') k = std::min<size_t>(k + 1, 2);
      } else if (c != ' ' && c != 'x' && c != '-' && c != '>')
        cur += c;
    }
    const auto& ls = shape_of(m, op.operands[0]);
    const auto& rs = shape_of(m, op.operands[1]);
    const auto& os = shape_of(m, op.results[0]);
    if (parts[0].size() != ls.size() || parts[1].size() != rs.size() ||
        parts[2].size() != os.size())
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": cannot read convolution dim_numbers '", dn->text, "'");
    std::vector<std::vector<int>> l(ls.size()), r(rs.size()), o(os.size());
    auto find = [](const std::vector<std::string>& p, std::string_view s) {
      return static_cast<size_t>(std::find(p.begin(), p.end(), s) - p.begin());
    };
    int batch = b.factor(ls[find(parts[0], "b")]);
    int in_f = b.factor(ls[find(parts[0], "f")]);
    b.r.reduction[static_cast<size_t>(in_f)] = true;
    int out_f = b.factor(rs[find(parts[1], "o")]);
    l[find(parts[0], "b")] = {batch};
    o[find(parts[2], "b")] = {batch};
    l[find(parts[0], "f")] = {in_f};
    r[find(parts[1], "i")] = {in_f};
    r[find(parts[1], "o")] = {out_f};
    o[find(parts[2], "f")] = {out_f};
    for (size_t d = 0; d < ls.size(); ++d)
      if (l[d].empty()) l[d] = {b.factor(ls[d], true)};
    for (size_t d = 0; d < rs.size(); ++d)
      if (r[d].empty()) r[d] = {b.factor(rs[d], true)};
    for (size_t d = 0; d < os.size(); ++d)
      if (o[d].empty()) o[d] = {b.factor(os[d], true)};
    b.r.operands = {l, r};
    b.r.results = {o};
    return b.r;
  }
  if (in(n, {"all_gather", "all_reduce", "reduce_scatter", "all_to_all", "collective_permute"}))
    return opaque(m, op, false);
  if (n == "gather") return gather_rule(m, op);
  if (n == "sort") {
    // The sort dim needs replication (elements move along it); the others pass through.
    FactorRule r = elementwise(m, op);
    const Attr* d = op.prop("dimension");
    int64_t dim = d ? d->i : 0;
    if (dim < 0) dim += static_cast<int64_t>(r.results[0].size());
    if (dim >= 0 && static_cast<size_t>(dim) < r.results[0].size())
      r.need_replication[static_cast<size_t>(r.results[0][static_cast<size_t>(dim)][0])] = true;
    r.pass_through = false;
    return r;
  }
  if (n == "reverse") {
    // Reversed dims need replication (their elements change devices); the others pass through.
    FactorRule r = elementwise(m, op);
    auto dims = MESHPLAN_TRY(ints_prop(op, "dimensions"));
    for (int64_t d : dims)
      if (d >= 0 && static_cast<size_t>(d) < r.results[0].size())
        r.need_replication[static_cast<size_t>(r.results[0][static_cast<size_t>(d)][0])] = true;
    r.pass_through = false;
    return r;
  }
  // Start indices known only at run time address the whole operand: replicated.
  if (in(n, {"dynamic_slice", "dynamic_update_slice", "scatter"})) return opaque(m, op, true);
  return fail(ErrorCode::unimplemented, op.loc.str(), ": no sharding rule for '", op.name, "'");
}

int64_t AxisMath::size(const AxisRef& a) const {
  return a.size > 0 ? a.size : mesh.axis_size(a.name);
}

int64_t AxisMath::product(const std::vector<AxisRef>& axes) const {
  int64_t p = 1;
  for (const AxisRef& a : axes) p *= size(a);
  return p;
}

bool AxisMath::overlaps(const AxisRef& a, const AxisRef& b) const {
  if (a.name != b.name) return false;
  int64_t a0 = a.pre_size, a1 = a.pre_size * size(a);
  int64_t b0 = b.pre_size, b1 = b.pre_size * size(b);
  if (std::max(a0, b0) < std::min(a1, b1)) return true;
  // Sub-axes that cannot coexist count as sharing devices too: two sub-axes of one axis split
  // it consistently only when their bounds (pre-size, pre-size * size) divide each other in
  // order, e.g. "a":(1)2 and "a":(4)2 of "a"=8 (1 | 2 | 4 | 8), not "a":(1)2 and "a":(3)2 of
  // "a"=6 (2 does not divide 3): no device numbering has both.
  std::array<int64_t, 4> bounds = {a0, a1, b0, b1};
  std::sort(bounds.begin(), bounds.end());
  for (size_t i = 0; i + 1 < bounds.size(); ++i)
    if (bounds[i] <= 0 || bounds[i + 1] % bounds[i] != 0) return true;
  return false;
}

std::vector<AxisRef> AxisMath::normalize(std::vector<AxisRef> axes) const {
  std::vector<AxisRef> out;
  for (AxisRef a : axes) {
    if (a.size > 0 && a.pre_size == 1 && a.size == mesh.axis_size(a.name)) a.size = 0;
    if (!out.empty() && out.back().name == a.name && out.back().size > 0 && a.size > 0 &&
        out.back().pre_size * out.back().size == a.pre_size) {
      out.back().size *= a.size;
      if (out.back().pre_size == 1 && out.back().size == mesh.axis_size(a.name))
        out.back().size = 0;
      continue;
    }
    // A minor sub-axis followed by its major neighbour: "x":(2)2, "x":(1)2 keep both (order
    // matters); only the major-then-minor order merges.
    out.push_back(a);
  }
  return out;
}

std::vector<AxisRef> AxisMath::without_trivial(const std::vector<AxisRef>& axes) const {
  std::vector<AxisRef> out;
  for (const AxisRef& a : axes)
    if (size(a) > 1) out.push_back(a);
  return out;
}

std::vector<std::vector<AxisRef>> project(const AxisMath& math, const FactorRule& rule,
                                          const std::vector<std::vector<int>>& dims,
                                          const TensorSharding& s) {
  std::vector<std::vector<AxisRef>> out(rule.factor_sizes.size());
  for (size_t d = 0; d < dims.size() && d < s.dims.size(); ++d) {
    const auto& factors = dims[d];
    size_t fi = 0;
    int64_t cap = factors.empty() ? 1 : rule.factor_sizes[static_cast<size_t>(factors[0])];
    bool stop = false;
    for (AxisRef a : s.dims[d].axes) {
      int64_t rs = math.size(a);
      if (rs == 1) continue;
      if (a.size == 0) a.size = rs;  // as a sub-axis, so that it can be split
      while (rs > 1 && !stop) {
        if (fi >= factors.size()) {
          stop = true;
        } else if (cap == 1) {
          if (++fi < factors.size()) cap = rule.factor_sizes[static_cast<size_t>(factors[fi])];
        } else if (cap % rs == 0) {
          out[static_cast<size_t>(factors[fi])].push_back(a);
          cap /= rs;
          rs = 1;
        } else if (int64_t g = std::gcd(cap, rs); g > 1) {
          out[static_cast<size_t>(factors[fi])].push_back(AxisRef{a.name, a.pre_size, g});
          a = AxisRef{a.name, a.pre_size * g, rs / g};
          rs /= g;
          cap /= g;
        } else {
          stop = true;  // the major factor is not fully sharded: the rest is not expressible
        }
      }
      if (stop) break;
    }
  }
  for (auto& f : out) f = math.normalize(f);
  return out;
}

TensorSharding open_sharding(const std::string& mesh, size_t rank) {
  TensorSharding s;
  s.mesh = mesh;
  s.dims.resize(rank);
  for (auto& d : s.dims) d.open = true;
  return s;
}

TensorSharding replicated_sharding(const std::string& mesh, size_t rank) {
  TensorSharding s;
  s.mesh = mesh;
  s.dims.resize(rank);
  return s;
}

bool same_placement(const AxisMath& math, const TensorSharding& a, const TensorSharding& b) {
  if (a.dims.size() != b.dims.size()) return false;
  for (size_t d = 0; d < a.dims.size(); ++d)
    if (math.normalize(math.without_trivial(a.dims[d].axes)) !=
        math.normalize(math.without_trivial(b.dims[d].axes)))
      return false;
  return true;
}

}  // namespace meshplan::planner::shlo
