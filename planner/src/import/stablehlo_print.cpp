// The module printer: StableHLO/Shardy textual syntax, values renumbered in pre-order (%argN
// for block arguments, %N for results) as MLIR's printer does; pretty forms where StableHLO and
// Shardy have them, the generic form otherwise.
#include <algorithm>
#include <map>
#include <sstream>

#include "import/stablehlo_ops.hpp"
#include "import/stablehlo_print_text.hpp"
#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

namespace {

/// A `stablehlo.while` StableHLO prints in its pretty form: `cond` and `do` regions whose
/// arguments are the loop-carried values.
bool is_pretty_while(const Op& op) {
  return op.name == "stablehlo.while" && op.regions.size() == 2 && op.props.empty() &&
         op.results.size() == op.operands.size() &&
         op.regions[0].args.size() == op.operands.size() &&
         op.regions[1].args.size() == op.operands.size();
}

/// An rng_bit_generator whose algorithm has the pretty form `algorithm = NAME`.
bool is_rng_pair(const Op& op) {
  if (op.name != "stablehlo.rng_bit_generator" || op.results.size() != 2 ||
      op.operands.size() != 1 || op.props.size() != 1 || !op.regions.empty())
    return false;
  const Attr* a = op.prop("rng_algorithm");
  return a && a->kind == Attr::Kind::opaque && a->text.starts_with("#stablehlo<rng_algorithm ") &&
         a->text.ends_with(">");
}

/// The inherent attributes the pretty form of `stablehlo.custom_call` writes in its dictionary
/// (the parser moves them back).
bool custom_call_dict_prop(std::string_view k) {
  for (const char* p : {"has_side_effect", "backend_config", "api_version", "called_computations",
                        "operand_layouts", "result_layouts", "output_operand_aliases"})
    if (k == p) return true;
  return false;
}

/// Renders one function: names values in pre-order, then prints.
class Printer {
 public:
  explicit Printer(const Module& m) : m_(m) {}

  void func(const Func& f, int indent) {
    names_.clear();
    next_arg_ = 0;
    next_result_ = 0;
    next_conflict_ = 0;
    used_.clear();
    for (const ArgInfo& a : f.args) names_[a.value] = "%arg" + std::to_string(next_arg_++);
    name_block(f.body);
    pad(indent);
    out_ << "func.func " << (f.visibility.empty() ? "" : f.visibility + " ") << "@" << f.name
         << "(";
    for (size_t i = 0; i < f.args.size(); ++i) {
      const ArgInfo& a = f.args[i];
      const Value& v = m_.values[a.value];
      out_ << (i ? ", " : "") << names_[a.value] << ": " << type_string(v.type);
      dict(a.attrs, v.sharding ? "#sdy.sharding" + sharding_string(*v.sharding) : "",
           "sdy.sharding", " ");
    }
    out_ << ") -> ";
    bool any_attrs = false;
    for (const ResultInfo& r : f.results) any_attrs |= !r.attrs.empty() || r.sharding.has_value();
    bool parens = f.results.size() != 1 || any_attrs || f.paren_results;
    if (parens) out_ << "(";
    for (size_t i = 0; i < f.results.size(); ++i) {
      const ResultInfo& r = f.results[i];
      out_ << (i ? ", " : "") << type_string(r.type);
      dict(r.attrs, r.sharding ? "#sdy.sharding" + sharding_string(*r.sharding) : "",
           "sdy.sharding", " ");
    }
    if (parens) out_ << ")";
    if (!f.attrs.empty()) dict(f.attrs, "", "", " attributes ");
    out_ << " {\n";
    block(f.body, indent + 1);
    pad(indent);
    out_ << "}\n";
  }

