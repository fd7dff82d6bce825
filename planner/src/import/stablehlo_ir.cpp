// The module IR's small methods: locations, types, mesh declarations, attribute constructors,
// op property lookup and the module's arenas.
#include "meshplan/planner/stablehlo.hpp"

#include <algorithm>

namespace meshplan::planner::shlo {

std::string Location::str() const {
  return meshplan::str(file, ":", line, ":", col);
}

int64_t TensorType::volume() const {
  int64_t v = 1;
  for (int64_t d : shape) v *= d;
  return v;
}

std::string type_string(const TensorType& type) {
  if (type.element == kTokenType) return type.element;
  std::string s = "tensor<";
  for (int64_t d : type.shape) s += std::to_string(d) + "x";
  return s + type.element + ">";
}

int64_t MeshDecl::axis_size(std::string_view axis) const {
  for (const auto& [n, s] : axes)
    if (n == axis) return s;
  return 0;
}

int64_t MeshDecl::size_of(const AxisRef& ref) const {
  return ref.size > 0 ? ref.size : axis_size(ref.name);
}

int64_t MeshDecl::devices() const {
  int64_t n = 1;
  for (const auto& a : axes) n *= a.second;
  return n;
}

Attr Attr::integer(int64_t v, std::string type) {
  Attr a;
  a.kind = Kind::integer;
  a.i = v;
  a.text = std::move(type);
  return a;
}

Attr Attr::ints_array(std::vector<int64_t> v) {
  Attr a;
  a.kind = Kind::dense_array;
  a.ints = std::move(v);
  a.text = "i64";
  return a;
}

Attr Attr::keyword(std::string word) {
  Attr a;
  a.kind = Kind::keyword;
  a.text = std::move(word);
  return a;
}

const Attr* Op::prop(std::string_view n) const {
  for (const auto& [k, v] : props)
    if (k == n) return &v;
  return nullptr;
}

const Attr* Op::attr(std::string_view n) const {
  for (const auto& [k, v] : attrs)
    if (k == n) return &v;
  return nullptr;
}

void Op::set_prop(std::string n, Attr value) {
  for (auto& [k, v] : props)
    if (k == n) {
      v = std::move(value);
      return;
    }
  props.emplace_back(std::move(n), std::move(value));
}

ValueId Module::add_value(TensorType type, OpId def, uint32_t index) {
  values.push_back(Value{std::move(type), def, index, std::nullopt});
  return static_cast<ValueId>(values.size() - 1);
}

OpId Module::add_op(std::string name, std::vector<ValueId> operands,
                    const std::vector<TensorType>& result_types, Location loc) {
  OpId id = static_cast<OpId>(ops.size());
  Op op;
  op.name = std::move(name);
  op.operands = std::move(operands);
  op.loc = std::move(loc);
  for (uint32_t i = 0; i < result_types.size(); ++i)
    op.results.push_back(add_value(result_types[i], id, i));
  ops.push_back(std::move(op));
  return id;
}

const MeshDecl* Module::mesh(std::string_view name) const {
  for (const MeshDecl& m : meshes)
    if (m.name == name) return &m;
  return nullptr;
}

Func* Module::entry() {
  return const_cast<Func*>(std::as_const(*this).entry());
}

const Func* Module::entry() const {
  for (const Func& f : funcs)
    if (f.name == "main") return &f;
  for (const Func& f : funcs)
    if (f.visibility != "private") return &f;
  return funcs.empty() ? nullptr : &funcs.front();
}

}  // namespace meshplan::planner::shlo
