// flatten_spatial: conv2d / pool regions rewritten to flattened [1, 1, N*H*W, C] activations.
#include "meshplan/planner/flatten_spatial.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

namespace meshplan::planner {

namespace {

bool is_window(OpKind k) {
  return device::op_family(k) == device::OpFamily::conv ||
         device::op_family(k) == device::OpFamily::pool;
}

/// Ops whose result element i comes from operand element i alone, in the same shape.
bool is_unary_like(OpKind k) {
  return device::is_unary_eltwise(k) || device::op_family(k) == device::OpFamily::convert;
}

/// Operand positions of `op` that run flattened with its result (bit i = operand i), or 0 when
/// the op cannot take part in a region.
uint32_t linked_operands(const Graph& g, const Op& op) {
  if (op.results.size() != 1 || op.operands.empty()) return 0;
  const std::vector<int64_t>& out = g.values[op.results[0]].shape;
  if (out.size() != 4) return 0;
  auto shape = [&](size_t i) -> const std::vector<int64_t>& {
    return g.values[op.operands[i]].shape;
  };
  if (is_window(op.kind)) return (shape(0).size() == 4 && !op.attribute("input_nhw")) ? 1u : 0u;
  if (is_unary_like(op.kind)) return shape(0) == out ? 1u : 0u;
  if (device::is_binary_eltwise(op.kind)) {
    uint32_t mask = 0;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (shape(i) != out) return 0;
      mask |= 1u << i;
    }
    return mask;
  }
  return 0;
}

std::vector<int64_t> flat_shape(const std::vector<int64_t>& nhwc) {
  return {1, 1, nhwc[0] * nhwc[1] * nhwc[2], nhwc[3]};
}

void set_attribute(Op& op, Attribute a) {
  auto it = std::lower_bound(op.attributes.begin(), op.attributes.end(), a.name,
                             [](const Attribute& x, const std::string& n) { return x.name < n; });
  if (it != op.attributes.end() && it->name == a.name)
    it->value = std::move(a.value);
  else
    op.attributes.insert(it, std::move(a));
}

/// Names not yet taken, made from `base` (base, base.1, base.2, ...).
class Names {
 public:
  explicit Names(const Graph& g) {
    for (const Value& v : g.values) taken_.insert(v.name);
    for (const Op& op : g.ops) taken_.insert(op.name);
  }
  std::string fresh(const std::string& base) {
    std::string n = base;
    for (int i = 1; taken_.count(n); ++i) n = base + "." + std::to_string(i);
    taken_.insert(n);
    return n;
  }

 private:
  std::set<std::string> taken_;
};

}  // namespace

SpatialRegions find_spatial_regions(const Graph& g) {
  SpatialRegions r;
  r.region_of_op.assign(g.ops.size(), -1);
  std::vector<uint32_t> linked(g.ops.size());
  for (OpId o = 0; o < g.ops.size(); ++o) linked[o] = linked_operands(g, g.ops[o]);
  // Union-find over ops, joined along values a linked result feeds into a linked operand.
  std::vector<OpId> parent(g.ops.size());
  std::iota(parent.begin(), parent.end(), OpId{0});
  auto find = [&](OpId o) {
    while (parent[o] != o) o = parent[o] = parent[parent[o]];
    return o;
  };
  for (OpId o = 0; o < g.ops.size(); ++o)
    for (size_t i = 0; i < g.ops[o].operands.size(); ++i) {
      if (!(linked[o] >> i & 1u)) continue;
      OpId p = g.values[g.ops[o].operands[i]].producer;
      if (p == kNoOp || !linked[p]) continue;
      OpId a = find(o), b = find(p);
      if (a != b) parent[std::max(a, b)] = std::min(a, b);
    }
  std::vector<bool> has_window(g.ops.size(), false);
  for (OpId o = 0; o < g.ops.size(); ++o)
    if (linked[o] && is_window(g.ops[o].kind)) has_window[find(o)] = true;
  // Region ids in order of each region's first op.
  std::vector<int> id(g.ops.size(), -1);
  for (OpId o = 0; o < g.ops.size(); ++o) {
    if (!linked[o] || !has_window[find(o)]) continue;
    OpId root = find(o);
    if (id[root] < 0) id[root] = r.count++;
    r.region_of_op[o] = id[root];
  }
  return r;
}

std::string SpatialRegions::print(const Graph& g) const {
  std::vector<std::string> lines(static_cast<size_t>(count));
  for (OpId o = 0; o < region_of_op.size(); ++o)
    if (region_of_op[o] >= 0) lines[static_cast<size_t>(region_of_op[o])] += " " + g.ops[o].name;
  std::ostringstream out;
  for (int i = 0; i < count; ++i)
    out << "region " << i << ":" << lines[static_cast<size_t>(i)] << "\n";
  return out.str();
}

