// Recursive-descent parser for the StableHLO/Shardy textual form (pretty and generic syntax).
// Works on characters (MLIR's lexing is context dependent: `32x48xf32`, `0->1`, `p1`), and
// reports every error as "file:line:col: expected X, found 'Y'".
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "meshplan/planner/stablehlo.hpp"
#include "stablehlo_ops.hpp"

namespace meshplan::planner::shlo {
namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' ||
         c == '-';
}

class Parser {
 public:
  Parser(std::string_view text, std::string file) : t_(text) { m_.file = std::move(file); }

  Result<Module> run() {
    ws();
    if (accept_word("module")) {
      m_.has_module_op = true;
      ws();
      if (peek('@')) m_.module_name = MESHPLAN_TRY(symbol());
      if (accept_word("attributes")) m_.module_attrs = MESHPLAN_TRY(attr_dict());
      MESHPLAN_TRY(expect("{", "'{' opening the module body"));
      MESHPLAN_TRY(top_items("}"));
      MESHPLAN_TRY(expect("}", "'}' closing the module"));
    } else {
      MESHPLAN_TRY(top_items(""));
    }
    ws();
    if (pos_ < t_.size()) return error("end of input");
    return std::move(m_);
  }

 private:
  // ---- characters ----
  void ws() {
    while (pos_ < t_.size()) {
      char c = t_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < t_.size() && t_[pos_ + 1] == '/') {
        while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  bool peek(char c) {
    ws();
    return pos_ < t_.size() && t_[pos_] == c;
  }
  bool peek(std::string_view s) {
    ws();
    return t_.substr(pos_).starts_with(s);
  }
  bool accept(std::string_view s) {
    if (!peek(s)) return false;
    pos_ += s.size();
    return true;
  }
  /// Accepts a keyword only when not followed by more identifier characters.
  bool accept_word(std::string_view w) {
    if (!peek(w)) return false;
    size_t end = pos_ + w.size();
    if (end < t_.size() && ident_char(t_[end])) return false;
    pos_ = end;
    return true;
  }
  /// Line and column of offset `p`; scans forward from the last answer (ops are parsed in
  /// order), so locating every op stays linear in the text size.
  Location loc_at(size_t p) const {
    if (p < cache_pos_) cache_pos_ = 0, cache_line_ = 1, cache_col_ = 1;
    for (; cache_pos_ < p && cache_pos_ < t_.size(); ++cache_pos_) {
      if (t_[cache_pos_] == '\n') {
        ++cache_line_;
        cache_col_ = 1;
      } else {
        ++cache_col_;
      }
    }
    return Location{m_.file, cache_line_, cache_col_};
  }
  Location here() {
    ws();
    return loc_at(pos_);
  }
  std::unexpected<Error> error(std::string_view expected) {
    ws();
    std::string found = pos_ >= t_.size() ? "end of input" : std::string(t_.substr(pos_, 12));
    if (auto nl = found.find('\n'); nl != std::string::npos) found.resize(nl);
    return fail(ErrorCode::invalid_argument, here().str(), ": expected ", expected, ", found '",
                found, "'");
  }
  std::unexpected<Error> error_at(size_t p, std::string_view message) {
    return fail(ErrorCode::invalid_argument, loc_at(p).str(), ": ", message);
  }
  Status expect(std::string_view s, std::string_view what) {
    if (!accept(s)) return error(what);
    return {};
  }

  // ---- tokens ----
  Result<std::string> ident(std::string_view what = "an identifier") {
    ws();
    if (pos_ >= t_.size() || !ident_start(t_[pos_])) return error(what);
    size_t b = pos_;
    while (pos_ < t_.size() && ident_char(t_[pos_]) &&
           !(t_[pos_] == '-' && pos_ + 1 < t_.size() && t_[pos_ + 1] == '>'))
      ++pos_;
    return std::string(t_.substr(b, pos_ - b));
  }
  Result<std::string> symbol() {
    if (!accept("@")) return error("a symbol '@name'");
    if (peek('"')) return string_lit();
    return ident("a symbol name");
  }
  Result<std::string> string_lit() {
    ws();
    if (pos_ >= t_.size() || t_[pos_] != '"') return error("a string literal");
    ++pos_;
    std::string s;
    while (pos_ < t_.size() && t_[pos_] != '"') {
      char c = t_[pos_++];
      if (c == '\\' && pos_ < t_.size()) {
        char e = t_[pos_++];
        s += e == 'n' ? '\n' : e;
      } else {
        s += c;
      }
    }
    if (pos_ >= t_.size()) return error("a closing '\"'");
    ++pos_;
    return s;
  }
  Result<int64_t> integer(std::string_view what = "an integer") {
    ws();
    size_t b = pos_;
    if (pos_ < t_.size() && t_[pos_] == '-') ++pos_;
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t_.data() + pos_, t_.data() + t_.size(), v);
    if (ec != std::errc()) {
      pos_ = b;
      return error(what);
    }
    pos_ = static_cast<size_t>(p - t_.data());
    if (t_[b] == '-') v = -v;
    return v;
  }
  /// A number: integer, float, hex bit pattern (f32 / f64 / bf16 by width). Sets is_float.
  Result<double> number(bool& is_float) {
    ws();
    size_t b = pos_;
    if (t_.substr(pos_).starts_with("0x")) {
      size_t e = pos_ + 2;
      while (e < t_.size() && std::isxdigit(static_cast<unsigned char>(t_[e]))) ++e;
      uint64_t bits = 0;
      std::from_chars(t_.data() + pos_ + 2, t_.data() + e, bits, 16);
      size_t digits = e - pos_ - 2;
      pos_ = e;
      is_float = true;
      if (digits <= 4)
        return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits << 16)));
      if (digits <= 8)
        return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits)));
      return std::bit_cast<double>(bits);
    }
    size_t e = pos_;
    if (e < t_.size() && (t_[e] == '-' || t_[e] == '+')) ++e;
    is_float = false;
    while (e < t_.size() &&
           (std::isdigit(static_cast<unsigned char>(t_[e])) || t_[e] == '.' || t_[e] == 'e' ||
            t_[e] == 'E' ||
            ((t_[e] == '-' || t_[e] == '+') && (t_[e - 1] == 'e' || t_[e - 1] == 'E')))) {
      if (!std::isdigit(static_cast<unsigned char>(t_[e]))) is_float = true;
      ++e;
    }
    std::string s(t_.substr(b, e - b));
    if (s.empty() || s == "-" || s == "+") return error("a number");
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) return error("a number");
    pos_ = e;
    return v;
  }

  // ---- types ----
  Result<TensorType> type() {
    ws();
    if (!accept("tensor<")) return error("a tensor type 'tensor<...>'");
    TensorType ty;
    while (true) {
      ws();
      if (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) {
        int64_t d = MESHPLAN_TRY(integer());
        if (d < 0) return error("a non-negative dimension");
        ty.shape.push_back(d);
        if (pos_ >= t_.size() || t_[pos_] != 'x') return error("'x' after a dimension");
        ++pos_;
        continue;
      }
      if (peek('?')) return error("a static dimension (dynamic shapes are not supported)");
      break;
    }
    ty.element = MESHPLAN_TRY(ident("an element type"));
    if (!accept(">")) return error("'>' closing the tensor type");
    return ty;
  }
  Result<std::vector<TensorType>> type_list_parens() {
    std::vector<TensorType> out;
    MESHPLAN_TRY(expect("(", "'('"));
    if (!accept(")")) {
      do out.push_back(MESHPLAN_TRY(type()));
      while (accept(","));
      MESHPLAN_TRY(expect(")", "')' closing the type list"));
    }
    return out;
  }
  /// `(T, T) -> T` or `(T) -> (T, T)`.
  Result<std::pair<std::vector<TensorType>, std::vector<TensorType>>> func_type() {
    auto ins = MESHPLAN_TRY(type_list_parens());
    MESHPLAN_TRY(expect("->", "'->' in a function type"));
    std::vector<TensorType> outs;
    if (peek('('))
      outs = MESHPLAN_TRY(type_list_parens());
    else
      outs.push_back(MESHPLAN_TRY(type()));
    return std::make_pair(std::move(ins), std::move(outs));
  }

  // ---- attributes ----
  /// Raw text of a balanced `<...>` (or `{...}`/`[...]`) group starting at the cursor.
  Result<std::string> balanced(char open, char close) {
    ws();
    size_t b = pos_;
    if (pos_ >= t_.size() || t_[pos_] != open) return error(std::string("'") + open + "'");
    int depth = 0;
    bool in_string = false;
    for (; pos_ < t_.size(); ++pos_) {
      char c = t_[pos_];
      if (in_string) {
        if (c == '\\')
          ++pos_;
        else if (c == '"')
          in_string = false;
        continue;
      }
      if (c == '"')
        in_string = true;
      else if (c == open)
        ++depth;
      else if (c == close && !(c == '>' && t_[pos_ - 1] == '-') && --depth == 0) {
        ++pos_;
        return std::string(t_.substr(b, pos_ - b));
      }
    }
    return error_at(b, str("unbalanced '", open, "'"));
  }

  bool peek_element_type() {
    ws();
    static const char* k[] = {"i1", "i8",  "i16", "i32", "i64",  "ui",
                              "si", "f16", "f32", "f64", "bf16", "index"};
    for (const char* s : k)
      if (t_.substr(pos_).starts_with(s)) return true;
    return false;
  }

  Result<Attr> attr() {
    ws();
    Attr a;
    using K = Attr::Kind;
    if (peek('[')) {
      a.kind = K::array;
      accept("[");
      if (!accept("]")) {
        do a.list.push_back(MESHPLAN_TRY(attr()));
        while (accept(","));
        MESHPLAN_TRY(expect("]", "']' closing the array"));
      }
      return a;
    }
    if (peek('{')) {
      a.kind = K::dict;
      a.dict = MESHPLAN_TRY(attr_dict());
      return a;
    }
    if (peek('"')) {
      a.kind = K::string;
      a.text = MESHPLAN_TRY(string_lit());
      return a;
    }
    if (peek('@')) {
      a.kind = K::symbol;
      a.text = MESHPLAN_TRY(symbol());
      return a;
    }
    if (peek('#')) {
      size_t b = pos_;
      ++pos_;
      MESHPLAN_TRY(ident("a dialect attribute name"));
      if (peek('<')) MESHPLAN_TRY(balanced('<', '>'));
      a.kind = K::opaque;
      a.text = std::string(t_.substr(b, pos_ - b));
      return a;
    }
    if (accept("array<")) {
      a.kind = K::dense_array;
      a.text = MESHPLAN_TRY(ident("an element type"));
      const bool floats = a.text.starts_with("f") || a.text.starts_with("bf");
      if (accept(":")) {
        do {
          if (floats) {
            bool is_float = false;
            a.values.push_back(MESHPLAN_TRY(number(is_float)));
          } else {
            a.ints.push_back(MESHPLAN_TRY(integer()));
          }
        } while (accept(","));
      }
      MESHPLAN_TRY(expect(">", "'>' closing array<...>"));
      return a;
    }
    if (accept("dense<")) return dense();
    if (peek("tensor<")) {
      a.kind = K::type;
      a.type = MESHPLAN_TRY(type());
      return a;
    }
    if (accept_word("true") || accept_word("false")) {
      a.kind = K::boolean;
      a.i = t_[pos_ - 1] == 'e' && t_[pos_ - 2] == 'u';
      return a;
    }
    if (accept_word("unit")) return a;
    ws();
    if (pos_ < t_.size() &&
        (std::isdigit(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '-')) {
      bool is_float = false;
      double v = MESHPLAN_TRY(number(is_float));
      if (is_float) {
        a.kind = K::floating;
        a.f = v;
      } else {
        a.kind = K::integer;
        a.i = static_cast<int64_t>(v);
      }
      size_t save = pos_;
      if (accept(":") && peek_element_type())
        a.text = MESHPLAN_TRY(ident());
      else
        pos_ = save;
      if (a.kind == K::integer && (a.text.starts_with("f") || a.text.starts_with("bf"))) {
        a.kind = K::floating;
        a.f = static_cast<double>(a.i);
      }
      return a;
    }
    if (pos_ < t_.size() && ident_start(t_[pos_])) {
      a.kind = K::keyword;
      a.text = MESHPLAN_TRY(ident());
      return a;
    }
    return error("an attribute value");
  }

  Status dense_elems(std::vector<double>& out, bool& is_float) {
    if (accept("[")) {
      if (accept("]")) return {};
      do MESHPLAN_TRY(dense_elems(out, is_float));
      while (accept(","));
      return expect("]", "']' in a dense literal");
    }
    if (accept_word("true"))
      out.push_back(1);
    else if (accept_word("false"))
      out.push_back(0);
    else
      out.push_back(MESHPLAN_TRY(number(is_float)));
    return {};
  }

  /// `dense<"0x...">`: little-endian element bytes (as JAX prints large constants). Decoded
  /// for f32/f64/bf16/f16-free integer types; other types keep the raw text.
  Status decode_hex(Attr& a, size_t at) {
    std::string_view hex = a.text;
    if (hex.size() < 4 || !hex.substr(1).starts_with("0x")) return {};
    hex = hex.substr(3, hex.size() - 4);
    const std::string& e = a.type.element;
    size_t width = e == "f32" || e == "i32" || e == "ui32" ? 4
                   : e == "f64" || e == "i64"              ? 8
                   : e == "bf16"                           ? 2
                   : e == "i1" || e == "i8"                ? 1
                                                           : 0;
    if (width == 0) return {};
    if (hex.size() % (2 * width) != 0)
      return error_at(at, "hex dense literal does not hold whole elements");
    std::vector<double> values;
    for (size_t i = 0; i < hex.size(); i += 2 * width) {
      uint64_t bits = 0;
      for (size_t b = 0; b < width; ++b) {
        uint64_t byte = 0;
        auto [p, ec] =
            std::from_chars(hex.data() + i + 2 * b, hex.data() + i + 2 * b + 2, byte, 16);
        if (ec != std::errc() || p != hex.data() + i + 2 * b + 2)
          return error_at(at, "bad hex digit in a dense literal");
        bits |= byte << (8 * b);
      }
      if (e == "f32")
        values.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
      else if (e == "f64")
        values.push_back(std::bit_cast<double>(bits));
      else if (e == "bf16")
        values.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits << 16)));
      else if (e == "i32")
        values.push_back(static_cast<int32_t>(bits));
      else if (e == "i64")
        values.push_back(static_cast<double>(static_cast<int64_t>(bits)));
      else if (e == "i8")
        values.push_back(static_cast<int8_t>(bits));
      else
        values.push_back(static_cast<double>(bits));
    }
    a.values = std::move(values);
    a.text.clear();
    return {};
  }

  Result<Attr> dense() {
    Attr a;
    a.kind = Attr::Kind::dense;
    bool is_float = false;
    if (peek('"')) {
      size_t b = pos_;
      MESHPLAN_TRY(string_lit());
      a.text = std::string(t_.substr(b, pos_ - b));
    } else {
      MESHPLAN_TRY(dense_elems(a.values, is_float));
    }
    MESHPLAN_TRY(expect(">", "'>' closing dense<...>"));
    MESHPLAN_TRY(expect(":", "':' and the type of a dense literal"));
    ws();
    size_t tp = pos_;
    a.type = MESHPLAN_TRY(type());
    if (!a.text.empty()) MESHPLAN_TRY(decode_hex(a, tp));
    if (a.text.empty() && a.values.size() != 1 &&
        static_cast<int64_t>(a.values.size()) != a.type.volume())
      return error_at(tp, str("dense literal has ", a.values.size(), " values but its type ",
                              type_string(a.type), " holds ", a.type.volume()));
    return a;
  }

  Result<std::vector<NamedAttr>> attr_dict() {
    std::vector<NamedAttr> out;
    MESHPLAN_TRY(expect("{", "'{' opening an attribute dictionary"));
    if (accept("}")) return out;
    do {
      ws();
      std::string name =
          peek('"') ? MESHPLAN_TRY(string_lit()) : MESHPLAN_TRY(ident("an attribute name"));
      Attr v;
      if (accept("=")) v = MESHPLAN_TRY(attr());
      out.emplace_back(std::move(name), std::move(v));
    } while (accept(","));
    MESHPLAN_TRY(expect("}", "'}' or ',' in an attribute dictionary"));
    return out;
  }

  // ---- Shardy attributes ----
  Result<AxisRef> axis_ref() {
    AxisRef a;
    a.name = MESHPLAN_TRY(string_lit());
    if (accept(":(")) {
      a.pre_size = MESHPLAN_TRY(integer("a sub-axis pre-size"));
      MESHPLAN_TRY(expect(")", "')' of a sub-axis"));
      a.size = MESHPLAN_TRY(integer("a sub-axis size"));
      if (a.pre_size < 1 || a.size < 1) return error("positive sub-axis sizes");
    }
    return a;
  }
  Result<std::vector<AxisRef>> axis_set() {
    std::vector<AxisRef> out;
    MESHPLAN_TRY(expect("{", "'{' opening a list of axes"));
    if (accept("}")) return out;
    do out.push_back(MESHPLAN_TRY(axis_ref()));
    while (accept(","));
    MESHPLAN_TRY(expect("}", "'}' closing a list of axes"));
    return out;
  }
  Result<DimSharding> dim_sharding() {
    DimSharding d;
    MESHPLAN_TRY(expect("{", "'{' opening a dimension sharding"));
    if (!accept("}")) {
      while (true) {
        if (accept("?")) {
          d.open = true;
          break;
        }
        d.axes.push_back(MESHPLAN_TRY(axis_ref()));
        if (!accept(",")) break;
      }
      MESHPLAN_TRY(expect("}", "'}' closing a dimension sharding"));
    }
    if (pos_ < t_.size() && t_[pos_] == 'p' && pos_ + 1 < t_.size() &&
        std::isdigit(static_cast<unsigned char>(t_[pos_ + 1]))) {
      ++pos_;
      d.priority = MESHPLAN_TRY(integer("a priority"));
    }
    return d;
  }
  /// `<@mesh, [{...}, ...], replicated={...}>`.
  Result<TensorSharding> sharding() {
    TensorSharding s;
    MESHPLAN_TRY(expect("<", "'<' opening a sharding"));
    size_t mp = pos_;
    s.mesh = MESHPLAN_TRY(symbol());
    if (!m_.mesh(s.mesh))
      return error_at(mp, str("unknown mesh @", s.mesh, " (declare it with sdy.mesh first)"));
    MESHPLAN_TRY(expect(",", "',' after the mesh name"));
    MESHPLAN_TRY(expect("[", "'[' opening the dimension shardings"));
    if (!accept("]")) {
      do s.dims.push_back(MESHPLAN_TRY(dim_sharding()));
      while (accept(","));
      MESHPLAN_TRY(expect("]", "']' closing the dimension shardings"));
    }
    while (accept(",")) {
      if (accept_word("replicated")) {
        MESHPLAN_TRY(expect("=", "'=' after replicated"));
        s.replicated = MESHPLAN_TRY(axis_set());
      } else if (accept_word("unreduced")) {
        MESHPLAN_TRY(expect("=", "'=' after unreduced"));
        s.unreduced = MESHPLAN_TRY(axis_set());
      } else {
        return error("'replicated' or 'unreduced'");
      }
    }
    MESHPLAN_TRY(expect(">", "'>' closing a sharding"));
    MESHPLAN_TRY(check_sharding(s, mp));
    return s;
  }
  Status check_sharding(const TensorSharding& s, size_t at) {
    const MeshDecl* mesh = m_.mesh(s.mesh);
    auto check = [&](const AxisRef& a) -> Status {
      int64_t size = mesh->axis_size(a.name);
      if (size == 0) return error_at(at, str("axis \"", a.name, "\" is not in mesh @", s.mesh));
      if (a.size > 0 && (size % (a.pre_size * a.size) != 0))
        return error_at(at, str("sub-axis ", axis_string(a), " does not divide axis \"", a.name,
                                "\" of size ", size));
      return {};
    };
    for (const DimSharding& d : s.dims)
      for (const AxisRef& a : d.axes) MESHPLAN_TRY(check(a));
    for (const AxisRef& a : s.replicated) MESHPLAN_TRY(check(a));
    return {};
  }
  Result<std::vector<TensorSharding>> sharding_list() {
    std::vector<TensorSharding> out;
    MESHPLAN_TRY(expect("[", "'[' opening a list of shardings"));
    if (accept("]")) return out;
    do out.push_back(MESHPLAN_TRY(sharding()));
    while (accept(","));
    MESHPLAN_TRY(expect("]", "']' closing a list of shardings"));
    return out;
  }

  /// Dict whose `sdy.sharding` entry is a Shardy sharding (or per-value list), the rest plain.
  Result<std::vector<NamedAttr>> dict_with_sharding(std::vector<TensorSharding>& shardings,
                                                    bool per_value) {
    std::vector<NamedAttr> out;
    MESHPLAN_TRY(expect("{", "'{' opening an attribute dictionary"));
    if (accept("}")) return out;
    do {
      ws();
      std::string name =
          peek('"') ? MESHPLAN_TRY(string_lit()) : MESHPLAN_TRY(ident("an attribute name"));
      if (name == "sdy.sharding") {
        MESHPLAN_TRY(expect("=", "'=' after sdy.sharding"));
        if (per_value) {
          if (!accept("#sdy.sharding_per_value<")) return error("'#sdy.sharding_per_value<'");
          shardings = MESHPLAN_TRY(sharding_list());
          MESHPLAN_TRY(expect(">", "'>' closing #sdy.sharding_per_value"));
        } else {
          if (!accept("#sdy.sharding")) return error("'#sdy.sharding<'");
          shardings = {MESHPLAN_TRY(sharding())};
        }
        continue;
      }
      Attr v;
      if (accept("=")) v = MESHPLAN_TRY(attr());
      out.emplace_back(std::move(name), std::move(v));
    } while (accept(","));
    MESHPLAN_TRY(expect("}", "'}' or ',' in an attribute dictionary"));
    return out;
  }

  // ---- values and scopes ----
  struct PendingRef {
    std::string name;
    size_t pos;
  };
  Result<PendingRef> value_name() {
    ws();
    if (pos_ >= t_.size() || t_[pos_] != '%') return error("a value '%name'");
    size_t b = pos_++;
    while (pos_ < t_.size() &&
           (std::isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '_' ||
            t_[pos_] == '$' || t_[pos_] == '.' || t_[pos_] == '#'))
      ++pos_;
    if (pos_ == b + 1) return error_at(b, "expected a value name after '%'");
    return PendingRef{std::string(t_.substr(b, pos_ - b)), b};
  }
  Result<ValueId> use() {
    PendingRef r = MESHPLAN_TRY(value_name());
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(r.name);
      if (f != it->end()) return f->second;
    }
    return error_at(r.pos, str("use of undefined value ", r.name));
  }
  Result<std::vector<ValueId>> uses_until(char close) {
    std::vector<ValueId> out;
    if (peek(close)) return out;
    do out.push_back(MESHPLAN_TRY(use()));
    while (accept(","));
    return out;
  }
  Status define(const std::string& name, ValueId v, size_t at) {
    if (!scopes_.back().emplace(name, v).second)
      return error_at(at, str("value ", name, " is defined twice"));
    return {};
  }

  // ---- structure ----
  Status top_items(std::string_view until) {
    while (true) {
      ws();
      if (pos_ >= t_.size() || (!until.empty() && peek(until))) return {};
      if (accept("#loc")) {  // location alias definitions: `#loc1 = loc(...)`
        while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
        continue;
      }
      if (accept_word("sdy.mesh")) {
        MESHPLAN_TRY(mesh_decl());
      } else if (accept_word("func.func")) {
        MESHPLAN_TRY(func());
      } else {
        return error("'sdy.mesh', 'func.func' or 'module'");
      }
    }
  }

  Status mesh_decl() {
    MeshDecl mesh;
    size_t at = pos_;
    mesh.name = MESHPLAN_TRY(symbol());
    if (m_.mesh(mesh.name)) return error_at(at, str("mesh @", mesh.name, " declared twice"));
    MESHPLAN_TRY(expect("=", "'=' after the mesh name"));
    MESHPLAN_TRY(expect("<", "'<' opening the mesh"));
    if (accept("mesh<")) {
    }  // `#sdy.mesh<...>` inline spelling is not used by exporters
    MESHPLAN_TRY(expect("[", "'[' opening the mesh axes"));
    if (!accept("]")) {
      do {
        std::string axis = MESHPLAN_TRY(string_lit());
        MESHPLAN_TRY(expect("=", "'=' and the axis size"));
        int64_t size = MESHPLAN_TRY(integer("an axis size"));
        if (size < 1) return error_at(pos_, "axis sizes must be positive");
        mesh.axes.emplace_back(axis, size);
      } while (accept(","));
      MESHPLAN_TRY(expect("]", "']' closing the mesh axes"));
    }
    if (accept(",")) {
      if (!accept_word("device_ids")) return error("'device_ids'");
      MESHPLAN_TRY(expect("=", "'='"));
      MESHPLAN_TRY(expect("[", "'['"));
      do mesh.device_ids.push_back(MESHPLAN_TRY(integer()));
      while (accept(","));
      MESHPLAN_TRY(expect("]", "']'"));
    }
    MESHPLAN_TRY(expect(">", "'>' closing the mesh"));
    m_.meshes.push_back(std::move(mesh));
    return {};
  }

  Status func() {
    Func f;
    f.loc = here();
    if (accept_word("public"))
      f.visibility = "public";
    else if (accept_word("private"))
      f.visibility = "private";
    f.name = MESHPLAN_TRY(symbol());
    scopes_.clear();
    scopes_.emplace_back();
    MESHPLAN_TRY(expect("(", "'(' opening the argument list"));
    if (!accept(")")) {
      do {
        PendingRef r = MESHPLAN_TRY(value_name());
        MESHPLAN_TRY(expect(":", "':' and the argument type"));
        TensorType ty = MESHPLAN_TRY(type());
        ArgInfo a;
        a.value = m_.add_value(std::move(ty), kNone, static_cast<uint32_t>(f.args.size()));
        if (peek('{')) {
          std::vector<TensorSharding> sh;
          a.attrs = MESHPLAN_TRY(dict_with_sharding(sh, false));
          if (!sh.empty()) m_.values[a.value].sharding = sh[0];
        }
        MESHPLAN_TRY(define(r.name, a.value, r.pos));
        f.body.args.push_back(a.value);
        f.args.push_back(std::move(a));
      } while (accept(","));
      MESHPLAN_TRY(expect(")", "')' or ',' in the argument list"));
    }
    if (accept("->")) {
      if (accept("(")) {
        f.paren_results = true;
        if (!accept(")")) {
          do f.results.push_back(MESHPLAN_TRY(result_info(true)));
          while (accept(","));
          MESHPLAN_TRY(expect(")", "')' or ',' in the result list"));
        }
      } else {
        f.results.push_back(MESHPLAN_TRY(result_info(false)));
      }
    }
    if (accept_word("attributes")) f.attrs = MESHPLAN_TRY(attr_dict());
    MESHPLAN_TRY(expect("{", "'{' opening the function body"));
    MESHPLAN_TRY(ops_until(f.body));
    MESHPLAN_TRY(expect("}", "'}' closing the function body"));
    if (f.body.ops.empty() || m_.ops[f.body.ops.back()].name != "func.return")
      return error_at(pos_ - 1, str("function @", f.name, " does not end with return"));
    const Op& ret = m_.ops[f.body.ops.back()];
    if (ret.operands.size() != f.results.size())
      return fail(ErrorCode::invalid_argument, ret.loc.str(), ": return has ", ret.operands.size(),
                  " values but @", f.name, " declares ", f.results.size(), " results");
    for (size_t i = 0; i < f.results.size(); ++i)
      if (!(m_.values[ret.operands[i]].type == f.results[i].type))
        return fail(ErrorCode::invalid_argument, ret.loc.str(), ": return value ", i, " has type ",
                    type_string(m_.values[ret.operands[i]].type), " but @", f.name, " declares ",
                    type_string(f.results[i].type));
    m_.funcs.push_back(std::move(f));
    return {};
  }

  Result<ResultInfo> result_info(bool allow_attrs) {
    ResultInfo r;
    r.type = MESHPLAN_TRY(type());
    if (allow_attrs && peek('{')) {
      std::vector<TensorSharding> sh;
      r.attrs = MESHPLAN_TRY(dict_with_sharding(sh, false));
      if (!sh.empty()) r.sharding = sh[0];
    }
    return r;
  }

  /// Parses ops into `block` until a '}' (not consumed).
  Status ops_until(Block& block) {
    while (true) {
      ws();
      if (pos_ >= t_.size()) return error("'}' closing a region");
      if (peek('}')) return {};
      OpId o = MESHPLAN_TRY(operation());
      block.ops.push_back(o);
    }
  }

  /// A region `{ [^bb0(args):] ops }` in generic syntax.
  Result<Block> region(bool allow_header) {
    Block b;
    MESHPLAN_TRY(expect("{", "'{' opening a region"));
    scopes_.emplace_back();
    if (allow_header && accept("^")) {
      MESHPLAN_TRY(ident("a block label"));
      if (accept("(")) {
        do {
          PendingRef r = MESHPLAN_TRY(value_name());
          MESHPLAN_TRY(expect(":", "':' and the block argument type"));
          ValueId v =
              m_.add_value(MESHPLAN_TRY(type()), kNone, static_cast<uint32_t>(b.args.size()));
          MESHPLAN_TRY(define(r.name, v, r.pos));
          b.args.push_back(v);
        } while (accept(","));
        MESHPLAN_TRY(expect(")", "')' closing the block arguments"));
      }
      MESHPLAN_TRY(expect(":", "':' after the block label"));
    }
    MESHPLAN_TRY(ops_until(b));
    MESHPLAN_TRY(expect("}", "'}' closing a region"));
    scopes_.pop_back();
    return b;
  }

  /// `(%a: T, %b: T)` block arguments defined in a new scope (the caller pops it).
  Status region_args(Block& b) {
    MESHPLAN_TRY(expect("(", "'(' opening the region arguments"));
    if (accept(")")) return {};
    do {
      PendingRef r = MESHPLAN_TRY(value_name());
      MESHPLAN_TRY(expect(":", "':' and the argument type"));
      ValueId v = m_.add_value(MESHPLAN_TRY(type()), kNone, static_cast<uint32_t>(b.args.size()));
      MESHPLAN_TRY(define(r.name, v, r.pos));
      b.args.push_back(v);
    } while (accept(","));
    return expect(")", "')' closing the region arguments");
  }

  Result<OpId> operation();
  Status normalize_generic(Op& op, const std::vector<TensorType>& results, size_t at);
  Status pretty(Op& op, std::vector<TensorType>& result_types, size_t name_pos);
  void skip_loc() {
    if (accept("loc(")) {
      --pos_;
      (void)balanced('(', ')');
    }
  }

  /// Trailing `{...}` attribute dict of an op, sdy.sharding split out.
  Status op_attr_dict(Op& op) {
    if (!peek('{')) return {};
    op.attrs = MESHPLAN_TRY(dict_with_sharding(op.shardings, true));
    return {};
  }
  /// `: T` (every operand and the result) or `: (T...) -> T`.
  Status same_or_func_type(Op& op, std::vector<TensorType>& results) {
    MESHPLAN_TRY(expect(":", "':' and the op's type"));
    ws();
    type_pos_ = pos_;
    if (peek('(')) {
      auto [ins, outs] = MESHPLAN_TRY(func_type());
      MESHPLAN_TRY(check_operand_types(op, ins));
      results = outs;
      return {};
    }
    TensorType t = MESHPLAN_TRY(type());
    for (ValueId v : op.operands)
      if (!(m_.values[v].type == t))
        return error_at(type_pos_, str(op.name, ": operand type ", type_string(m_.values[v].type),
                                       " differs from the written type ", type_string(t)));
    results = {t};
    return {};
  }
  Status check_operand_types(const Op& op, const std::vector<TensorType>& ins) {
    if (ins.size() != op.operands.size())
      return error_at(pos_, str(op.name, ": ", op.operands.size(), " operands but the type lists ",
                                ins.size()));
    for (size_t i = 0; i < ins.size(); ++i)
      if (!(m_.values[op.operands[i]].type == ins[i]))
        return error_at(pos_, str(op.name, ": operand ", i, " has type ",
                                  type_string(m_.values[op.operands[i]].type),
                                  " but the op's type says ", type_string(ins[i])));
    return {};
  }
  Result<std::vector<int64_t>> int_list() {
    std::vector<int64_t> out;
    MESHPLAN_TRY(expect("[", "'[' opening a list of integers"));
    if (accept("]")) return out;
    do out.push_back(MESHPLAN_TRY(integer()));
    while (accept(","));
    MESHPLAN_TRY(expect("]", "']' closing a list of integers"));
    return out;
  }

  std::string_view t_;
  size_t pos_ = 0;
  mutable size_t cache_pos_ = 0;
  mutable int cache_line_ = 1;
  mutable int cache_col_ = 1;
  size_t type_pos_ = 0;
  Module m_;
  std::vector<std::map<std::string, ValueId>> scopes_;
};

