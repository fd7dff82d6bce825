// A strict, single-pass graph.json reader: recursive descent over the text, building each table
// when its object closes (a FlatBuffer is built children first). Any doubt gives up (false).
#include "common/graph_json_fast.hpp"

#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "meshplan/schemas/schemas.hpp"

namespace meshplan::planner {

namespace {

using flatbuffers::Offset;

class Reader {
 public:
  Reader(std::string_view text, flatbuffers::FlatBufferBuilder& b) : s_(text), b_(b) {}

  bool graph() {
    space();
    Offset<flatbuffers::String> name;
    Offset<flatbuffers::Vector<Offset<fb::Argument>>> arguments;
    Offset<flatbuffers::Vector<Offset<fb::Op>>> ops;
    Offset<flatbuffers::Vector<Offset<flatbuffers::String>>> outputs, output_shardings;
    bool ok = object({"name", "arguments", "ops", "outputs", "output_shardings"}, [&](int f) {
      switch (f) {
        case 0:
          return string(name);
        case 1:
          return tables<fb::Argument>(arguments,
                                      [&](Offset<fb::Argument>& a) { return argument(a); });
        case 2:
          return tables<fb::Op>(ops, [&](Offset<fb::Op>& o) { return op(o); });
        case 3:
          return strings(outputs);
        default:
          return strings(output_shardings);
      }
    });
    space();
    if (!ok || at_ != s_.size()) return false;
    fb::GraphBuilder g(b_);
    if (!name.IsNull()) g.add_name(name);
    if (!arguments.IsNull()) g.add_arguments(arguments);
    if (!ops.IsNull()) g.add_ops(ops);
    if (!outputs.IsNull()) g.add_outputs(outputs);
    if (!output_shardings.IsNull()) g.add_output_shardings(output_shardings);
    b_.Finish(g.Finish(), fb::GraphIdentifier());
    return true;
  }

 private:
  static constexpr int kMaxDepth = 8;  // graph > ops > op > results > value > shape

  void space() {
    while (at_ < s_.size() &&
           (s_[at_] == ' ' || s_[at_] == '\n' || s_[at_] == '\t' || s_[at_] == '\r'))
      ++at_;
  }
  bool eat(char c) {
    space();
    if (at_ < s_.size() && s_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  static bool ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }

  // A string without escapes, control bytes or non-ASCII bytes (which the full parser checks).
  bool raw_string(std::string_view& out) {
    space();
    if (at_ >= s_.size() || s_[at_] != '"') return false;
    size_t start = ++at_;
    while (at_ < s_.size()) {
      auto c = static_cast<unsigned char>(s_[at_]);
      if (c == '"') {
        out = s_.substr(start, at_ - start);
        ++at_;
        return true;
      }
      if (c < 0x20 || c >= 0x80 || c == '\\') return false;
      ++at_;
    }
    return false;
  }
  // A bare identifier (keys and enum values may be written so).
  bool identifier(std::string_view& out) {
    space();
    size_t start = at_;
    if (at_ >= s_.size() || !(ident_char(s_[at_]) && !(s_[at_] >= '0' && s_[at_] <= '9')))
      return false;
    while (at_ < s_.size() && ident_char(s_[at_])) ++at_;
    out = s_.substr(start, at_ - start);
    return true;
  }
  bool name_or_string(std::string_view& out) {
    space();
    if (at_ < s_.size() && s_[at_] == '"') return raw_string(out);
    return identifier(out);
  }

  // A JSON number's text: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, not followed by a
  // name character. `integral`: whether it has neither fraction nor exponent.
  bool number_text(std::string_view& out, bool& integral) {
    space();
    size_t start = at_;
    auto digits = [&] {
      size_t from = at_;
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
      return at_ - from;
    };
    if (at_ < s_.size() && s_[at_] == '-') ++at_;
    size_t int_start = at_;
    size_t n = digits();
    if (n == 0 || (n > 1 && s_[int_start] == '0')) return false;
    integral = true;
    if (at_ < s_.size() && s_[at_] == '.') {
      ++at_;
      if (digits() == 0) return false;
      integral = false;
    }
    if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
      ++at_;
      if (at_ < s_.size() && (s_[at_] == '+' || s_[at_] == '-')) ++at_;
      if (digits() == 0) return false;
      integral = false;
    }
    if (at_ < s_.size() && (ident_char(s_[at_]) || s_[at_] == '.')) return false;
    out = s_.substr(start, at_ - start);
    return true;
  }
  bool integer(int64_t& v) {
    std::string_view t;
    bool integral = false;
    if (!number_text(t, integral) || !integral) return false;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return ec == std::errc{} && end == t.data() + t.size();
  }
  bool real(double& v) {
    std::string_view t;
    bool integral = false;
    // Long integer literals: left to the full parser, whose conversion path differs.
    if (!number_text(t, integral) || (integral && t.size() > 15)) return false;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return ec == std::errc{} && end == t.data() + t.size();
  }
  bool boolean(bool& v) {
    std::string_view t;
    if (!identifier(t)) return false;
    if (t == "true")
      v = true;
    else if (t == "false")
      v = false;
    else
      return false;
    return true;
  }
  template <typename E>
  bool enumeration(E& v, const char* const* names, int count) {
    std::string_view t;
    if (!name_or_string(t)) return false;
    for (int i = 0; i < count; ++i)
      if (t == names[i]) {
        v = static_cast<E>(i);
        return true;
      }
    return false;
  }

