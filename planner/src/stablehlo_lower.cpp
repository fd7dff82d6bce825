// Lowering of a per-device StableHLO program to planner::Graph, for the ops meshplan has.
#include <algorithm>
#include <map>
#include <optional>

#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

namespace {

Result<DType> dtype_of(const TensorType& t, const Location& loc) {
  if (t.element == "f32") return DType::f32;
  if (t.element == "bf16") return DType::bf16;
  if (t.element == "i32") return DType::i32;
  if (t.element == "ui32") return DType::u32;
  return fail(ErrorCode::unimplemented, loc.str(), ": unimplemented: element type ", t.element,
              " has no meshplan dtype");
}

std::unexpected<Error> no_op(const Op& op) {
  return fail(ErrorCode::unimplemented, op.loc.str(), ": unimplemented: ", op.name,
              " has no meshplan op yet");
}

bool splat_zero(const Module& m, ValueId v) {
  const Value& val = m.values[v];
  if (val.def == kNone) return false;
  const Op& op = m.ops[val.def];
  if (op.name == "stablehlo.broadcast_in_dim") return splat_zero(m, op.operands[0]);
  if (op.name != "stablehlo.constant") return false;
  const Attr* a = op.prop("value");
  return a && a->text.empty() &&
         std::all_of(a->values.begin(), a->values.end(), [](double x) { return x == 0; });
}

/// broadcast_in_dim that numpy broadcasting reproduces (trailing-aligned, equal or size-1 dims).
bool numpy_broadcast(const Module& m, const Op& op) {
  const Attr* dims = op.prop("broadcast_dimensions");
  const auto& in = m.values[op.operands[0]].type.shape;
  const auto& out = m.values[op.results[0]].type.shape;
  if (!dims || dims->ints.size() != in.size()) return false;
  for (size_t i = 0; i < in.size(); ++i) {
    size_t od = out.size() - in.size() + i;
    if (dims->ints[i] != static_cast<int64_t>(od) || (in[i] != out[od] && in[i] != 1)) return false;
  }
  return true;
}

/// StableHLO elementwise ops with a meshplan op of the same meaning (numpy broadcasting).
std::optional<OpKind> elementwise_kind(std::string_view name) {
  static const std::pair<std::string_view, std::string_view> kMap[] = {
      {"stablehlo.add", "add"},           {"stablehlo.subtract", "subtract"},
      {"stablehlo.multiply", "multiply"}, {"stablehlo.divide", "divide"},
      {"stablehlo.minimum", "minimum"},   {"stablehlo.tanh", "tanh"},
      {"stablehlo.exponential", "exp"},   {"stablehlo.log", "log"},
      {"stablehlo.sqrt", "sqrt"},         {"stablehlo.rsqrt", "rsqrt"},
      {"stablehlo.negate", "neg"},        {"stablehlo.abs", "abs"},
      {"stablehlo.logistic", "sigmoid"},
  };
  for (const auto& [shlo, ours] : kMap)
    if (shlo == name) return device::op_from_name(ours);
  return std::nullopt;
}

}  // namespace

