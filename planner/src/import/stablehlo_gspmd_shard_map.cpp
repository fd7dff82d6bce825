// GSPMD's form of shard_map (what JAX prints without Shardy) read as an sdy.manual_computation:
//   %s = custom_call @Sharding(%arg) {mhlo.sharding = "{devices=[...]<=[N]...}"}
//   %l = custom_call @SPMDFullToShardShape(%s) {mhlo.sharding = "{manual}"}
//   ... the body (its calls already inlined) ...
//   %m = custom_call @Sharding(%r) {mhlo.sharding = "{manual}"}
//   %g = custom_call @SPMDShardToFullShape(%m) {mhlo.sharding = "{replicated}" or tiles}
//   return %g
// GSPMD names no mesh axes: the tile assignments (iota device order) are factored into the
// coarsest mesh whose axes every tiled dim is made of, `"_axis_0"` major-most, as Shardy's own
// GSPMD import names them; a reshaped and transposed iota (`<=[8,4]T(1,0)`) gives a tile dim the
// axes of the reshape dims it is made of, in the transposed order. Forms without such a mesh
// (explicit device orders that are not the iota, tilings that split the devices across each
// other's axes, partial manual shardings, a body that uses an argument directly) are a located
// "unimplemented" error.
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

/// A device-id interval [lo, hi) in multiplicative terms: the mixed-radix digits of the iota
/// device id from `lo` (the devices below them) up to `hi`.
using Range = std::pair<int64_t, int64_t>;

/// A tiled (or replicated) GSPMD sharding: pieces per dim, then one trailing replication
/// factor (1 when none); and per tile dim (the replication last) the device-id ranges whose
/// digits number its tiles, major first.
struct Tiles {
  std::vector<int64_t> dims;
  int64_t replicated = 1;
  std::vector<std::vector<Range>> ranges;
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

/// The device-id ranges of each of `tiles` (major first) when the tile grid's devices are the
/// iota over `reshape` transposed by `perm` (HloSharding's `<=[reshape]T(perm)`): each tile dim
/// takes, major first, the transposed reshape dims (or a major or minor part of one) whose
/// sizes make it up. nullopt when the tile dims do not split the transposed dims that way.
std::optional<std::vector<std::vector<Range>>> tile_ranges(const std::vector<int64_t>& tiles,
                                                           const std::vector<int64_t>& reshape,
                                                           const std::vector<int64_t>& perm) {
  const size_t k = reshape.size();
  if (perm.size() != k) return std::nullopt;
  std::vector<int64_t> below(k, 1);  // devices below reshape dim j in the iota
  for (size_t j = k; j-- > 1;) below[j - 1] = below[j] * reshape[j];
  std::vector<bool> seen(k, false);
  for (int64_t p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= k || seen[static_cast<size_t>(p)]) return std::nullopt;
    seen[static_cast<size_t>(p)] = true;
  }
  std::vector<std::vector<Range>> out;
  size_t pos = 0;
  int64_t rem = k ? reshape[static_cast<size_t>(perm[0])] : 1;  // what is left of perm[pos]
  for (int64_t t : tiles) {
    std::vector<Range> r;
    int64_t need = t;
    while (need > 1) {
      while (pos < k && rem == 1) {
        ++pos;
        rem = pos < k ? reshape[static_cast<size_t>(perm[pos])] : 1;
      }
      if (pos == k) return std::nullopt;
      const int64_t b = below[static_cast<size_t>(perm[pos])];
      if (need >= rem) {
        if (need % rem != 0) return std::nullopt;
        r.emplace_back(b, b * rem);
        need /= rem;
        rem = 1;
      } else {
        if (rem % need != 0) return std::nullopt;
        r.emplace_back(b * (rem / need), b * rem);
        rem /= need;
        need = 1;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

/// Reads `{replicated}`, `{devices=[a,b,...]<=[N]}`, `{devices=[a,b,...]<=[r0,r1,...]T(p...)}`
/// (an iota reshaped and transposed) or `{devices=[a,b,...]0,1,...}` (device order the iota),
/// each optionally with ` last_tile_dim_replicate`; nullopt otherwise.
std::optional<Tiles> read_tiles(const std::string& s, size_t rank) {
  if (s == "{replicated}")
    return Tiles{std::vector<int64_t>(rank, 1), 1, std::vector<std::vector<Range>>(rank + 1)};
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
  std::vector<int64_t> reshape = {n}, perm = {0};
  if (order.starts_with("<=[")) {
    size_t shut = order.find(']');
    if (shut == std::string_view::npos) return std::nullopt;
    reshape = int_list(order.substr(3, shut - 3), ok);
    std::string_view rest = order.substr(shut + 1);
    perm.clear();
    for (size_t j = 0; j < reshape.size(); ++j) perm.push_back(static_cast<int64_t>(j));
    if (!rest.empty()) {
      if (!rest.starts_with("T(") || !rest.ends_with(")")) return std::nullopt;
      perm = int_list(rest.substr(2, rest.size() - 3), ok);
    }
    int64_t m = 1;
    for (int64_t r : reshape) m = r > 0 && m <= n ? m * r : 0;
    if (!ok || m != n) return std::nullopt;
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
  } else {
    tiles.push_back(1);
  }
  if (out.dims.size() != rank) return std::nullopt;
  auto ranges = tile_ranges(tiles, reshape, perm);
  if (!ranges) return std::nullopt;
  out.ranges = std::move(*ranges);
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
                "whole entry function, with iota device order, reshaped and transposed or not; export with "
                "Shardy for others)");
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

  // The mesh: every tiled dim's device ranges are runs of its axes. A tiling cuts the iota at
  // the ends of its ranges (for an iota order, the products of its tile sizes' suffixes); the
  // mesh's axes lie between the union of all cuts, which must each divide the next.
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
  for (const Boundary* b : all)
    if (b->tiles.devices() > 1)
      for (const auto& dim : b->tiles.ranges)
        for (auto [lo, hi] : dim) cuts.insert({lo, hi});
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
    for (size_t d = 0; d < t.dims.size(); ++d) {
      DimSharding dim;
      if (t.devices() > 1)
        for (auto [lo, hi] : t.ranges[d])
          for (size_t a = 0; a < mesh.axes.size(); ++a)
            if (axis_below[a] >= lo && axis_below[a] < hi)
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
