// GraphBuilder: eager shape inference, deferred errors.
#include "meshplan/planner/graph_builder.hpp"

#include <algorithm>

#include "meshplan/device/op_semantics.hpp"

namespace meshplan::planner {

const std::vector<int64_t> GraphBuilder::kNoShape;

Attribute attr(std::string name, int64_t v) {
  return Attribute{std::move(name), v};
}
Attribute attr(std::string name, int v) {
  return Attribute{std::move(name), static_cast<int64_t>(v)};
}
Attribute attr(std::string name, double v) {
  return Attribute{std::move(name), v};
}
Attribute attr(std::string name, bool v) {
  return Attribute{std::move(name), v};
}
Attribute attr(std::string name, const char* v) {
  return Attribute{std::move(name), std::string(v)};
}
Attribute attr(std::string name, std::string v) {
  return Attribute{std::move(name), std::move(v)};
}
Attribute attr(std::string name, std::vector<int64_t> v) {
  return Attribute{std::move(name), std::move(v)};
}
Attribute attr(std::string name, std::vector<double> v) {
  return Attribute{std::move(name), std::move(v)};
}

GraphBuilder::GraphBuilder(std::string name) {
  graph_.name = std::move(name);
}

void GraphBuilder::set_error(Error e) {
  if (!error_) error_ = std::move(e);
}

GraphBuilder::Value GraphBuilder::argument(std::string name, std::vector<int64_t> shape,
                                           DType dtype, ArgKind kind, std::vector<float> data) {
  planner::Value v;
  v.name = std::move(name);
  v.shape = std::move(shape);
  v.dtype = dtype;
  v.kind = kind;
  v.argument = static_cast<int>(graph_.arguments.size());
  v.data = std::move(data);
  graph_.values.push_back(std::move(v));
  Value id = static_cast<Value>(graph_.values.size() - 1);
  graph_.arguments.push_back(id);
  return id;
}

GraphBuilder::Value GraphBuilder::input(std::string name, std::vector<int64_t> shape, DType dtype) {
  return argument(std::move(name), std::move(shape), dtype, ArgKind::input, {});
}

GraphBuilder::Value GraphBuilder::parameter(std::string name, std::vector<int64_t> shape,
                                            DType dtype) {
  return argument(std::move(name), std::move(shape), dtype, ArgKind::parameter, {});
}

GraphBuilder::Value GraphBuilder::constant(std::string name, std::vector<int64_t> shape,
                                           std::vector<float> data, DType dtype) {
  return argument(std::move(name), std::move(shape), dtype, ArgKind::constant, std::move(data));
}

GraphBuilder::Value GraphBuilder::op(std::string_view kind, std::vector<Value> operands,
                                     std::vector<Attribute> attributes, std::string name) {
  auto k = device::op_from_name(kind);
  std::string label =
      name.empty() ? str("op #", graph_.ops.size(), " (", kind, ")") : str("op '", name, "'");
  if (!k) {
    set_error(Error{ErrorCode::invalid_argument, str(label, ": unknown op '", kind, "'")});
    return kInvalid;
  }
  for (Value v : operands)
    if (v == kInvalid || v >= graph_.values.size()) {
      set_error(Error{ErrorCode::invalid_argument,
                      str(label, ": an operand is invalid (an earlier error)")});
      return kInvalid;
    }
  Op o;
  o.kind = *k;
  o.name = name.empty() ? str(kind, "_", graph_.ops.size()) : std::move(name);
  o.operands = std::move(operands);
  o.attributes = std::move(attributes);
  std::sort(o.attributes.begin(), o.attributes.end(),
            [](const Attribute& a, const Attribute& b) { return a.name < b.name; });
  auto config = op_config(o, graph_.mesh);
  if (!config) {
    set_error(config.error());
    return kInvalid;
  }
  std::vector<std::span<const int64_t>> shapes;
  for (Value v : o.operands) shapes.emplace_back(graph_.values[v].shape);
  auto shape = device::infer_shape(o.kind, shapes, *config);
  if (!shape) {
    set_error(Error{ErrorCode::invalid_argument,
                    str("op '", o.name, "' (", kind, "): ", shape.error().message)});
    return kInvalid;
  }
  planner::Value r;
  r.name = o.name + ".out";
  r.shape = std::move(*shape);
  std::vector<DType> dtypes;
  for (Value v : o.operands) dtypes.push_back(graph_.values[v].dtype);
  auto dtype = device::infer_dtype(o.kind, dtypes, *config);  // typecast and embedding change dtype
  if (!dtype) {
    set_error(Error{ErrorCode::invalid_argument,
                    str("op '", o.name, "' (", kind, "): ", dtype.error().message)});
    return kInvalid;
  }
  r.dtype = *dtype;
  r.producer = static_cast<OpId>(graph_.ops.size());
  graph_.values.push_back(std::move(r));
  Value id = static_cast<Value>(graph_.values.size() - 1);
  o.results.push_back(id);
  graph_.ops.push_back(std::move(o));
  return id;
}

void GraphBuilder::output(Value v) {
  if (v == kInvalid || v >= graph_.values.size()) {
    set_error(Error{ErrorCode::invalid_argument, "output: invalid value (an earlier error)"});
    return;
  }
  graph_.outputs.push_back(v);
}

void GraphBuilder::output(Value v, device::MeshShardSpec spec) {
  output(v);
  if (error_) return;
  shards_.emplace_back(graph_.outputs.size() - 1, true, std::move(spec));
}

void GraphBuilder::mesh(int rows, int cols, std::vector<std::string> axis_names) {
  graph_.mesh = GraphMesh{rows, cols, std::move(axis_names)};
}

void GraphBuilder::shard(Value argument, device::MeshShardSpec spec) {
  if (argument >= graph_.values.size() || graph_.values[argument].argument < 0) {
    set_error(Error{ErrorCode::invalid_argument, "shard: not a program argument"});
    return;
  }
  shards_.emplace_back(static_cast<size_t>(graph_.values[argument].argument), false,
                       std::move(spec));
}

const std::vector<int64_t>& GraphBuilder::shape(Value v) const {
  return v < graph_.values.size() ? graph_.values[v].shape : kNoShape;
}

Result<Graph> GraphBuilder::build() {
  if (error_) return std::unexpected(*error_);
  if (!graph_.mesh.single_chip()) {
    graph_.argument_shards.assign(graph_.arguments.size(), device::MeshShardSpec{});
    graph_.output_shards.assign(graph_.outputs.size(), device::MeshShardSpec{});
    for (auto& [index, is_output, spec] : shards_)
      (is_output ? graph_.output_shards : graph_.argument_shards)[index] = spec;
  }
  shards_.clear();
  Graph g = std::move(graph_);
  graph_ = Graph{};
  MESHPLAN_TRY(validate(g));
  return g;
}

}  // namespace meshplan::planner