Result<Graph> lower_to_graph(const Module& m) {
  const Func* f = m.entry();
  if (!f) return fail(ErrorCode::invalid_argument, m.file, ": no function to lower");
  Graph g;
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
  for (OpId o : f->body.ops)
    if (m.ops[o].name == "sdy.manual_computation") {
      body = &m.ops[o].regions[0];
      args = body->args;
    }
  // Uses, to know which broadcasts and constants only feed patterns that absorb them.
  std::map<ValueId, std::vector<const Op*>> users;
  for (OpId o : body->ops)
    for (ValueId v : m.ops[o].operands) users[v].push_back(&m.ops[o]);
  std::map<ValueId, planner::ValueId> map;
  auto add_value = [&](ValueId v, const Location& loc) -> Result<planner::ValueId> {
    planner::Value pv;
    pv.name = "v" + std::to_string(g.values.size());
    pv.shape = m.values[v].type.shape;
    pv.dtype = MESHPLAN_TRY(dtype_of(m.values[v].type, loc));
    g.values.push_back(std::move(pv));
    return map[v] = static_cast<planner::ValueId>(g.values.size() - 1);
  };
  for (size_t i = 0; i < args.size(); ++i) {
    planner::ValueId pv = MESHPLAN_TRY(add_value(args[i], f->loc));
    g.values[pv].name = "arg" + std::to_string(i);
    g.values[pv].kind = kinds[i];
    g.values[pv].argument = static_cast<int>(i);
    g.arguments.push_back(pv);
  }
  auto operand = [&](ValueId v, const Op& user) -> Result<planner::ValueId> {
    auto it = map.find(v);
    if (it == map.end())
      return fail(ErrorCode::unimplemented, user.loc.str(), ": unimplemented: an operand of ",
                  user.name, " comes from an op with no meshplan op");
    return it->second;
  };
  for (OpId o : body->ops) {
    const Op& op = m.ops[o];
    const std::string& n = op.name;
    if (n == "func.return" || n == "sdy.return") {
      for (ValueId v : op.operands) g.outputs.push_back(MESHPLAN_TRY(operand(v, op)));
      continue;
    }
    planner::Op pop;
    pop.name = "op" + std::to_string(g.ops.size());
    if (n == "stablehlo.constant" || n == "stablehlo.broadcast_in_dim") {
      // Absorbed by their users (relu's zero, add's broadcast) or not lowerable.
      bool absorbed = !users[op.results[0]].empty();
      for (const Op* u : users[op.results[0]]) {
        bool relu = u->name == "stablehlo.maximum" && splat_zero(m, op.results[0]);
        bool bcast = n == "stablehlo.broadcast_in_dim" && u->operands.size() == 2 &&
                     elementwise_kind(u->name) && numpy_broadcast(m, op);
        bool feeds = n == "stablehlo.constant" && u->name == "stablehlo.broadcast_in_dim" &&
                     splat_zero(m, op.results[0]);
        absorbed &= relu || bcast || feeds;
      }
      // A constant no pattern absorbs is reported by the first user that needs it.
      if (!absorbed && n == "stablehlo.constant") continue;
      if (!absorbed) return no_op(op);
      if (n == "stablehlo.broadcast_in_dim" && map.count(op.operands[0]))
        map[op.results[0]] = map[op.operands[0]];
      continue;
    }
    if (n == "stablehlo.dot_general") {
      const Attr* lb = op.prop("lhs_batching_dimensions");
      const Attr* lc = op.prop("lhs_contracting_dimensions");
      const Attr* rc = op.prop("rhs_contracting_dimensions");
      const auto& ls = m.values[op.operands[0]].type.shape;
      const auto& rs = m.values[op.operands[1]].type.shape;
      if (!lb || !lc || !rc || !lb->ints.empty() || lc->ints.size() != 1 || rc->ints.size() != 1 ||
          ls.size() != 2 || rs.size() != 2)
        return fail(ErrorCode::unimplemented, op.loc.str(),
                    ": unimplemented: stablehlo.dot_general other than a 2-D matmul has no "
                    "meshplan op yet");
      pop.kind = OpKind::matmul;
      if (lc->ints[0] == 0) pop.attributes.push_back({"transpose_a", true});
      if (rc->ints[0] == 1) pop.attributes.push_back({"transpose_b", true});
    } else if (auto kind = elementwise_kind(n)) {
      pop.kind = *kind;
    } else if (n == "stablehlo.maximum" &&
               (splat_zero(m, op.operands[0]) || splat_zero(m, op.operands[1]))) {
      pop.kind = OpKind::relu;
      ValueId x = splat_zero(m, op.operands[1]) ? op.operands[0] : op.operands[1];
      pop.operands.push_back(MESHPLAN_TRY(operand(x, op)));
    } else {
      return no_op(op);
    }
    if (pop.kind != OpKind::relu)
      for (ValueId v : op.operands) pop.operands.push_back(MESHPLAN_TRY(operand(v, op)));
    for (ValueId v : op.results) pop.results.push_back(MESHPLAN_TRY(add_value(v, op.loc)));
    std::sort(pop.attributes.begin(), pop.attributes.end(),
              [](const Attribute& a, const Attribute& b) { return a.name < b.name; });
    g.ops.push_back(std::move(pop));
  }
  MESHPLAN_TRY(validate(g));
  return g;
}

}  // namespace meshplan::planner::shlo
