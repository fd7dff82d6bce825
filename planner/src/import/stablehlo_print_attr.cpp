// Text of attribute values and Shardy shardings, as the printer writes them (and the parser
// reads them back): numbers that round-trip, quoted strings, dense literals, axis references.
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "import/stablehlo_print_text.hpp"
#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

namespace {

/// Opaque attribute text as MLIR prints it, on one line: a line break and the blanks around
/// it go, or become one space between two tokens (`#stablehlo.scatter<\n  a = [1],\n  b = 1>`
/// is `#stablehlo.scatter<a = [1], b = 1>`).
std::string one_line(const std::string& t) {
  if (t.find('\n') == std::string::npos) return t;
  std::string out;
  for (size_t i = 0; i < t.size();) {
    size_t j = i;
    bool newline = false;
    while (j < t.size() && (t[j] == ' ' || t[j] == '\t' || t[j] == '\n' || t[j] == '\r')) {
      newline |= t[j] == '\n';
      ++j;
    }
    if (j == i) {
      out += t[i++];
      continue;
    }
    if (!newline) {
      out.append(t, i, j - i);
    } else if (!out.empty() && j < t.size() &&
               std::string_view("<([{").find(out.back()) == std::string_view::npos &&
               std::string_view(">)]}").find(t[j]) == std::string_view::npos) {
      out += ' ';
    }
    i = j;
  }
  return out;
}

bool is_float_type(std::string_view t) {
  return !t.empty() && (t[0] == 'f' || t.starts_with("bf"));
}

/// A float literal; NaN and infinities as the hex bits of `element` (the parser reads hex
/// literals by their width: 4 digits bf16 / f16, 8 f32, 16 f64).
std::string float_text(double v, std::string_view element = "f32") {
  if (std::isnan(v) || std::isinf(v)) {
    char buf[24];
    uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(v));
    if (element == "bf16") {
      std::snprintf(buf, sizeof buf, "0x%04X", bits >> 16);
    } else if (element == "f16") {
      unsigned h = (bits >> 16 & 0x8000u) | 0x7C00u | (std::isnan(v) ? 0x0200u : 0u);
      std::snprintf(buf, sizeof buf, "0x%04X", h);
    } else if (element == "f64") {
      std::snprintf(buf, sizeof buf, "0x%016llX",
                    static_cast<unsigned long long>(std::bit_cast<uint64_t>(v)));
    } else {
      std::snprintf(buf, sizeof buf, "0x%08X", bits);
    }
    return buf;
  }
  // MLIR's form: scientific with six digits after the point (`1.000000e+00`) when that text
  // reads back as the same value; otherwise the shortest text that does.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6e", v);
  if (std::bit_cast<uint64_t>(std::strtod(buf, nullptr)) == std::bit_cast<uint64_t>(v)) return buf;
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void dense_values(std::ostringstream& out, const Attr& a, size_t dim, size_t& at) {
  const std::vector<int64_t>& shape = a.type.shape;
  if (dim == shape.size()) {
    double v = at < a.values.size() ? a.values[at] : 0;
    ++at;
    if (a.type.element == "i1")
      out << (v != 0 ? "true" : "false");
    else if (is_float_type(a.type.element))
      out << float_text(v, a.type.element);
    else
      out << static_cast<int64_t>(v);
    return;
  }
  out << "[";
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (i) out << ", ";
    dense_values(out, a, dim + 1, at);
  }
  out << "]";
}

}  // namespace

std::string axis_string(const AxisRef& axis) {
  std::string s = quote(axis.name);
  if (axis.size > 0) s += str(":(", axis.pre_size, ")", axis.size);
  return s;
}

std::string axes_string(const std::vector<AxisRef>& axes) {
  std::string s = "{";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + axis_string(axes[i]);
  return s + "}";
}

std::string sharding_string(const TensorSharding& sh) {
  std::string s = "<@" + sh.mesh + ", [";
  for (size_t d = 0; d < sh.dims.size(); ++d) {
    const DimSharding& dim = sh.dims[d];
    s += d ? ", {" : "{";
    for (size_t i = 0; i < dim.axes.size(); ++i) s += (i ? ", " : "") + axis_string(dim.axes[i]);
    if (dim.open) s += dim.axes.empty() ? "?" : ", ?";
    s += "}";
    if (dim.priority >= 0) s += "p" + std::to_string(dim.priority);
  }
  s += "]";
  if (!sh.replicated.empty()) s += ", replicated=" + axes_string(sh.replicated);
  if (!sh.unreduced.empty()) s += ", unreduced=" + sh.unreduced_kind + axes_string(sh.unreduced);
  return s + ">";
}

std::string attr_string(const Attr& a) {
  using K = Attr::Kind;
  std::ostringstream out;
  switch (a.kind) {
    case K::unit:
      out << "unit";
      break;
    case K::integer:
      out << a.i;
      if (!a.text.empty()) out << " : " << a.text;
      break;
    case K::floating:
      out << float_text(a.f);
      if (!a.text.empty()) out << " : " << a.text;
      break;
    case K::boolean:
      out << (a.i ? "true" : "false");
      break;
    case K::string:
      out << quote(a.text);
      break;
    case K::keyword:
      out << a.text;
      break;
    case K::opaque:
      out << one_line(a.text);
      break;
    case K::symbol:
      out << "@" << a.text;
      break;
    case K::type:
      out << type_string(a.type);
      break;
    case K::array:
      out << "[";
      for (size_t i = 0; i < a.list.size(); ++i) out << (i ? ", " : "") << attr_string(a.list[i]);
      out << "]";
      break;
    case K::dense_array:
      out << "array<" << a.text;
      for (size_t i = 0; i < a.ints.size(); ++i) out << (i ? ", " : ": ") << a.ints[i];
      for (size_t i = 0; i < a.values.size(); ++i)
        out << (i ? ", " : ": ") << float_text(a.values[i]);
      out << ">";
      break;
    case K::dense: {
      out << "dense<";
      if (!a.text.empty()) {
        out << a.text;  // hex string literal kept verbatim
      } else if (a.values.size() == 1) {
        Attr scalar = a;
        scalar.type.shape.clear();
        size_t at = 0;
        dense_values(out, scalar, 0, at);
      } else {
        size_t at = 0;
        dense_values(out, a, 0, at);
      }
      out << "> : " << type_string(a.type);
      break;
    }
    case K::dict: {
      out << "{";
      for (size_t i = 0; i < a.dict.size(); ++i) {
        out << (i ? ", " : "") << a.dict[i].first;
        if (a.dict[i].second.kind != K::unit) out << " = " << attr_string(a.dict[i].second);
      }
      out << "}";
      break;
    }
  }
  return out.str();
}

}  // namespace meshplan::planner::shlo
