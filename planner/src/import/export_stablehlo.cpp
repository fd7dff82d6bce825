// Graph IR -> StableHLO/Shardy text -> parsed module. Writing the text and parsing it keeps one
// truth for the module's canonical form (the parser's), so the exported module prints and parses
// back unchanged by construction, and the parser's checks run on every export.
#include "meshplan/planner/export_stablehlo.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "import/meshplan_custom_call.hpp"
#include "meshplan/device/mesh_spec.hpp"
#include "meshplan/device/op_cases.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::planner {

namespace {

Result<std::string> element_type(DType t, std::string_view what) {
  switch (t) {
    case DType::f32:
      return std::string("f32");
    case DType::bf16:
      return std::string("bf16");
    case DType::i32:
      return std::string("i32");
    case DType::u32:
      return std::string("ui32");
    case DType::bf8b:
    case DType::bf4b:
      break;
  }
  return fail(ErrorCode::unimplemented, what, ": dtype ", device::dtype_name(t),
              " has no StableHLO element type");
}

bool is_int(const std::string& element) {
  return element.starts_with("i") || element.starts_with("ui");
}

std::string tensor_type(const std::vector<int64_t>& shape, const std::string& element) {
  return shlo::type_string(shlo::TensorType{shape, element});
}

std::string ints_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string symbol_name(const std::string& name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "g_" + s;
  return s;
}

class Exporter {
 public:
  explicit Exporter(const Graph& g) : g_(g), names_(g.values.size()) {}

  Result<std::string> run(const MeshAnnotations& ann) {
    MESHPLAN_TRY(check_annotations(ann));
    for (size_t i = 0; i < g_.arguments.size(); ++i)
      names_[g_.arguments[i]] = "%arg" + std::to_string(i);
    for (const Op& op : g_.ops) MESHPLAN_TRY(emit(op));
    std::ostringstream out;
    const bool mesh = !ann.axes.empty();
    out << "module @" << symbol_name(g_.name.empty() ? "graph" : g_.name) << " {\n";
    if (mesh) {
      out << "  sdy.mesh @mesh = <[";
      for (size_t i = 0; i < ann.axes.size(); ++i)
        out << (i ? ", " : "") << '"' << ann.axes[i].first << "\"=" << ann.axes[i].second;
      out << "]>\n";
    }
    out << "  func.func public @main(";
    for (size_t i = 0; i < g_.arguments.size(); ++i) {
      const Value& v = g_.values[g_.arguments[i]];
      out << (i ? ", " : "") << "%arg" << i << ": " << MESHPLAN_TRY(type_of(g_.arguments[i]))
          << " {";
      std::string_view s = ann.argument(v.name);
      if (!s.empty()) out << "sdy.sharding = #sdy.sharding<@mesh, " << s << ">, ";
      // The graph's host tensors are whole: the boundary splits them (mesh_shard devices or
      // replicate), even where an annotation shards them.
      out << "ttcore.argument_type = #ttcore.argument_type<" << arg_kind_name(v.kind)
          << ">, ttcore.shard_status = #ttcore.shard_status<unsharded>}";
    }
    out << ") -> (";
    for (size_t i = 0; i < g_.outputs.size(); ++i) {
      out << (i ? ", " : "") << MESHPLAN_TRY(type_of(g_.outputs[i]));
      if (i < ann.outputs.size() && !ann.outputs[i].empty())
        out << " {sdy.sharding = #sdy.sharding<@mesh, " << ann.outputs[i] << ">}";
    }
    out << ") {\n" << body_.str() << "    return ";
    for (size_t i = 0; i < g_.outputs.size(); ++i) out << (i ? ", " : "") << names_[g_.outputs[i]];
    if (!g_.outputs.empty()) out << " : ";
    for (size_t i = 0; i < g_.outputs.size(); ++i)
      out << (i ? ", " : "") << MESHPLAN_TRY(type_of(g_.outputs[i]));
    out << "\n  }\n}\n";
    return out.str();
  }

