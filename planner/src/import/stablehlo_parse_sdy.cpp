// The parser's Shardy attributes: axis references and sub-axes, dim shardings with priorities,
// `#sdy.sharding<...>` (checked against the mesh) and dictionaries carrying them.
#include "import/stablehlo_parser.hpp"

#include <algorithm>

namespace meshplan::planner::shlo::parse {

Result<AxisRef> Parser::axis_ref() {
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

Result<std::vector<AxisRef>> Parser::axis_set() {
  return list_of("{", "}", "a list of axes", [&] { return axis_ref(); });
}

Result<DimSharding> Parser::dim_sharding() {
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

Result<TensorSharding> Parser::sharding() {
  TensorSharding s;
  // Inside lists (`#sdy.sharding_per_value<[...]>`, manual_computation's in/out shardings) a
  // sharding may be written with its attribute prefix, as in `[#sdy.sharding<@mesh, [...]>]`.
  ws();
  accept("#sdy.sharding");
  MESHPLAN_TRY(expect("<", "'<' opening a sharding"));
  size_t mp = pos_;
  if (accept("mesh<")) {
    // An inlined mesh: the module's mesh of the same axes, or a new one named as Shardy's
    // import names it (@mesh, then @mesh_0, @mesh_1, ...).
    MeshDecl inl;
    MESHPLAN_TRY(mesh_body(inl));
    auto same = std::find_if(m_.meshes.begin(), m_.meshes.end(), [&](const MeshDecl& d) {
      return d.axes == inl.axes && d.device_ids == inl.device_ids;
    });
    if (same != m_.meshes.end()) {
      s.mesh = same->name;
    } else {
      inl.name = "mesh";
      for (int k = 0; m_.mesh(inl.name); ++k) inl.name = str("mesh_", k);
      s.mesh = inl.name;
      m_.meshes.push_back(std::move(inl));
    }
  } else {
    s.mesh = MESHPLAN_TRY(symbol());
  }
  if (!m_.mesh(s.mesh))
    return error_at(mp, str("unknown mesh @", s.mesh, " (declare it with sdy.mesh first)"));
  MESHPLAN_TRY(expect(",", "',' after the mesh name"));
  s.dims =
      MESHPLAN_TRY(list_of("[", "]", "the dimension shardings", [&] { return dim_sharding(); }));
  while (accept(",")) {
    if (accept_word("replicated")) {
      MESHPLAN_TRY(expect("=", "'=' after replicated"));
      s.replicated = MESHPLAN_TRY(axis_set());
    } else if (accept_word("unreduced")) {
      MESHPLAN_TRY(expect("=", "'=' after unreduced"));
      ws();
      for (std::string_view kind : {"max", "min"})
        if (accept_word(kind)) s.unreduced_kind = kind;
      for (std::string_view kind : {"and", "or", "mul"})
        if (accept_word(kind))
          return error_at(pos_, str("unreduced=", kind,
                                    "{...}: only sums, max{...} and min{...} are read as "
                                    "unreduced values"));
      s.unreduced = MESHPLAN_TRY(axis_set());
    } else {
      return error("'replicated' or 'unreduced'");
    }
  }
  MESHPLAN_TRY(expect(">", "'>' closing a sharding"));
  MESHPLAN_TRY(check_sharding(s, mp));
  return s;
}

Status Parser::check_sharding(const TensorSharding& s, size_t at) {
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

Result<std::vector<TensorSharding>> Parser::sharding_list() {
  return list_of("[", "]", "a list of shardings", [&] { return sharding(); });
}

Result<std::vector<NamedAttr>> Parser::dict_with_sharding(std::vector<TensorSharding>* shardings,
                                                          bool per_value) {
  std::vector<NamedAttr> out;
  MESHPLAN_TRY(expect("{", "'{' opening an attribute dictionary"));
  if (accept("}")) return out;
  do {
    ws();
    std::string name =
        peek('"') ? MESHPLAN_TRY(string_lit()) : MESHPLAN_TRY(ident("an attribute name"));
    if (shardings && name == "sdy.sharding") {
      MESHPLAN_TRY(expect("=", "'=' after sdy.sharding"));
      if (per_value) {
        if (!accept("#sdy.sharding_per_value<")) return error("'#sdy.sharding_per_value<'");
        *shardings = MESHPLAN_TRY(sharding_list());
        MESHPLAN_TRY(expect(">", "'>' closing #sdy.sharding_per_value"));
      } else {
        if (!accept("#sdy.sharding")) return error("'#sdy.sharding<'");
        *shardings = {MESHPLAN_TRY(sharding())};
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

}  // namespace meshplan::planner::shlo::parse
