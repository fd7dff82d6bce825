// Reshards -> Shardy collectives (all_to_all, all_gather, all_slice; all_reduce + all_slice ->
// reduce_scatter), then global -> local shapes with StableHLO collectives over replica groups,
// and reading those collectives back (cluster_axis, groups, bytes moved).
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "mesh/spmd_util.hpp"
#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

namespace {

/// A device index from a dense attribute value: -1 (outside every mesh, so the callers'
/// checks reject it) when it is not a non-negative integer below 2^31.
int64_t device_index(double v) {
  if (!(v >= 0 && v < 2147483648.0) || v != static_cast<double>(static_cast<int64_t>(v))) return -1;
  return static_cast<int64_t>(v);
}

TensorSharding closed(TensorSharding s) {
  for (DimSharding& d : s.dims) d.open = false, d.priority = -1;
  s.replicated.clear();
  return s;
}

std::vector<OpId>* entry_body(Module& m, OpId* mc_out) {
  Func* f = m.entry();
  if (!f) return nullptr;
  for (OpId o : f->body.ops)
    if (m.ops[o].name == "sdy.manual_computation" && m.ops[o].regions.size() == 1) {
      if (mc_out) *mc_out = o;
      return &m.ops[o].regions[0].ops;
    }
  return nullptr;
}

/// One axis of a dim replaced by another of the same size (`from` -> `to`).
struct AxisSwap {
  AxisRef from, to;
};

/// The axis swaps that turn `src` into `tgt` when that is all that differs: on every dim the
/// non-trivial axes are equally many and each either stays or is replaced by an axis of the same
/// size that `src` does not use anywhere, while the replaced axis is used nowhere in `tgt`.
/// Such a reshard keeps each device's shard size and only moves shards between devices (one
/// collective_permute). With `only_dims`, dims that do not qualify are left alone (their swaps
/// are not returned) instead of making the whole answer empty.
std::vector<AxisSwap> axis_swaps(const AxisMath& math, const TensorSharding& src,
                                 const TensorSharding& tgt, bool only_dims) {
  std::vector<AxisRef> src_all, tgt_all;
  for (const auto& d : src.dims)
    for (const AxisRef& a : math.without_trivial(d.axes)) src_all.push_back(a);
  for (const auto& d : tgt.dims)
    for (const AxisRef& a : math.without_trivial(d.axes)) tgt_all.push_back(a);
  auto used = [&](const std::vector<AxisRef>& all, const AxisRef& a) {
    return std::any_of(all.begin(), all.end(),
                       [&](const AxisRef& b) { return math.overlaps(a, b); });
  };
  std::vector<AxisSwap> out;
  const size_t rank = std::max(src.dims.size(), tgt.dims.size());
  for (size_t d = 0; d < rank; ++d) {
    auto have = d < src.dims.size() ? math.normalize(math.without_trivial(src.dims[d].axes))
                                    : std::vector<AxisRef>{};
    auto want = d < tgt.dims.size() ? math.normalize(math.without_trivial(tgt.dims[d].axes))
                                    : std::vector<AxisRef>{};
    if (have == want) continue;
    bool ok = have.size() == want.size();
    std::vector<AxisSwap> dim_swaps;
    for (size_t k = 0; ok && k < have.size(); ++k) {
      if (have[k] == want[k]) continue;
      ok = math.size(have[k]) == math.size(want[k]) && !math.overlaps(have[k], want[k]) &&
           !used(tgt_all, have[k]) && !used(src_all, want[k]);
      dim_swaps.push_back({have[k], want[k]});
    }
    if (ok)
      out.insert(out.end(), dim_swaps.begin(), dim_swaps.end());
    else if (!only_dims)
      return {};
  }
  return out;
}

/// Index of a mesh axis by name, or the axis count when absent.
size_t axis_index(const MeshDecl& mesh, const std::string& name) {
  size_t k = 0;
  while (k < mesh.axes.size() && mesh.axes[k].first != name) ++k;
  return k;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> permute_pairs(const MeshDecl& mesh,
                                                       const TensorSharding& src,
                                                       const TensorSharding& tgt) {
  AxisMath math{mesh};
  std::vector<AxisSwap> swaps = axis_swaps(math, src, tgt, false);
  std::vector<int64_t> sizes;
  for (const auto& a : mesh.axes) sizes.push_back(a.second);
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t dev = 0; dev < mesh.devices(); ++dev) {
    std::vector<int64_t> coord(sizes.size());
    int64_t rest = dev;
    for (size_t k = sizes.size(); k-- > 0;) {
      coord[k] = rest % sizes[k];
      rest /= sizes[k];
    }
    // Target `dev` at (from=r, to=q) needs piece q along the dim; the device at (from=q, to=r)
    // holds it. Parts are read from the target's coordinate, then all moved at once.
    std::vector<int64_t> src_coord = coord;
    for (const AxisSwap& s : swaps) {
      size_t kf = axis_index(mesh, s.from.name), kt = axis_index(mesh, s.to.name);
      if (kf == sizes.size() || kt == sizes.size()) continue;
      int64_t r = (coord[kf] / s.from.pre_size) % math.size(s.from);
      int64_t q = (coord[kt] / s.to.pre_size) % math.size(s.to);
      src_coord[kf] += (q - r) * s.from.pre_size;
      src_coord[kt] += (r - q) * s.to.pre_size;
    }
    int64_t source = 0;
    for (size_t k = 0; k < sizes.size(); ++k) source = source * sizes[k] + src_coord[k];
    pairs.emplace_back(source, dev);
  }
  return pairs;
}

namespace {

/// Ops replacing one reshard, built from its source to its target sharding.
class ReshardLowering {
 public:
  ReshardLowering(Module& m, const MeshDecl& mesh) : m_(m), math_{mesh} {}