 private:
  Status check_annotations(const MeshAnnotations& ann) {
    std::set<std::string, std::less<>> axes;
    for (const auto& [name, size] : ann.axes) {
      if (name.empty() || size < 1)
        return fail(ErrorCode::invalid_argument, "graph '", g_.name, "': mesh axis '", name,
                    "' of size ", size, " (axes need a name and a size >= 1)");
      if (!axes.insert(name).second)
        return fail(ErrorCode::invalid_argument, "graph '", g_.name, "': mesh axis '", name,
                    "' declared twice");
    }
    if ((!ann.arguments.empty() || !ann.outputs.empty()) && ann.axes.empty())
      return fail(ErrorCode::invalid_argument, "graph '", g_.name,
                  "': shardings are given but no mesh axes");
    for (const auto& [name, s] : ann.arguments) {
      bool found = false;
      for (ValueId a : g_.arguments) found |= g_.values[a].name == name;
      if (!found)
        return fail(ErrorCode::invalid_argument, "graph '", g_.name,
                    "': a sharding names argument '", name, "', which the graph does not have");
    }
    if (!ann.outputs.empty() && ann.outputs.size() != g_.outputs.size())
      return fail(ErrorCode::invalid_argument, "graph '", g_.name, "': ", ann.outputs.size(),
                  " output shardings for ", g_.outputs.size(), " outputs");
    return {};
  }

  Result<std::string> type_of(ValueId v) {
    const Value& value = g_.values[v];
    return tensor_type(value.shape,
                       MESHPLAN_TRY(element_type(value.dtype, str("value '", value.name, "'"))));
  }

  /// A fresh SSA name.
  std::string fresh() { return "%" + std::to_string(next_++); }

  /// `%r = text : type-suffix`; returns %r.
  std::string line(const std::string& text) {
    std::string r = fresh();
    body_ << "    " << r << " = " << text << "\n";
    return r;
  }

  /// `x` broadcast (numpy, trailing-aligned) to `shape`, or `x` itself when it has that shape.
  std::string broadcast(const std::string& x, const std::vector<int64_t>& from,
                        const std::vector<int64_t>& to, const std::string& el) {
    if (from == to) return x;
    std::vector<int64_t> dims;
    for (size_t i = 0; i < from.size(); ++i)
      dims.push_back(static_cast<int64_t>(to.size() - from.size() + i));
    return line(str("stablehlo.broadcast_in_dim ", x, ", dims = ", ints_text(dims), " : (",
                    tensor_type(from, el), ") -> ", tensor_type(to, el)));
  }

  /// A splat constant of `shape`.
  std::string splat(const std::string& literal, const std::vector<int64_t>& shape,
                    const std::string& el) {
    std::string c = line(str("stablehlo.constant dense<", literal, "> : ", tensor_type({}, el)));
    return broadcast(c, {}, shape, el);
  }

  /// The activation `act` applied to `x` (for fused activations and unary graph ops).
  Result<std::string> activation(std::string_view act, const std::string& x,
                                 const std::vector<int64_t>& shape, const std::string& el) {
    std::string t = tensor_type(shape, el);
    if (act == "none") return x;
    if (act == "relu") {
      std::string zero = splat(is_int(el) ? "0" : "0.0", shape, el);
      return line(str("stablehlo.maximum ", x, ", ", zero, " : ", t));
    }
    if (act == "sigmoid") return line(str("stablehlo.logistic ", x, " : ", t));
    if (act == "tanh") return line(str("stablehlo.tanh ", x, " : ", t));
    if (act == "gelu" || act == "silu")
      return line(str("\"stablehlo.custom_call\"(", x, ") {call_target_name = \"meshplan.", act,
                      "\"} : (", t, ") -> ", t));
    return fail(ErrorCode::invalid_argument, "activation '", act, "' has no StableHLO form");
  }

  std::string act_of(const Op& op) {
    const Attribute* a = op.attribute("activation");
    const std::string* s = a ? std::get_if<std::string>(&a->value) : nullptr;
    return s ? *s : "none";
  }

