// Graph validation (topological order, shape inference) and printing.
#include "meshplan/planner/graph.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "meshplan/device/size_limits.hpp"

namespace meshplan::planner {

std::string_view arg_kind_name(ArgKind kind) {
  switch (kind) {
    case ArgKind::input:
      return "input";
    case ArgKind::parameter:
      return "parameter";
    case ArgKind::constant:
      return "constant";
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

/// Mesh, boundary shards and collectives-only-on-meshes (MESH-SPEC §1).
Status validate_mesh(const Graph& g) {
  const GraphMesh& m = g.mesh;
  if (m.rows < 1 || m.cols < 1 || m.rows > 0xFFFF || m.cols > 0xFFFF)
    return fail(ErrorCode::invalid_argument, "graph '", g.name, "': mesh ", m.rows, "x", m.cols,
                " is not a grid of 1 to 65535 chips per axis");
  if (m.axis_names.size() > 2)
    return fail(ErrorCode::invalid_argument, "graph '", g.name, "': mesh has ", m.axis_names.size(),
                " axis names; meshes have at most 2 axes");
  if (m.single_chip()) {
    for (const Op& op : g.ops)
      if (device::is_collective(op.kind))
        return fail(ErrorCode::invalid_argument, op_label(op),
                    " is a collective but the graph's mesh is 1x1 (a single chip); set the "
                    "graph's mesh");
    if (!g.argument_shards.empty() || !g.output_shards.empty())
      return fail(ErrorCode::invalid_argument, "graph '", g.name,
                  "': boundary shards are given but the mesh is 1x1");
    return {};
  }
  if (g.argument_shards.size() != g.arguments.size() || g.output_shards.size() != g.outputs.size())
    return fail(ErrorCode::invalid_argument, "graph '", g.name, "' on a ", m.rows, "x", m.cols,
                " mesh has ", g.argument_shards.size(), " argument shards for ", g.arguments.size(),
                " arguments and ", g.output_shards.size(), " output shards for ", g.outputs.size(),
                " outputs (one each is required)");
  for (size_t i = 0; i < g.arguments.size(); ++i)
    if (auto s = boundary_full_shape(g, i, false); !s) return std::unexpected(s.error());
  for (size_t i = 0; i < g.outputs.size(); ++i)
    if (auto s = boundary_full_shape(g, i, true); !s) return std::unexpected(s.error());
  return {};
}

}  // namespace

Result<std::vector<int64_t>> boundary_full_shape(const Graph& g, size_t index, bool output) {
  const auto& ids = output ? g.outputs : g.arguments;
  if (index >= ids.size() || ids[index] >= g.values.size())
    return fail(ErrorCode::invalid_argument, output ? "output" : "argument", " #", index,
                " does not exist");
  const Value& v = g.values[ids[index]];
  if (g.mesh.single_chip()) return v.shape;
  const auto& shards = output ? g.output_shards : g.argument_shards;
  if (index >= shards.size())
    return fail(ErrorCode::invalid_argument, output ? "output" : "argument", " '", v.name,
                "' has no boundary shard");
  auto full = device::mesh_shard_full_shape(g.mesh.rows, g.mesh.cols, v.shape, shards[index]);
  if (!full)
    return fail(ErrorCode::invalid_argument, output ? "output" : "argument", " '", v.name, "' ",
                shape_string(v.shape), ": ", full.error().message);
  return full;
}

Status validate(Graph& g) {
  // Names: values and ops are unique among themselves.
  std::map<std::string, ValueId, std::less<>> value_names;
  for (ValueId v = 0; v < g.values.size(); ++v) {
    const std::string& n = g.values[v].name;
    if (n.empty()) return fail(ErrorCode::invalid_argument, "value #", v, " has no name");
    if (!value_names.emplace(n, v).second)
      return fail(ErrorCode::invalid_argument, "duplicate value name '", n, "'");
  }
  std::map<std::string, OpId, std::less<>> op_names;
  for (OpId o = 0; o < g.ops.size(); ++o) {
    Op& op = g.ops[o];
    if (op.name.empty()) op.name = str(device::op_name(op.kind), "_", o);
    if (!op_names.emplace(op.name, o).second)
      return fail(ErrorCode::invalid_argument, "duplicate op name '", op.name, "'");
  }
  // Producers and operand counts.
  for (Value& v : g.values) v.producer = kNoOp;
  for (OpId o = 0; o < g.ops.size(); ++o) {
    const Op& op = g.ops[o];
    const device::OpInfo& info = device::op_info(op.kind);
    if (!device::operand_count_ok(op.kind, op.operands.size()))
      return fail(ErrorCode::invalid_argument, op_label(op), " takes ",
                  device::operand_count_text(op.kind), " operand(s), got ", op.operands.size());
    if (static_cast<int>(op.results.size()) != info.results)
      return fail(ErrorCode::invalid_argument, op_label(op), " has ", info.results,
                  " result(s), got ", op.results.size());
    for (ValueId r : op.results) {
      if (r >= g.values.size())
        return fail(ErrorCode::invalid_argument, op_label(op), ": result #", r, " does not exist");
      if (g.values[r].argument >= 0)
        return fail(ErrorCode::invalid_argument, op_label(op), ": result '", g.values[r].name,
                    "' is a program argument");
      if (g.values[r].producer != kNoOp)
        return fail(ErrorCode::invalid_argument, "value '", g.values[r].name,
                    "' is produced by both op '", g.ops[g.values[r].producer].name, "' and op '",
                    op.name, "'");
      g.values[r].producer = o;
    }
  }
  for (ValueId v = 0; v < g.values.size(); ++v)
    if (g.values[v].producer == kNoOp && g.values[v].argument < 0)
      return fail(ErrorCode::invalid_argument, "value '", g.values[v].name,
                  "' is neither an argument nor produced by an op");
  // Topological order (Kahn's algorithm, stable: ready ops keep their file order).
  std::vector<int> pending(g.ops.size(), 0);
  std::vector<std::vector<OpId>> users(g.ops.size());
  for (OpId o = 0; o < g.ops.size(); ++o)
    for (ValueId v : g.ops[o].operands) {
      if (v >= g.values.size())
        return fail(ErrorCode::invalid_argument, op_label(g.ops[o]), ": operand #", v,
                    " does not exist");
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
        if (d <= 0)
          return fail(ErrorCode::invalid_argument, "argument '", v.name, "': dimension ", d, " in ",
                      shape_string(v.shape), " is not positive");
      auto volume = device::checked_volume(v.shape);
      if (!volume)
        return fail(ErrorCode::invalid_argument, "argument '", v.name,
                    "': ", volume.error().message);
      if (v.kind == ArgKind::constant && static_cast<int64_t>(v.data.size()) != *volume)
        return fail(ErrorCode::invalid_argument, "constant '", v.name, "' has ", v.data.size(),
                    " values, shape ", shape_string(v.shape), " needs ", *volume);
    }
  if (g.mesh.rows < 1 || g.mesh.cols < 1 || g.mesh.rows > 0xFFFF || g.mesh.cols > 0xFFFF)
    return validate_mesh(g);
  for (Op& op : g.ops) {
    device::OpConfig config = MESHPLAN_TRY(op_config(op, g.mesh));
    if (device::is_collective(op.kind) && g.mesh.single_chip())
      return fail(ErrorCode::invalid_argument, op_label(op),
                  " is a collective but the graph's mesh is 1x1 (a single chip); set the "
                  "graph's mesh");
    std::vector<std::span<const int64_t>> shapes;
    std::vector<DType> dtypes;
    for (ValueId v : op.operands) {
      shapes.emplace_back(g.values[v].shape);
      dtypes.push_back(g.values[v].dtype);
    }
    auto dtype_or = device::infer_dtype(op.kind, dtypes, config);
    if (!dtype_or) {
      std::string operands;
      for (ValueId v : op.operands)
        operands += (operands.empty() ? "'" : ", '") + g.values[v].name + "' is " +
                    std::string(device::dtype_name(g.values[v].dtype));
      return fail(ErrorCode::invalid_argument, op_label(op), ": ", dtype_or.error().message,
                  " (operands ", operands, ")");
    }
    DType dtype = *dtype_or;
    auto inferred = device::infer_shape(op.kind, shapes, config);
    if (!inferred) {
      std::string operands;
      for (ValueId v : op.operands)
        operands += (operands.empty() ? "'" : ", '") + g.values[v].name + "' " +
                    shape_string(g.values[v].shape);
      return fail(ErrorCode::invalid_argument, op_label(op),
                  ": shape mismatch: ", inferred.error().message, " (operands ", operands, ")");
    }
    Value& r = g.values[op.results[0]];
    if (!r.shape.empty() && r.shape != *inferred)
      return fail(ErrorCode::invalid_argument, op_label(op), ": result '", r.name, "' is declared ",
                  shape_string(r.shape), " but the operands give ", shape_string(*inferred));
    if (auto volume = device::checked_volume(*inferred); !volume)
      return fail(ErrorCode::invalid_argument, op_label(op), ": result '", r.name,
                  "': ", volume.error().message);
    r.shape = *inferred;
    r.dtype = dtype;
  }
  // Outputs.
  if (g.outputs.empty())
    return fail(ErrorCode::invalid_argument, "graph '", g.name, "' has no outputs");
  for (ValueId v : g.outputs)
    if (v >= g.values.size())
      return fail(ErrorCode::invalid_argument, "output #", v, " does not exist");
  return validate_mesh(g);
}

std::string Graph::print() const {
  std::ostringstream out;
  out << "graph " << name << "\n";
  auto shard_text = [](const device::MeshShardSpec& s) {
    std::string t = str(" shard=", device::mesh_shard_type_name(s.type));
    if (s.type == device::MeshShardType::devices)
      t += str("[", s.shard_dims[0], ",", s.shard_dims[1], "]");
    return t;
  };
  if (!mesh.single_chip()) {
    out << "  mesh " << mesh.rows << "x" << mesh.cols;
    for (size_t i = 0; i < mesh.axis_names.size(); ++i)
      out << (i ? "," : " axes=") << mesh.axis_names[i];
    out << "\n";
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Value& v = values[arguments[i]];
    out << "  " << arg_kind_name(v.kind) << " %" << v.name << " : " << shape_string(v.shape) << " "
        << device::dtype_name(v.dtype);
    if (i < argument_shards.size()) out << shard_text(argument_shards[i]);
    out << "\n";
  }
  for (const Op& op : ops) {
    out << "  ";
    for (size_t i = 0; i < op.results.size(); ++i)
      out << (i ? ", " : "") << "%" << values[op.results[i]].name;
    out << " = " << device::op_name(op.kind) << "(";
    for (size_t i = 0; i < op.operands.size(); ++i)
      out << (i ? ", " : "") << "%" << values[op.operands[i]].name;
    out << ")";
    for (const Attribute& a : op.attributes) {
      out << " " << a.name << "=";
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, bool>)
              out << (x ? "true" : "false");
            else if constexpr (std::is_same_v<T, std::string>)
              out << '"' << x << '"';
            else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                               std::is_same_v<T, std::vector<double>>) {
              out << "[";
              for (size_t i = 0; i < x.size(); ++i) out << (i ? "," : "") << x[i];
              out << "]";
            } else
              out << x;
          },
          a.value);
    }
    const Value& r = values[op.results[0]];
    out << " : " << shape_string(r.shape) << " " << device::dtype_name(r.dtype) << "  # " << op.name
        << "\n";
  }
  out << "  return";
  for (size_t i = 0; i < outputs.size(); ++i) {
    out << (i ? ", %" : " %") << values[outputs[i]].name;
    if (i < output_shards.size()) out << shard_text(output_shards[i]);
  }
  out << "\n";
  return out.str();
}

}  // namespace meshplan::planner
