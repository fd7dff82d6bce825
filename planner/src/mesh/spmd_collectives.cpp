// Reshards -> Shardy collectives (all_to_all, all_gather, all_slice; all_reduce + all_slice ->
// reduce_scatter), then global -> local shapes with StableHLO collectives over replica groups,
// and reading those collectives back (cluster_axis, groups, bytes moved).
#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "mesh/spmd_reshard.hpp"
#include "mesh/spmd_util.hpp"
#include "meshplan/device/collective_rules.hpp"
#include "meshplan/planner/mesh_mapping.hpp"
#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

namespace {

/// A device index from a dense attribute value: -1 (outside every mesh, so the callers'
/// checks reject it) when it is not a non-negative integer below 2^31.
int64_t device_index(double v) {
  if (!(v >= 0 && v < 2147483648.0) || v != static_cast<double>(static_cast<int64_t>(v))) return -1;
  return static_cast<int64_t>(v);
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

/// Per dim, which piece of the tensor device `dev` (row-major id) holds under `s`.
std::vector<int64_t> pieces(const MeshDecl& mesh, const AxisMath& math, const TensorSharding& s,
                            int64_t dev) {
  std::vector<int64_t> coord(mesh.axes.size());
  for (size_t k = mesh.axes.size(); k-- > 0;) {
    coord[k] = dev % mesh.axes[k].second;
    dev /= mesh.axes[k].second;
  }
  std::vector<int64_t> out;
  for (const DimSharding& d : s.dims) {
    int64_t piece = 0;
    for (const AxisRef& a : d.axes) {
      size_t k = 0;
      while (k < mesh.axes.size() && mesh.axes[k].first != a.name) ++k;
      if (k == mesh.axes.size()) continue;
      const int64_t size = math.size(a);
      piece = piece * size + (coord[k] / a.pre_size) % size;
    }
    out.push_back(piece);
  }
  return out;
}

}  // namespace

namespace {

/// The permute pairs of devices 0..n-1 that hold piece `held(dev)` and need piece
/// `needed(dev)`. A piece is held and needed by equally many devices when the per-dim piece
/// counts agree, as they do for a permute: a device that keeps its piece sends to itself, the
/// others pair up in order.
std::vector<std::pair<int64_t, int64_t>> pair_pieces(
    int64_t n, const std::function<std::vector<int64_t>(int64_t)>& held,
    const std::function<std::vector<int64_t>(int64_t)>& needed) {
  std::map<std::vector<int64_t>, std::vector<int64_t>> holders, needers;
  for (int64_t dev = 0; dev < n; ++dev) {
    holders[held(dev)].push_back(dev);
    needers[needed(dev)].push_back(dev);
  }
  std::vector<int64_t> source(static_cast<size_t>(n), -1);
  for (auto& [piece, want] : needers) {
    std::vector<int64_t>& have = holders[piece];
    std::vector<int64_t> free_have, free_want;
    for (int64_t d : have)
      if (std::find(want.begin(), want.end(), d) == want.end()) free_have.push_back(d);
    for (int64_t d : want)
      if (std::find(have.begin(), have.end(), d) != have.end())
        source[static_cast<size_t>(d)] = d;
      else
        free_want.push_back(d);
    for (size_t k = 0; k < free_want.size() && k < free_have.size(); ++k)
      source[static_cast<size_t>(free_want[k])] = free_have[k];
  }
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (int64_t dev = 0; dev < n; ++dev)
    if (source[static_cast<size_t>(dev)] >= 0)
      pairs.emplace_back(source[static_cast<size_t>(dev)], dev);
  return pairs;
}

/// The device ids of `mesh` in its row-major order (its device_ids, else 0..n-1).
std::vector<int64_t> ids_of(const MeshDecl& mesh) {
  if (!mesh.device_ids.empty()) return mesh.device_ids;
  std::vector<int64_t> ids(static_cast<size_t>(std::max<int64_t>(mesh.devices(), 0)));
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

/// True when `a` and `b` put the same devices at the same positions along the same axes.
bool same_layout(const MeshDecl& a, const MeshDecl& b) {
  return &a == &b || (a.axes == b.axes && ids_of(a) == ids_of(b));
}

/// Where each device of the program (row-major over `main`, on device id main.ids[p]) sits in
/// `other`: the position whose device id is the same. An error naming both meshes when `other`
/// has another device count or other device ids.
Result<std::vector<int64_t>> positions_in(const MeshDecl& main, const MeshDecl& other,
                                          const std::string& where) {
  const std::vector<int64_t> mine = ids_of(main), theirs = ids_of(other);
  if (main.devices() != other.devices() || mine.size() != theirs.size())
    return fail(ErrorCode::unimplemented, where, ": @", other.name, " has ", other.devices(),
                " devices and @", main.name, " ", main.devices(),
                "; plans move values only between meshes of the same devices");
  std::vector<int64_t> out;
  for (int64_t id : mine) {
    auto at = std::find(theirs.begin(), theirs.end(), id);
    if (at == theirs.end())
      return fail(ErrorCode::unimplemented, where, ": device ", id, " of @", main.name,
                  " is not one of @", other.name,
                  "'s device_ids; plans move values only between meshes of the same devices");
    out.push_back(at - theirs.begin());
  }
  return out;
}

/// A sharding on `main` (whole axes where they fit, else sub-axes, major first) that splits
/// each dim into as many pieces as `s` on `other` does: per device the same amount of data,
/// so a collective_permute turns one into the other. An error when `main`'s axis sizes cannot
/// make those piece counts.
Result<TensorSharding> counterpart(const MeshDecl& main, const MeshDecl& other,
                                   const TensorSharding& s, const std::string& where) {
  AxisMath theirs{other};
  TensorSharding out = replicated_sharding(main.name, s.dims.size());
  size_t k = 0;       // the main axis being used
  int64_t taken = 1;  // how much of it the dims before took (its major part)
  for (size_t d = 0; d < s.dims.size(); ++d) {
    int64_t need = theirs.product(theirs.without_trivial(s.dims[d].axes));
    while (need > 1) {
      while (k < main.axes.size() && taken == main.axes[k].second) ++k, taken = 1;
      if (k == main.axes.size())
        return fail(ErrorCode::unimplemented, where, ": ", sharding_string(s),
                    " splits into more pieces than @", main.name, " has devices");
      const int64_t size = main.axes[k].second, left = size / taken;
      AxisRef a{main.axes[k].first, 1, 0};
      int64_t part = left;
      if (need % left != 0) {
        if (left % need != 0)
          return fail(ErrorCode::unimplemented, where, ": no axes of @", main.name,
                      " split dim ", d, " into the ", need, " pieces ", sharding_string(s),
                      " makes");
        part = need;
      }
      if (part != size) a = AxisRef{main.axes[k].first, taken, part};
      out.dims[d].axes.push_back(a);
      taken *= part;
      need /= part;
    }
  }
  return out;
}

}  // namespace

Result<TensorSharding> mesh_counterpart(const MeshDecl& main, const MeshDecl& other,
                                        const TensorSharding& s, const std::string& where) {
  return counterpart(main, other, s, where);
}

std::vector<std::pair<int64_t, int64_t>> permute_pairs(const MeshDecl& mesh,
                                                       const TensorSharding& src,
                                                       const TensorSharding& tgt) {
  AxisMath math{mesh};
  return pair_pieces(
      mesh.devices(), [&](int64_t dev) { return pieces(mesh, math, src, dev); },
      [&](int64_t dev) { return pieces(mesh, math, tgt, dev); });
}

namespace {

/// permute_pairs for shardings on any meshes of the module's devices: device p of the program
/// holds the piece `src` gives its position in src's mesh and needs the one `tgt` gives its
/// position in tgt's mesh.
Result<std::vector<std::pair<int64_t, int64_t>>> permute_pairs_across(const Module& m,
                                                                     const MeshDecl& main,
                                                                     const TensorSharding& src,
                                                                     const TensorSharding& tgt,
                                                                     const std::string& where) {
  const MeshDecl* a = src.mesh.empty() ? &main : m.mesh(src.mesh);
  const MeshDecl* b = tgt.mesh.empty() ? &main : m.mesh(tgt.mesh);
  if (!a || !b)
    return fail(ErrorCode::invalid_argument, where, ": sdy.collective_permute names mesh @",
                a ? tgt.mesh : src.mesh, ", which the module does not declare");
  if (same_layout(*a, main) && same_layout(*b, main)) return permute_pairs(main, src, tgt);
  const std::vector<int64_t> in_a = MESHPLAN_TRY(positions_in(main, *a, where));
  const std::vector<int64_t> in_b = MESHPLAN_TRY(positions_in(main, *b, where));
  AxisMath math_a{*a}, math_b{*b};
  return pair_pieces(
      main.devices(),
      [&](int64_t dev) { return pieces(*a, math_a, src, in_a[static_cast<size_t>(dev)]); },
      [&](int64_t dev) { return pieces(*b, math_b, tgt, in_b[static_cast<size_t>(dev)]); });
}

/// Ops replacing one reshard: the collectives plan_reshard chooses, each carrying its sharding.
/// The all_gather + all_slice sequence of a reshard: per dim, what follows the common prefix of
/// the (non-trivial) source and target axes is gathered, then the target's rest is sliced.
std::vector<ReshardStep> gather_then_slice(const MeshDecl& mesh, const TensorSharding& from,
                                           const TensorSharding& to) {
  AxisMath math{mesh};
  const size_t rank = to.dims.size();
  std::vector<std::vector<AxisRef>> gather(rank), slice(rank);
  TensorSharding cur = replicated_sharding(from.mesh, rank);
  cur.unreduced = to.unreduced;
  bool gathers = false, slices = false;
  for (size_t d = 0; d < rank; ++d) {
    auto have =
        math.without_trivial(d < from.dims.size() ? from.dims[d].axes : std::vector<AxisRef>{});
    auto want = math.without_trivial(to.dims[d].axes);
    size_t k = 0;
    while (k < have.size() && k < want.size() && have[k] == want[k]) ++k;
    cur.dims[d].axes.assign(have.begin(), have.begin() + static_cast<std::ptrdiff_t>(k));
    gather[d].assign(have.begin() + static_cast<std::ptrdiff_t>(k), have.end());
    slice[d].assign(want.begin() + static_cast<std::ptrdiff_t>(k), want.end());
    gathers |= !gather[d].empty();
    slices |= !slice[d].empty();
  }
  std::vector<ReshardStep> steps;
  if (gathers) steps.push_back({"all_gather", gather, {}, cur});
  if (from.mesh != to.mesh) {
    cur.mesh = to.mesh;
    steps.push_back({"collective_permute", {}, {}, cur});
  }
  if (slices) {
    for (size_t d = 0; d < rank; ++d)
      cur.dims[d].axes.insert(cur.dims[d].axes.end(), slice[d].begin(), slice[d].end());
    steps.push_back({"all_slice", slice, {}, cur});
  }
  return steps;
}

/// True when `axes` group devices as one whole mesh axis or the whole mesh in order does.
bool whole_axis_groups(const MeshDecl& mesh, const std::vector<AxisRef>& axes) {
  AxisMath math{mesh};
  auto kept = math.without_trivial(axes);
  if (kept.empty()) return true;
  auto groups = replica_groups(mesh, kept);
  std::vector<int64_t> all(static_cast<size_t>(mesh.devices()));
  std::iota(all.begin(), all.end(), 0);
  if (groups == std::vector<std::vector<int64_t>>{all}) return true;
  for (const auto& a : mesh.axes)
    if (groups == replica_groups(mesh, {AxisRef{a.first, 1, 0}})) return true;
  return false;
}

bool whole_axis_steps(const MeshDecl& mesh, const std::vector<ReshardStep>& steps) {
  for (const ReshardStep& s : steps) {
    if (s.kind == "all_to_all" && !whole_axis_groups(mesh, s.a2a.axes)) return false;
    for (const auto& axes : s.dim_axes)
      if (!whole_axis_groups(mesh, axes)) return false;
  }
  return true;
}

/// Ops replacing one reshard: the collectives of `mode`, each carrying its sharding.
Status lower_reshard(Module& m, const MeshDecl& mesh, ValueId x, const TensorSharding& from,
                     const TensorSharding& to, ReshardMode mode, Location loc,
                     std::vector<OpId>& out, ValueId& result) {
  auto steps = mode == ReshardMode::gather_slice
                   ? Result<std::vector<ReshardStep>>(gather_then_slice(mesh, from, to))
                   : plan_reshard(mesh, from, to, m.values[x].type.shape);
  if (!steps && mode == ReshardMode::physical) steps = gather_then_slice(mesh, from, to);
  if (!steps)
    return fail(steps.error().code, loc.str(), ": sdy.reshard from ", sharding_string(from), " to ",
                sharding_string(to), ": ", steps.error().message);
  if (mode == ReshardMode::physical && !whole_axis_steps(mesh, *steps))
    steps = gather_then_slice(mesh, from, to);
  for (ReshardStep& s : *steps) {
    OpId o = m.add_op("sdy." + s.kind, {x}, {m.values[x].type}, loc);
    Op& op = m.ops[o];
    if (s.kind == "all_to_all")
      op.all_to_all.push_back(std::move(s.a2a));
    else if (s.kind != "collective_permute")
      op.dim_axes = std::move(s.dim_axes);
    op.sharding = std::move(s.out);
    out.push_back(o);
    x = op.results[0];
  }
  result = x;
  return {};
}

/// Appends a sdy.collective_permute of `x` to `out_sharding` (the pairs are found from the
/// shardings when local shapes are made); returns its result.
ValueId add_permute(Module& m, ValueId x, TensorSharding out_sharding, Location loc,
                    std::vector<OpId>& out) {
  OpId o = m.add_op("sdy.collective_permute", {x}, {m.values[x].type}, loc);
  m.ops[o].sharding = std::move(out_sharding);
  out.push_back(o);
  return m.ops[o].results[0];
}

bool splits(const MeshDecl& mesh, const TensorSharding& s) {
  AxisMath math{mesh};
  return std::any_of(s.dims.begin(), s.dims.end(), [&](const DimSharding& d) {
    return !math.without_trivial(d.axes).empty();
  });
}

/// A reshard from `from` on `a` to `to` on `b` where one of them lays devices out other than
/// the module's mesh `main` does (other axes or another device order): the source moves onto
/// its counterpart on `main` (a collective_permute; nothing when it is replicated), the
/// collectives of `mode` reshard that to the target's counterpart on `main`, and a
/// collective_permute moves each piece to the device the target's mesh wants it on.
Status lower_across(Module& m, const MeshDecl& main, const MeshDecl& a, const MeshDecl& b,
                    ValueId x, const TensorSharding& from, const TensorSharding& to,
                    ReshardMode mode, Location loc, std::vector<OpId>& out, ValueId& result) {
  const std::string where = str(loc.str(), ": sdy.reshard from ", sharding_string(from), " to ",
                                sharding_string(to));
  if (!from.unreduced.empty() || !to.unreduced.empty())
    return fail(ErrorCode::unimplemented, where,
                ": plans move only reduced values between meshes of other device layouts");
  MESHPLAN_TRY(positions_in(main, a, where));
  MESHPLAN_TRY(positions_in(main, b, where));
  TensorSharding from_main = MESHPLAN_TRY(counterpart(main, a, from, where));
  TensorSharding to_main = MESHPLAN_TRY(counterpart(main, b, to, where));
  if (!same_layout(a, main) && splits(a, from)) x = add_permute(m, x, from_main, loc, out);
  if (from_main != to_main)
    MESHPLAN_TRY(lower_reshard(m, main, x, from_main, to_main, mode, loc, out, x));
  if (!same_layout(b, main) && splits(b, to)) x = add_permute(m, x, to, loc, out);
  result = x;
  return {};
}

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
  return reshards_to_collectives(m, ReshardMode::shardy);
}

Status reshards_to_collectives(Module& m, ReshardMode mode) {
  const MeshDecl* mesh = m.main_mesh();
  OpId mc = kNone;
  std::vector<OpId>* body = entry_body(m, &mc);
  if (!mesh || !body || !m.ops[mc].manual_axes.empty()) return {};
  auto mesh_named = [&](const std::string& name) -> const MeshDecl* {
    for (const MeshDecl& d : m.meshes)
      if (d.name == name) return &d;
    return name.empty() ? mesh : nullptr;
  };
  auto replicated = [&](const TensorSharding& s) {
    const MeshDecl* d = mesh_named(s.mesh);
    return std::all_of(s.dims.begin(), s.dims.end(), [&](const DimSharding& dim) {
      return !d || AxisMath{*d}.without_trivial(dim.axes).empty();
    });
  };
  auto maximal = [](const MeshDecl* d) {
    return d && d->axes.empty() && d->device_ids.size() == 1;
  };
  std::map<ValueId, ValueId> remap;
  auto fix = [&](Op& op) {
    for (ValueId& v : op.operands)
      if (auto it = remap.find(v); it != remap.end()) v = it->second;
  };
  // Rewrites one block's ops (and those of nested regions, e.g. a while body) in order.
  std::function<Result<std::vector<OpId>>(const std::vector<OpId>&)> rewrite =
      [&](const std::vector<OpId>& ops) -> Result<std::vector<OpId>> {
    std::vector<OpId> out;
    for (OpId o : ops) {
      fix(m.ops[o]);
      if (m.ops[o].name != "sdy.reshard" || !m.ops[o].sharding) {
        for (size_t r = 0; r < m.ops[o].regions.size(); ++r) {
          const std::vector<OpId> inner = m.ops[o].regions[r].ops;
          std::vector<OpId> done = MESHPLAN_TRY(rewrite(inner));
          m.ops[o].regions[r].ops = std::move(done);
        }
        out.push_back(o);
        continue;
      }
      // The value resharded, seen through propagation barriers (which move no data).
      ValueId x = m.ops[o].operands[0];
      while (m.values[x].def != kNone && m.ops[m.values[x].def].name == "sdy.propagation_barrier" &&
             !m.ops[m.values[x].def].operands.empty())
        x = m.ops[m.values[x].def].operands[0];
      TensorSharding to = *m.ops[o].sharding;
      auto src = sharding_of(m, x);
      if (!src && m.values[x].def == kNone) {  // a data-flow op's block argument (while body)
        for (const Op& holder : m.ops)
          for (const Block& region : holder.regions)
            for (size_t i = 0; i < region.args.size() && !src; ++i)
              if (region.args[i] == x && i < holder.shardings.size()) src = holder.shardings[i];
      }
      TensorSharding from =
          src ? *src : replicated_sharding(to.mesh, m.values[x].type.shape.size());
      const MeshDecl *in_mesh = mesh_named(from.mesh), *out_mesh = mesh_named(to.mesh);
      // Single-device meshes, rank changes and meshes of other axes are no collective: the
      // reshard stays (as Shardy leaves it).
      if (maximal(in_mesh) || maximal(out_mesh) || from.dims.size() != to.dims.size()) {
        out.push_back(o);
        continue;
      }
      // Plans move a value between meshes that lay devices out otherwise through the module's
      // mesh (Shardy's sequence leaves meshes of other axes to the reshard).
      if (mode != ReshardMode::shardy && in_mesh && out_mesh &&
          (!same_layout(*in_mesh, *mesh) || !same_layout(*out_mesh, *mesh))) {
        ValueId result = kNone;
        MESHPLAN_TRY(lower_across(m, *mesh, *in_mesh, *out_mesh, x, from, to, mode, m.ops[o].loc,
                                  out, result));
        remap[m.ops[o].results[0]] = result;
        continue;
      }
      if (replicated(to)) {
        if (replicated(from)) {
          remap[m.ops[o].results[0]] = m.ops[o].operands[0];
          continue;
        }
        TensorSharding all = replicated_sharding(from.mesh, from.dims.size());
        all.unreduced = to.unreduced;
        to = std::move(all);  // same devices as the source: gather, no permute
        out_mesh = in_mesh;
      }
      if (!in_mesh || !out_mesh || (in_mesh != out_mesh && in_mesh->axes != out_mesh->axes)) {
        out.push_back(o);
        continue;
      }
      ValueId result = kNone;
      MESHPLAN_TRY(lower_reshard(m, *in_mesh, x, from, to, mode, m.ops[o].loc, out, result));
      remap[m.ops[o].results[0]] = result;
    }
    return out;
  };
  const std::vector<OpId> top = *body;
  // Plans place the boundary on the module's mesh: an argument on a mesh that lays devices out
  // otherwise arrives as its counterpart there and is permuted onto its own mesh first.
  std::vector<OpId> entry;
  for (size_t i = 0; i < m.ops[mc].in_shardings.size(); ++i) {
    const TensorSharding s = m.ops[mc].in_shardings[i];
    const MeshDecl* own = mesh_named(s.mesh);
    if (!own || maximal(own) || same_layout(*own, *mesh) || !splits(*own, s)) continue;
    const std::string where = str(m.ops[mc].loc.str(), ": input ", i, " ", sharding_string(s));
    MESHPLAN_TRY(positions_in(*mesh, *own, where));
    TensorSharding there = MESHPLAN_TRY(counterpart(*mesh, *own, s, where));
    if (!s.unreduced.empty())
      return fail(ErrorCode::unimplemented, where,
                  ": plans move only reduced values between meshes of other device layouts");
    m.ops[mc].in_shardings[i] = there;
    const ValueId arg = m.ops[mc].regions[0].args[i];
    remap[arg] = add_permute(m, arg, s, m.ops[mc].loc, entry);
  }
  std::vector<OpId> out = MESHPLAN_TRY(rewrite(top));
  out.insert(out.begin(), entry.begin(), entry.end());
  // A result on such a mesh leaves as its counterpart on the module's mesh.
  if (!out.empty() && m.ops[out.back()].name == "sdy.return") {
    const OpId ret = out.back();
    out.pop_back();
    for (size_t i = 0; i < m.ops[mc].out_shardings.size() && i < m.ops[ret].operands.size();
         ++i) {
      const TensorSharding stated = m.ops[mc].out_shardings[i];
      const MeshDecl* own = mesh_named(stated.mesh);
      if (!own || maximal(own) || same_layout(*own, *mesh)) continue;
      // The global result is the same whatever mesh holds it: it leaves as the returned
      // value's placement on the module's mesh.
      const ValueId v = m.ops[ret].operands[i];
      auto held = sharding_of(m, v);
      const TensorSharding s =
          held ? *held : replicated_sharding(mesh->name, m.values[v].type.shape.size());
      const MeshDecl* from = mesh_named(s.mesh);
      if (!from || maximal(from)) continue;
      const std::string where = str(m.ops[ret].loc.str(), ": result ", i, " ", sharding_string(s));
      if (!s.unreduced.empty())
        return fail(ErrorCode::unimplemented, where,
                    ": plans move only reduced values between meshes of other device layouts");
      MESHPLAN_TRY(positions_in(*mesh, *from, where));
      TensorSharding there = MESHPLAN_TRY(counterpart(*mesh, *from, s, where));
      m.ops[mc].out_shardings[i] = there;
      if (!same_layout(*from, *mesh) && splits(*from, s))
        m.ops[ret].operands[i] = add_permute(m, v, there, m.ops[ret].loc, out);
    }
    out.push_back(ret);
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
    // Local shapes are counted on the value's own mesh, whose devices must be the module's.
    const MeshDecl* own = m.mesh(s.mesh);
    if (!own) own = mesh;
    if (own != mesh)
      MESHPLAN_TRY(positions_in(*mesh, *own, str(loc.str(), ": ", sharding_string(s))));
    AxisMath own_math{*own};
    for (size_t d = 0; d < s.dims.size() && d < out.shape.size(); ++d) {
      int64_t p = own_math.product(s.dims[d].axes);
      if (p < 1)
        return fail(ErrorCode::unimplemented, loc.str(), ": ", sharding_string(s),
                    " names axes that @", own->name, " does not have");
      if (out.shape[d] % p != 0)
        return fail(ErrorCode::invalid_argument, loc.str(), ": dim ", d, " of ", type_string(t),
                    " is not divisible by its sharding ", sharding_string(s));
      out.shape[d] /= p;
    }
    return out;
  };
  auto reducer = [&](const std::string& elem, const std::string& kind, Location loc) {
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
                        const std::vector<AxisRef>& axes, Location loc) {
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

  // The meshes a reshard left in place moves between (Shardy's sequence leaves reshards
  // between meshes of other device layouts; plans lower them in the physical mode).
  auto layout = [&](const std::string& name) {
    const MeshDecl* d = m.mesh(name);
    return d ? d : mesh;
  };
  std::map<OpId, std::string> reshard_src;
  for (OpId o : *body)
    if (m.ops[o].name == "sdy.reshard" && m.ops[o].sharding && m.ops[o].operands.size() == 1) {
      auto s = sharding_of(m, m.ops[o].operands[0]);
      if (s) reshard_src[o] = s->mesh;
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
    const bool shardy_collective = n == "sdy.all_gather" || n == "sdy.all_reduce" ||
                                   n == "sdy.reduce_scatter" || n == "sdy.all_to_all" ||
                                   n == "sdy.all_slice";
    if (shardy_collective && op.sharding && !same_layout(*layout(op.sharding->mesh), *mesh))
      return fail(ErrorCode::unimplemented, op.loc.str(), ": ", n, " to ",
                  sharding_string(*op.sharding), " runs over @", op.sharding->mesh,
                  ", whose devices lie otherwise than @", mesh->name,
                  "'s; plans run collectives over the module's mesh");
    if (n == "sdy.reshard" && op.sharding && reshard_src.count(o) &&
        !same_layout(*layout(reshard_src[o]), *layout(op.sharding->mesh)))
      return fail(ErrorCode::unimplemented, op.loc.str(), ": sdy.reshard from @", reshard_src[o],
                  " to ", sharding_string(*op.sharding),
                  " moves between meshes of other device layouts, which Shardy's collectives "
                  "leave to the reshard");
    if (n == "sdy.collective_permute") {
      if (!op.sharding || op.operands.size() != 1 || !permute_src.count(o))
        return fail(ErrorCode::invalid_argument, op.loc.str(),
                    ": sdy.collective_permute needs one operand and an out_sharding");
      std::vector<std::vector<int64_t>> pairs;
      const auto found = MESHPLAN_TRY(permute_pairs_across(
          m, *mesh, permute_src[o], *op.sharding, str(op.loc.str(), ": sdy.collective_permute")));
      for (const auto& [from, to] : found) pairs.push_back({from, to});
      // Between meshes that lay devices out otherwise, pieces may stay where they are: no op.
      const bool across = !same_layout(*layout(permute_src[o].mesh), *mesh) ||
                          !same_layout(*layout(op.sharding->mesh), *mesh);
      if (across && std::all_of(found.begin(), found.end(),
                                [](const auto& p) { return p.first == p.second; })) {
        remap[op.results[0]] = op.operands[0];
        continue;
      }
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
    // A slice's sharding rule splits only the dims it keeps whole (start 0, stride 1, limit the
    // operand's size): a split one's limit becomes its local size.
    if (m.ops[o].name == "stablehlo.slice" && m.ops[o].results.size() == 1) {
      Op& slice = m.ops[o];
      const Attr* starts = slice.prop("start_indices");
      const Attr* limits = slice.prop("limit_indices");
      const Attr* strides = slice.prop("strides");
      const auto& shape = m.values[slice.results[0]].type.shape;
      if (starts && limits && strides && limits->ints.size() == shape.size() &&
          starts->ints.size() == shape.size() && strides->ints.size() == shape.size()) {
        std::vector<int64_t> li = limits->ints;
        for (size_t d = 0; d < li.size(); ++d)
          if (starts->ints[d] == 0 && strides->ints[d] == 1 && li[d] > shape[d]) li[d] = shape[d];
        slice.set_prop("limit_indices", Attr::ints_array(li));
      }
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
    else if (c.kind != "all_reduce" && c.kind != "collective_permute" &&
             c.kind != "collective_broadcast")
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

Result<std::optional<device::OpConfig>> collective_launch_config(const Module& m,
                                                                 const CollectiveInfo& c) {
  const MeshDecl* mesh = m.main_mesh();
  if (!mesh) return std::optional<device::OpConfig>{};
  const MeshMapping map = MESHPLAN_TRY(mesh_mapping(m));
  auto axis = physical_cluster_axis(*mesh, map, c.groups);
  if (!axis) return std::optional<device::OpConfig>{};
  device::OpConfig config;
  config.mesh_rows = static_cast<decltype(config.mesh_rows)>(map.rows);
  config.mesh_cols = static_cast<decltype(config.mesh_cols)>(map.cols);
  config.cluster_axis = static_cast<decltype(config.cluster_axis)>(*axis);
  config.collective_dim = static_cast<decltype(config.collective_dim)>(c.dim);
  config.split_dim = static_cast<decltype(config.split_dim)>(c.dim);
  config.concat_dim = static_cast<decltype(config.concat_dim)>(c.concat_dim);
  return std::optional<device::OpConfig>{config};
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
      std::string kind = c.kind;
      if (c.kind == "reduce_scatter") {
        // A reduce_scatter tt-metal refuses is lowered as an all_reduce and the all_slice (a
        // local slice) of each chip's block (lower_collective): that is what moves. A module
        // with no mesh mapping is not lowered (its error is the lowering's to report).
        auto config = collective_launch_config(m, c);
        const auto& in = m.values[op.operands[0]].type.shape;
        if (config && *config &&
            !device::collective_launch_rule(device::OpKind::reduce_scatter, "", in, **config)
                 .empty()) {
          c.kind = "all_reduce";
          kind = "all_reduce + all_slice";
        }
      }
      double group = c.groups.empty() ? 1 : static_cast<double>(c.groups[0].size());
      double bytes = collective_bytes(m, op, c);
      if (c.kind == "all_to_all" && group > 1) {
        // An all_to_all tt-metal refuses is lowered as an all_gather along the concat dim and
        // the all_slice of each chip's block of the split dim (lower_collective): each chip
        // receives the group's other (n - 1) whole operands, n times the all_to_all's bytes.
        auto config = collective_launch_config(m, c);
        const TensorType& in = m.values[op.operands[0]].type;
        if (config && *config &&
            !device::collective_launch_rule(device::OpKind::all_to_all, "", in.shape, **config)
                 .empty()) {
          bytes = (group - 1) * static_cast<double>(in.volume() * element_bytes(in.element));
          c.kind = "all_gather";
          kind = "all_gather + all_slice";
        }
      }
      if (c.kind == "all_reduce" && c.reduction != "sum" && group > 1) {
        // tt-metal's all_reduce sums only: a max or min is lowered as an all_gather of every
        // chip's operand and a local reduce_max / reduce_min (lower_collective). Each chip sends
        // its operand to the group's other chips: (n - 1) operands, the gathered tensor's
        // (n - 1) / n.
        const TensorType& in = m.values[op.operands[0]].type;
        bytes = (group - 1) * static_cast<double>(in.volume() * element_bytes(in.element));
        c.kind = "all_gather";
        kind = str("all_gather + reduce_", c.reduction, kind == "all_reduce" ? "" : " + all_slice");
      }
      ++counts[c.kind];
      s.bytes += bytes;
      s.ops.push_back({kind, op.loc, bytes, static_cast<int>(group)});
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
