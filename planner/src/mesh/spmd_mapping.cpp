// Logical mesh axes onto the physical 2-D system: which module axes multiply into the rows and
// which into the columns, chosen so that every collective runs along one physical dim (or the
// whole system) and the most-communicating axes span the fewest hops.
#include "meshplan/planner/mesh_mapping.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "mesh/spmd_util.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/mesh_desc.hpp"

namespace meshplan::planner::shlo {

namespace {

constexpr const char* kAttr = "meshplan.mesh_mapping";
/// Ranking weights of the time model (DEVICE-FACTS: 12.5 GB/s per Wormhole link, 711 ns/hop).
constexpr double kBytesPerNs = 12.5;
constexpr double kHopNs = 711;

const Op* manual_op(const Module& m) {
  const Func* f = m.entry();
  if (!f) return nullptr;
  for (OpId o : f->body.ops)
    if (m.ops[o].name == "sdy.manual_computation" && m.ops[o].regions.size() == 1) return &m.ops[o];
  return nullptr;
}

std::string mesh_text(const MeshDecl& mesh) {
  std::string s = "@" + mesh.name + " [";
  for (size_t k = 0; k < mesh.axes.size(); ++k)
    s += str(k ? ", " : "", "\"", mesh.axes[k].first, "\"=", mesh.axes[k].second);
  return s + "]";
}

/// "t3k 2x4" for a built-in system of that shape, else "2x2".
std::string system_text(int64_t rows, int64_t cols) {
  for (std::string_view name : device::builtin_mesh_names()) {
    auto d = device::builtin_mesh(name);
    if (d && d->rows == rows && d->cols == cols) return str(name, " ", rows, "x", cols);
  }
  return str(rows, "x", cols);
}

/// True when the mesh states no device_ids or lists them in order.
bool in_order(const MeshDecl& mesh) {
  for (size_t p = 0; p < mesh.device_ids.size(); ++p)
    if (mesh.device_ids[p] != static_cast<int64_t>(p)) return false;
  return true;
}

std::vector<size_t> nontrivial(const MeshDecl& mesh) {
  std::vector<size_t> out;
  for (size_t k = 0; k < mesh.axes.size(); ++k)
    if (mesh.axes[k].second > 1) out.push_back(k);
  return out;
}

/// The default system for a mesh: the built-in of its device count, else the squarest
/// rows x cols (rows <= cols) that some grouping of its axes gives.
std::pair<int64_t, int64_t> default_system(const MeshDecl& mesh) {
  const int64_t n = mesh.devices();
  for (std::string_view name : device::builtin_mesh_names()) {
    auto d = device::builtin_mesh(name);
    if (d && d->chips() == n) return {d->rows, d->cols};
  }
  std::vector<size_t> axes = nontrivial(mesh);
  int64_t best = 1;
  for (size_t mask = 0; mask < (size_t{1} << axes.size()); ++mask) {
    int64_t rows = 1;
    for (size_t i = 0; i < axes.size(); ++i)
      if (mask >> i & 1) rows *= mesh.axes[axes[i]].second;
    if (rows * rows <= n && rows > best) best = rows;
  }
  return {best, n / best};
}

std::string without_prefix(const std::string& message) {
  constexpr std::string_view kPrefix = "unimplemented: ";
  return message.starts_with(kPrefix) ? message.substr(kPrefix.size()) : message;
}

/// Why `map` cannot run the program (empty when it can), and its cost in ns when it can.
struct Verdict {
  std::string why;
  double cost_ns = 0;
};

Verdict judge(const Module& m, const MeshDecl& mesh, const MeshMapping& map, const Op& mc) {
  Verdict v;
  AxisMath math{mesh};
  auto hops = [&](int axis) {
    return static_cast<double>(axis == 0   ? map.rows - 1
                               : axis == 1 ? map.cols - 1
                                           : map.rows + map.cols - 2);
  };
  for (OpId o : mc.regions[0].ops) {
    const Op& op = m.ops[o];
    const bool hlo = op.name == "stablehlo.all_gather" || op.name == "stablehlo.all_reduce" ||
                     op.name == "stablehlo.reduce_scatter" || op.name == "stablehlo.all_to_all";
    if (op.name == "sdy.all_slice") {
      for (const auto& axes : op.dim_axes) {
        auto kept = math.without_trivial(axes);
        if (kept.empty()) continue;
        if (!physical_cluster_axis(mesh, map, replica_groups(mesh, kept)))
          return {str("the sdy.all_slice at ", op.loc.str(), " slices over ", axes_text(kept),
                      ", which is no physical dim"),
                  0};
      }
    } else if (hlo) {
      auto c = collective_info(m, op);
      if (!c) return {c.error().message, 0};
      if (c->groups.empty() || c->groups[0].size() < 2) continue;
      auto axis = physical_cluster_axis(mesh, map, c->groups);
      if (!axis)
        return {str("the ", op.name, " at ", op.loc.str(), " runs over ",
                    c->cluster_axis >= 0 ? str("axis \"", mesh.axes[c->cluster_axis].first, "\"")
                                         : str("groups of ", c->groups[0].size(), " devices"),
                    ", which is no physical dim"),
                0};
      v.cost_ns += collective_bytes(m, op, *c) / kBytesPerNs + hops(*axis) * kHopNs;
    } else if (op.name == "stablehlo.collective_permute") {
      auto c = collective_info(m, op);
      if (!c) return {c.error().message, 0};
      int64_t far = 0;
      for (const auto& [from, to] : c->pairs) {
        int64_t a = map.chip(mesh, from), b = map.chip(mesh, to);
        far = std::max(
            far, std::abs(a / map.cols - b / map.cols) + std::abs(a % map.cols - b % map.cols));
      }
      v.cost_ns += collective_bytes(m, op, *c) / kBytesPerNs + static_cast<double>(far) * kHopNs;
    }
  }
  bool in_order = true;
  for (int64_t d = 0; d < mesh.devices(); ++d) in_order &= map.chip(mesh, d) == d;
  const Func* f = m.entry();
  for (size_t i = 0; i < mc.in_shardings.size(); ++i) {
    bool presharded = false;
    for (const ArgInfo& a : f->args)
      if (a.value == mc.operands[i])
        for (const auto& [k, attr] : a.attrs)
          presharded |=
              k == "ttcore.shard_status" && attr.text.find("<sharded>") != std::string::npos;
    if (presharded) {
      if (!in_order)
        return {str("pre-sharded input ", i,
                    " arrives in device order, which this grouping "
                    "reorders"),
                0};
      continue;
    }
    bool minor_first = false;
    auto dims = physical_shard_dims(mesh, map, mc.in_shardings[i], &minor_first, str("input ", i));
    if (!dims) return {without_prefix(dims.error().message), 0};
    if (minor_first) return {str("input ", i, " splits a dim over cols before rows"), 0};
  }
  for (size_t i = 0; i < mc.out_shardings.size(); ++i) {
    bool minor_first = false;
    auto dims =
        physical_shard_dims(mesh, map, mc.out_shardings[i], &minor_first, str("result ", i));
    if (!dims) return {without_prefix(dims.error().message), 0};
    if (minor_first) return {str("result ", i, " splits a dim over cols before rows"), 0};
  }
  return v;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t end = s.find(sep, at);
    if (end == std::string_view::npos) end = s.size();
    out.emplace_back(s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

}  // namespace

std::string axes_text(const std::vector<AxisRef>& axes) {
  std::string s = "{";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + axis_string(axes[i]);
  return s + "}";
}

int64_t MeshMapping::chip(const MeshDecl& mesh, int64_t device) const {
  std::vector<int64_t> coord(mesh.axes.size());
  for (size_t k = mesh.axes.size(); k-- > 0;) {
    coord[k] = device % mesh.axes[k].second;
    device /= mesh.axes[k].second;
  }
  int64_t at[2] = {0, 0};
  for (int p = 0; p < 2; ++p)
    for (size_t k : dims[p]) at[p] = at[p] * mesh.axes[k].second + coord[k];
  return at[0] * cols + at[1];
}

std::string MeshMapping::str(const MeshDecl& mesh) const {
  std::string s = meshplan::str(rows, "x", cols);
  for (int p = 0; p < 2; ++p) {
    s += p ? " cols=" : " rows=";
    for (size_t i = 0; i < dims[p].size(); ++i) s += (i ? "," : "") + mesh.axes[dims[p][i]].first;
  }
  return s;
}

std::optional<int> physical_cluster_axis(const MeshDecl& mesh, const MeshMapping& map,
                                         const std::vector<std::vector<int64_t>>& groups) {
  std::vector<std::vector<int64_t>> want;
  for (const auto& g : groups) {
    std::vector<int64_t> chips;
    for (int64_t d : g) chips.push_back(d >= 0 && d < mesh.devices() ? map.chip(mesh, d) : -1);
    want.push_back(chips);
  }
  std::sort(want.begin(), want.end());
  for (int axis : {0, 1, -1}) {
    std::vector<std::vector<int64_t>> have;
    for (const auto& g :
         device::collective_groups(static_cast<int>(map.rows), static_cast<int>(map.cols), axis))
      have.emplace_back(g.begin(), g.end());
    std::sort(have.begin(), have.end());
    if (have == want) return axis;
  }
  return std::nullopt;
}

Result<std::array<int32_t, 2>> physical_shard_dims(const MeshDecl& mesh, const MeshMapping& map,
                                                   const TensorSharding& s, bool* minor_first,
                                                   std::string_view what) {
  AxisMath math{mesh};
  std::array<int32_t, 2> out = {-1, -1};
  for (size_t d = 0; d < s.dims.size(); ++d) {
    auto axes = math.without_trivial(s.dims[d].axes);
    std::vector<int> ks;
    for (size_t i = 0; i < axes.size();) {
      const AxisRef& a = axes[i];
      size_t k = 0;
      while (k < mesh.axes.size() && mesh.axes[k].first != a.name) ++k;
      if (k == mesh.axes.size() || math.size(a) != mesh.axes[k].second)
        return fail(ErrorCode::unimplemented, "unimplemented: ", what, " is sharded ",
                    sharding_string(s), " over a sub-axis, which no mesh_shard expresses");
      int p = std::find(map.dims[0].begin(), map.dims[0].end(), k) != map.dims[0].end() ? 0 : 1;
      const std::vector<size_t>& run = map.dims[p];
      bool whole = run.size() <= axes.size() - i;
      for (size_t j = 0; whole && j < run.size(); ++j)
        whole = axes[i + j].name == mesh.axes[run[j]].first &&
                math.size(axes[i + j]) == mesh.axes[run[j]].second;
      if (!whole) {
        std::vector<AxisRef> dim_axes;
        for (size_t j : run) dim_axes.push_back(AxisRef{mesh.axes[j].first, 1, 0});
        return fail(ErrorCode::unimplemented, "unimplemented: ", what, " is sharded ",
                    sharding_string(s), ", but physical ", p ? "cols" : "rows", " carry ",
                    axes_text(dim_axes), " together: no mesh_shard splits dim ", d,
                    " over part of them");
      }
      out[static_cast<size_t>(p)] = static_cast<int32_t>(d);
      ks.push_back(p);
      i += run.size();
    }
    if (ks.size() == 2 && ks[0] > ks[1]) *minor_first = true;
  }
  return out;
}

Result<MeshMapping> choose_mesh_mapping(const Module& m, int64_t rows, int64_t cols) {
  const MeshDecl* mesh = m.main_mesh();
  const Op* mc = manual_op(m);
  if (!mesh || !mc)
    return fail(ErrorCode::invalid_argument, m.file,
                ": not a per-device program (no manual computation)");
  if (rows <= 0 || cols <= 0) std::tie(rows, cols) = default_system(*mesh);
  const std::string where =
      str("mesh ", mesh_text(*mesh), " cannot map onto the ", system_text(rows, cols), " system: ");
  const std::string loc = mc->loc.str();
  if (rows * cols != mesh->devices())
    return fail(ErrorCode::incompatible, loc, ": ", where, "it has ", mesh->devices(),
                " devices, the system ", rows * cols);
  const std::vector<size_t> axes = nontrivial(*mesh);
  if (axes.size() > 12)
    return fail(ErrorCode::unimplemented, loc, ": unimplemented: ", where,
                "more than 12 axes of size > 1");
  std::optional<MeshMapping> best;
  double best_cost = std::numeric_limits<double>::infinity();
  std::string first_why;
  bool ids_fit = false;
  // Masks from "all on cols" down, each dim's axes from the module's order on: the first
  // candidate of a tie keeps the module's order (row-major over its axes when it can).
  for (size_t mask = (size_t{1} << axes.size()); mask-- > 0;) {
    MeshMapping map;
    map.rows = rows;
    map.cols = cols;
    int64_t r = 1;
    for (size_t i = 0; i < axes.size(); ++i) {
      bool on_cols = mask >> i & 1;
      map.dims[on_cols ? 1 : 0].push_back(axes[i]);
      if (!on_cols) r *= mesh->axes[axes[i]].second;
    }
    if (r != rows) continue;
    std::vector<size_t> cols_first = map.dims[1];
    do {
      map.dims[1] = cols_first;
      do {
        // Reordered device_ids fix where each logical device sits: only the grouping that puts
        // device p on chip device_ids[p] runs it.
        bool fits = true;
        for (size_t p = 0; fits && p < mesh->device_ids.size(); ++p)
          fits = map.chip(*mesh, static_cast<int64_t>(p)) == mesh->device_ids[p];
        if (!fits) continue;
        ids_fit = true;
        Verdict v = judge(m, *mesh, map, *mc);
        if (!v.why.empty()) {
          if (first_why.empty()) first_why = v.why;
          continue;
        }
        if (v.cost_ns < best_cost) best = map, best_cost = v.cost_ns;
      } while (std::next_permutation(map.dims[1].begin(), map.dims[1].end()));
    } while (std::next_permutation(map.dims[0].begin(), map.dims[0].end()));
  }
  if (best) return *best;
  if (!ids_fit && !in_order(*mesh)) {
    std::string ids;
    for (size_t p = 0; p < mesh->device_ids.size(); ++p)
      ids += str(p ? ", " : "", mesh->device_ids[p]);
    return fail(ErrorCode::unimplemented, loc, ": unimplemented: ", where, "its device_ids [", ids,
                "] put ",
                "its devices on chips in an order no grouping of its axes onto rows and columns "
                "gives");
  }
  if (first_why.empty())
    return fail(ErrorCode::incompatible, loc, ": ", where, "no grouping of its axes multiplies to ",
                rows, " x ", cols);
  return fail(ErrorCode::unimplemented, loc, ": unimplemented: ", where,
              "under every grouping of its axes some step is no physical collective or "
              "mesh_shard; under the first, ",
              first_why);
}

Result<MeshMapping> mesh_mapping(const Module& m) {
  const MeshDecl* mesh = m.main_mesh();
  if (!mesh) return MeshMapping{};
  for (const auto& [k, a] : m.module_attrs) {
    if (k != kAttr) continue;
    auto bad = [&] {
      return fail(ErrorCode::invalid_argument, m.file, ": ", kAttr, " \"", a.text,
                  "\" is not \"RxC rows=a,b cols=c\" over the axes of mesh ", mesh_text(*mesh));
    };
    auto words = split(a.text, ' ');
    if (a.kind != Attr::Kind::string || words.size() != 3) return bad();
    MeshMapping map;
    auto shape = split(words[0], 'x');
    if (shape.size() != 2) return bad();
    map.rows = std::atoll(shape[0].c_str());
    map.cols = std::atoll(shape[1].c_str());
    std::vector<bool> seen(mesh->axes.size());
    for (int p = 0; p < 2; ++p) {
      std::string_view w = words[static_cast<size_t>(1 + p)];
      std::string_view head = p ? "cols=" : "rows=";
      if (!w.starts_with(head)) return bad();
      int64_t size = 1;
      if (w.size() > head.size())
        for (const std::string& name : split(w.substr(head.size()), ',')) {
          size_t k = 0;
          while (k < mesh->axes.size() && mesh->axes[k].first != name) ++k;
          if (k == mesh->axes.size() || seen[k]) return bad();
          seen[k] = true;
          map.dims[p].push_back(k);
          size *= mesh->axes[k].second;
        }
      if (size != (p ? map.cols : map.rows)) return bad();
    }
    for (size_t k = 0; k < mesh->axes.size(); ++k)
      if (!seen[k] && mesh->axes[k].second > 1) return bad();
    return map;
  }
  if (mesh->axes.size() <= 2 && in_order(*mesh)) {
    MeshMapping map;
    map.rows = mesh->axes.empty() ? 1 : mesh->axes[0].second;
    map.cols = mesh->axes.size() < 2 ? 1 : mesh->axes[1].second;
    for (size_t k = 0; k < mesh->axes.size(); ++k)
      if (mesh->axes[k].second > 1) map.dims[k].push_back(k);
    return map;
  }
  return choose_mesh_mapping(m, 0, 0);
}

Status map_mesh_axes(Module& m, const PipelineOptions& options) {
  const MeshDecl* mesh = m.main_mesh();
  if (!mesh || (mesh->axes.size() <= 2 && in_order(*mesh)) || !manual_op(m)) return {};
  const bool given = options.mesh_rows > 0 && options.mesh_cols > 0;
  if (std::any_of(m.module_attrs.begin(), m.module_attrs.end(),
                  [](const auto& kv) { return kv.first == kAttr; })) {
    // A mapping the module states is kept when the system and the program agree with it.
    MeshMapping stated = MESHPLAN_TRY(mesh_mapping(m));
    const Op& mc = *manual_op(m);
    if (given && (stated.rows != options.mesh_rows || stated.cols != options.mesh_cols))
      return fail(ErrorCode::incompatible, mc.loc.str(), ": ", kAttr, " \"", stated.str(*mesh),
                  "\" is for a ", stated.rows, "x", stated.cols, " system, not --mesh ",
                  options.mesh_rows, "x", options.mesh_cols);
    Verdict v = judge(m, *mesh, stated, mc);
    for (size_t p = 0; v.why.empty() && p < mesh->device_ids.size(); ++p)
      if (stated.chip(*mesh, static_cast<int64_t>(p)) != mesh->device_ids[p])
        v.why = str("it puts device ", p, " on chip ", stated.chip(*mesh, static_cast<int64_t>(p)),
                    ", its device_ids on chip ", mesh->device_ids[p]);
    if (!v.why.empty())
      return fail(ErrorCode::invalid_argument, mc.loc.str(), ": ", kAttr, " \"", stated.str(*mesh),
                  "\" cannot run this program: ", v.why);
    return {};
  }
  MeshMapping map = MESHPLAN_TRY(
      choose_mesh_mapping(m, options.mesh_rows > 0 && options.mesh_cols > 0 ? options.mesh_rows : 0,
                          options.mesh_rows > 0 && options.mesh_cols > 0 ? options.mesh_cols : 0));
  Attr a;
  a.kind = Attr::Kind::string;
  a.text = map.str(*mesh);
  std::erase_if(m.module_attrs, [](const auto& kv) { return kv.first == kAttr; });
  m.module_attrs.emplace_back(kAttr, a);
  if (options.notes) {
    std::string per_dim[2];
    for (int p = 0; p < 2; ++p)
      for (size_t i = 0; i < map.dims[p].size(); ++i)
        per_dim[p] += str(i ? " x " : "", "\"", mesh->axes[map.dims[p][i]].first, "\"");
    options.notes->push_back(str("mesh ", mesh_text(*mesh), " maps onto the ",
                                 system_text(map.rows, map.cols),
                                 " system: rows = ", per_dim[0].empty() ? "none" : per_dim[0],
                                 ", cols = ", per_dim[1].empty() ? "none" : per_dim[1],
                                 " (every collective runs along one physical dim, the "
                                 "most-communicating on the fewest hops)"));
  }
  return {};
}

}  // namespace meshplan::planner::shlo
