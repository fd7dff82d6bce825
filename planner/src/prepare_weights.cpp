// prepare_conv_weights: conv2d weight arguments rewritten to their prepared 2-D form.
#include "meshplan/planner/prepare_weights.hpp"

#include <algorithm>
#include <sstream>

#include "meshplan/device/conv_weights.hpp"

namespace meshplan::planner {

namespace {

/// Groups of a conv2d op (1 when absent or not an integer: validate() has rejected those).
int64_t groups_of(const Op& op) {
  const Attribute* a = op.attribute("groups");
  const int64_t* g = a ? std::get_if<int64_t>(&a->value) : nullptr;
  return g ? *g : 1;
}

}  // namespace

std::vector<PreparedWeight> conv_weight_candidates(const Graph& g) {
  // Per value: -1 = not a candidate, 0 = no use seen yet, else groups of the uses so far.
  std::vector<int64_t> state(g.values.size(), -1);
  for (size_t i = 0; i < g.arguments.size(); ++i) {
    const Value& v = g.values[g.arguments[i]];
    bool kind_ok = v.kind == ArgKind::input || v.kind == ArgKind::parameter;
    bool shard_ok =
        g.mesh.single_chip() || (i < g.argument_shards.size() &&
                                 g.argument_shards[i].type == device::MeshShardType::replicate);
    if (kind_ok && shard_ok && v.shape.size() == 4) state[g.arguments[i]] = 0;
  }
  for (ValueId out : g.outputs) state[out] = -1;
  for (const Op& op : g.ops)
    for (size_t k = 0; k < op.operands.size(); ++k) {
      int64_t& s = state[op.operands[k]];
      if (s < 0) continue;
      bool weight_use = op.kind == OpKind::conv2d && k == 1;
      int64_t groups = weight_use ? groups_of(op) : -1;
      s = (weight_use && (s == 0 || s == groups)) ? groups : -1;
    }
  std::vector<PreparedWeight> out;
  for (size_t i = 0; i < g.arguments.size(); ++i) {
    ValueId a = g.arguments[i];
    if (state[a] <= 0) continue;
    const Value& v = g.values[a];
    if (!device::prepared_conv_weight_shape(v.shape, state[a])) continue;
    out.push_back(PreparedWeight{a, i, v.shape, state[a]});
  }
  return out;
}

Result<std::vector<PreparedWeight>> prepare_conv_weights(Graph& g) {
  std::vector<PreparedWeight> prepared = conv_weight_candidates(g);
  if (prepared.empty()) return prepared;
  std::vector<int> index(g.values.size(), -1);
  for (size_t i = 0; i < prepared.size(); ++i) index[prepared[i].value] = static_cast<int>(i);
  for (Op& op : g.ops) {
    if (op.kind != OpKind::conv2d || op.operands.size() < 2 || index[op.operands[1]] < 0) continue;
    const std::vector<int64_t>& host = prepared[index[op.operands[1]]].host_shape;
    Attribute kernel{"kernel", std::vector<int64_t>{host[1], host[2]}};
    auto it = std::lower_bound(op.attributes.begin(), op.attributes.end(), kernel.name,
                               [](const Attribute& a, const std::string& n) { return a.name < n; });
    if (it != op.attributes.end() && it->name == kernel.name)
      it->value = kernel.value;
    else
      op.attributes.insert(it, std::move(kernel));
  }
  for (const PreparedWeight& p : prepared)
    g.values[p.value].shape =
        MESHPLAN_TRY(device::prepared_conv_weight_shape(p.host_shape, p.groups));
  MESHPLAN_TRY(validate(g));
  return prepared;
}

std::string print_prepared(const Graph& g, const std::vector<PreparedWeight>& prepared) {
  std::ostringstream out;
  for (const PreparedWeight& p : prepared)
    out << g.values[p.value].name << " " << shape_string(p.host_shape) << " -> "
        << shape_string(g.values[p.value].shape) << " groups " << p.groups << "\n";
  return out.str();
}

}  // namespace meshplan::planner