Result<OpId> Parser::operation() {
  Location loc = here();
  // Results: %a, %b:2 = ...
  std::vector<std::pair<PendingRef, int64_t>> defs;
  if (peek('%')) {
    do {
      PendingRef r = MESHPLAN_TRY(value_name());
      int64_t count = 1;
      if (pos_ < t_.size() && t_[pos_] == ':' && pos_ + 1 < t_.size() &&
          std::isdigit(static_cast<unsigned char>(t_[pos_ + 1]))) {
        ++pos_;
        count = MESHPLAN_TRY(integer());
      }
      defs.emplace_back(r, count);
    } while (accept(","));
    MESHPLAN_TRY(expect("=", "'=' after the op results"));
  }
  Op op;
  op.loc = loc;
  std::vector<TensorType> result_types;
  ws();
  size_t name_pos = pos_;
  if (peek('"')) {
    op.name = MESHPLAN_TRY(string_lit());
    MESHPLAN_TRY(expect("(", "'(' opening the operands"));
    op.operands = MESHPLAN_TRY(uses_until(')'));
    MESHPLAN_TRY(expect(")", "')' closing the operands"));
    if (accept("<")) {
      op.props = MESHPLAN_TRY(attr_dict());
      MESHPLAN_TRY(expect(">", "'>' closing the properties"));
    }
    if (accept("(")) {
      do op.regions.push_back(MESHPLAN_TRY(region(true)));
      while (accept(","));
      MESHPLAN_TRY(expect(")", "')' closing the regions"));
    }
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the op's function type"));
    auto [ins, outs] = MESHPLAN_TRY(func_type());
    MESHPLAN_TRY(check_operand_types(op, ins));
    result_types = outs;
    MESHPLAN_TRY(normalize_generic(op, result_types, name_pos));
  } else {
    op.name = MESHPLAN_TRY(ident("an op name"));
    MESHPLAN_TRY(pretty(op, result_types, name_pos));
  }
  skip_loc();
  int64_t declared = 0;
  for (const auto& d : defs) declared += d.second;
  if (declared != static_cast<int64_t>(result_types.size()))
    return error_at(name_pos, str(op.name, " has ", result_types.size(), " results but ", declared,
                                  " are named"));
  OpId id = static_cast<OpId>(m_.ops.size());
  for (uint32_t i = 0; i < result_types.size(); ++i)
    op.results.push_back(m_.add_value(result_types[i], id, i));
  size_t r = 0;
  for (const auto& [ref, count] : defs) {
    if (count == 1) MESHPLAN_TRY(define(ref.name, op.results[r], ref.pos));
    for (int64_t k = 0; k < count; ++k)
      if (count > 1)
        MESHPLAN_TRY(define(ref.name + "#" + std::to_string(k), op.results[r + k], ref.pos));
    r += count;
  }
  if (!op.shardings.empty() && op.shardings.size() != op.results.size())
    return error_at(name_pos, str(op.name, ": sdy.sharding lists ", op.shardings.size(),
                                  " shardings for ", op.results.size(), " results"));
  m_.ops.push_back(std::move(op));
  return id;
}

