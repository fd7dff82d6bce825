// meshplan custom calls <-> graph ops: the one decoder of `stablehlo.custom_call @meshplan.<op>`
// (the lowering, the sharding rules and the host evaluator all read calls through it).
#include "import/meshplan_custom_call.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace meshplan::planner::shlo {

std::string custom_call_target(const Op& op) {
  if (op.name != "stablehlo.custom_call") return "";
  const Attr* t = op.attr("call_target_name");
  if (!t) t = op.prop("call_target_name");
  if (!t) return "";
  return t->kind == Attr::Kind::symbol || t->kind == Attr::Kind::string ? t->text : "";
}

std::optional<OpKind> meshplan_call_kind(const Op& op) {
  std::string target = custom_call_target(op);
  if (!target.starts_with(kMeshplanPrefix)) return std::nullopt;
  return device::op_from_name(std::string_view(target).substr(kMeshplanPrefix.size()));
}

Result<planner::Op> meshplan_call_op(const Op& op) {
  auto bad = [&](auto&&... what) {
    return fail(ErrorCode::unimplemented, op.loc.str(), ": unimplemented: ", what...);
  };
  std::string target = custom_call_target(op);
  if (target.empty()) return bad("stablehlo.custom_call without a call_target_name");
  if (!target.starts_with(kMeshplanPrefix))
    return bad("stablehlo.custom_call @", target, " has no meshplan op");
  std::string_view op_name = std::string_view(target).substr(kMeshplanPrefix.size());
  auto kind = device::op_from_name(op_name);
  if (!kind) return bad("custom_call @", target, ": no meshplan op '", op_name, "'");
  if (op.results.size() != 1)
    return bad("custom_call @", target, " with ", op.results.size(), " results");
  planner::Op g;
  g.name = target;
  g.kind = *kind;
  for (const auto* list : {&op.props, &op.attrs})
    for (const auto& [name, a] : *list) {
      if (!name.starts_with(kMeshplanPrefix)) continue;
      Attribute out{name.substr(kMeshplanPrefix.size()), int64_t{0}};
      using K = Attr::Kind;
      if (a.kind == K::integer)
        out.value = a.i;
      else if (a.kind == K::floating)
        out.value = a.f;
      else if (a.kind == K::boolean)
        out.value = a.i != 0;
      else if (a.kind == K::string)
        out.value = a.text;
      else if (a.kind == K::dense_array && (a.text.starts_with("f") || a.text.starts_with("bf")))
        out.value = a.values;
      else if (a.kind == K::dense_array)
        out.value = a.ints;
      else
        return bad("custom_call @", target, ": attribute ", name, " = ", attr_string(a),
                   " is not an i64, f64, bool, string or array<i64|f64> value");
      g.attributes.push_back(std::move(out));
    }
  std::sort(g.attributes.begin(), g.attributes.end(),
            [](const Attribute& a, const Attribute& b) { return a.name < b.name; });
  return g;
}

namespace {

std::string double_text(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string attr_value_text(const AttrValue& value) {
  if (auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i) + " : i64";
  if (auto* d = std::get_if<double>(&value)) return double_text(*d) + " : f64";
  if (auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (auto* s = std::get_if<std::string>(&value)) {
    std::string q = "\"";
    for (char c : *s) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    return q + "\"";
  }
  std::string out;
  if (auto* v = std::get_if<std::vector<int64_t>>(&value)) {
    out = "array<i64";
    for (size_t k = 0; k < v->size(); ++k) out += (k ? ", " : ": ") + std::to_string((*v)[k]);
  } else if (auto* f = std::get_if<std::vector<double>>(&value)) {
    out = "array<f64";
    for (size_t k = 0; k < f->size(); ++k) out += (k ? ", " : ": ") + double_text((*f)[k]);
  }
  return out + ">";
}

}  // namespace meshplan::planner::shlo
