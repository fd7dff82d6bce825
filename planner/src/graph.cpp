// Graph validation (topological order, shape inference) and printing.
#include "meshplan/planner/graph.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "meshplan/device/op_semantics.hpp"

namespace meshplan::planner {

std::string_view arg_kind_name(ArgKind kind) {
  switch (kind) {
    case ArgKind::input: return "input";
    case ArgKind::parameter: return "parameter";
    case ArgKind::constant: return "constant";
  }
  return "?";
}

std::string shape_string(std::span<const int64_t> shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "x" : "") << shape[i];
  out << "]";
  return out.str();
}

const Attribute* Op::attribute(std::string_view attr_name) const {
  for (const Attribute& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

namespace {

std::string op_label(const Op& op) {
  return str("op '", op.name, "' (", device::op_name(op.kind), ")");
}

}  // namespace

Result<device::OpConfig> op_config(const Op& op) {
  device::OpConfig config;
  for (const Attribute& a : op.attributes) {
    bool is_matmul = op.kind == OpKind::matmul;
    if ((a.name == "transpose_a" || a.name == "transpose_b") && is_matmul) {
      const bool* b = std::get_if<bool>(&a.value);
      if (!b) return fail(ErrorCode::invalid_argument, op_label(op), ": attribute '", a.name, "' must be a bool");
      (a.name == "transpose_a" ? config.transpose_a : config.transpose_b) = *b;
    } else if (a.name == "activation" && op.kind != OpKind::relu) {
      const std::string* s = std::get_if<std::string>(&a.value);
      if (!s || (*s != "none" && *s != "relu"))
        return fail(ErrorCode::invalid_argument, op_label(op), ": attribute 'activation' must be \"none\" or \"relu\"");
      config.activation = *s == "relu" ? device::Activation::relu : device::Activation::none;
    } else {
      return fail(ErrorCode::invalid_argument, op_label(op), ": unknown attribute '", a.name, "'");
    }
  }
  return config;
}

Status validate(Graph& g) {
  // Names: values and ops are unique among themselves.
  std::map<std::string, ValueId, std::less<>> value_names;
  for (ValueId v = 0; v < g.values.size(); ++v) {
    const std::string& n = g.values[v].name;
    if (n.empty()) return fail(ErrorCode::invalid_argument, "value #", v, " has no name");
    if (!value_names.emplace(n, v).second) return fail(ErrorCode::invalid_argument, "duplicate value name '", n, "'");
  }
  std::map<std::string, OpId, std::less<>> op_names;
  for (OpId o = 0; o < g.ops.size(); ++o) {
    Op& op = g.ops[o];
    if (op.name.empty()) op.name = str(device::op_name(op.kind), "_", o);
    if (!op_names.emplace(op.name, o).second) return fail(ErrorCode::invalid_argument, "duplicate op name '", op.name, "'");
  }
  // Producers and operand counts.
  for (Value& v : g.values) v.producer = kNoOp;
  for (OpId o = 0; o < g.ops.size(); ++o) {
    const Op& op = g.ops[o];
    const device::OpInfo& info = device::op_info(op.kind);
    if (static_cast<int>(op.operands.size()) != info.operands)
      return fail(ErrorCode::invalid_argument, op_label(op), " takes ", info.operands, " operand(s), got ", op.operands.size());
    if (static_cast<int>(op.results.size()) != info.results)
      return fail(ErrorCode::invalid_argument, op_label(op), " has ", info.results, " result(s), got ", op.results.size());
    for (ValueId r : op.results) {
      if (r >= g.values.size()) return fail(ErrorCode::invalid_argument, op_label(op), ": result #", r, " does not exist");
      if (g.values[r].argument >= 0)
        return fail(ErrorCode::invalid_argument, op_label(op), ": result '", g.values[r].name, "' is a program argument");
      if (g.values[r].producer != kNoOp)
        return fail(ErrorCode::invalid_argument, "value '", g.values[r].name, "' is produced by both op '",
                    g.ops[g.values[r].producer].name, "' and op '", op.name, "'");
      g.values[r].producer = o;
    }
  }
  for (ValueId v = 0; v < g.values.size(); ++v)
    if (g.values[v].producer == kNoOp && g.values[v].argument < 0)
      return fail(ErrorCode::invalid_argument, "value '", g.values[v].name, "' is neither an argument nor produced by an op");
  // Topological order (Kahn's algorithm, stable: ready ops keep their file order).
  std::vector<int> pending(g.ops.size(), 0);
  std::vector<std::vector<OpId>> users(g.ops.size());
  for (OpId o = 0; o < g.ops.size(); ++o)
    for (ValueId v : g.ops[o].operands) {
      if (v >= g.values.size()) return fail(ErrorCode::invalid_argument, op_label(g.ops[o]), ": operand #", v, " does not exist");
      OpId p = g.values[v].producer;
      if (p != kNoOp) {
        ++pending[o];
        users[p].push_back(o);
      }
    }
  std::vector<OpId> order;
  std::vector<OpId> ready;
  for (OpId o = 0; o < g.ops.size(); ++o)
    if (pending[o] == 0) ready.push_back(o);
  while (!ready.empty()) {
    auto it = std::min_element(ready.begin(), ready.end());
    OpId o = *it;
    ready.erase(it);
    order.push_back(o);
    for (OpId u : users[o])
      if (--pending[u] == 0) ready.push_back(u);
  }
  if (order.size() != g.ops.size()) {
    std::string cyclic;
    for (OpId o = 0; o < g.ops.size(); ++o)
      if (pending[o] > 0) cyclic += (cyclic.empty() ? "'" : ", '") + g.ops[o].name + "'";
    return fail(ErrorCode::invalid_argument, "the graph has a cycle through ops ", cyclic);
  }
  std::vector<Op> sorted;
  sorted.reserve(g.ops.size());
  for (OpId o : order) sorted.push_back(std::move(g.ops[o]));
  g.ops = std::move(sorted);
  for (OpId o = 0; o < g.ops.size(); ++o)
    for (ValueId r : g.ops[o].results) g.values[r].producer = o;
  // Shapes and dtypes.
  for (const Value& v : g.values)
    if (v.argument >= 0) {
      for (int64_t d : v.shape)
        if (d <= 0) return fail(ErrorCode::invalid_argument, "argument '", v.name, "': dimension ", d, " in ", shape_string(v.shape), " is not positive");
      if (v.kind == ArgKind::constant && static_cast<int64_t>(v.data.size()) != device::volume(v.shape))
        return fail(ErrorCode::invalid_argument, "constant '", v.name, "' has ", v.data.size(), " values, shape ",
                    shape_string(v.shape), " needs ", device::volume(v.shape));
    }
  for (Op& op : g.ops) {
    device::OpConfig config = MESHPLAN_TRY(op_config(op));
    std::vector<std::span<const int64_t>> shapes;
    DType dtype = g.values[op.operands[0]].dtype;
    for (ValueId v : op.operands) {
      shapes.emplace_back(g.values[v].shape);
      if (g.values[v].dtype != dtype)
        return fail(ErrorCode::invalid_argument, op_label(op), ": dtype mismatch: operand '", g.values[op.operands[0]].name,
                    "' is ", device::dtype_name(dtype), ", operand '", g.values[v].name, "' is ",
                    device::dtype_name(g.values[v].dtype));
    }
    auto inferred = device::infer_shape(op.kind, shapes, config);
    if (!inferred) {
      std::string operands;
      for (ValueId v : op.operands) operands += (operands.empty() ? "'" : ", '") + g.values[v].name + "' " + shape_string(g.values[v].shape);
      return fail(ErrorCode::invalid_argument, op_label(op), ": shape mismatch: ", inferred.error().message, " (operands ", operands, ")");
    }
    Value& r = g.values[op.results[0]];
    if (!r.shape.empty() && r.shape != *inferred)
      return fail(ErrorCode::invalid_argument, op_label(op), ": result '", r.name, "' is declared ", shape_string(r.shape),
                  " but the operands give ", shape_string(*inferred));
    r.shape = *inferred;
    r.dtype = dtype;
  }
  // Outputs.
  if (g.outputs.empty()) return fail(ErrorCode::invalid_argument, "graph '", g.name, "' has no outputs");
  for (ValueId v : g.outputs)
    if (v >= g.values.size()) return fail(ErrorCode::invalid_argument, "output #", v, " does not exist");
  return {};
}

std::string Graph::print() const {
  std::ostringstream out;
  out << "graph " << name << "\n";
  for (ValueId a : arguments) {
    const Value& v = values[a];
    out << "  " << arg_kind_name(v.kind) << " %" << v.name << " : " << shape_string(v.shape) << " " << device::dtype_name(v.dtype) << "\n";
  }
  for (const Op& op : ops) {
    out << "  ";
    for (size_t i = 0; i < op.results.size(); ++i) out << (i ? ", " : "") << "%" << values[op.results[i]].name;
    out << " = " << device::op_name(op.kind) << "(";
    for (size_t i = 0; i < op.operands.size(); ++i) out << (i ? ", " : "") << "%" << values[op.operands[i]].name;
    out << ")";
    for (const Attribute& a : op.attributes) {
      out << " " << a.name << "=";
      std::visit([&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) out << (x ? "true" : "false");
        else if constexpr (std::is_same_v<T, std::string>) out << '"' << x << '"';
        else if constexpr (std::is_same_v<T, std::vector<int64_t>> || std::is_same_v<T, std::vector<double>>) {
          out << "[";
          for (size_t i = 0; i < x.size(); ++i) out << (i ? "," : "") << x[i];
          out << "]";
        } else out << x;
      }, a.value);
    }
    const Value& r = values[op.results[0]];
    out << " : " << shape_string(r.shape) << " " << device::dtype_name(r.dtype) << "  # " << op.name << "\n";
  }
  out << "  return";
  for (size_t i = 0; i < outputs.size(); ++i) out << (i ? ", %" : " %") << values[outputs[i]].name;
  out << "\n";
  return out.str();
}

}  // namespace meshplan::planner