/// Generic-form ops as older exporters write them: inherent attributes in the trailing dict,
/// dot_general's `#stablehlo.dot<...>`, compare's `#stablehlo<comparison_direction GT>`. Brought
/// to the canonical properties the passes and the pretty printer use.
Status Parser::normalize_generic(Op& op, const std::vector<TensorType>& results, size_t at) {
  if (!std::string_view(op.name).starts_with("stablehlo.")) return {};
  static const char* kInherent[] = {"dimensions",
                                    "broadcast_dimensions",
                                    "permutation",
                                    "dimension",
                                    "iota_dimension",
                                    "start_indices",
                                    "limit_indices",
                                    "strides",
                                    "comparison_direction",
                                    "compare_type",
                                    "dot_dimension_numbers",
                                    "precision_config",
                                    "value",
                                    "all_gather_dim",
                                    "replica_groups",
                                    "channel_handle",
                                    "use_global_device_ids",
                                    "scatter_dimension",
                                    "split_dimension",
                                    "concat_dimension",
                                    "split_count",
                                    "source_target_pairs"};
  for (auto it = op.attrs.begin(); it != op.attrs.end();) {
    if (std::find(std::begin(kInherent), std::end(kInherent), it->first) != std::end(kInherent)) {
      op.set_prop(it->first, it->second);
      it = op.attrs.erase(it);
    } else {
      ++it;
    }
  }
  auto keyword_of = [](const Attr& a) {
    std::string t = a.text;
    size_t sp = t.rfind(' ');
    if (a.kind != Attr::Kind::opaque || sp == std::string::npos || !t.ends_with(">"))
      return std::string();
    return t.substr(sp + 1, t.size() - sp - 2);
  };
  for (const char* k : {"comparison_direction", "compare_type"})
    if (const Attr* a = op.prop(k); a && !keyword_of(*a).empty())
      op.set_prop(k, Attr::keyword(keyword_of(*a)));
  if (const Attr* a = op.prop("precision_config"); a && a->kind == Attr::Kind::array) {
    Attr list = *a;
    for (Attr& e : list.list)
      if (!keyword_of(e).empty()) e = Attr::keyword(keyword_of(e));
    op.set_prop("precision_config", list);
  }
  if (const Attr* a = op.prop("dot_dimension_numbers"); a && a->kind == Attr::Kind::opaque) {
    // #stablehlo.dot<lhs_batching_dimensions = [0], ..., rhs_contracting_dimensions = [1]>
    std::string t = a->text;
    std::vector<NamedAttr> dims;
    for (const char* k : {"lhs_batching_dimensions", "rhs_batching_dimensions",
                          "lhs_contracting_dimensions", "rhs_contracting_dimensions"}) {
      std::vector<int64_t> v;
      size_t at = t.find(k);
      if (at != std::string::npos) {
        size_t open = t.find('[', at), close = t.find(']', at);
        std::string body = t.substr(open + 1, close - open - 1);
        for (size_t p = 0; p < body.size();) {
          size_t c = body.find(',', p);
          if (c == std::string::npos) c = body.size();
          std::string num = body.substr(p, c - p);
          if (num.find_first_of("0123456789") != std::string::npos) v.push_back(std::stoll(num));
          p = c + 1;
        }
      }
      dims.emplace_back(k, Attr::ints_array(v));
    }
    op.props.erase(
        std::remove_if(op.props.begin(), op.props.end(),
                       [](const NamedAttr& p) { return p.first == "dot_dimension_numbers"; }),
        op.props.end());
    for (auto& [k, v] : dims) op.set_prop(k, v);
  }
  if (const Attr* v = op.prop("value"); op.name == "stablehlo.constant" && v &&
                                        v->kind == Attr::Kind::dense &&
                                        (results.size() != 1 || !(v->type == results[0])))
    return error_at(at, str("stablehlo.constant: the value's type ", type_string(v->type),
                            " differs from the result type"));
  return {};
}