  // `{ key: value, ... }` with each of `keys` at most once; field(i) reads the value of keys[i].
  template <typename F>
  bool object(std::initializer_list<std::string_view> keys, F&& field) {
    if (++depth_ > kMaxDepth || !eat('{')) return false;
    uint32_t seen = 0;
    for (;;) {
      if (eat('}')) break;
      std::string_view key;
      if (!name_or_string(key) || !eat(':')) return false;
      int index = 0;
      for (std::string_view k : keys) {
        if (k == key) break;
        ++index;
      }
      if (index == static_cast<int>(keys.size()) || (seen & (1u << index))) return false;
      seen |= 1u << index;
      if (!field(index)) return false;
      if (eat(',')) continue;
      if (!eat('}')) return false;
      break;
    }
    --depth_;
    return true;
  }
  // `[ element, ... ]`.
  template <typename F>
  bool array(F&& element) {
    if (++depth_ > kMaxDepth || !eat('[')) return false;
    for (;;) {
      if (eat(']')) break;
      if (!element()) return false;
      if (eat(',')) continue;
      if (!eat(']')) return false;
      break;
    }
    --depth_;
    return true;
  }

  bool string(Offset<flatbuffers::String>& out) {
    std::string_view t;
    if (!raw_string(t)) return false;
    out = b_.CreateString(t.data(), t.size());
    return true;
  }
  bool strings(Offset<flatbuffers::Vector<Offset<flatbuffers::String>>>& out) {
    std::vector<Offset<flatbuffers::String>> items;
    if (!array([&] { return string(items.emplace_back()); })) return false;
    out = b_.CreateVector(items);
    return true;
  }
  bool integers(Offset<flatbuffers::Vector<int64_t>>& out) {
    std::vector<int64_t> items;
    if (!array([&] { return integer(items.emplace_back()); })) return false;
    out = b_.CreateVector(items);
    return true;
  }
  bool reals(Offset<flatbuffers::Vector<double>>& out) {
    std::vector<double> items;
    if (!array([&] { return real(items.emplace_back()); })) return false;
    out = b_.CreateVector(items);
    return true;
  }
  template <typename T, typename F>
  bool tables(Offset<flatbuffers::Vector<Offset<T>>>& out, F&& one) {
    std::vector<Offset<T>> items;
    if (!array([&] { return one(items.emplace_back()); })) return false;
    out = b_.CreateVector(items);
    return true;
  }

  bool value(Offset<fb::Value>& out) {
    Offset<flatbuffers::String> name;
    Offset<flatbuffers::Vector<int64_t>> shape;
    std::optional<fb::DType> dtype;
    bool ok = object({"name", "shape", "dtype"}, [&](int f) {
      if (f == 0) return string(name);
      if (f == 1) return integers(shape);
      fb::DType d{};
      if (!enumeration(d, fb::EnumNamesDType(), static_cast<int>(fb::DType::MAX) + 1)) return false;
      dtype = d;
      return true;
    });
    if (!ok || name.IsNull()) return false;  // name is required
    fb::ValueBuilder v(b_);
    v.add_name(name);
    if (!shape.IsNull()) v.add_shape(shape);
    if (dtype) v.add_dtype(*dtype);
    out = v.Finish();
    return true;
  }