Result<FlattenResult> flatten_spatial(Graph& g) {
  FlattenResult result;
  SpatialRegions regions = find_spatial_regions(g);
  if (regions.count == 0) return result;
  result.regions = regions.count;
  const size_t n_values = g.values.size(), n_ops = g.ops.size();
  auto in_region = [&](OpId o) { return o != kNoOp && regions.region_of_op[o] >= 0; };
  std::vector<uint32_t> linked(n_ops, 0);
  for (OpId o = 0; o < n_ops; ++o)
    if (in_region(o)) linked[o] = linked_operands(g, g.ops[o]);

  // Uses of each value: inside a region (flat) or not (NHWC), and graph output positions.
  struct Use {
    OpId op;
    size_t operand;
  };
  std::vector<std::vector<Use>> flat_uses(n_values), nhwc_uses(n_values);
  std::vector<std::vector<size_t>> output_uses(n_values);
  for (OpId o = 0; o < n_ops; ++o)
    for (size_t i = 0; i < g.ops[o].operands.size(); ++i) {
      ValueId v = g.ops[o].operands[i];
      (linked[o] >> i & 1u ? flat_uses : nhwc_uses)[v].push_back(Use{o, i});
    }
  for (size_t i = 0; i < g.outputs.size(); ++i) output_uses[g.outputs[i]].push_back(i);

  // Geometry of the window ops, from their NHWC inputs before any shape changes.
  for (OpId o = 0; o < n_ops; ++o) {
    Op& op = g.ops[o];
    if (!in_region(o)) continue;
    ++result.flat_ops;
    if (!is_window(op.kind)) continue;
    const std::vector<int64_t>& in = g.values[op.operands[0]].shape;
    set_attribute(op, Attribute{"input_nhw", std::vector<int64_t>{in[0], in[1], in[2]}});
  }

  Names names(g);
  std::vector<std::vector<Op>> before(n_ops), after(n_ops);
  auto reshape_op = [&](ValueId from, ValueId to, const std::string& name) {
    Op r;
    r.name = names.fresh(name);
    r.kind = OpKind::reshape;
    r.operands = {from};
    r.results = {to};
    r.attributes = {Attribute{"shape", g.values[to].shape}};
    ++result.reshapes;
    return r;
  };
  auto new_value = [&](const Value& like, std::string name, std::vector<int64_t> shape) {
    Value v;
    v.name = std::move(name);
    v.shape = std::move(shape);
    v.dtype = like.dtype;
    g.values.push_back(std::move(v));
    return static_cast<ValueId>(g.values.size() - 1);
  };

  for (ValueId v = 0; v < n_values; ++v) {
    if (g.values[v].shape.size() != 4) continue;
    const OpId producer = g.values[v].producer;
    const std::vector<int64_t> nhwc = g.values[v].shape;
    if (in_region(producer)) {
      // Produced flat: the value itself becomes flat; NHWC users get a reshape back, except
      // reshape ops, whose result depends only on the row-major order the two forms share.
      g.values[v].shape = flat_shape(nhwc);
      std::vector<Use> need_nhwc;
      for (const Use& u : nhwc_uses[v]) {
        if (g.ops[u.op].kind == OpKind::reshape)
          ++result.rewired;
        else
          need_nhwc.push_back(u);
      }
      if (need_nhwc.empty() && output_uses[v].empty()) continue;
      std::string name = g.values[v].name;
      ValueId back;
      if (!output_uses[v].empty()) {  // The output keeps its name; the flat value is renamed.
        g.values[v].name = names.fresh(name + ".flat");
        back = new_value(g.values[v], name, nhwc);
        for (size_t i : output_uses[v]) g.outputs[i] = back;
      } else {
        back = new_value(g.values[v], names.fresh(name + ".nhwc"), nhwc);
      }
      for (const Use& u : need_nhwc) g.ops[u.op].operands[u.operand] = back;
      after[producer].push_back(reshape_op(v, back, name + ".to_nhwc"));
      continue;
    }
    if (flat_uses[v].empty()) continue;
    bool only_flat = nhwc_uses[v].empty() && output_uses[v].empty();
    Value& val = g.values[v];
    if (only_flat && producer == kNoOp && val.argument >= 0 && g.mesh.single_chip()) {
      // A program argument only regions use: planned flat (same row-major bytes). On a mesh
      // its boundary shard is cut from the NHWC host tensor: it enters through a reshape.
      val.shape = flat_shape(nhwc);
      if (val.kind != ArgKind::constant)
        result.inputs.push_back(FlattenedInput{v, static_cast<size_t>(val.argument), nhwc});
      continue;
    }
    if (only_flat && producer != kNoOp && g.ops[producer].kind == OpKind::reshape) {
      // The graph's own reshape is the edge: it now reshapes straight to the flat form.
      val.shape = flat_shape(nhwc);
      set_attribute(g.ops[producer], Attribute{"shape", val.shape});
      ++result.rewired;
      continue;
    }
    ValueId flat = new_value(val, names.fresh(val.name + ".flat"), flat_shape(nhwc));
    OpId first = flat_uses[v].front().op;
    for (const Use& u : flat_uses[v]) g.ops[u.op].operands[u.operand] = flat;
    before[first].push_back(reshape_op(v, flat, g.values[v].name + ".to_flat"));
  }

  std::vector<Op> ops;
  ops.reserve(n_ops + static_cast<size_t>(result.reshapes));
  for (OpId o = 0; o < n_ops; ++o) {
    for (Op& r : before[o]) ops.push_back(std::move(r));
    ops.push_back(std::move(g.ops[o]));
    for (Op& r : after[o]) ops.push_back(std::move(r));
  }
  g.ops = std::move(ops);
  std::sort(
      result.inputs.begin(), result.inputs.end(),
      [](const FlattenedInput& a, const FlattenedInput& b) { return a.argument < b.argument; });
  MESHPLAN_TRY(validate(g));
  return result;
}

std::string print_flattened(const Graph& g, const FlattenResult& r) {
  std::ostringstream out;
  out << "regions " << r.regions << " flat_ops " << r.flat_ops << " reshapes " << r.reshapes
      << " rewired " << r.rewired << "\n";
  for (const FlattenedInput& f : r.inputs)
    out << g.values[f.value].name << " " << shape_string(f.host_shape) << " -> "
        << shape_string(g.values[f.value].shape) << "\n";
  return out.str();
}

}  // namespace meshplan::planner
