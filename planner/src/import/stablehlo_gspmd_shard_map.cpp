// GSPMD's form of shard_map (what JAX prints without Shardy) read as an sdy.manual_computation:
//   %s = custom_call @Sharding(%arg) {mhlo.sharding = "{devices=[...]<=[N]...}"}
//   %l = custom_call @SPMDFullToShardShape(%s) {mhlo.sharding = "{manual}"}
//   ... the body (its calls already inlined) ...
//   %m = custom_call @Sharding(%r) {mhlo.sharding = "{manual}"}
//   %g = custom_call @SPMDShardToFullShape(%m) {mhlo.sharding = "{replicated}" or tiles}
//   return %g
// GSPMD names no mesh axes: the tile assignments (iota device order) are factored into the
// coarsest mesh whose axes every tiled dim is made of, `"_axis_0"` major-most, as Shardy's own
// GSPMD import names them. Forms without such a mesh (transposed or explicit device orders that
// are not the iota, partial manual shardings, a body that uses an argument directly) are a
// located "unimplemented" error.
#include <algorithm>
#include <map>
#include <set>

#include "import/stablehlo_parser.hpp"

namespace meshplan::planner::shlo {

namespace {

std::string target(const Op& op) {
  const Attr* t = op.prop("call_target_name");
  return op.name == "stablehlo.custom_call" && t ? t->text : "";
}

std::string sharding_text(const Op& op) {
  const Attr* a = op.attr("mhlo.sharding");
  return a && a->kind == Attr::Kind::string ? a->text : "";
}

/// A tiled (or replicated) GSPMD sharding: pieces per dim, then one trailing replication
/// factor (1 when none).
struct Tiles {
  std::vector<int64_t> dims;
  int64_t replicated = 1;
  int64_t devices() const {
    int64_t n = replicated;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

std::vector<int64_t> int_list(std::string_view s, bool& ok) {
  std::vector<int64_t> out;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == ',' || s[i] == ' ') {
      ++i;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) {
      ok = false;
      return out;
    }
    int64_t v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      v = v * 10 + (s[i++] - '0');
      if (v > (int64_t{1} << 31)) ok = false;
    }
    out.push_back(v);
  }
  return out;
}

/// Reads `{replicated}`, `{devices=[a,b,...]<=[N]}` or `{devices=[a,b,...]0,1,...}` (device
/// order the iota), each optionally with ` last_tile_dim_replicate`; nullopt otherwise.
std::optional<Tiles> read_tiles(const std::string& s, size_t rank) {
  if (s == "{replicated}") return Tiles{std::vector<int64_t>(rank, 1), 1};
  std::string_view t = s;
  if (!t.starts_with("{devices=[") || !t.ends_with("}")) return std::nullopt;
  t = t.substr(10, t.size() - 11);
  bool last_replicate = false;
  if (size_t at = t.find(" last_tile_dim_replicate"); at != std::string_view::npos) {
    if (at + 24 != t.size()) return std::nullopt;
    last_replicate = true;
    t = t.substr(0, at);
  }
  size_t close = t.find(']');
  if (close == std::string_view::npos) return std::nullopt;
  bool ok = true;
  std::vector<int64_t> tiles = int_list(t.substr(0, close), ok);
  std::string_view order = t.substr(close + 1);
  int64_t n = 1;
  for (int64_t d : tiles) n = d > 0 && n <= (int64_t{1} << 31) ? n * d : 0;
  if (!ok || n <= 0) return std::nullopt;
  if (order.starts_with("<=[")) {
    if (!order.ends_with("]")) return std::nullopt;
    std::vector<int64_t> iota = int_list(order.substr(3, order.size() - 4), ok);
    if (!ok || iota.size() != 1 || iota[0] != n) return std::nullopt;  // reshaped / transposed
  } else {
    std::vector<int64_t> ids = int_list(order, ok);
    if (!ok || static_cast<int64_t>(ids.size()) != n) return std::nullopt;
    for (int64_t i = 0; i < n; ++i)
      if (ids[static_cast<size_t>(i)] != i) return std::nullopt;
  }
  Tiles out;
  out.dims = tiles;
  if (last_replicate) {
    if (tiles.empty()) return std::nullopt;
    out.replicated = tiles.back();
    out.dims.pop_back();
  }
  if (out.dims.size() != rank) return std::nullopt;
  return out;
}

struct Boundary {
  OpId sharding = kNone, convert = kNone;  ///< The @Sharding and the SPMD*Shape custom calls.
  Tiles tiles;
};

}  // namespace