  bool argument(Offset<fb::Argument>& out) {
    Offset<fb::Value> val;
    std::optional<fb::ArgKind> kind;
    Offset<flatbuffers::Vector<double>> data;
    Offset<flatbuffers::String> sharding;
    bool ok = object({"value", "kind", "data", "sharding"}, [&](int f) {
      if (f == 0) return value(val);
      if (f == 2) return reals(data);
      if (f == 3) return string(sharding);
      fb::ArgKind k{};
      if (!enumeration(k, fb::EnumNamesArgKind(), static_cast<int>(fb::ArgKind::MAX) + 1))
        return false;
      kind = k;
      return true;
    });
    if (!ok || val.IsNull()) return false;  // value is required
    fb::ArgumentBuilder a(b_);
    a.add_value(val);
    if (kind) a.add_kind(*kind);
    if (!data.IsNull()) a.add_data(data);
    if (!sharding.IsNull()) a.add_sharding(sharding);
    out = a.Finish();
    return true;
  }

  bool attribute(Offset<fb::Attribute>& out) {
    Offset<flatbuffers::String> name, s;
    std::optional<int64_t> i;
    std::optional<double> f;
    std::optional<bool> flag;
    Offset<flatbuffers::Vector<int64_t>> ints;
    Offset<flatbuffers::Vector<double>> floats;
    bool ok = object({"name", "i", "f", "b", "s", "ints", "floats"}, [&](int k) {
      switch (k) {
        case 0:
          return string(name);
        case 1:
          return integer(i.emplace());
        case 2:
          return real(f.emplace());
        case 3:
          return boolean(flag.emplace());
        case 4:
          return string(s);
        case 5:
          return integers(ints);
        default:
          return reals(floats);
      }
    });
    if (!ok || name.IsNull()) return false;  // name is required
    fb::AttributeBuilder a(b_);
    a.add_name(name);
    if (i) a.add_i(*i);
    if (f) a.add_f(*f);
    if (flag) a.add_b(*flag);
    if (!s.IsNull()) a.add_s(s);
    if (!ints.IsNull()) a.add_ints(ints);
    if (!floats.IsNull()) a.add_floats(floats);
    out = a.Finish();
    return true;
  }

  bool op(Offset<fb::Op>& out) {
    Offset<flatbuffers::String> name, kind;
    Offset<flatbuffers::Vector<Offset<flatbuffers::String>>> operands;
    Offset<flatbuffers::Vector<Offset<fb::Value>>> results;
    Offset<flatbuffers::Vector<Offset<fb::Attribute>>> attributes;
    bool ok = object({"name", "kind", "operands", "results", "attributes"}, [&](int f) {
      switch (f) {
        case 0:
          return string(name);
        case 1:
          return string(kind);
        case 2:
          return strings(operands);
        case 3:
          return tables<fb::Value>(results, [&](Offset<fb::Value>& v) { return value(v); });
        default:
          return tables<fb::Attribute>(attributes,
                                       [&](Offset<fb::Attribute>& a) { return attribute(a); });
      }
    });
    if (!ok || kind.IsNull()) return false;  // kind is required
    fb::OpBuilder o(b_);
    if (!name.IsNull()) o.add_name(name);
    o.add_kind(kind);
    if (!operands.IsNull()) o.add_operands(operands);
    if (!results.IsNull()) o.add_results(results);
    if (!attributes.IsNull()) o.add_attributes(attributes);
    out = o.Finish();
    return true;
  }

  std::string_view s_;
  flatbuffers::FlatBufferBuilder& b_;
  size_t at_ = 0;
  int depth_ = 0;
};

}  // namespace

bool read_graph_json_fast(std::string_view json, flatbuffers::FlatBufferBuilder& b) {
  return Reader(json, b).graph();
}

}  // namespace meshplan::planner