  Status emit(const Op& op) {
    const Value& res = g_.values[op.results[0]];
    std::string el = MESHPLAN_TRY(element_type(res.dtype, str("op '", op.name, "'")));
    std::string rt = tensor_type(res.shape, el);
    std::vector<std::string> in;
    std::vector<std::string> in_types;
    for (ValueId v : op.operands) {
      in.push_back(names_[v]);
      in_types.push_back(MESHPLAN_TRY(type_of(v)));
    }
    auto shape = [&](size_t i) -> const std::vector<int64_t>& {
      return g_.values[op.operands[i]].shape;
    };
    device::OpConfig config = MESHPLAN_TRY(op_config(op));
    std::string r;
    switch (op.kind) {
      case OpKind::matmul: {
        const size_t ra = shape(0).size(), rb = shape(1).size();
        std::vector<int64_t> lb, rbd;
        if (rb > 2)
          for (size_t d = 0; d + 2 < ra; ++d) {
            lb.push_back(static_cast<int64_t>(d));
            rbd.push_back(static_cast<int64_t>(d));
          }
        int64_t lc = static_cast<int64_t>(config.transpose_a ? ra - 2 : ra - 1);
        int64_t rc = static_cast<int64_t>(config.transpose_b ? rb - 1 : rb - 2);
        std::string dims =
            lb.empty() ? "" : str(", batching_dims = ", ints_text(lb), " x ", ints_text(rbd));
        r = line(str("stablehlo.dot_general ", in[0], ", ", in[1], dims, ", contracting_dims = [",
                     lc, "] x [", rc, "] : (", in_types[0], ", ", in_types[1], ") -> ", rt));
        r = MESHPLAN_TRY(activation(act_of(op), r, res.shape, el));
        break;
      }
      case OpKind::add:
      case OpKind::subtract:
      case OpKind::multiply:
      case OpKind::divide:
      case OpKind::maximum:
      case OpKind::minimum: {
        std::string a = broadcast(in[0], shape(0), res.shape, el);
        std::string b = broadcast(in[1], shape(1), res.shape, el);
        r = line(str("stablehlo.", device::op_name(op.kind), " ", a, ", ", b, " : ", rt));
        r = MESHPLAN_TRY(activation(act_of(op), r, res.shape, el));
        break;
      }
      case OpKind::relu:
        r = MESHPLAN_TRY(activation("relu", in[0], res.shape, el));
        break;
      case OpKind::sigmoid:
      case OpKind::tanh:
        r = MESHPLAN_TRY(activation(device::op_name(op.kind), in[0], res.shape, el));
        break;
      case OpKind::exp:
      case OpKind::log:
      case OpKind::sqrt:
      case OpKind::rsqrt:
      case OpKind::neg:
      case OpKind::abs: {
        std::string_view n = op.kind == OpKind::exp   ? "exponential"
                             : op.kind == OpKind::neg ? "negate"
                                                      : device::op_name(op.kind);
        r = line(str("stablehlo.", n, " ", in[0], " : ", rt));
        break;
      }
      case OpKind::reduce_sum:
      case OpKind::reduce_max: {
        std::vector<int64_t> dims, kept;
        const auto& s = shape(0);
        for (size_t d = 0; d < s.size(); ++d) {
          bool reduced = config.num_dims == 0;
          for (int i = 0; i < config.num_dims; ++i)
            reduced |= (config.dims[i] + static_cast<int64_t>(s.size())) %
                           static_cast<int64_t>(s.size()) ==
                       static_cast<int64_t>(d);
          if (reduced)
            dims.push_back(static_cast<int64_t>(d));
          else
            kept.push_back(s[d]);
        }
        bool sum = op.kind == OpKind::reduce_sum;
        std::string_view literal = !is_int(el)          ? (sum ? "0.0" : "0xFF800000")
                                   : sum || el != "i32" ? "0"
                                                        : "-2147483648";
        std::string init =
            line(str("stablehlo.constant dense<", literal, "> : ", tensor_type({}, el)));
        r = line(str("stablehlo.reduce(", in[0], " init: ", init, ") applies stablehlo.",
                     sum ? "add" : "maximum", " across dimensions = ", ints_text(dims), " : (",
                     in_types[0], ", ", tensor_type({}, el), ") -> ", tensor_type(kept, el)));
        if (kept != res.shape)  // keepdim
          r = line(str("stablehlo.reshape ", r, " : (", tensor_type(kept, el), ") -> ", rt));
        break;
      }
      case OpKind::reshape:
        r = line(str("stablehlo.reshape ", in[0], " : (", in_types[0], ") -> ", rt));
        break;
      case OpKind::typecast:
        r = line(str("stablehlo.convert ", in[0], " : (", in_types[0], ") -> ", rt));
        break;
      case OpKind::bitcast:
        r = line(str("stablehlo.bitcast_convert ", in[0], " : (", in_types[0], ") -> ", rt));
        break;
      case OpKind::permute: {
        std::vector<int64_t> perm;
        const int64_t rank = static_cast<int64_t>(shape(0).size());
        for (int i = 0; i < config.num_dims; ++i) perm.push_back((config.dims[i] + rank) % rank);
        r = line(str("stablehlo.transpose ", in[0], ", dims = ", ints_text(perm), " : (",
                     in_types[0], ") -> ", rt));
        break;
      }
      case OpKind::concat: {
        const int64_t rank = static_cast<int64_t>(res.shape.size());
        std::string ops, types;
        for (size_t i = 0; i < in.size(); ++i) {
          ops += (i ? ", " : "") + in[i];
          types += (i ? ", " : "") + in_types[i];
        }
        r = line(str("stablehlo.concatenate ", ops, ", dim = ", (config.axis + rank) % rank, " : (",
                     types, ") -> ", rt));
        break;
      }
      case OpKind::slice: {
        const auto& s = shape(0);
        std::string spec;
        for (size_t d = 0; d < s.size(); ++d) {
          int64_t b = 0, st = 1, n = s[d];
          if (d < config.num_slice) {
            b = config.begins[d];
            st = config.steps[d];
            if (b < 0) b += n;
            b = std::clamp<int64_t>(b, 0, n);
          }
          int64_t e = b + (res.shape[d] - 1) * st + 1;
          spec += str(d ? ", " : "", b, ":", e);
          if (st != 1) spec += str(":", st);
        }
        r = line(str("stablehlo.slice ", in[0], " [", spec, "] : (", in_types[0], ") -> ", rt));
        break;
      }
      // The other ops of the families handled above, then every op of the other families.
      case OpKind::linear:
      case OpKind::gelu:
      case OpKind::silu:
      case OpKind::reciprocal:
      case OpKind::reduce_mean:
      case OpKind::clamp:
      case OpKind::reduce_min:
      case OpKind::reduce_prod:
      case OpKind::gelu_tanh:
      case OpKind::sin:
      case OpKind::cos:
      case OpKind::tan:
      case OpKind::floor:
      case OpKind::ceil:
      case OpKind::round_even:
      case OpKind::round_afz:
      case OpKind::sign:
      case OpKind::atan2:
      case OpKind::power:
      case OpKind::remainder:
      case OpKind::log1p:
      case OpKind::expm1:
      case OpKind::cbrt:
      case OpKind::isfinite:
      case OpKind::erf:
      case OpKind::bitwise_and:
      case OpKind::bitwise_or:
      case OpKind::bitwise_xor:
      case OpKind::bitwise_not:
      case OpKind::shift_left:
      case OpKind::shift_right_arithmetic:
      case OpKind::shift_right_logical:
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar)                       \
  MESHPLAN_CASE_OUTSIDE6_(family, convert, eltwise_binary, eltwise_unary, matmul, reduction, \
                          shape, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      {
        // Other pointwise ops with a one-to-one StableHLO op (ops.def's stablehlo column), in
        // the generic form, which every op name parses in.
        std::string_view shlo = device::op_info(op.kind).stablehlo;
        bool same_type = op.kind != OpKind::isfinite;  // is_finite's result is i1
        if (!shlo.empty() && same_type && device::is_unary_eltwise(op.kind)) {
          r = line(str("\"", shlo, "\"(", in[0], ") : (", rt, ") -> ", rt));
          break;
        }
        if (!shlo.empty() && device::is_binary_eltwise(op.kind)) {
          std::string a = broadcast(in[0], shape(0), res.shape, el);
          std::string b = broadcast(in[1], shape(1), res.shape, el);
          r = line(str("\"", shlo, "\"(", a, ", ", b, ") : (", rt, ", ", rt, ") -> ", rt));
          break;
        }
        std::string ops, types, attrs;
        for (size_t i = 0; i < in.size(); ++i) {
          ops += (i ? ", " : "") + in[i];
          types += (i ? ", " : "") + in_types[i];
        }
        for (const Attribute& a : op.attributes)
          attrs += str(", meshplan.", a.name, " = ", shlo::attr_value_text(a.value));
        r = line(str("\"stablehlo.custom_call\"(", ops, ") {call_target_name = \"meshplan.",
                     device::op_name(op.kind), "\"", attrs, "} : (", types, ") -> ", rt));
        break;
      }
    }
    names_[op.results[0]] = r;
    return {};
  }

