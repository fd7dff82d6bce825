// prepare_conv_weights: conv2d weight arguments rewritten to their prepared 2-D form.
#include "meshplan/planner/prepare_weights.hpp"

#include <algorithm>
#include <sstream>

#include "meshplan/device/conv_weights.hpp"

namespace meshplan::planner {

namespace {

/// Groups of a conv2d op (1 when absent or not an integer: validate() has rejected those).
int64_t groups_of(const Op& op) {
  const Attribute* a = op.attribute("groups");
  const int64_t* g = a ? std::get_if<int64_t>(&a->value) : nullptr;
  return g ? *g : 1;
}

}  // namespace

namespace {

/// Arguments used only as operand 1 (the weight) of conv2d ops with one groups value, rank 4 and
/// preparable, in argument order; `constants` selects constant arguments, else inputs and
/// parameters. A mesh graph's non-constant argument must be replicated (a constant is every
/// chip's tensor already).
std::vector<PreparedWeight> weight_candidates(const Graph& g, bool constants) {
  // Per value: -1 = not a candidate, 0 = no use seen yet, else groups of the uses so far.
  std::vector<int64_t> state(g.values.size(), -1);
  for (size_t i = 0; i < g.arguments.size(); ++i) {
    const Value& v = g.values[g.arguments[i]];
    bool kind_ok = constants ? v.kind == ArgKind::constant
                             : v.kind == ArgKind::input || v.kind == ArgKind::parameter;
    bool shard_ok = constants || g.mesh.single_chip() ||
                    (i < g.argument_shards.size() &&
                     g.argument_shards[i].type == device::MeshShardType::replicate);
    if (kind_ok && shard_ok && v.shape.size() == 4) state[g.arguments[i]] = 0;
  }
  for (ValueId out : g.outputs) state[out] = -1;
  for (const Op& op : g.ops)
    for (size_t k = 0; k < op.operands.size(); ++k) {
      int64_t& s = state[op.operands[k]];
      if (s < 0) continue;
      bool weight_use = op.kind == OpKind::conv2d && k == 1;
      int64_t groups = weight_use ? groups_of(op) : -1;
      s = (weight_use && (s == 0 || s == groups)) ? groups : -1;
    }
  std::vector<PreparedWeight> out;
  for (size_t i = 0; i < g.arguments.size(); ++i) {
    ValueId a = g.arguments[i];
    if (state[a] <= 0) continue;
    const Value& v = g.values[a];
    if (!device::prepared_conv_weight_shape(v.shape, state[a])) continue;
    out.push_back(PreparedWeight{a, i, v.shape, state[a]});
  }
  return out;
}

}  // namespace

std::vector<PreparedWeight> conv_weight_candidates(const Graph& g) {
  return weight_candidates(g, /*constants=*/false);
}

std::vector<PreparedWeight> conv_constant_candidates(const Graph& g) {
  return weight_candidates(g, /*constants=*/true);
}

Result<std::vector<PreparedWeight>> prepare_conv_weights(Graph& g) {
  std::vector<PreparedWeight> prepared = conv_weight_candidates(g);
  std::vector<PreparedWeight> constants = conv_constant_candidates(g);
  if (prepared.empty() && constants.empty()) return prepared;
  std::vector<const PreparedWeight*> by_value(g.values.size(), nullptr);
  for (const PreparedWeight& p : prepared) by_value[p.value] = &p;
  for (const PreparedWeight& p : constants) by_value[p.value] = &p;
  for (Op& op : g.ops) {
    if (op.kind != OpKind::conv2d || op.operands.size() < 2 || !by_value[op.operands[1]]) continue;
    const std::vector<int64_t>& host = by_value[op.operands[1]]->host_shape;
    Attribute kernel{"kernel", std::vector<int64_t>{host[1], host[2]}};
    auto it = std::lower_bound(op.attributes.begin(), op.attributes.end(), kernel.name,
                               [](const Attribute& a, const std::string& n) { return a.name < n; });
    if (it != op.attributes.end() && it->name == kernel.name)
      it->value = kernel.value;
    else
      op.attributes.insert(it, std::move(kernel));
  }
  for (const PreparedWeight& p : prepared)
    g.values[p.value].shape =
        MESHPLAN_TRY(device::prepared_conv_weight_shape(p.host_shape, p.groups));
  // Constants are prepared here, once: the plan carries their prepared values.
  for (const PreparedWeight& p : constants) {
    Value& v = g.values[p.value];
    v.data =
        MESHPLAN_TRY(device::prepare_conv_weight(device::HostView{p.host_shape, v.data}, p.groups));
    v.shape = MESHPLAN_TRY(device::prepared_conv_weight_shape(p.host_shape, p.groups));
  }
  MESHPLAN_TRY(validate(g));
  return prepared;
}

Result<device::DType> parse_weight_dtype(std::string_view text) {
  if (text == "bf16") return device::DType::bf16;
  if (text == "bfp8_b" || text == "bf8b") return device::DType::bf8b;
  if (text == "bfp4_b" || text == "bf4b") return device::DType::bf4b;
  return fail(ErrorCode::invalid_argument, "weight dtype '", text,
              "' (expected bf16, bfp8_b or bfp4_b)");
}

std::string_view weight_dtype_name(device::DType dtype) {
  switch (dtype) {
    case device::DType::bf8b:
      return "bfp8_b";
    case device::DType::bf4b:
      return "bfp4_b";
    case device::DType::f32:
    case device::DType::bf16:
    case device::DType::i32:
    case device::DType::u32:
      return device::dtype_name(dtype);
  }
  return device::dtype_name(dtype);
}

namespace {

/// `*` matches any run of characters, every other character itself.
bool glob_match(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

Result<std::vector<WeightStorage>> weight_storage(const Graph& g, device::DType default_dtype,
                                                  const std::vector<std::string>& overrides) {
  if (default_dtype != device::DType::bf16 && default_dtype != device::DType::bf8b &&
      default_dtype != device::DType::bf4b)
    return fail(ErrorCode::invalid_argument, "weight dtype ", device::dtype_name(default_dtype),
                " (expected bf16, bfp8_b or bfp4_b)");
  // Per value: the ops using it as a matmul/linear weight; a value with any other use (or not a
  // float parameter, or a graph output) is not a weight.
  std::vector<bool> weight(g.values.size(), false);
  for (ValueId a : g.arguments) {
    const Value& v = g.values[a];
    weight[a] = v.kind == ArgKind::parameter &&
                (v.dtype == device::DType::bf16 || v.dtype == device::DType::f32);
  }
  for (ValueId out : g.outputs) weight[out] = false;
  std::vector<std::vector<OpId>> users(g.values.size());
  for (OpId o = 0; o < g.ops.size(); ++o)
    for (size_t k = 0; k < g.ops[o].operands.size(); ++k) {
      ValueId v = g.ops[o].operands[k];
      bool weight_use =
          (g.ops[o].kind == OpKind::matmul || g.ops[o].kind == OpKind::linear) && k == 1;
      if (!weight_use)
        weight[v] = false;
      else
        users[v].push_back(o);
    }
  for (ValueId v = 0; v < g.values.size(); ++v)
    if (users[v].empty()) weight[v] = false;
  std::vector<device::DType> chosen(g.values.size(), default_dtype);
  for (const std::string& o : overrides) {
    size_t eq = o.rfind('=');
    if (eq == std::string::npos || eq == 0)
      return fail(ErrorCode::invalid_argument, "weight dtype override '", o,
                  "': expected PATTERN=dtype (bf16, bfp8_b, bfp4_b)");
    std::string_view pattern = std::string_view(o).substr(0, eq);
    auto dtype = parse_weight_dtype(std::string_view(o).substr(eq + 1));
    if (!dtype)
      return fail(ErrorCode::invalid_argument, "weight dtype override '", o,
                  "': ", dtype.error().message);
    bool matched = false;
    for (ValueId v = 0; v < g.values.size(); ++v) {
      if (!weight[v]) continue;
      bool hit = glob_match(pattern, g.values[v].name);
      for (OpId u : users[v]) hit = hit || glob_match(pattern, g.ops[u].name);
      if (!hit) continue;
      chosen[v] = *dtype;
      matched = true;
    }
    if (!matched)
      return fail(ErrorCode::invalid_argument, "weight dtype override '", o, "' in graph '", g.name,
                  "': '", pattern,
                  "' names no weight parameter of a matmul or linear (nor such an op)");
  }
  std::vector<WeightStorage> out;
  for (ValueId v = 0; v < g.values.size(); ++v)
    if (weight[v] && chosen[v] != device::DType::bf16 && chosen[v] != g.values[v].dtype)
      out.push_back(WeightStorage{v, chosen[v]});
  return out;
}

std::string print_prepared(const Graph& g, const std::vector<PreparedWeight>& prepared) {
  std::ostringstream out;
  for (const PreparedWeight& p : prepared)
    out << g.values[p.value].name << " " << shape_string(p.host_shape) << " -> "
        << shape_string(g.values[p.value].shape) << " groups " << p.groups << "\n";
  return out.str();
}

}  // namespace meshplan::planner