  std::string take() { return out_.str(); }
  void mesh(const MeshDecl& mesh, int indent) {
    pad(indent);
    out_ << "sdy.mesh @" << mesh.name << " = <[";
    for (size_t i = 0; i < mesh.axes.size(); ++i)
      out_ << (i ? ", " : "") << quote(mesh.axes[i].first) << "=" << mesh.axes[i].second;
    out_ << "]";
    if (!mesh.device_ids.empty()) {
      out_ << ", device_ids=[";
      for (size_t i = 0; i < mesh.device_ids.size(); ++i)
        out_ << (i ? ", " : "") << mesh.device_ids[i];
      out_ << "]";
    }
    out_ << ">\n";
  }
  void raw(std::string_view s) { out_ << s; }
  void pad(int indent) {
    for (int i = 0; i < indent; ++i) out_ << "  ";
  }
  /// `{a = 1, b}` sorted by name with an extra pre-rendered entry; nothing when empty.
  void dict(const std::vector<NamedAttr>& attrs, const std::string& extra,
            const std::string& extra_name, const char* lead) {
    std::vector<std::pair<std::string, std::string>> items;
    for (const auto& [k, v] : attrs)
      items.emplace_back(k, v.kind == Attr::Kind::unit ? "" : attr_string(v));
    if (!extra.empty()) items.emplace_back(extra_name, extra);
    if (items.empty()) return;
    std::sort(items.begin(), items.end());
    out_ << lead << "{";
    for (size_t i = 0; i < items.size(); ++i)
      out_ << (i ? ", " : "") << items[i].first
           << (items[i].second.empty() ? "" : " = " + items[i].second);
    out_ << "}";
  }

 private:
  /// Names the values of one region as MLIR's printer does: first the results of the region's
  /// own ops in order (`%N`, or the op's asm name such as `%c`/`%cst` for `stablehlo.constant`,
  /// made unique with `_K` from one per-function counter), then each nested region, which starts
  /// from the counters and names in scope at the end of its parent region (so sibling regions
  /// reuse the same numbers). A while loop's region arguments are named `iterArg`.
  void name_block(const Block& b) {
    for (OpId o : b.ops) {
      const Op& op = m_.ops[o];
      std::string asm_name = result_asm_name(op);
      if (is_rng_pair(op)) {
        // StableHLO names rng_bit_generator's results `%output_state, %output`.
        names_[op.results[0]] = unique_name("output_state");
        names_[op.results[1]] = unique_name("output");
      } else if (!asm_name.empty()) {
        names_[op.results[0]] = unique_name(asm_name);
      } else if (op.results.size() == 1) {
        names_[op.results[0]] = "%" + std::to_string(next_result_++);
      } else if (op.results.size() > 1) {
        std::string base = "%" + std::to_string(next_result_++);
        for (size_t i = 0; i < op.results.size(); ++i)
          names_[op.results[i]] = base + "#" + std::to_string(i);
      }
    }
    int saved_arg = next_arg_, saved_result = next_result_, saved_conflict = next_conflict_;
    size_t saved_used = used_.size();
    for (OpId o : b.ops) {
      const Op& op = m_.ops[o];
      bool loop = is_pretty_while(op);
      for (const Block& r : op.regions) {
        next_arg_ = saved_arg;
        next_result_ = saved_result;
        next_conflict_ = saved_conflict;
        used_.resize(saved_used);
        for (ValueId a : r.args)
          names_[a] = loop ? unique_name("iterArg") : "%arg" + std::to_string(next_arg_++);
        name_block(r);
      }
    }
    next_arg_ = saved_arg;
    next_result_ = saved_result;
    next_conflict_ = saved_conflict;
    used_.resize(saved_used);
  }

  /// The name MLIR's printer gives the single result of `op` (OpAsmOpInterface), or "".
  std::string result_asm_name(const Op& op) const {
    if (op.name != "stablehlo.constant" || op.results.size() != 1) return "";
    std::string_view t = m_.values[op.results[0]].type.element;
    bool integer = !t.empty() && (t[0] == 'i' || t.starts_with("ui"));
    return integer ? "c" : "cst";
  }

  /// `%base`, or `%base_K` with the next free K when `base` is already in scope.
  std::string unique_name(const std::string& base) {
    std::string n = "%" + base;
    while (std::find(used_.begin(), used_.end(), n) != used_.end())
      n = "%" + base + "_" + std::to_string(next_conflict_++);
    used_.push_back(n);
    return n;
  }

  std::string name(ValueId v) {
    auto it = names_.find(v);
    return it == names_.end() ? "%<undefined>" : it->second;
  }
  std::string type(ValueId v) { return type_string(m_.values[v].type); }