  const Graph& g_;
  std::vector<std::string> names_;
  std::ostringstream body_;
  int next_ = 0;
};

/// Checks the parsed argument / result shardings against the mesh: known axes, each used once
/// per tensor, matching rank, dims divisible by their axes.
Status check_shardings(const Graph& g, const shlo::Module& m) {
  const shlo::MeshDecl* mesh = m.main_mesh();
  const shlo::Func* f = m.entry();
  if (!mesh || !f) return {};
  auto check = [&](const shlo::TensorSharding& s, const shlo::TensorType& t,
                   const std::string& what) -> Status {
    if (s.dims.size() != t.shape.size())
      return fail(ErrorCode::invalid_argument, what, ": sharding ", shlo::sharding_string(s),
                  " has ", s.dims.size(), " dims for a tensor of rank ", t.shape.size());
    std::vector<std::string> used;
    auto use = [&](const shlo::AxisRef& a) -> Status {
      if (mesh->axis_size(a.name) == 0) {
        std::string names;
        for (const auto& [n, size] : mesh->axes) names += (names.empty() ? "" : ", ") + n;
        return fail(ErrorCode::invalid_argument, what, ": sharding names unknown mesh axis '",
                    a.name, "' (the mesh has ", names, ")");
      }
      if (a.size == 0 && std::find(used.begin(), used.end(), a.name) != used.end())
        return fail(ErrorCode::invalid_argument, what, ": mesh axis '", a.name,
                    "' is used twice in one sharding");
      if (a.size == 0) used.push_back(a.name);
      return {};
    };
    for (size_t d = 0; d < s.dims.size(); ++d) {
      int64_t split = 1;
      for (const auto& a : s.dims[d].axes) {
        MESHPLAN_TRY(use(a));
        split *= mesh->size_of(a);
      }
      if (t.shape[d] % split != 0)
        return fail(ErrorCode::invalid_argument, what, ": dim ", d, " of size ", t.shape[d],
                    " is not divisible by the ", split, " devices of its axes in ",
                    shlo::sharding_string(s));
    }
    for (const auto& a : s.replicated) MESHPLAN_TRY(use(a));
    return {};
  };
  for (size_t i = 0; i < f->args.size(); ++i) {
    const auto& v = m.values[f->args[i].value];
    if (v.sharding)
      MESHPLAN_TRY(check(*v.sharding, v.type,
                         str("graph '", g.name, "' argument '", g.values[g.arguments[i]].name, "' ",
                             type_string(v.type))));
  }
  for (size_t i = 0; i < f->results.size(); ++i)
    if (f->results[i].sharding)
      MESHPLAN_TRY(
          check(*f->results[i].sharding, f->results[i].type,
                str("graph '", g.name, "' output ", i, " '", g.values[g.outputs[i]].name, "'")));
  return {};
}

/// Parses each sharding annotation on its own (a one-argument module on the same mesh), so that a
/// syntax error or an unknown axis is reported with the argument or output it belongs to.
Status check_annotation_syntax(const Graph& g, const MeshAnnotations& ann) {
  if (ann.axes.empty()) return {};
  std::string mesh = "sdy.mesh @mesh = <[", names;
  for (size_t i = 0; i < ann.axes.size(); ++i) {
    mesh += str(i ? ", " : "", '"', ann.axes[i].first, "\"=", ann.axes[i].second);
    names += (i ? ", " : "") + ann.axes[i].first;
  }
  mesh += "]>\n";
  auto check = [&](ValueId v, const std::string& text, const std::string& what) -> Status {
    const Value& value = g.values[v];
    std::string el = MESHPLAN_TRY(element_type(value.dtype, what));
    std::string module = mesh + "func.func @main(%arg0: " + tensor_type(value.shape, el) +
                         " {sdy.sharding = #sdy.sharding<@mesh, " + text + ">}) {\n  return\n}\n";
    auto parsed = shlo::parse_module(module, "annotation");
    if (!parsed)
      return fail(ErrorCode::invalid_argument, what, ": sharding '", text,
                  "' does not read: ", parsed.error().message, " (mesh axes: ", names, ")");
    return {};
  };
  for (const auto& [name, text] : ann.arguments)
    for (ValueId a : g.arguments)
      if (g.values[a].name == name)
        MESHPLAN_TRY(check(a, text, str("graph '", g.name, "' argument '", name, "'")));
  for (size_t i = 0; i < ann.outputs.size() && i < g.outputs.size(); ++i)
    if (!ann.outputs[i].empty())
      MESHPLAN_TRY(
          check(g.outputs[i], ann.outputs[i],
                str("graph '", g.name, "' output ", i, " '", g.values[g.outputs[i]].name, "'")));
  return {};
}

}  // namespace