  /// Emits the collectives into `out`; returns the value standing for the reshard's result.
  ValueId lower(ValueId x, TensorSharding src, const TensorSharding& tgt, const Location& loc,
                std::vector<OpId>& out) {
    const size_t rank = tgt.dims.size();
    TensorSharding cur = closed(std::move(src));
    cur.dims.resize(rank);
    auto suffix = [&](const std::vector<AxisRef>& have, const std::vector<AxisRef>& want) {
      size_t k = 0;
      while (k < have.size() && k < want.size() && have[k] == want[k]) ++k;
      return std::vector<AxisRef>(have.begin() + static_cast<std::ptrdiff_t>(k), have.end());
    };
    auto target = [&](size_t d) {
      return math_.normalize(math_.without_trivial(tgt.dims[d].axes));
    };
    // 0. collective_permute: dims whose axes are only replaced by unused axes of the same size
    //    keep their shard size; each device sends its shard to the one that needs it.
    if (auto swaps = axis_swaps(math_, cur, tgt, true); !swaps.empty()) {
      TensorSharding next = cur;
      for (size_t d = 0; d < rank; ++d) {
        auto have = math_.normalize(math_.without_trivial(cur.dims[d].axes));
        auto want = target(d);
        if (have.size() != want.size() || have == want) continue;
        bool swapped = true;
        for (size_t k = 0; k < have.size() && swapped; ++k)
          swapped =
              have[k] == want[k] || std::any_of(swaps.begin(), swaps.end(), [&](const AxisSwap& s) {
                return s.from == have[k] && s.to == want[k];
              });
        if (swapped) next.dims[d].axes = want;
      }
      OpId o = m_.add_op("sdy.collective_permute", {x}, {m_.values[x].type}, loc);
      m_.ops[o].sharding = next;
      out.push_back(o);
      x = m_.ops[o].results[0];
      cur = next;
    }
    // 1. all_to_all: an axis that leaves dim d and is wanted at the end of dim e.
    for (size_t d = 0; d < rank; ++d) {
      auto extra = suffix(cur.dims[d].axes, tgt.dims[d].axes);
      if (extra.size() != 1 || math_.size(extra[0]) == 1) continue;
      for (size_t e = 0; e < rank; ++e) {
        if (e == d) continue;
        auto want_e = target(e);
        auto have_e = math_.without_trivial(cur.dims[e].axes);
        if (want_e.size() == have_e.size() + 1 &&
            std::equal(have_e.begin(), have_e.end(), want_e.begin()) && want_e.back() == extra[0]) {
          TensorSharding next = cur;
          next.dims[d].axes.pop_back();
          next.dims[e].axes.push_back(extra[0]);
          OpId o = m_.add_op("sdy.all_to_all", {x}, {m_.values[x].type}, loc);
          m_.ops[o].all_to_all.push_back(
              {{extra[0]}, static_cast<int64_t>(d), static_cast<int64_t>(e)});
          m_.ops[o].sharding = next;
          out.push_back(o);
          x = m_.ops[o].results[0];
          cur = next;
          break;
        }
      }
    }
    // 2. all_gather what the target does not keep.
    std::vector<std::vector<AxisRef>> gather(rank);
    bool any = false;
    TensorSharding after = cur;
    for (size_t d = 0; d < rank; ++d) {
      gather[d] = suffix(cur.dims[d].axes, tgt.dims[d].axes);
      // Keep gathering consistent with what the target needs: the kept prefix must be a
      // prefix of the target (ignoring size-1 axes).
      any |= !gather[d].empty();
      after.dims[d].axes.resize(cur.dims[d].axes.size() - gather[d].size());
    }
    if (any) {
      OpId o = m_.add_op("sdy.all_gather", {x}, {m_.values[x].type}, loc);
      m_.ops[o].dim_axes = gather;
      m_.ops[o].sharding = after;
      out.push_back(o);
      x = m_.ops[o].results[0];
      cur = after;
    }
    // 3. all_slice what the target adds (size-1 axes split nothing and are left out).
    std::vector<std::vector<AxisRef>> slice(rank);
    any = false;
    after = cur;
    for (size_t d = 0; d < rank; ++d) {
      auto want = target(d);
      auto have = math_.without_trivial(cur.dims[d].axes);
      if (want.size() > have.size())
        slice[d].assign(want.begin() + static_cast<std::ptrdiff_t>(have.size()), want.end());
      any |= !slice[d].empty();
      after.dims[d].axes.insert(after.dims[d].axes.end(), slice[d].begin(), slice[d].end());
    }
    if (any) {
      OpId o = m_.add_op("sdy.all_slice", {x}, {m_.values[x].type}, loc);
      m_.ops[o].dim_axes = slice;
      m_.ops[o].sharding = after;
      out.push_back(o);
      x = m_.ops[o].results[0];
    }
    return x;
  }