Status gspmd_shard_map_to_manual(Module& m) {
  Func* f = m.entry();
  if (!f) return {};
  auto is_boundary = [&](const Op& op) {
    std::string t = target(op);
    return t == "SPMDFullToShardShape" || t == "SPMDShardToFullShape";
  };
  const bool any = std::any_of(m.ops.begin(), m.ops.end(), is_boundary);
  if (!any) return {};
  auto refuse = [&](const Op& op, const std::string& what) -> Status {
    return fail(ErrorCode::unimplemented, op.loc.str(), ": unimplemented: ", what,
                " (GSPMD shard_map: meshplan reads one shard_map over all devices that is the "
                "whole entry function, with iota device order; export with Shardy for others)");
  };
  for (const Op& op : m.ops)
    if (is_boundary(op) && std::find(f->body.ops.begin(), f->body.ops.end(),
                                     static_cast<OpId>(&op - m.ops.data())) == f->body.ops.end())
      return refuse(op, str("custom_call @", target(op), " outside the entry function's body"));
  if (!m.meshes.empty())
    for (OpId o : f->body.ops)
      if (is_boundary(m.ops[o]))
        return refuse(m.ops[o], "GSPMD shard_map in a module with Shardy meshes");

  // The boundary: one @Sharding + FullToShard per argument, @Sharding{manual} + ShardToFull per
  // result.
  std::map<ValueId, OpId> def;
  for (OpId o : f->body.ops)
    for (ValueId r : m.ops[o].results) def[r] = o;
  auto producer = [&](ValueId v) { return def.count(v) ? def[v] : kNone; };
  std::vector<Boundary> ins(f->args.size()), outs;
  std::set<OpId> outside;
  for (OpId o : f->body.ops) {
    const Op& op = m.ops[o];
    std::string t = target(op);
    if (t != "SPMDFullToShardShape") continue;
    OpId s = op.operands.size() == 1 ? producer(op.operands[0]) : kNone;
    if (s == kNone || target(m.ops[s]) != "Sharding" || m.ops[s].operands.size() != 1)
      return refuse(op,
                    "custom_call @SPMDFullToShardShape of a value no custom_call @Sharding "
                    "annotates");
    if (sharding_text(op) != "{manual}")
      return refuse(op, str("custom_call @SPMDFullToShardShape with mhlo.sharding \"",
                            sharding_text(op), "\" (a partial manual sharding)"));
    size_t k = 0;
    while (k < f->args.size() && f->args[k].value != m.ops[s].operands[0]) ++k;
    if (k == f->args.size() || ins[k].convert != kNone)
      return refuse(op,
                    "custom_call @SPMDFullToShardShape of a value other than an argument "
                    "taken once");
    auto tiles =
        read_tiles(sharding_text(m.ops[s]), m.values[m.ops[s].operands[0]].type.shape.size());
    if (!tiles) return refuse(m.ops[s], str("mhlo.sharding \"", sharding_text(m.ops[s]), "\""));
    ins[k] = {s, o, *tiles};
    outside.insert(s);
    outside.insert(o);
  }
  const Op& ret = m.ops[f->body.ops.back()];
  for (ValueId v : ret.operands) {
    OpId o = producer(v);
    if (o == kNone || target(m.ops[o]) != "SPMDShardToFullShape")
      return refuse(ret, "a result that is not a custom_call @SPMDShardToFullShape");
    const Op& op = m.ops[o];
    OpId s = op.operands.size() == 1 ? producer(op.operands[0]) : kNone;
    if (s == kNone || target(m.ops[s]) != "Sharding" || sharding_text(m.ops[s]) != "{manual}")
      return refuse(op,
                    "custom_call @SPMDShardToFullShape of a value no custom_call @Sharding "
                    "{manual} annotates");
    auto tiles = read_tiles(sharding_text(op), m.values[op.results[0]].type.shape.size());
    if (!tiles) return refuse(op, str("mhlo.sharding \"", sharding_text(op), "\""));
    outs.push_back({s, o, *tiles});
    outside.insert(s);
    outside.insert(o);
  }
  for (size_t k = 0; k < ins.size(); ++k)
    if (ins[k].convert == kNone)
      return refuse(ret, str("argument ", k, " of @", f->name,
                             " that does not enter the shard_map through "
                             "custom_call @SPMDFullToShardShape"));

  // The mesh: every tiled dim's device range is a run of its axes. A tiling (t0, ..., tk, r)
  // cuts the iota at the products of its suffixes; the mesh's axes lie between the union of all
  // cuts, which must each divide the next.
  int64_t n = 0;
  std::vector<const Boundary*> all;
  for (const auto& b : ins) all.push_back(&b);
  for (const auto& b : outs) all.push_back(&b);
  for (const Boundary* b : all)
    if (b->tiles.devices() > 1) {
      if (n > 1 && b->tiles.devices() != n)
        return refuse(m.ops[b->sharding],
                      str("a sharding over ", b->tiles.devices(), " devices next to one over ", n));
      n = b->tiles.devices();
    }
  for (const auto& [k, v] : m.module_attrs)
    if (k == "mhlo.num_partitions" && v.kind == Attr::Kind::integer) {
      if (n <= 1) n = v.i;
      if (v.i != n)
        return refuse(m.ops[all.front()->sharding],
                      str("shardings over ", n, " devices in a module of ", v.i, " partitions"));
    }
  if (n < 1) n = 1;
  std::set<int64_t> cuts = {1, n};
  auto suffixes = [](const Tiles& t) {
    std::vector<int64_t> s(t.dims.size() + 1);  // s[i]: devices below dim i's tiles
    s[t.dims.size()] = t.replicated;
    for (size_t i = t.dims.size(); i-- > 0;) s[i] = s[i + 1] * t.dims[i];
    return s;
  };
  for (const Boundary* b : all)
    if (b->tiles.devices() > 1)
      for (int64_t c : suffixes(b->tiles)) cuts.insert(c);
  std::vector<int64_t> chain(cuts.begin(), cuts.end());
  for (size_t i = 1; i < chain.size(); ++i)
    if (chain[i] % chain[i - 1] != 0)
      return refuse(m.ops[all.front()->sharding],
                    str("tilings that cut the ", n, " devices at ", chain[i - 1], " and ", chain[i],
                        ", which no mesh of whole axes expresses"));
  MeshDecl mesh;
  mesh.name = "mesh";
  std::vector<int64_t> axis_below;  // per axis (major first): devices below it
  for (size_t i = chain.size(); i-- > 1;) {
    mesh.axes.emplace_back(str("_axis_", mesh.axes.size()), chain[i] / chain[i - 1]);
    axis_below.push_back(chain[i - 1]);
  }
  auto sharding_of_tiles = [&](const Tiles& t) {
    TensorSharding s;
    s.mesh = mesh.name;
    auto suf = t.devices() > 1 ? suffixes(t) : std::vector<int64_t>(t.dims.size() + 1, 1);
    for (size_t d = 0; d < t.dims.size(); ++d) {
      DimSharding dim;
      for (size_t a = 0; a < mesh.axes.size(); ++a)
        if (axis_below[a] >= suf[d + 1] && axis_below[a] < suf[d])
          dim.axes.push_back(AxisRef{mesh.axes[a].first, 1, 0});
      s.dims.push_back(std::move(dim));
    }
    return s;
  };

  // The manual computation: operands the arguments, the body every other op.
  OpId mc = m.add_op("sdy.manual_computation", {}, {}, ret.loc);
  Block body;
  std::map<ValueId, ValueId> subst;
  for (size_t k = 0; k < ins.size(); ++k) {
    const Op& conv = m.ops[ins[k].convert];
    ValueId local = m.add_value(m.values[conv.results[0]].type, kNone, static_cast<uint32_t>(k));
    body.args.push_back(local);
    subst[conv.results[0]] = local;
    m.ops[mc].operands.push_back(f->args[k].value);
    m.ops[mc].in_shardings.push_back(sharding_of_tiles(ins[k].tiles));
  }
  std::set<ValueId> args;
  for (const ArgInfo& a : f->args) args.insert(a.value);
  for (OpId o : f->body.ops) {
    if (outside.count(o) || o == f->body.ops.back()) continue;
    auto rewrite = [&](auto& self, Op& op) -> Status {
      for (ValueId& v : op.operands) {
        if (args.count(v))
          return refuse(op, str(op.name, " uses an argument of @", f->name,
                                " directly, not through custom_call @SPMDFullToShardShape"));
        if (auto it = subst.find(v); it != subst.end()) {
          v = it->second;
        } else if (def.count(v) && outside.count(def[v])) {
          return refuse(op, str(op.name, " uses a value of the shard_map's boundary (",
                                target(m.ops[def[v]]), ") other than its local result"));
        }
      }
      for (Block& r : op.regions)
        for (OpId inner : r.ops) MESHPLAN_TRY(self(self, m.ops[inner]));
      return {};
    };
    MESHPLAN_TRY(rewrite(rewrite, m.ops[o]));
    body.ops.push_back(o);
  }
  std::vector<ValueId> returned;
  for (const Boundary& b : outs) {
    ValueId v = m.ops[b.sharding].operands[0];
    if (auto it = subst.find(v); it != subst.end()) v = it->second;
    if (args.count(v))
      return refuse(m.ops[b.sharding], "a result that is an argument of the entry function");
    returned.push_back(v);
    m.ops[mc].out_shardings.push_back(sharding_of_tiles(b.tiles));
  }
  OpId sret = m.add_op("sdy.return", returned, {}, m.ops[f->body.ops.back()].loc);
  body.ops.push_back(sret);
  for (const auto& a : mesh.axes) m.ops[mc].manual_axes.push_back(a.first);
  for (const Boundary& b : outs) {
    const TensorType type = m.values[m.ops[b.convert].results[0]].type;
    ValueId r = m.add_value(type, mc, static_cast<uint32_t>(m.ops[mc].results.size()));
    m.ops[mc].results.push_back(r);
  }
  m.ops[mc].regions.push_back(std::move(body));
  OpId ret_id = f->body.ops.back();
  m.ops[ret_id].operands = m.ops[mc].results;
  f->body.ops = {mc, ret_id};
  // The shardings now live on the manual computation.
  auto drop = [](std::vector<NamedAttr>& attrs) {
    std::erase_if(attrs, [](const NamedAttr& a) { return a.first == "mhlo.sharding"; });
  };
  for (ArgInfo& a : f->args) drop(a.attrs);
  for (ResultInfo& r : f->results) drop(r.attrs);
  // The boundary's custom calls left every block: nothing reads them as GSPMD any more.
  for (OpId o : outside)
    for (auto& [k, v] : m.ops[o].props)
      if (k == "call_target_name") v.text.clear();
  m.meshes.push_back(std::move(mesh));
  return {};
}

}  // namespace meshplan::planner::shlo