Result<shlo::Module> export_stablehlo(const Graph& global, const MeshAnnotations& annotations) {
  Exporter e(global);
  std::string text = MESHPLAN_TRY(e.run(annotations));
  MESHPLAN_TRY(check_annotation_syntax(global, annotations));
  std::string file = (global.name.empty() ? std::string("graph") : global.name) + ".export.mlir";
  auto parsed = shlo::parse_module(text, file);
  if (!parsed)
    return fail(parsed.error().code, "export of graph '", global.name,
                "' (check the sharding annotations): ", parsed.error().message);
  MESHPLAN_TRY(check_shardings(global, *parsed));
  // Parse the printed form once more, so that the locations later passes name (file:line:col)
  // are lines of what print_module / `meshplan-compile MODEL.json --emit=stablehlo` shows.
  auto printed = shlo::parse_module(shlo::print_module(*parsed), file);
  if (!printed)
    return fail(ErrorCode::internal, "export of graph '", global.name,
                "': the printed module does not parse back: ", printed.error().message);
  return std::move(*printed);
}

Result<std::string> export_stablehlo_text(const Graph& global, const MeshAnnotations& annotations) {
  return shlo::print_module(MESHPLAN_TRY(export_stablehlo(global, annotations)));
}

shlo::PipelineOptions pipeline_options(const MeshAnnotations& annotations, int64_t rows,
                                       int64_t cols) {
  shlo::PipelineOptions o;
  o.mesh_rows = annotations.axes.empty() ? rows : annotations.rows();
  o.mesh_cols = annotations.axes.empty() ? cols : annotations.cols();
  return o;
}

Status parse_mesh_size(std::string_view text, int64_t* rows, int64_t* cols) {
  // One parser for every --mesh form (device/mesh_spec.hpp); a JSON file is read for its shape.
  device::MeshDesc mesh = MESHPLAN_TRY(device::resolve_mesh_spec(text, device::wormhole_b0()));
  *rows = mesh.rows;
  *cols = mesh.cols;
  return {};
}

}  // namespace meshplan::planner