// The parser also reads convert and reshape in the short one-operand form.
bool is_unary_name(std::string_view s) {
  return is_elementwise_unary(s) || s == "convert" || s == "reshape";
}
bool is_binary_name(std::string_view s) {
  return is_elementwise_binary(s);
}

Status Parser::pretty(Op& op, std::vector<TensorType>& results, size_t name_pos) {
  std::string_view n = op.name;
  if (n == "return" || n == "func.return" || n == "stablehlo.return" || n == "sdy.return") {
    if (n == "return") op.name = "func.return";
    if (peek('%')) {
      op.operands = MESHPLAN_TRY(uses_until(':'));
      MESHPLAN_TRY(expect(":", "':' and the returned types"));
      std::vector<TensorType> ts;
      do ts.push_back(MESHPLAN_TRY(type()));
      while (accept(","));
      MESHPLAN_TRY(check_operand_types(op, ts));
    }
    return {};
  }
  if (n == "sdy.sharding_constraint" || n == "sdy.reshard") {
    op.operands = {MESHPLAN_TRY(use())};
    op.sharding = MESHPLAN_TRY(sharding());
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (n == "sdy.all_gather" || n == "sdy.all_slice" || n == "sdy.all_reduce" ||
      n == "sdy.all_to_all" || n == "sdy.collective_permute" || n == "sdy.reduce_scatter") {
    if (n == "sdy.all_gather" || n == "sdy.all_slice" || n == "sdy.reduce_scatter") {
      MESHPLAN_TRY(expect("[", "'[' opening the per-dimension axes"));
      if (!accept("]")) {
        do op.dim_axes.push_back(MESHPLAN_TRY(axis_set()));
        while (accept(","));
        MESHPLAN_TRY(expect("]", "']' closing the per-dimension axes"));
      }
    } else if (n == "sdy.all_reduce") {
      op.reduce_axes = MESHPLAN_TRY(axis_set());
    } else if (n == "sdy.all_to_all") {
      MESHPLAN_TRY(expect("[", "'[' opening the all_to_all parameters"));
      do {
        Op::AllToAllParam p;
        MESHPLAN_TRY(expect("{", "'{' opening an all_to_all parameter"));
        do p.axes.push_back(MESHPLAN_TRY(axis_ref()));
        while (accept(","));
        MESHPLAN_TRY(expect(":", "':' then src->tgt dimensions"));
        p.src = MESHPLAN_TRY(integer("a source dimension"));
        MESHPLAN_TRY(expect("->", "'->'"));
        p.tgt = MESHPLAN_TRY(integer("a target dimension"));
        MESHPLAN_TRY(expect("}", "'}' closing an all_to_all parameter"));
        op.all_to_all.push_back(std::move(p));
      } while (accept(","));
      MESHPLAN_TRY(expect("]", "']' closing the all_to_all parameters"));
    }
    op.operands = {MESHPLAN_TRY(use())};
    if (!accept("out_sharding")) return error("'out_sharding='");
    MESHPLAN_TRY(expect("=", "'=' after out_sharding"));
    op.sharding = MESHPLAN_TRY(sharding());
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (n == "sdy.manual_computation") {
    MESHPLAN_TRY(expect("(", "'(' opening the operands"));
    op.operands = MESHPLAN_TRY(uses_until(')'));
    MESHPLAN_TRY(expect(")", "')' closing the operands"));
    if (!accept("in_shardings")) return error("'in_shardings='");
    MESHPLAN_TRY(expect("=", "'='"));
    op.in_shardings = MESHPLAN_TRY(sharding_list());
    if (!accept("out_shardings")) return error("'out_shardings='");
    MESHPLAN_TRY(expect("=", "'='"));
    op.out_shardings = MESHPLAN_TRY(sharding_list());
    if (!accept("manual_axes")) return error("'manual_axes='");
    MESHPLAN_TRY(expect("=", "'='"));
    MESHPLAN_TRY(expect("{", "'{' opening the manual axes"));
    if (!accept("}")) {
      do op.manual_axes.push_back(MESHPLAN_TRY(string_lit()));
      while (accept(","));
      MESHPLAN_TRY(expect("}", "'}' closing the manual axes"));
    }
    Block b;
    scopes_.emplace_back();
    MESHPLAN_TRY(region_args(b));
    MESHPLAN_TRY(expect("{", "'{' opening the manual computation body"));
    MESHPLAN_TRY(ops_until(b));
    MESHPLAN_TRY(expect("}", "'}' closing the manual computation body"));
    scopes_.pop_back();
    op.regions.push_back(std::move(b));
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the manual computation's type"));
    auto [ins, outs] = MESHPLAN_TRY(func_type());
    MESHPLAN_TRY(check_operand_types(op, ins));
    if (op.in_shardings.size() != op.operands.size() || op.out_shardings.size() != outs.size())
      return error_at(
          name_pos,
          "sdy.manual_computation: in_shardings/out_shardings do not match operands/results");
    results = outs;
    return {};
  }
  if (!n.starts_with("stablehlo."))
    return error_at(name_pos, str("unknown op '", n,
                                  "' (expected a stablehlo, sdy or func op, or the generic form "
                                  "\"dialect.op\"(...))"));
  std::string_view s = n.substr(10);
  if (is_unary_name(s)) {
    op.operands = {MESHPLAN_TRY(use())};
    MESHPLAN_TRY(op_attr_dict(op));
    type_pos_ = pos_;
    return same_or_func_type(op, results);
  }
  if (is_binary_name(s)) {
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(",", "',' between the two operands"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(op_attr_dict(op));
    type_pos_ = pos_;
    return same_or_func_type(op, results);
  }
  if (s == "broadcast_in_dim" || s == "transpose") {
    op.operands = {MESHPLAN_TRY(use())};
    MESHPLAN_TRY(expect(",", "', dims = [...]'"));
    if (!accept_word("dims")) return error("'dims'");
    MESHPLAN_TRY(expect("=", "'=' after dims"));
    op.set_prop(s == "transpose" ? "permutation" : "broadcast_dimensions",
                Attr::ints_array(MESHPLAN_TRY(int_list())));
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "concatenate") {
    op.operands.push_back(MESHPLAN_TRY(use()));
    while (accept(",")) {
      if (accept_word("dim")) {
        MESHPLAN_TRY(expect("=", "'=' after dim"));
        op.set_prop("dimension", Attr::integer(MESHPLAN_TRY(integer()), "i64"));
        break;
      }
      op.operands.push_back(MESHPLAN_TRY(use()));
    }
    if (!op.prop("dimension")) return error("', dim = N' in concatenate");
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "iota") {
    if (!accept_word("dim")) return error("'dim = N' in iota");
    MESHPLAN_TRY(expect("=", "'=' after dim"));
    op.set_prop("iota_dimension", Attr::integer(MESHPLAN_TRY(integer()), "i64"));
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the result type"));
    results = {MESHPLAN_TRY(type())};
    return {};
  }
  if (s == "constant") {
    MESHPLAN_TRY(op_attr_dict(op));
    if (!accept("dense<")) return error("a dense<...> literal");
    Attr v = MESHPLAN_TRY(dense());
    results = {v.type};
    op.set_prop("value", std::move(v));
    return {};
  }
  if (s == "compare") {
    op.set_prop("comparison_direction",
                Attr::keyword(MESHPLAN_TRY(ident("a comparison direction (EQ, GT, ...)"))));
    MESHPLAN_TRY(expect(",", "','"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(",", "','"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    if (accept(","))
      op.set_prop("compare_type", Attr::keyword(MESHPLAN_TRY(ident("a compare type"))));
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "select") {
    op.operands = MESHPLAN_TRY(uses_until(':'));
    if (op.operands.size() != 3) return error_at(name_pos, "stablehlo.select takes 3 operands");
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the select's types"));
    if (peek('(')) {
      auto [ins, outs] = MESHPLAN_TRY(func_type());
      MESHPLAN_TRY(check_operand_types(op, ins));
      results = outs;
    } else {
      MESHPLAN_TRY(type());
      MESHPLAN_TRY(expect(",", "', T' (the select's result type)"));
      results = {MESHPLAN_TRY(type())};
    }
    return {};
  }
  if (s == "slice") {
    op.operands = {MESHPLAN_TRY(use())};
    MESHPLAN_TRY(expect("[", "'[' opening the slice ranges"));
    std::vector<int64_t> st, li, sr;
    if (!accept("]")) {
      do {
        st.push_back(MESHPLAN_TRY(integer()));
        MESHPLAN_TRY(expect(":", "':' in start:limit[:stride]"));
        li.push_back(MESHPLAN_TRY(integer()));
        sr.push_back(1);
        if (accept(":")) sr.back() = MESHPLAN_TRY(integer());
      } while (accept(","));
      MESHPLAN_TRY(expect("]", "']' closing the slice ranges"));
    }
    op.set_prop("start_indices", Attr::ints_array(st));
    op.set_prop("limit_indices", Attr::ints_array(li));
    op.set_prop("strides", Attr::ints_array(sr));
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "dot_general") {
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(",", "','"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    std::vector<int64_t> lb, rb, lc, rc;
    while (accept(",")) {
      std::string key = MESHPLAN_TRY(ident("batching_dims, contracting_dims or precision"));
      MESHPLAN_TRY(expect("=", "'='"));
      if (key == "batching_dims" || key == "contracting_dims") {
        auto l = MESHPLAN_TRY(int_list());
        if (!accept_word("x")) return error("'x' between the lhs and rhs dimensions");
        auto r = MESHPLAN_TRY(int_list());
        (key == "batching_dims" ? lb : lc) = l;
        (key == "batching_dims" ? rb : rc) = r;
      } else if (key == "precision") {
        op.set_prop("precision_config", MESHPLAN_TRY(attr()));
      } else if (key == "algorithm") {
        op.set_prop("algorithm", MESHPLAN_TRY(attr()));
      } else {
        return error_at(pos_, str("unknown dot_general field '", key, "'"));
      }
    }
    op.set_prop("lhs_batching_dimensions", Attr::ints_array(lb));
    op.set_prop("rhs_batching_dimensions", Attr::ints_array(rb));
    op.set_prop("lhs_contracting_dimensions", Attr::ints_array(lc));
    op.set_prop("rhs_contracting_dimensions", Attr::ints_array(rc));
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "reduce") {
    MESHPLAN_TRY(expect("(", "'(' opening the reduce operands"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    if (!accept_word("init")) return error("'init:'");
    MESHPLAN_TRY(expect(":", "':' after init"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(")", "')' (only single-input reduce is supported)"));
    std::string applies;
    if (accept_word("applies")) applies = MESHPLAN_TRY(ident("the reduction op"));
    if (!accept_word("across")) return error("'across dimensions = [...]'");
    if (!accept_word("dimensions")) return error("'dimensions'");
    MESHPLAN_TRY(expect("=", "'='"));
    op.set_prop("dimensions", Attr::ints_array(MESHPLAN_TRY(int_list())));
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the reduce's type"));
    auto [ins, outs] = MESHPLAN_TRY(func_type());
    MESHPLAN_TRY(check_operand_types(op, ins));
    results = outs;
    Block b;
    if (!applies.empty()) {
      TensorType scalar{{}, ins[1].element};
      ValueId a0 = m_.add_value(scalar, kNone, 0), a1 = m_.add_value(scalar, kNone, 1);
      b.args = {a0, a1};
      OpId body = m_.add_op(applies, {a0, a1}, {scalar}, loc_at(name_pos));
      OpId ret = m_.add_op("stablehlo.return", {m_.ops[body].results[0]}, {}, loc_at(name_pos));
      b.ops = {body, ret};
    } else {
      if (!accept_word("reducer")) return error("'applies OP' or 'reducer(...)'");
      scopes_.emplace_back();
      MESHPLAN_TRY(region_args(b));
      MESHPLAN_TRY(expect("{", "'{' opening the reducer"));
      MESHPLAN_TRY(ops_until(b));
      MESHPLAN_TRY(expect("}", "'}' closing the reducer"));
      scopes_.pop_back();
    }
    op.regions.push_back(std::move(b));
    return {};
  }
  if (s == "convolution") {
    MESHPLAN_TRY(expect("(", "'(' opening the convolution operands"));
    op.operands = MESHPLAN_TRY(uses_until(')'));
    MESHPLAN_TRY(expect(")", "')'"));
    if (!accept_word("dim_numbers")) return error("'dim_numbers ='");
    MESHPLAN_TRY(expect("=", "'='"));
    ws();
    size_t b = pos_;
    while (pos_ < t_.size() && t_[pos_] != ',' && t_[pos_] != '{' && t_[pos_] != ':') {
      if (t_[pos_] == '[')
        MESHPLAN_TRY(balanced('[', ']'));
      else
        ++pos_;
    }
    std::string dn(t_.substr(b, pos_ - b));
    while (!dn.empty() && std::isspace(static_cast<unsigned char>(dn.back()))) dn.pop_back();
    Attr d;
    d.kind = Attr::Kind::opaque;
    d.text = dn;
    op.set_prop("dim_numbers", d);
    if (accept(",")) {
      if (!accept_word("window")) return error("'window = {...}'");
      MESHPLAN_TRY(expect("=", "'='"));
      Attr w;
      w.kind = Attr::Kind::opaque;
      w.text = MESHPLAN_TRY(balanced('{', '}'));
      op.set_prop("window", w);
    }
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  return error_at(name_pos, str("unsupported op '", n,
                                "' in pretty form (write it in generic form \"", n, "\"(...))"));
}

}  // namespace

Result<Module> parse_module(std::string_view text, std::string file) {
  Parser p(text, std::move(file));
  return p.run();
}

Result<Module> parse_module_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::io, "cannot open '", path, "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_module(ss.str(), path);
}

}  // namespace meshplan::planner::shlo