 private:
  Module& m_;
  AxisMath math_;
};

Attr dense_groups(const std::vector<std::vector<int64_t>>& groups) {
  Attr a;
  a.kind = Attr::Kind::dense;
  a.type.element = "i64";
  a.type.shape = {static_cast<int64_t>(groups.size()),
                  groups.empty() ? 0 : static_cast<int64_t>(groups[0].size())};
  for (const auto& g : groups)
    for (int64_t d : g) a.values.push_back(static_cast<double>(d));
  return a;
}

Attr unit() {
  return Attr{};
}

int element_bytes(std::string_view e) {
  if (e == "f64" || e == "i64") return 8;
  if (e == "bf16" || e == "f16" || e == "i16") return 2;
  if (e == "i8" || e == "i1") return 1;
  return 4;
}

}  // namespace

std::vector<std::vector<int64_t>> replica_groups(const MeshDecl& mesh,
                                                 const std::vector<AxisRef>& axes) {
  const int64_t n = mesh.devices();
  std::vector<int64_t> sizes;
  for (const auto& a : mesh.axes) sizes.push_back(a.second);
  AxisMath math{mesh};
  std::map<std::vector<int64_t>, std::vector<std::pair<int64_t, int64_t>>>
      groups;  // key -> (position, device)
  for (int64_t dev = 0; dev < n; ++dev) {
    std::vector<int64_t> coord(sizes.size());
    int64_t rest = dev;
    for (size_t k = sizes.size(); k-- > 0;) {
      coord[k] = rest % sizes[k];
      rest /= sizes[k];
    }
    int64_t pos = 0;
    std::vector<int64_t> key = coord;
    for (const AxisRef& a : axes) {
      size_t k = 0;
      while (k < mesh.axes.size() && mesh.axes[k].first != a.name) ++k;
      if (k == mesh.axes.size()) continue;
      int64_t s = math.size(a);
      int64_t part = (coord[k] / a.pre_size) % s;
      pos = pos * s + part;
      key[k] -= part * a.pre_size;  // the coordinate without this (sub-)axis
    }
    groups[key].emplace_back(pos, dev);
  }
  std::vector<std::vector<int64_t>> out;
  for (auto& [key, members] : groups) {
    std::sort(members.begin(), members.end());
    std::vector<int64_t> g;
    for (const auto& [p, d] : members) g.push_back(d);
    out.push_back(g);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status reshards_to_collectives(Module& m) {
  const MeshDecl* mesh = m.main_mesh();
  OpId mc = kNone;
  std::vector<OpId>* body = entry_body(m, &mc);
  if (!mesh || !body || !m.ops[mc].manual_axes.empty()) return {};
  ReshardLowering lowering(m, *mesh);
  std::vector<OpId> out;
  std::map<ValueId, ValueId> remap;
  auto fix = [&](Op& op) {
    for (ValueId& v : op.operands)
      if (auto it = remap.find(v); it != remap.end()) v = it->second;
  };
  const std::vector<OpId> ops = *body;
  for (OpId o : ops) {
    fix(m.ops[o]);
    if (m.ops[o].name != "sdy.reshard") {
      out.push_back(o);
      continue;
    }
    ValueId x = m.ops[o].operands[0];
    auto src = sharding_of(m, x);
    TensorSharding from =
        src ? *src : replicated_sharding(mesh->name, m.values[x].type.shape.size());
    TensorSharding to = *m.ops[o].sharding;
    Location loc = m.ops[o].loc;
    remap[m.ops[o].results[0]] = lowering.lower(x, from, to, loc, out);
  }
  // all_reduce followed only by an all_slice over the same axes: one reduce_scatter.
  std::map<ValueId, int> uses;
  for (OpId o : out)
    for (ValueId v : m.ops[o].operands) ++uses[v];
  std::vector<OpId> fused;
  std::set<OpId> dropped;
  for (size_t i = 0; i < out.size(); ++i) {
    Op& op = m.ops[out[i]];
    if (dropped.count(out[i])) continue;
    if (op.name == "sdy.all_reduce" && !op.attr("meshplan.reduction") && i + 1 < out.size() &&
        uses[op.results[0]] == 1) {
      Op& next = m.ops[out[i + 1]];
      if (next.name == "sdy.all_slice" && next.operands[0] == op.results[0]) {
        std::vector<AxisRef> sliced;
        for (const auto& d : next.dim_axes) sliced.insert(sliced.end(), d.begin(), d.end());
        auto key = [](std::vector<AxisRef> v) {
          std::sort(v.begin(), v.end(), [](const AxisRef& a, const AxisRef& b) {
            return std::tie(a.name, a.pre_size, a.size) < std::tie(b.name, b.pre_size, b.size);
          });
          return v;
        };
        if (key(sliced) == key(op.reduce_axes)) {
          next.name = "sdy.reduce_scatter";
          next.operands[0] = op.operands[0];
          dropped.insert(out[i]);
          continue;
        }
      }
    }
    fused.push_back(out[i]);
  }
  m.ops[mc].regions[0].ops = fused;  // `body` may dangle: add_op grew m.ops
  return {};
}

Status global_to_local_shapes(Module& m) {
  const MeshDecl* mesh = m.main_mesh();
  OpId mc = kNone;
  std::vector<OpId>* body = entry_body(m, &mc);
  if (!mesh || !body || !m.ops[mc].manual_axes.empty()) return {};
  AxisMath math{*mesh};
  int channel = 1;
  auto local = [&](const TensorType& t, const TensorSharding& s,
                   const Location& loc) -> Result<TensorType> {
    TensorType out = t;
    for (size_t d = 0; d < s.dims.size() && d < out.shape.size(); ++d) {
      int64_t p = math.product(s.dims[d].axes);
      if (out.shape[d] % p != 0)
        return fail(ErrorCode::invalid_argument, loc.str(), ": dim ", d, " of ", type_string(t),
                    " is not divisible by its sharding ", sharding_string(s));
      out.shape[d] /= p;
    }
    return out;
  };
  auto reducer = [&](const std::string& elem, const std::string& kind, const Location& loc) {
    Block b;
    TensorType scalar{{}, elem};
    ValueId a0 = m.add_value(scalar, kNone, 0), a1 = m.add_value(scalar, kNone, 1);
    b.args = {a0, a1};
    std::string op = kind == "max"   ? "stablehlo.maximum"
                     : kind == "min" ? "stablehlo.minimum"
                                     : "stablehlo.add";
    OpId body_op = m.add_op(op, {a0, a1}, {scalar}, loc);
    OpId ret = m.add_op("stablehlo.return", {m.ops[body_op].results[0]}, {}, loc);
    b.ops = {body_op, ret};
    return b;
  };
  auto collective = [&](const std::string& name, ValueId x, TensorType type,
                        const std::vector<AxisRef>& axes, const Location& loc) {
    OpId o = m.add_op(name, {x}, {std::move(type)}, loc);
    Op& op = m.ops[o];
    op.set_prop("replica_groups", dense_groups(replica_groups(*mesh, axes)));
    Attr handle;
    handle.kind = Attr::Kind::opaque;
    handle.text = str("#stablehlo.channel_handle<handle = ", channel++, ", type = 1>");
    op.set_prop("channel_handle", handle);
    op.set_prop("use_global_device_ids", unit());
    return o;
  };

  Op& mcop = m.ops[mc];
  mcop.manual_axes.clear();
  for (const auto& a : mesh->axes) mcop.manual_axes.push_back(a.first);
  Block& region = mcop.regions[0];
  for (size_t i = 0; i < region.args.size(); ++i)
    m.values[region.args[i]].type = MESHPLAN_TRY(
        local(m.values[region.args[i]].type, m.ops[mc].in_shardings[i], m.ops[mc].loc));

  // The source shardings of the permutes, read before local types and shardings change.
  std::map<OpId, TensorSharding> permute_src;
  for (OpId o : *body)
    if (m.ops[o].name == "sdy.collective_permute" && m.ops[o].operands.size() == 1) {
      ValueId x = m.ops[o].operands[0];
      auto s = sharding_of(m, x);
      permute_src[o] = s ? *s : replicated_sharding(mesh->name, m.values[x].type.shape.size());
    }

  std::vector<OpId> out;
  std::map<ValueId, ValueId> remap;
  const std::vector<OpId> ops = *body;
  for (OpId o : ops) {
    for (ValueId& v : m.ops[o].operands)
      if (auto it = remap.find(v); it != remap.end()) v = it->second;
    Op op = m.ops[o];  // copy: add_op below may reallocate
    const std::string& n = op.name;
    if (n == "sdy.return") {
      out.push_back(o);
      continue;
    }
    if (n == "sdy.collective_permute") {
      if (!op.sharding || op.operands.size() != 1 || !permute_src.count(o))
        return fail(ErrorCode::invalid_argument, op.loc.str(),
                    ": sdy.collective_permute needs one operand and an out_sharding");
      std::vector<std::vector<int64_t>> pairs;
      for (const auto& [from, to] : permute_pairs(*mesh, permute_src[o], *op.sharding))
        pairs.push_back({from, to});
      ValueId x = op.operands[0];
      OpId c = m.add_op("stablehlo.collective_permute", {x}, {m.values[x].type}, op.loc);
      m.ops[c].set_prop("source_target_pairs", dense_groups(pairs));
      Attr handle;
      handle.kind = Attr::Kind::opaque;
      handle.text = str("#stablehlo.channel_handle<handle = ", channel++, ", type = 1>");
      m.ops[c].set_prop("channel_handle", handle);
      out.push_back(c);
      remap[op.results[0]] = m.ops[c].results[0];
      continue;
    }
    if (n == "sdy.all_gather" || n == "sdy.all_reduce" || n == "sdy.reduce_scatter" ||
        n == "sdy.all_to_all") {
      ValueId x = op.operands[0];
      TensorType t = m.values[x].type;
      std::string elem = t.element;
      if (n == "sdy.all_gather") {
        for (size_t d = 0; d < op.dim_axes.size(); ++d) {
          auto axes = math.without_trivial(op.dim_axes[d]);
          if (axes.empty()) continue;
          t.shape[d] *= math.product(axes);
          OpId c = collective("stablehlo.all_gather", x, t, axes, op.loc);
          m.ops[c].set_prop("all_gather_dim", Attr::integer(static_cast<int64_t>(d)));
          out.push_back(c);
          x = m.ops[c].results[0];
        }
      } else if (n == "sdy.all_reduce") {
        const Attr* kind = op.attr("meshplan.reduction");
        OpId c = collective("stablehlo.all_reduce", x, t, op.reduce_axes, op.loc);
        Block reduce_body = reducer(elem, kind ? kind->text : "sum",
                                    op.loc);  // adds ops: call before indexing m.ops
        m.ops[c].regions.push_back(std::move(reduce_body));
        out.push_back(c);
        x = m.ops[c].results[0];
      } else if (n == "sdy.reduce_scatter") {
        for (size_t d = 0; d < op.dim_axes.size(); ++d) {
          auto axes = math.without_trivial(op.dim_axes[d]);
          if (axes.empty()) continue;
          t.shape[d] /= math.product(axes);
          OpId c = collective("stablehlo.reduce_scatter", x, t, axes, op.loc);
          m.ops[c].set_prop("scatter_dimension", Attr::integer(static_cast<int64_t>(d)));
          Block reduce_body = reducer(elem, "sum", op.loc);  // adds ops: call before indexing m.ops
          m.ops[c].regions.push_back(std::move(reduce_body));
          out.push_back(c);
          x = m.ops[c].results[0];
        }
      } else {
        for (const auto& p : op.all_to_all) {
          int64_t count = math.product(p.axes);
          t.shape[static_cast<size_t>(p.src)] *= count;
          t.shape[static_cast<size_t>(p.tgt)] /= count;
          OpId c = collective("stablehlo.all_to_all", x, t, p.axes, op.loc);
          m.ops[c].set_prop("split_dimension", Attr::integer(p.tgt));
          m.ops[c].set_prop("concat_dimension", Attr::integer(p.src));
          m.ops[c].set_prop("split_count", Attr::integer(count));
          out.push_back(c);
          x = m.ops[c].results[0];
        }
      }
      remap[op.results[0]] = x;
      continue;
    }
    // Every other op (and sdy.all_slice, a local slice): results get their local types.
    for (size_t k = 0; k < op.results.size(); ++k) {
      std::optional<TensorSharding> s = op.sharding               ? op.sharding
                                        : k < op.shardings.size() ? std::optional(op.shardings[k])
                                                                  : std::nullopt;
      if (s)
        m.values[op.results[k]].type =
            MESHPLAN_TRY(local(m.values[op.results[k]].type, *s, op.loc));
    }
    m.ops[o].shardings.clear();
    out.push_back(o);
  }
  m.ops[mc].regions[0].ops = out;  // `body` may dangle: add_op grew m.ops
  Func* f = m.entry();
  for (ArgInfo& a : f->args) m.values[a.value].sharding.reset();
  for (ResultInfo& r : f->results) r.sharding.reset();
  return {};
}

Result<CollectiveInfo> collective_info(const Module& m, const Op& op) {
  CollectiveInfo c;
  const MeshDecl* mesh = m.main_mesh();
  if (!mesh) return fail(ErrorCode::invalid_argument, op.loc.str(), ": a collective needs a mesh");
  std::string_view n = op.name;
  if (n == "sdy.all_slice") {
    c.kind = "all_slice";
    AxisMath math{*mesh};
    for (size_t d = 0; d < op.dim_axes.size(); ++d)
      if (!math.without_trivial(op.dim_axes[d]).empty()) {
        c.dim = static_cast<int64_t>(d);
        c.groups = replica_groups(*mesh, math.without_trivial(op.dim_axes[d]));
      }
  } else if (n == "stablehlo.collective_permute") {
    c.kind = "collective_permute";
    const Attr* p = op.prop("source_target_pairs");
    if (!p || p->kind != Attr::Kind::dense || p->type.shape.size() != 2 ||
        (p->type.shape[0] > 0 && p->type.shape[1] != 2) ||
        p->values.size() != static_cast<size_t>(p->type.shape[0] * 2))
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                  " needs source_target_pairs of shape Nx2");
    for (size_t k = 0; k + 1 < p->values.size(); k += 2)
      c.pairs.emplace_back(device_index(p->values[k]), device_index(p->values[k + 1]));
    for (const auto& [from, to] : c.pairs)
      if (from < 0 || to < 0 || from >= mesh->devices() || to >= mesh->devices())
        return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name, ": pair (", from,
                    ", ", to, ") names a device outside the ", mesh->devices(), "-device mesh");
    std::set<int64_t> sources, targets;
    for (const auto& [from, to] : c.pairs) {
      bool new_source = sources.insert(from).second, new_target = targets.insert(to).second;
      if (!new_source || !new_target)
        return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name, ": pair (", from,
                    ", ", to, ") repeats a ", new_source ? "target" : "source");
    }
    return c;
  } else if (n.starts_with("stablehlo.")) {
    c.kind = std::string(n.substr(10));
    const Attr* g = op.prop("replica_groups");
    if (!g || g->kind != Attr::Kind::dense || g->type.shape.size() != 2)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name,
                  " needs 2-D replica_groups");
    int64_t rows = g->type.shape[0], cols = g->type.shape[1];
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> group;
      for (int64_t k = 0; k < cols; ++k) {
        size_t at = static_cast<size_t>(r * cols + k);
        group.push_back(device_index(g->values.size() == 1 ? g->values[0] : g->values.at(at)));
      }
      c.groups.push_back(group);
    }
    auto get = [&](const char* p) -> int64_t {
      const Attr* a = op.prop(p);
      return a && a->kind == Attr::Kind::integer ? a->i : -1;
    };
    if (c.kind == "all_gather")
      c.dim = get("all_gather_dim");
    else if (c.kind == "reduce_scatter")
      c.dim = get("scatter_dimension");
    else if (c.kind == "all_to_all")
      c.dim = get("split_dimension"), c.concat_dim = get("concat_dimension");
    else if (c.kind != "all_reduce" && c.kind != "collective_permute")
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": '", op.name,
                  "' is not a collective");
    if (!op.regions.empty() && !op.regions[0].ops.empty()) {
      const std::string& body = m.ops[op.regions[0].ops[0]].name;
      c.reduction = body == "stablehlo.maximum"   ? "max"
                    : body == "stablehlo.minimum" ? "min"
                                                  : "sum";
    }
  } else {
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": '", op.name, "' is not a collective");
  }
  std::vector<std::vector<int64_t>> sorted = c.groups;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < mesh->axes.size(); ++k)
    if (sorted == replica_groups(*mesh, {AxisRef{mesh->axes[k].first, 1, 0}}))
      c.cluster_axis = static_cast<int>(k);
  return c;
}

