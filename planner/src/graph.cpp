// Graph validation (topological order, shape inference) and printing.
#include "meshplan/planner/graph.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/op_cases.hpp"
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

}  // namespace

namespace {

bool is_reduce(OpKind k) {
  return device::op_family(k) == device::OpFamily::reduction;
}
/// Windowed pools (global_avg_pool2d has no window attributes).
bool is_pool(OpKind k) {
  return k == OpKind::max_pool2d || k == OpKind::avg_pool2d;
}

/// Parses one attribute into `c`; false if `op` has no attribute of that name.
Result<bool> parse_attribute(const Op& op, const Attribute& a, device::OpConfig& c,
                             bool* required_seen) {
  OpKind k = op.kind;
  auto bad = [&](auto&&... why) {
    return fail(ErrorCode::invalid_argument, op_label(op), ": attribute '", a.name, "' ", why...);
  };
  auto as_bool = [&]() -> Result<bool> {
    if (auto* b = std::get_if<bool>(&a.value)) return *b;
    return bad("must be a bool (\"b\")");
  };
  auto as_int = [&](int64_t lo, int64_t hi) -> Result<int64_t> {
    auto* i = std::get_if<int64_t>(&a.value);
    if (!i) return bad("must be an integer (\"i\")");
    if (*i < lo || *i > hi) return bad("is ", *i, ", outside [", lo, ", ", hi, "]");
    return *i;
  };
  auto as_ints = [&](size_t min_len, size_t max_len, int64_t lo,
                     int64_t hi) -> Result<std::vector<int64_t>> {
    auto* v = std::get_if<std::vector<int64_t>>(&a.value);
    if (!v) return bad("must be a list of integers (\"ints\")");
    if (v->size() < min_len || v->size() > max_len)
      return bad("has ", v->size(), " entries, expected ",
                 min_len == max_len ? str(min_len) : str(min_len, " to ", max_len));
    for (int64_t x : *v)
      if (x < lo || x > hi) return bad("entry ", x, " is outside [", lo, ", ", hi, "]");
    return *v;
  };
  auto pair = [&](int32_t* dst, int64_t lo) -> Status {
    auto v = MESHPLAN_TRY(as_ints(2, 2, lo, 1 << 16));
    dst[0] = static_cast<int32_t>(v[0]);
    dst[1] = static_cast<int32_t>(v[1]);
    return {};
  };
  constexpr int64_t kRank = device::kMaxRank;
  constexpr int64_t kBig = int64_t{1} << 40;
  const std::string& n = a.name;
  if ((n == "transpose_a" || n == "transpose_b") && device::is_matmul_family(k)) {
    (n == "transpose_a" ? c.transpose_a : c.transpose_b) = MESHPLAN_TRY(as_bool());
  } else if (n == "activation" && device::has_flag(k, device::kActivation)) {
    const std::string* s = std::get_if<std::string>(&a.value);
    auto act = s ? device::activation_from_name(*s) : std::nullopt;
    if (!act)
      return bad("must be one of \"none\", \"relu\", \"gelu\", \"silu\", \"sigmoid\", \"tanh\"");
    c.activation = *act;
  } else if ((n == "dims" && is_reduce(k)) || (n == "perm" && k == OpKind::permute)) {
    auto v = MESHPLAN_TRY(as_ints(n == "perm" ? 1 : 0, kRank, -kRank, kRank - 1));
    c.num_dims = static_cast<uint8_t>(v.size());
    for (size_t i = 0; i < v.size(); ++i) c.dims[i] = static_cast<int8_t>(v[i]);
    if (n == "perm") *required_seen = true;
  } else if (n == "keepdim" && is_reduce(k)) {
    c.keepdim = MESHPLAN_TRY(as_bool());
  } else if (n == "dim" && k == OpKind::softmax) {
    c.num_dims = 1;
    c.dims[0] = static_cast<int8_t>(MESHPLAN_TRY(as_int(-kRank, kRank - 1)));
  } else if (n == "axis" && k == OpKind::concat) {
    c.axis = static_cast<int32_t>(MESHPLAN_TRY(as_int(-kRank, kRank - 1)));
  } else if (n == "epsilon" && (k == OpKind::layer_norm || k == OpKind::rms_norm)) {
    const double* f = std::get_if<double>(&a.value);
    const int64_t* i = std::get_if<int64_t>(&a.value);
    if (!f && !i) return bad("must be a number (\"f\")");
    double e = f ? *f : static_cast<double>(*i);
    if (!(e >= 0.0 && e < 1.0)) return bad("is ", e, ", expected a value in [0, 1)");
    c.epsilon = static_cast<float>(e);
  } else if ((n == "min" || n == "max") && k == OpKind::clamp) {
    const double* f = std::get_if<double>(&a.value);
    const int64_t* i = std::get_if<int64_t>(&a.value);
    if (!f && !i) return bad("must be a number (\"f\")");
    double v = f ? *f : static_cast<double>(*i);
    if (std::isnan(v)) return bad("is NaN");
    (n == "min" ? c.clamp_min : c.clamp_max) = static_cast<float>(v);
  } else if (n == "shape" && k == OpKind::reshape) {
    auto v = MESHPLAN_TRY(as_ints(1, kRank, -1, kBig));
    c.num_shape = static_cast<uint8_t>(v.size());
    std::copy(v.begin(), v.end(), c.shape);
    *required_seen = true;
  } else if ((n == "begins" || n == "ends" || n == "steps") && k == OpKind::slice) {
    auto v = MESHPLAN_TRY(as_ints(1, kRank, n == "steps" ? 1 : -kBig, kBig));
    if (c.num_slice != 0 && c.num_slice != v.size())
      return bad("has ", v.size(), " entries but another of begins/ends/steps has ",
                 int(c.num_slice));
    c.num_slice = static_cast<uint8_t>(v.size());
    std::copy(v.begin(), v.end(), n == "begins" ? c.begins : n == "ends" ? c.ends : c.steps);
  } else if (n == "dtype" && (k == OpKind::typecast || k == OpKind::bitcast)) {
    const std::string* s = std::get_if<std::string>(&a.value);
    auto dt = s ? device::dtype_from_name(*s) : std::nullopt;
    if (!dt || *dt == DType::bf8b || *dt == DType::bf4b)
      return bad("must be one of \"f32\", \"bf16\", \"i32\", \"u32\"");
    c.dtype = *dt;
    *required_seen = true;
  } else if (n == "kernel" && (is_pool(k) || k == OpKind::conv2d)) {
    // conv2d: the window of a prepared 2-D weight (a 4-D weight gives its own; see
    // device::conv_weight_dims).
    MESHPLAN_TRY(pair(c.kernel, 1));
    if (is_pool(k)) *required_seen = true;
  } else if (n == "stride" && (k == OpKind::conv2d || is_pool(k))) {
    MESHPLAN_TRY(pair(c.stride, 1));
  } else if (n == "dilation" && (k == OpKind::conv2d || is_pool(k))) {
    MESHPLAN_TRY(pair(c.dilation, 1));
  } else if (n == "padding" && (k == OpKind::conv2d || is_pool(k))) {
    auto v = MESHPLAN_TRY(as_ints(2, 4, 0, 1 << 16));
    if (v.size() == 3) return bad("must be [pad_h, pad_w] or [top, bottom, left, right]");
    if (v.size() == 2) v = {v[0], v[0], v[1], v[1]};
    for (int i = 0; i < 4; ++i) c.padding[i] = static_cast<int32_t>(v[i]);
  } else if (n == "groups" && k == OpKind::conv2d) {
    c.groups = static_cast<int32_t>(MESHPLAN_TRY(as_int(1, 1 << 16)));
  } else if (n == "act_block_h" && k == OpKind::conv2d) {
    c.act_block_h = static_cast<uint32_t>(MESHPLAN_TRY(as_int(1, 1 << 16)));
  } else if (n == "act_block_w_div" && k == OpKind::conv2d) {
    c.act_block_w_div = static_cast<uint32_t>(MESHPLAN_TRY(as_int(1, 1 << 16)));
  } else if (n == "input_nhw" &&
             (k == OpKind::conv2d || is_pool(k) || k == OpKind::global_avg_pool2d)) {
    // The flattened form [1, 1, N*H*W, C] of the input (planner flatten_spatial, TTNN's
    // batch_size / input_height / input_width).
    auto v = MESHPLAN_TRY(as_ints(3, 3, 1, int64_t{1} << 30));
    c.input_n = static_cast<uint32_t>(v[0]);
    c.input_h = static_cast<uint32_t>(v[1]);
    c.input_w = static_cast<uint32_t>(v[2]);
  } else if (n == "cluster_axis" && device::has_cluster_axis(k)) {
    c.cluster_axis = static_cast<int8_t>(MESHPLAN_TRY(as_int(-1, 1)));
  } else if (n == "dim" &&
             (k == OpKind::all_gather || k == OpKind::reduce_scatter || k == OpKind::all_slice)) {
    c.collective_dim = static_cast<int32_t>(MESHPLAN_TRY(as_int(-kRank, kRank - 1)));
  } else if ((n == "split_dim" || n == "concat_dim") && k == OpKind::all_to_all) {
    (n == "split_dim" ? c.split_dim : c.concat_dim) =
        static_cast<int32_t>(MESHPLAN_TRY(as_int(-kRank, kRank - 1)));
  } else if (n == "reduce" && (k == OpKind::reduce_scatter || k == OpKind::all_reduce)) {
    const std::string* s = std::get_if<std::string>(&a.value);
    auto r = s ? device::reduce_from_name(*s) : std::nullopt;
    if (!r) return bad("must be one of \"sum\", \"max\", \"min\"");
    c.reduce = *r;
  } else if (n == "pairs" && k == OpKind::collective_permute) {
    auto v = MESHPLAN_TRY(as_ints(0, 2 * device::kMaxMeshChips, 0, device::kMaxMeshChips - 1));
    if (v.size() % 2 != 0)
      return bad("has ", v.size(), " entries, expected (source, target) pairs");
    c.pairs.assign(v.begin(), v.end());
  } else {
    return false;
  }
  return true;
}

/// The attribute an op cannot do without, if any.
std::string_view required_attribute(OpKind k) {
  switch (k) {
    case OpKind::permute:
      return "perm";
    case OpKind::reshape:
      return "shape";
    case OpKind::typecast:
    case OpKind::bitcast:
      return "dtype";
    case OpKind::max_pool2d:
    case OpKind::avg_pool2d:
      return "kernel";
    case OpKind::concat:
    case OpKind::slice:
    case OpKind::global_avg_pool2d:
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE3_(family, shape, convert, pool, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      return {};
  }
  return {};
}

/// Attributes a collective cannot do without (MESH-SPEC §1: only reduce has a default).
std::vector<std::string_view> required_collective_attributes(OpKind k) {
  switch (k) {
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_slice:
      return {"cluster_axis", "dim"};
    case OpKind::all_reduce:
      return {"cluster_axis"};
    case OpKind::all_to_all:
      return {"cluster_axis", "concat_dim", "split_dim"};
    case OpKind::collective_permute:
      return {"pairs"};
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE_(family, collective, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      return {};
  }
  return {};
}

}  // namespace

Result<device::OpConfig> op_config(const Op& op, const GraphMesh& mesh) {
  device::OpConfig config;
  if (mesh.rows > 0 && mesh.cols > 0 && mesh.rows <= 0xFFFF && mesh.cols <= 0xFFFF) {
    config.mesh_rows = static_cast<uint16_t>(mesh.rows);
    config.mesh_cols = static_cast<uint16_t>(mesh.cols);
  }
  for (std::string_view r : required_collective_attributes(op.kind))
    if (!op.attribute(r))
      return fail(ErrorCode::invalid_argument, op_label(op), ": missing attribute '", r, "'");
  bool required_seen = false;
  for (const Attribute& a : op.attributes) {
    bool known = MESHPLAN_TRY(parse_attribute(op, a, config, &required_seen));
    if (!known)
      return fail(ErrorCode::invalid_argument, op_label(op), ": unknown attribute '", a.name, "'");
  }
  std::string_view required = required_attribute(op.kind);
  if (!required.empty() && !required_seen)
    return fail(ErrorCode::invalid_argument, op_label(op), ": missing attribute '", required, "'");
  if (op.kind == OpKind::slice) {
    bool has_begins = op.attribute("begins"), has_ends = op.attribute("ends");
    if (!has_begins || !has_ends)
      return fail(ErrorCode::invalid_argument, op_label(op), ": missing attribute '",
                  has_begins ? "ends" : "begins", "'");
    if (!op.attribute("steps"))
      for (int i = 0; i < config.num_slice; ++i) config.steps[i] = 1;
  }
  return config;
}

namespace {

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