  void operands(const Op& op, size_t from = 0, size_t to = SIZE_MAX) {
    to = std::min(to, op.operands.size());
    for (size_t i = from; i < to; ++i) out_ << (i > from ? ", " : "") << name(op.operands[i]);
  }
  void func_type(const Op& op) {
    out_ << "(";
    for (size_t i = 0; i < op.operands.size(); ++i) out_ << (i ? ", " : "") << type(op.operands[i]);
    out_ << ") -> ";
    if (op.results.size() == 1) {
      out_ << type(op.results[0]);
    } else {
      out_ << "(";
      for (size_t i = 0; i < op.results.size(); ++i) out_ << (i ? ", " : "") << type(op.results[i]);
      out_ << ")";
    }
  }
  /// `: T` when every operand and the result share one type, else the function type.
  void same_or_func_type(const Op& op) {
    bool same = op.results.size() == 1;
    for (ValueId v : op.operands) same = same && m_.values[v].type == m_.values[op.results[0]].type;
    out_ << " : ";
    if (same)
      out_ << type(op.results[0]);
    else
      func_type(op);
  }
  /// The tail of most pretty forms: `{attrs} : (T...) -> T` (or `: T` when `same` allows).
  bool attrs_and_type(const Op& op, bool same = false) {
    op_attrs(op);
    out_ << " : ";
    if (same)
      same_or_func_type(op);
    else
      func_type(op);
    return true;
  }
  std::string shardings_text(const Op& op) {
    std::string extra;
    if (!op.shardings.empty()) {
      extra = "#sdy.sharding_per_value<[";
      for (size_t i = 0; i < op.shardings.size(); ++i)
        extra += (i ? ", " : "") + sharding_string(op.shardings[i]);
      extra += "]>";
    }
    return extra;
  }
  void op_attrs(const Op& op, const char* lead = " ") {
    dict(op.attrs, shardings_text(op), "sdy.sharding", lead);
  }
  std::string ints(const Attr* a) {
    std::string s = "[";
    if (a)
      for (size_t i = 0; i < a->ints.size(); ++i) s += (i ? ", " : "") + std::to_string(a->ints[i]);
    return s + "]";
  }
  void region(const Block& b, int indent, bool with_header) {
    out_ << "{\n";
    if (with_header && !b.args.empty()) {
      pad(indent);
      out_ << "^bb0(";
      for (size_t i = 0; i < b.args.size(); ++i)
        out_ << (i ? ", " : "") << name(b.args[i]) << ": " << type(b.args[i]);
      out_ << "):\n";
    }
    block(b, indent + 1);
    pad(indent);
    out_ << "}";
  }

  void block(const Block& b, int indent) {
    for (OpId o : b.ops) op(m_.ops[o], indent);
  }

  void op(const Op& op, int indent);
  bool pretty(const Op& op, int indent);
  void generic(const Op& op, int indent);