int CommStats::count(std::string_view kind) const {
  for (const auto& [k, n] : counts)
    if (k == kind) return n;
  return 0;
}

double collective_bytes(const Module& m, const Op& op, const CollectiveInfo& c) {
  double group = c.groups.empty() ? 1 : static_cast<double>(c.groups[0].size());
  const TensorType& in = m.values[op.operands[0]].type;
  const TensorType& out = m.values[op.results[0]].type;
  double in_bytes = static_cast<double>(in.volume() * element_bytes(in.element));
  double out_bytes = static_cast<double>(out.volume() * element_bytes(out.element));
  double f = (group - 1) / group;
  if (c.kind == "all_gather") return f * out_bytes;
  if (c.kind == "reduce_scatter" || c.kind == "all_to_all") return f * in_bytes;
  if (c.kind == "all_reduce") return 2 * f * in_bytes;
  if (c.kind == "collective_permute" &&
      std::any_of(c.pairs.begin(), c.pairs.end(),
                  [](const auto& p) { return p.first != p.second; }))
    return in_bytes;  // each moving device sends its local tensor
  return 0;           // all_slice: a local slice
}

Result<CommStats> communication(const Module& m) {
  CommStats s;
  std::map<std::string, int> counts;
  std::vector<const Block*> work;
  for (const Func& f : m.funcs) work.push_back(&f.body);
  while (!work.empty()) {
    const Block* b = work.back();
    work.pop_back();
    for (OpId o : b->ops) {
      const Op& op = m.ops[o];
      for (const Block& r : op.regions) work.push_back(&r);
      std::string_view n = op.name;
      bool coll = n == "stablehlo.all_gather" || n == "stablehlo.all_reduce" ||
                  n == "stablehlo.reduce_scatter" || n == "stablehlo.all_to_all" ||
                  n == "stablehlo.collective_permute";
      if (!coll) continue;
      CollectiveInfo c = MESHPLAN_TRY(collective_info(m, op));
      ++counts[c.kind];
      double group = c.groups.empty() ? 1 : static_cast<double>(c.groups[0].size());
      double bytes = collective_bytes(m, op, c);
      s.bytes += bytes;
      s.ops.push_back({c.kind, op.loc, bytes, static_cast<int>(group)});
    }
  }
  std::stable_sort(
      s.ops.begin(), s.ops.end(), [](const CommStats::Item& a, const CommStats::Item& b) {
        return std::tie(a.loc.line, a.loc.col, a.kind) < std::tie(b.loc.line, b.loc.col, b.kind);
      });
  for (const auto& [k, n] : counts) s.counts.emplace_back(k, n);
  return s;
}

}  // namespace meshplan::planner::shlo
