// The parser's lexical level: characters, locations and errors, tokens (identifiers, strings,
// numbers), tensor types and attribute values (dense literals with hex decoding, arrays,
// dictionaries).
#include <bit>
#include <charconv>
#include <cmath>

#include "import/stablehlo_parser.hpp"

namespace meshplan::planner::shlo::parse {

void Parser::ws() {
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

bool Parser::peek(char c) {
  ws();
  return pos_ < t_.size() && t_[pos_] == c;
}

bool Parser::peek(std::string_view s) {
  ws();
  return t_.substr(pos_).starts_with(s);
}

bool Parser::accept(std::string_view s) {
  if (!peek(s)) return false;
  pos_ += s.size();
  return true;
}

bool Parser::accept_word(std::string_view w) {
  if (!peek(w)) return false;
  size_t end = pos_ + w.size();
  if (end < t_.size() && ident_char(t_[end])) return false;
  pos_ = end;
  return true;
}

Location Parser::loc_at(size_t p) const {
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

Location Parser::here() {
  ws();
  return loc_at(pos_);
}

std::unexpected<Error> Parser::error(std::string_view expected) {
  ws();
  std::string found = pos_ >= t_.size() ? "end of input" : std::string(t_.substr(pos_, 12));
  if (auto nl = found.find('\n'); nl != std::string::npos) found.resize(nl);
  return fail(ErrorCode::invalid_argument, here().str(), ": expected ", expected, ", found '",
              found, "'");
}

std::unexpected<Error> Parser::error_at(size_t p, std::string_view message) {
  return fail(ErrorCode::invalid_argument, loc_at(p).str(), ": ", message);
}

Status Parser::expect(std::string_view s, std::string_view what) {
  if (!accept(s)) return error(what);
  return {};
}

Result<std::string> Parser::ident(std::string_view what) {
  ws();
  if (pos_ >= t_.size() || !ident_start(t_[pos_])) return error(what);
  size_t b = pos_;
  while (pos_ < t_.size() && ident_char(t_[pos_]) &&
         !(t_[pos_] == '-' && pos_ + 1 < t_.size() && t_[pos_ + 1] == '>'))
    ++pos_;
  return std::string(t_.substr(b, pos_ - b));
}

Result<std::string> Parser::symbol() {
  if (!accept("@")) return error("a symbol '@name'");
  if (peek('"')) return string_lit();
  return ident("a symbol name");
}

Result<std::string> Parser::string_lit() {
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

Result<int64_t> Parser::integer(std::string_view what) {
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

Result<double> Parser::number(bool& is_float) {
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
    if (digits <= 8) return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits)));
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
  // Integer literals become int64 attributes: one that does not fit is an error here, not an
  // out-of-range conversion later.
  if (!is_float && !(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    return error("an integer that fits in 64 bits");
  pos_ = e;
  return v;
}

Result<TensorType> Parser::type() {
  ws();
  TensorType ty;
  if (peek("!stablehlo.token")) {
    if (!import.tokens)
      return error(
          "a tensor type ('!stablehlo.token' is read only for --stop-after=sdy-propagation)");
    accept("!stablehlo.token");
    ty.element = std::string(kTokenType);
    return ty;
  }
  if (!accept("tensor<")) return error("a tensor type 'tensor<...>'");
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
  ws();
  size_t at = pos_;
  if (import.tokens && (peek("complex<f32>") || peek("complex<f64>"))) {
    // The text-only stages (Shardy's passes) carry complex values through as written; no
    // path that computes reads them.
    ty.element = std::string(t_.substr(pos_, 12));
    pos_ += 12;
    if (!accept(">")) return error("'>' closing the tensor type");
    return ty;
  }
  if (peek("complex<") || peek("!quant.") || peek("!")) {
    MESHPLAN_TRY(balanced_type_text());
    return error_at(at, str("element type ", t_.substr(at, pos_ - at), " is not supported (",
                            kElementTypes, ")"));
  }
  ty.element = MESHPLAN_TRY(ident("an element type"));
  // MLIR's explicitly signed integers (si8..si64) hold the same values as the signless iN that
  // StableHLO computes with (its integer ops read signless integers as signed).
  if (ty.element == "si8" || ty.element == "si16" || ty.element == "si32" || ty.element == "si64")
    ty.element.erase(0, 1);
  if (!is_element_type(ty.element) && !(index_elements_ && ty.element == "index"))
    return error_at(at,
                    str("element type ", ty.element, " is not supported (", kElementTypes, ")"));
  if (!accept(">")) return error("'>' closing the tensor type");
  return ty;
}

bool is_element_type(std::string_view e) {
  for (std::string_view k : {"i1", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "f16",
                             "bf16", "f32", "f64"})
    if (e == k) return true;
  return false;
}

Status Parser::balanced_type_text() {
  // `complex<f32>` or `!quant.uniform<i8:f32, 0.5:3>`: skip to the '<' and over its group.
  while (pos_ < t_.size() && t_[pos_] != '<' && t_[pos_] != '>') ++pos_;
  if (pos_ < t_.size() && t_[pos_] == '<') MESHPLAN_TRY(balanced('<', '>'));
  return {};
}

Result<std::vector<TensorType>> Parser::type_list_parens() {
  std::vector<TensorType> out;
  MESHPLAN_TRY(expect("(", "'('"));
  if (!accept(")")) {
    do out.push_back(MESHPLAN_TRY(type()));
    while (accept(","));
    MESHPLAN_TRY(expect(")", "')' closing the type list"));
  }
  return out;
}

Result<std::pair<std::vector<TensorType>, std::vector<TensorType>>> Parser::func_type() {
  auto ins = MESHPLAN_TRY(type_list_parens());
  MESHPLAN_TRY(expect("->", "'->' in a function type"));
  std::vector<TensorType> outs;
  if (peek('('))
    outs = MESHPLAN_TRY(type_list_parens());
  else
    outs.push_back(MESHPLAN_TRY(type()));
  return std::make_pair(std::move(ins), std::move(outs));
}

Result<std::string> Parser::balanced(char open, char close) {
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

bool Parser::peek_element_type() {
  ws();
  static const char* k[] = {"i1", "i8",  "i16", "i32", "i64",  "ui",
                            "si", "f16", "f32", "f64", "bf16", "index"};
  for (const char* s : k)
    if (t_.substr(pos_).starts_with(s)) return true;
  return false;
}

std::unexpected<Error> Parser::too_deep() {
  return error_at(pos_, str("nesting deeper than ", kMaxDepth,
                            " levels (attributes, dense literals and regions)"));
}

Result<Attr> Parser::attr() {
  Nest nest(*this);
  if (nest.too_deep()) return too_deep();
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
  if (peek('<')) {  // `algorithm = <lhs_precision_type = f32, ...>`: kept as written
    size_t b = pos_;
    MESHPLAN_TRY(balanced('<', '>'));
    a.kind = K::opaque;
    a.text = std::string(t_.substr(b, pos_ - b));
    return a;
  }
  if (accept("array<")) {
    a.kind = K::dense_array;
    a.text = MESHPLAN_TRY(ident("an element type"));
    if (accept(":")) {
      bool floats = a.text.starts_with("f") || a.text.starts_with("bf");
      bool is_float = false;
      do {
        if (floats)
          a.values.push_back(MESHPLAN_TRY(number(is_float)));
        else
          a.ints.push_back(MESHPLAN_TRY(integer()));
      } while (accept(","));
    }
    MESHPLAN_TRY(expect(">", "'>' closing array<...>"));
    return a;
  }
  if (accept("dense<")) return dense(true);
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
  if (pos_ < t_.size() && (std::isdigit(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '-')) {
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

Status Parser::dense_elems(std::vector<double>& out, bool& is_float) {
  Nest nest(*this);
  if (nest.too_deep()) return too_deep();
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

/// IEEE binary16 bits -> value.
static double half_to_double(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  double mant = h & 0x3ff;
  double v = exp == 0    ? std::ldexp(mant, -24)
             : exp == 31 ? (mant == 0 ? INFINITY : NAN)
                         : std::ldexp(mant + 1024, exp - 25);
  return (h & 0x8000) ? -v : v;
}

Status Parser::decode_hex(Attr& a, size_t at) {
  std::string_view hex = a.text;
  if (hex.size() < 4 || !hex.substr(1).starts_with("0x")) return {};
  hex = hex.substr(3, hex.size() - 4);
  const std::string& e = a.type.element;
  size_t width = e == "f32" || e == "i32" || e == "ui32"                  ? 4
                 : e == "f64" || e == "i64" || e == "ui64"                ? 8
                 : e == "bf16" || e == "f16" || e == "i16" || e == "ui16" ? 2
                 : e == "i1" || e == "i8" || e == "ui8"                   ? 1
                                                                          : 0;
  if (width == 0)
    return error_at(at, str("hex dense literal of element type ", e,
                            " is not supported (f16, bf16, f32, f64, i1, i8..i64, ui8..ui64 are)"));
  if (hex.size() % (2 * width) != 0)
    return error_at(at, "hex dense literal does not hold whole elements");
  std::vector<double> values;
  for (size_t i = 0; i < hex.size(); i += 2 * width) {
    uint64_t bits = 0;
    for (size_t b = 0; b < width; ++b) {
      uint64_t byte = 0;
      auto [p, ec] = std::from_chars(hex.data() + i + 2 * b, hex.data() + i + 2 * b + 2, byte, 16);
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
    else if (e == "i16")
      values.push_back(static_cast<int16_t>(bits));
    else if (e == "f16")
      values.push_back(half_to_double(static_cast<uint16_t>(bits)));
    else
      values.push_back(static_cast<double>(bits));
  }
  a.values = std::move(values);
  a.text.clear();
  return {};
}

Result<Attr> Parser::dense(bool index_ok) {
  Attr a;
  std::string_view hex_text;
  size_t hex_at = 0;
  a.kind = Attr::Kind::dense;
  bool is_float = false;
  if (peek('"')) {
    size_t b = pos_;
    MESHPLAN_TRY(string_lit());
    a.text = std::string(t_.substr(b, pos_ - b));
  } else if (ws(); !peek('>')) {  // `dense<>` has no elements (a zero-size tensor)
    size_t elems_at = pos_;
    MESHPLAN_TRY(dense_elems(a.values, is_float));
    hex_at = elems_at;
    hex_text = t_.substr(elems_at, pos_ - elems_at);
  }
  MESHPLAN_TRY(expect(">", "'>' closing dense<...>"));
  MESHPLAN_TRY(expect(":", "':' and the type of a dense literal"));
  ws();
  size_t tp = pos_;
  index_elements_ = index_ok;
  auto ty = type();
  index_elements_ = false;
  a.type = MESHPLAN_TRY(std::move(ty));
  // number() reads a 4-digit hex element as bf16 bits (the width does not tell f16 from bf16):
  // in an f16 literal, reread each one as f16 bits.
  if (a.type.element == "f16" && hex_text.find("0x") != std::string_view::npos) {
    std::vector<std::string_view> tokens;
    for (size_t i = 0; i < hex_text.size();) {
      size_t j = hex_text.find_first_of("[], \t\r\n", i);
      if (j == std::string_view::npos) j = hex_text.size();
      if (j > i) tokens.push_back(hex_text.substr(i, j - i));
      i = j + 1;
    }
    if (tokens.size() == a.values.size())
      for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i].starts_with("0x")) {
          uint64_t bits = 0;
          std::from_chars(tokens[i].data() + 2, tokens[i].data() + tokens[i].size(), bits, 16);
          a.values[i] = half_to_double(static_cast<uint16_t>(bits));
        }
  }
  if (!a.text.empty()) MESHPLAN_TRY(decode_hex(a, tp));
  // Unquoted hex elements are raw bits of the element type: exactly its width, never guessed
  // from the digit count.
  for (size_t x = hex_text.find("0x"); x != std::string_view::npos;
       x = hex_text.find("0x", x + 2)) {
    size_t e = x + 2;
    while (e < hex_text.size() && std::isxdigit(static_cast<unsigned char>(hex_text[e]))) ++e;
    const std::string& el = a.type.element;
    size_t want = el == "bf16" || el == "f16" ? 4 : el == "f32" ? 8 : el == "f64" ? 16 : 0;
    if (want == 0)
      return error_at(hex_at + x, str("hex element literal for element type ", el,
                                      " is not supported (f16, bf16, f32 and f64 are)"));
    if (e - x - 2 != want)
      return error_at(hex_at + x, str("hex element literal '", hex_text.substr(x, e - x), "' has ",
                                      e - x - 2, " digits; ", el, " needs exactly ", want));
  }
  if (a.text.empty() && a.values.size() != 1 &&
      static_cast<int64_t>(a.values.size()) != a.type.volume())
    return error_at(tp, str("dense literal has ", a.values.size(), " values but its type ",
                            type_string(a.type), " holds ", a.type.volume()));
  return a;
}

Result<std::vector<NamedAttr>> Parser::attr_dict() {
  return dict_with_sharding(nullptr, false);
}

Result<std::vector<int64_t>> Parser::int_list() {
  return list_of("[", "]", "a list of integers", [&] { return integer(); });
}

}  // namespace meshplan::planner::shlo::parse