  const Module& m_;
  std::ostringstream out_;
  std::map<ValueId, std::string> names_;
  int next_arg_ = 0;
  int next_result_ = 0;
  int next_conflict_ = 0;
  std::vector<std::string> used_;  // the asm names in scope (region arguments named by an op)
};

bool is_unary(std::string_view n) {
  return is_elementwise_unary(n);
}
bool is_binary(std::string_view n) {
  return is_elementwise_binary(n);
}

void Printer::op(const Op& op, int indent) {
  pad(indent);
  if (is_rng_pair(op)) {
    out_ << name(op.results[0]) << ", " << name(op.results[1]) << " = ";
  } else if (!op.results.empty()) {
    std::string n = name(op.results[0]);
    if (op.results.size() > 1)
      n = n.substr(0, n.find('#')) + ":" + std::to_string(op.results.size());
    out_ << n << " = ";
  }
  if (!pretty(op, indent)) generic(op, indent);
  out_ << "\n";
}

void Printer::generic(const Op& op, int indent) {
  out_ << '"' << op.name << "\"(";
  operands(op);
  out_ << ")";
  if (!op.props.empty()) {
    Attr d;
    d.kind = Attr::Kind::dict;
    d.dict = op.props;
    std::sort(d.dict.begin(), d.dict.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    out_ << " <" << attr_string(d) << ">";
  }
  if (!op.regions.empty()) {
    out_ << " (";
    for (size_t i = 0; i < op.regions.size(); ++i) {
      if (i) out_ << ", ";
      region(op.regions[i], indent, true);
    }
    out_ << ")";
  }
  op_attrs(op);
  out_ << " : ";
  func_type(op);
}

bool Printer::pretty(const Op& op, int indent) {
  std::string_view n = op.name;
  if (n == "func.return" || n == "stablehlo.return" || n == "sdy.return") {
    out_ << (n == "func.return" ? "return" : n);
    if (!op.operands.empty()) {
      out_ << " ";
      operands(op);
      out_ << " : ";
      for (size_t i = 0; i < op.operands.size(); ++i)
        out_ << (i ? ", " : "") << type(op.operands[i]);
    }
    return true;
  }
  if (n == "func.call" && op.props.size() == 1 && op.props[0].first == "callee" &&
      op.props[0].second.kind == Attr::Kind::symbol && op.regions.empty()) {
    out_ << "call " << attr_string(op.props[0].second) << "(";
    operands(op);
    out_ << ")";
    op_attrs(op);
    out_ << " : ";
    func_type(op);
    return true;
  }
  if (n.starts_with("sdy.")) {
    std::string_view s = n.substr(4);
    if (s == "sharding_constraint" || s == "reshard") {
      if (!op.sharding || op.operands.size() != 1) return false;
      out_ << n << " " << name(op.operands[0]) << " " << sharding_string(*op.sharding);
      op_attrs(op);
      out_ << " : " << type(op.results[0]);
      return true;
    }
    if (s == "constant") {
      const Attr* v = op.prop("value");
      if (!v || v->kind != Attr::Kind::dense || op.props.size() != 1 || !op.operands.empty())
        return false;
      out_ << n;
      op_attrs(op);
      out_ << " " << attr_string(*v);
      return true;
    }
    if (s == "func_data_flow_edge" && op.operands.size() == 1 && op.results.size() == 1 &&
        op.props.empty() && op.regions.empty()) {
      out_ << n << " " << name(op.operands[0]);
      op_attrs(op);
      out_ << " : " << type(op.results[0]);
      return true;
    }
    if (s == "data_flow_edge" && op.operands.size() == 1 && op.results.size() == 1 &&
        op.attrs.empty() && op.props.empty() && op.shardings.size() <= 1) {
      out_ << n << " " << name(op.operands[0]);
      if (!op.shardings.empty()) out_ << " sharding=" << sharding_string(op.shardings[0]);
      out_ << " : " << type(op.results[0]);
      return true;
    }
    if ((s == "sharding_group" || s == "propagation_barrier") && op.operands.size() == 1 &&
        op.props.size() == 1) {
      out_ << n << " " << name(op.operands[0]) << " " << op.props[0].first << "="
           << attr_string(op.props[0].second);
      op_attrs(op);
      out_ << " : " << type(op.operands[0]);
      return true;
    }
    if (s == "all_gather" || s == "all_slice" || s == "all_reduce" || s == "all_to_all" ||
        s == "collective_permute" || s == "reduce_scatter" || s == "replicated_to_unreduced" ||
        s == "sharded_to_unreduced") {
      if (!op.sharding || op.operands.size() != 1) return false;
      out_ << n << " ";
      if (s == "all_gather" || s == "all_slice" || s == "reduce_scatter" ||
          s == "sharded_to_unreduced") {
        out_ << "[";
        for (size_t d = 0; d < op.dim_axes.size(); ++d)
          out_ << (d ? ", " : "") << axes_string(op.dim_axes[d]);
        out_ << "] ";
      } else if (s == "all_reduce") {
        if (const Attr* kind = op.prop("reduction")) out_ << kind->text << " ";
        out_ << axes_string(op.reduce_axes) << " ";
      } else if (s == "replicated_to_unreduced") {
        out_ << axes_string(op.reduce_axes) << " ";
      } else if (s == "all_to_all") {
        out_ << "[";
        for (size_t i = 0; i < op.all_to_all.size(); ++i) {
          const auto& p = op.all_to_all[i];
          out_ << (i ? ", " : "") << axes_string(p.axes) << ": " << p.src << "->" << p.tgt;
        }
        out_ << "] ";
      }
      out_ << name(op.operands[0]) << " out_sharding=" << sharding_string(*op.sharding);
      op_attrs(op);
      same_or_func_type(op);  // a per-device all_slice changes the type
      return true;
    }
    if (s == "manual_computation") {
      if (op.regions.size() != 1) return false;
      out_ << "sdy.manual_computation(";
      operands(op);
      out_ << ") in_shardings=[";
      for (size_t i = 0; i < op.in_shardings.size(); ++i)
        out_ << (i ? ", " : "") << sharding_string(op.in_shardings[i]);
      out_ << "] out_shardings=[";
      for (size_t i = 0; i < op.out_shardings.size(); ++i)
        out_ << (i ? ", " : "") << sharding_string(op.out_shardings[i]);
      out_ << "] manual_axes={";
      for (size_t i = 0; i < op.manual_axes.size(); ++i)
        out_ << (i ? ", " : "") << quote(op.manual_axes[i]);
      out_ << "} (";
      const Block& b = op.regions[0];
      for (size_t i = 0; i < b.args.size(); ++i)
        out_ << (i ? ", " : "") << name(b.args[i]) << ": " << type(b.args[i]);
      out_ << ") ";
      region(b, indent, false);
      op_attrs(op);
      out_ << " : ";
      func_type(op);
      return true;
    }
    return false;
  }
  if (is_pretty_while(op)) {
    // `stablehlo.while(%iterArg = %x, ...) : T, ... attributes {...}` then ` cond {...} do {...}`
    const Block& cond = op.regions[0];
    out_ << n << "(";
    for (size_t i = 0; i < op.operands.size(); ++i)
      out_ << (i ? ", " : "") << name(cond.args[i]) << " = " << name(op.operands[i]);
    out_ << ")";
    if (!op.operands.empty()) {
      out_ << " : ";
      for (size_t i = 0; i < op.operands.size(); ++i)
        out_ << (i ? ", " : "") << type(op.operands[i]);
    }
    op_attrs(op, " attributes ");
    out_ << "\n";
    pad(indent);
    out_ << " cond ";
    region(cond, indent, false);
    out_ << " do ";
    region(op.regions[1], indent, false);
    return true;
  }
  if (n == "stablehlo.optimization_barrier" && !op.operands.empty() && op.props.empty() &&
      op.regions.empty() && op.results.size() == op.operands.size()) {
    // `stablehlo.optimization_barrier {attributes} %a, %b : T, U` (attributes first).
    out_ << n;
    op_attrs(op);
    out_ << " ";
    operands(op);
    out_ << " : ";
    for (size_t i = 0; i < op.operands.size(); ++i) out_ << (i ? ", " : "") << type(op.operands[i]);
    return true;
  }
  if (n == "stablehlo.custom_call" && op.regions.empty()) {
    // `stablehlo.custom_call @target(%x, ...) {inherent and other attributes} : (T...) -> ...`
    const Attr* target = op.prop("call_target_name");
    if (!target || target->kind != Attr::Kind::string) return false;
    std::vector<NamedAttr> all = op.attrs;
    for (const auto& p : op.props) {
      if (p.first == "call_target_name") continue;
      if (!custom_call_dict_prop(p.first)) return false;
      all.push_back(p);
    }
    out_ << n << " @" << target->text << "(";
    operands(op);
    out_ << ")";
    dict(all, shardings_text(op), "sdy.sharding", " ");
    out_ << " : ";
    func_type(op);
    return true;
  }
  if (n == "stablehlo.reduce" && op.results.size() > 1 && op.regions.size() == 1 &&
      op.operands.size() == 2 * op.results.size() &&
      op.regions[0].args.size() == op.operands.size() && op.props.size() == 1 &&
      op.prop("dimensions") && op.prop("dimensions")->kind == Attr::Kind::dense_array) {
    // A variadic reduce: `(%x init: %i), (%y init: %j) across dimensions = [..] {attrs} : F`,
    // then `reducer(%lhs0: T, %rhs0: T) (%lhs1: T, %rhs1: T) {...}` (the block takes every
    // lhs, then every rhs).
    const size_t k = op.results.size();
    const Block& b = op.regions[0];
    out_ << n;
    for (size_t i = 0; i < k; ++i)
      out_ << (i ? ", (" : "(") << name(op.operands[i]) << " init: " << name(op.operands[k + i])
           << ")";
    out_ << " across dimensions = " << ints(op.prop("dimensions"));
    op_attrs(op);
    out_ << " : ";
    func_type(op);
    out_ << "\n";
    pad(indent + 1);
    out_ << "reducer";
    for (size_t i = 0; i < k; ++i)
      out_ << "(" << name(b.args[i]) << ": " << type(b.args[i]) << ", " << name(b.args[k + i])
           << ": " << type(b.args[k + i]) << ") ";
    region(b, indent + 1, false);
    return true;
  }
  if (is_rng_pair(op)) {
    // `stablehlo.rng_bit_generator %s, algorithm =  NAME {attrs} : (S) -> (S, T)`; MLIR's
    // printer writes two spaces before the algorithm's name.
    const std::string& t = op.prop("rng_algorithm")->text;
    const size_t from = std::string_view("#stablehlo<rng_algorithm ").size();
    out_ << n << " " << name(op.operands[0])
         << ", algorithm =  " << t.substr(from, t.size() - from - 1);
    return attrs_and_type(op);
  }
  if (!n.starts_with("stablehlo.") || op.results.size() != 1) return false;
  std::string_view s = n.substr(10);
  if (s == "dynamic_slice" && op.operands.size() >= 1 && op.props.size() == 1 &&
      op.prop("slice_sizes") && op.prop("slice_sizes")->kind == Attr::Kind::dense_array &&
      op.regions.empty()) {
    // `stablehlo.dynamic_slice %x, %i, %j, sizes = [..] {attrs} : (T, I, I) -> R`
    out_ << n << " ";
    operands(op);
    out_ << ", sizes = " << ints(op.prop("slice_sizes"));
    return attrs_and_type(op);
  }
  if (is_unary(s) && op.operands.size() == 1 && op.props.empty()) {
    out_ << n << " " << name(op.operands[0]);
    op_attrs(op);
    same_or_func_type(op);
    return true;
  }
  if (is_binary(s) && op.operands.size() == 2 && op.props.empty()) {
    out_ << n << " ";
    operands(op);
    op_attrs(op);
    same_or_func_type(op);
    return true;
  }
  if (s == "clamp" && op.operands.size() == 3 && op.props.empty() && op.regions.empty()) {
    // `stablehlo.clamp %min, %x, %max : T` when all four types agree, else the function type.
    out_ << n << " ";
    operands(op);
    op_attrs(op);
    same_or_func_type(op);
    return true;
  }
  if (s == "select" && op.operands.size() == 3 && op.props.empty() && op.regions.empty()) {
    // `stablehlo.select %p, %a, %b : P, T` when both branches have the result's type.
    out_ << n << " ";
    operands(op);
    op_attrs(op);
    const auto& t = m_.values[op.results[0]].type;
    if (m_.values[op.operands[1]].type == t && m_.values[op.operands[2]].type == t) {
      out_ << " : " << type(op.operands[0]) << ", " << type(op.results[0]);
    } else {
      out_ << " : ";
      func_type(op);
    }
    return true;
  }
  auto only = [&](std::initializer_list<std::string_view> names) {
    for (const auto& [k, v] : op.props)
      if (std::find(names.begin(), names.end(), k) == names.end()) return false;
    return true;
  };
  auto has_ints = [&](std::string_view p) {
    const Attr* a = op.prop(p);
    return a && a->kind == Attr::Kind::dense_array;
  };
  if (s == "reverse" && op.operands.size() == 1 && has_ints("dimensions") && only({"dimensions"})) {
    out_ << n << " " << name(op.operands[0]) << ", dims = " << ints(op.prop("dimensions"));
    op_attrs(op);
    same_or_func_type(op);
    return true;
  }
  if (s == "fft" && op.operands.size() == 1 && has_ints("fft_length") &&
      only({"fft_type", "fft_length"})) {
    // MLIR prints the enum after `type = ` with its own leading space.
    const Attr* kind = op.prop("fft_type");
    constexpr std::string_view prefix = "#stablehlo<fft_type ";
    if (!kind || kind->kind != Attr::Kind::opaque || !kind->text.starts_with(prefix)) return false;
    const std::string k = kind->text.substr(prefix.size(), kind->text.size() - prefix.size() - 1);
    out_ << n << " " << name(op.operands[0]) << ", type =  " << k
         << ", length = " << ints(op.prop("fft_length"));
    op_attrs(op);
    out_ << " : ";
    func_type(op);
    return true;
  }
  if (s == "cholesky" && op.operands.size() == 1 && only({"lower"})) {
    const Attr* lower = op.prop("lower");
    if (lower && lower->kind != Attr::Kind::boolean) return false;
    out_ << n << " " << name(op.operands[0]);
    if (lower) out_ << ", lower = " << (lower->i ? "true" : "false");
    op_attrs(op);
    same_or_func_type(op);
    return true;
  }
  if (s == "pad" && op.operands.size() == 2 && has_ints("edge_padding_low") &&
      has_ints("edge_padding_high") && has_ints("interior_padding") &&
      only({"edge_padding_low", "edge_padding_high", "interior_padding"})) {
    // `stablehlo.pad %x, %v, low = [..], high = [..], interior = [..] : (T, S) -> R`
    out_ << n << " ";
    operands(op);
    out_ << ", low = " << ints(op.prop("edge_padding_low"))
         << ", high = " << ints(op.prop("edge_padding_high"))
         << ", interior = " << ints(op.prop("interior_padding"));
    return attrs_and_type(op);
  }
  if (s == "dynamic_update_slice" && op.operands.size() >= 2 && op.props.empty() &&
      op.regions.empty()) {
    out_ << n << " ";
    operands(op);
    return attrs_and_type(op);
  }
  if ((s == "convert" || s == "reshape" || s == "bitcast_convert") && op.operands.size() == 1 &&
      op.props.empty()) {
    out_ << n << " " << name(op.operands[0]);
    return attrs_and_type(op);
  }
  if ((s == "broadcast_in_dim" || s == "transpose") && op.operands.size() == 1) {
    const char* p = s == "transpose" ? "permutation" : "broadcast_dimensions";
    if (!has_ints(p) || !only({p})) return false;
    out_ << n << " " << name(op.operands[0]) << ", dims = " << ints(op.prop(p));
    return attrs_and_type(op);
  }
  if (s == "concatenate") {
    const Attr* d = op.prop("dimension");
    if (!d || d->kind != Attr::Kind::integer || !only({"dimension"})) return false;
    out_ << n << " ";
    operands(op);
    out_ << ", dim = " << d->i;
    return attrs_and_type(op);
  }
  if (s == "iota") {
    const Attr* d = op.prop("iota_dimension");
    if (!d || d->kind != Attr::Kind::integer || !only({"iota_dimension"}) || !op.operands.empty())
      return false;
    out_ << n << " dim = " << d->i;
    op_attrs(op);
    out_ << " : " << type(op.results[0]);
    return true;
  }
  if (s == "constant") {
    const Attr* v = op.prop("value");
    if (!v || v->kind != Attr::Kind::dense || !only({"value"}) || !op.operands.empty())
      return false;
    out_ << n;
    op_attrs(op);
    out_ << " " << attr_string(*v);
    return true;
  }
  if (s == "compare") {
    const Attr* d = op.prop("comparison_direction");
    const Attr* t = op.prop("compare_type");
    if (!d || d->kind != Attr::Kind::keyword || (t && t->kind != Attr::Kind::keyword) ||
        op.operands.size() != 2 || !only({"comparison_direction", "compare_type"}))
      return false;
    out_ << n << "  " << d->text << ", ";
    operands(op);
    if (t) out_ << ",  " << t->text;
    return attrs_and_type(op);
  }
  if ((s == "select" || s == "clamp") && op.operands.size() == 3 && op.props.empty()) {
    out_ << n << " ";
    operands(op);
    return attrs_and_type(op);
  }
  if (s == "slice" && op.operands.size() == 1) {
    if (!has_ints("start_indices") || !has_ints("limit_indices") || !has_ints("strides") ||
        !only({"start_indices", "limit_indices", "strides"}))
      return false;
    const auto& st = op.prop("start_indices")->ints;
    const auto& li = op.prop("limit_indices")->ints;
    const auto& sr = op.prop("strides")->ints;
    if (st.size() != li.size() || st.size() != sr.size()) return false;
    out_ << n << " " << name(op.operands[0]) << " [";
    for (size_t i = 0; i < st.size(); ++i) {
      out_ << (i ? ", " : "") << st[i] << ":" << li[i];
      if (sr[i] != 1) out_ << ":" << sr[i];
    }
    out_ << "]";
    return attrs_and_type(op);
  }
  if (s == "dot_general" && op.operands.size() == 2 && op.prop(kWrittenAsDot)) {
    // `stablehlo.dot %a, %b[, precision = [...]] : (T, T) -> T`
    const Attr* prec = op.prop("precision_config");
    if (prec && prec->kind != Attr::Kind::array) return false;
    out_ << "stablehlo.dot ";
    operands(op);
    if (prec) out_ << ", precision = " << attr_string(*prec);
    return attrs_and_type(op);
  }
  if (s == "dot_general" && op.operands.size() == 2) {
    static const char* keys[] = {"lhs_batching_dimensions", "rhs_batching_dimensions",
                                 "lhs_contracting_dimensions", "rhs_contracting_dimensions"};
    for (const char* k : keys)
      if (!has_ints(k)) return false;
    const Attr* prec = op.prop("precision_config");
    if (prec && prec->kind != Attr::Kind::array) return false;
    const Attr* alg = op.prop("algorithm");
    if (alg && alg->kind != Attr::Kind::opaque) return false;
    if (!only({keys[0], keys[1], keys[2], keys[3], "precision_config", "algorithm"})) return false;
    out_ << n << " ";
    operands(op);
    if (!op.prop(keys[0])->ints.empty() || !op.prop(keys[1])->ints.empty())
      out_ << ", batching_dims = " << ints(op.prop(keys[0])) << " x " << ints(op.prop(keys[1]));
    out_ << ", contracting_dims = " << ints(op.prop(keys[2])) << " x " << ints(op.prop(keys[3]));
    if (prec) out_ << ", precision = " << attr_string(*prec);
    if (alg) out_ << ", algorithm = " << alg->text;
    return attrs_and_type(op);
  }
  if (s == "reduce" && op.regions.size() == 1 && op.operands.size() == 2) {
    if (!has_ints("dimensions") || !only({"dimensions"})) return false;
    const Block& b = op.regions[0];
    out_ << n << "(" << name(op.operands[0]) << " init: " << name(op.operands[1]) << ")";
    // The short form when the body is one binary op of the two block arguments.
    bool short_form = b.args.size() == 2 && b.ops.size() == 2;
    if (short_form) {
      const Op& body = m_.ops[b.ops[0]];
      const Op& ret = m_.ops[b.ops[1]];
      short_form = body.operands.size() == 2 && body.operands[0] == b.args[0] &&
                   body.operands[1] == b.args[1] && body.props.empty() && body.attrs.empty() &&
                   body.shardings.empty() &&
                   is_binary(std::string_view(body.name).substr(
                       body.name.starts_with("stablehlo.") ? 10 : 0)) &&
                   body.name.starts_with("stablehlo.") && ret.name == "stablehlo.return" &&
                   ret.operands.size() == 1 && ret.operands[0] == body.results[0];
    }
    if (short_form) out_ << " applies " << m_.ops[b.ops[0]].name;
    out_ << " across dimensions = " << ints(op.prop("dimensions"));
    op_attrs(op);
    out_ << " : ";
    func_type(op);
    if (!short_form) {
      out_ << "\n";
      pad(indent + 1);
      out_ << "reducer(";
      for (size_t i = 0; i < b.args.size(); ++i)
        out_ << (i ? ", " : "") << name(b.args[i]) << ": " << type(b.args[i]);
      out_ << ") ";
      region(b, indent + 1, false);
    }
    return true;
  }
  if (s == "convolution" && op.operands.size() == 2) {
    const Attr* dn = op.prop("dim_numbers");
    const Attr* win = op.prop("window");
    if (!dn || dn->kind != Attr::Kind::opaque || (win && win->kind != Attr::Kind::opaque))
      return false;
    std::vector<NamedAttr> rest;
    for (const auto& p : op.props)
      if (p.first != "dim_numbers" && p.first != "window") rest.push_back(p);
    out_ << n << "(";
    operands(op);
    out_ << ") dim_numbers = " << dn->text;
    if (win) out_ << ", window = " << win->text;
    // The remaining inherent attributes go in the trailing dict, as StableHLO prints them.
    std::vector<NamedAttr> all = rest;
    for (const auto& a : op.attrs) all.push_back(a);
    std::string extra;
    if (!op.shardings.empty()) {
      extra = "#sdy.sharding_per_value<[";
      for (size_t i = 0; i < op.shardings.size(); ++i)
        extra += (i ? ", " : "") + sharding_string(op.shardings[i]);
      extra += "]>";
    }
    dict(all, extra, "sdy.sharding", " ");
    out_ << " : ";
    func_type(op);
    return true;
  }
  return false;
}

}  // namespace

std::string print_module(const Module& m) {
  Printer p(m);
  int indent = 0;
  if (m.has_module_op) {
    p.raw("module");
    if (!m.module_name.empty()) p.raw(" @" + m.module_name);
    if (!m.module_attrs.empty()) p.dict(m.module_attrs, "", "", " attributes ");
    p.raw(" {\n");
    indent = 1;
  }
  for (const MeshDecl& mesh : m.meshes) p.mesh(mesh, indent);
  for (const Func& f : m.funcs) p.func(f, indent);
  if (m.has_module_op) p.raw("}\n");
  return p.take();
}

}  // namespace meshplan::planner::shlo
