// Sharding groups: import (checks, merging, renumbering) and the sync of the members'
// shardings that propagation starts from.
#include "mesh/sharding_groups.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "mesh/sharding_manual.hpp"
#include "meshplan/planner/sharding.hpp"

namespace meshplan::planner::shlo {

namespace {

/// One `sdy.sharding_group` op where it sits.
struct GroupOp {
  OpId op;
  Block* block;
  OpId manual;  ///< The innermost enclosing sdy.manual_computation, or kNone.
};

/// Every sdy.sharding_group of the module in textual order (functions in order, nested
/// regions where they are written).
std::vector<GroupOp> group_ops(Module& m) {
  std::vector<GroupOp> out;
  auto walk = [&](auto& self, Block& b, OpId manual) -> void {
    for (OpId o : b.ops) {
      if (m.ops[o].name == "sdy.sharding_group") out.push_back({o, &b, manual});
      OpId inner = m.ops[o].name == "sdy.manual_computation" ? o : manual;
      for (Block& r : m.ops[o].regions) self(self, r, inner);
    }
  };
  for (Func& f : m.funcs) walk(walk, f.body, kNone);
  return out;
}

int64_t group_id(const Op& op) {
  const Attr* a = op.prop("group_id");
  return a ? a->i : 0;
}

void set_group_id(Op& op, int64_t id) {
  for (auto& [k, a] : op.props)
    if (k == "group_id") a.i = id;
}

/// Where a value is defined: the block and the position its sharding constraint goes to.
struct Site {
  Block* block = nullptr;
  size_t at = 0;  ///< Insert before ops[at].
  Location loc;
};

std::map<ValueId, Site> sites(Module& m) {
  std::map<ValueId, Site> out;
  auto walk = [&](auto& self, Block& b, const Location& owner) -> void {
    for (ValueId a : b.args) out[a] = {&b, 0, owner};
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const Op& op = m.ops[b.ops[i]];
      for (ValueId r : op.results) out[r] = {&b, i + 1, op.loc};
      for (Block& r : m.ops[b.ops[i]].regions) self(self, r, op.loc);
    }
  };
  for (Func& f : m.funcs) {
    walk(walk, f.body, f.loc);
    for (const ArgInfo& a : f.args)
      if (!out.contains(a.value)) out[a.value] = {&f.body, 0, f.loc};
  }
  return out;
}

/// Replaces every use of `from` by `to`, except in op `keep`.
void replace_uses(Module& m, ValueId from, ValueId to, OpId keep) {
  for (OpId o = 0; o < m.ops.size(); ++o) {
    if (o == keep) continue;
    for (ValueId& v : m.ops[o].operands)
      if (v == from) v = to;
  }
}

bool is_func_arg(const Module& m, ValueId v) {
  return std::any_of(m.funcs.begin(), m.funcs.end(), [&](const Func& f) {
    return std::any_of(f.args.begin(), f.args.end(),
                       [&](const ArgInfo& a) { return a.value == v; });
  });
}

/// The sharding a group member states: a function argument's, a sharding constraint's, an
/// op result's or a manual computation's block argument's (its in_sharding, local); other
/// block arguments state none here.
std::optional<TensorSharding> stated(const Module& m, ValueId v) {
  const Value& val = m.values[v];
  if (val.def == kNone) return is_func_arg(m, v) ? val.sharding : manual_arg_sharding(m, v);
  const Op& op = m.ops[val.def];
  if (op.name == "sdy.sharding_constraint") return op.sharding;
  if (val.index < op.shardings.size()) return op.shardings[val.index];
  return std::nullopt;
}

void set_stated(Module& m, ValueId v, const TensorSharding& s) {
  Value& val = m.values[v];
  if (val.def == kNone) {
    if (is_func_arg(m, v)) val.sharding = s;
    return;
  }
  Op& op = m.ops[val.def];
  if (op.name == "sdy.sharding_constraint") {
    op.sharding = s;
    return;
  }
  if (op.sharding) return;  // reshards and collectives state their own
  for (size_t k = op.shardings.size(); k < op.results.size(); ++k)
    op.shardings.push_back(open_sharding(s.mesh, m.values[op.results[k]].type.shape.size()));
  op.shardings[val.index] = s;
}

bool fully_open(const TensorSharding& s) {
  return s.replicated.empty() && s.unreduced.empty() &&
         std::all_of(s.dims.begin(), s.dims.end(),
                     [](const DimSharding& d) { return d.open && d.axes.empty(); });
}

}  // namespace

Status import_sharding_groups(Module& m) {
  std::vector<GroupOp> ops = group_ops(m);
  if (ops.empty()) return {};
  // Checks: one shape and one manual computation per group id.
  std::map<int64_t, const GroupOp*> first;
  for (const GroupOp& g : ops) {
    const Op& op = m.ops[g.op];
    if (op.operands.size() != 1 || !op.prop("group_id"))
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": sdy.sharding_group needs one value and a group_id");
    int64_t id = group_id(op);
    if (id < 0)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": sdy.sharding_group: group_id ", id,
                  " is negative");
    auto [it, added] = first.try_emplace(id, &g);
    if (added) continue;
    const Op& head = m.ops[it->second->op];
    const TensorType& want = m.values[head.operands[0]].type;
    const TensorType& got = m.values[op.operands[0]].type;
    if (got.shape != want.shape)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": sdy.sharding_group: a ",
                  type_string(got), " value in group ", id, " whose first value (", head.loc.str(),
                  ") is a ", type_string(want), "; the values of a group must have one shape");
    if (g.manual != it->second->manual)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": sdy.sharding_group: group ", id,
                  " has values inside and outside an sdy.manual_computation (", head.loc.str(),
                  "); a group may not cross its boundary");
  }
  // Groups that share a value merge; the smallest id leads.
  std::map<int64_t, int64_t> parent;
  for (const auto& [id, _] : first) parent[id] = id;
  auto find = [&](int64_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::map<ValueId, int64_t> value_group;
  for (const GroupOp& g : ops) {
    const Op& op = m.ops[g.op];
    auto [it, added] = value_group.try_emplace(op.operands[0], group_id(op));
    if (added) continue;
    int64_t a = find(it->second), b = find(group_id(op));
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
  std::map<int64_t, int64_t> renumber;
  for (const auto& [id, _] : first)
    if (find(id) == id) renumber.emplace(id, static_cast<int64_t>(renumber.size()));
  std::map<std::pair<int64_t, ValueId>, bool> seen;
  for (const GroupOp& g : ops) {
    Op& op = m.ops[g.op];
    int64_t id = renumber.at(find(group_id(op)));
    set_group_id(op, id);
    if (!seen.try_emplace({id, op.operands[0]}, true).second)
      std::erase(g.block->ops, g.op);  // the value is in the group already
  }
  return {};
}

std::vector<std::vector<ValueId>> sharding_group_members(const Module& m) {
  std::vector<std::vector<ValueId>> out;
  auto walk = [&](auto& self, const Block& b) -> void {
    for (OpId o : b.ops) {
      const Op& op = m.ops[o];
      if (op.name == "sdy.sharding_group" && op.operands.size() == 1) {
        size_t id = static_cast<size_t>(std::max<int64_t>(group_id(op), 0));
        if (out.size() <= id) out.resize(id + 1);
        if (std::find(out[id].begin(), out[id].end(), op.operands[0]) == out[id].end())
          out[id].push_back(op.operands[0]);
      }
      for (const Block& r : op.regions) self(self, r);
    }
  };
  for (const Func& f : m.funcs) walk(walk, f.body);
  return out;
}

void sync_sharding_groups(Module& m) {
  auto groups = sharding_group_members(m);
  for (size_t id = 0; id < groups.size(); ++id) {
    const auto& members = groups[id];
    if (members.size() < 2) continue;
    std::optional<TensorSharding> common;
    std::optional<TensorSharding> other;
    for (ValueId v : members) {
      auto s = stated(m, v);
      if (!s || fully_open(*s)) continue;
      if (!common) {
        common = s;
      } else if (*s != *common) {
        other = s;
        break;
      }
    }
    if (!common) continue;
    if (!other) {
      for (ValueId v : members) set_stated(m, v, *common);
      continue;
    }
    // The members disagree: each gets an open constraint that propagation may extend.
    auto where = sites(m);
    const Site& head = where[members[0]];
    m.notes.push_back(str(head.loc.str(), ": warning: sharding group ", id,
                          ": its values state different shardings (", sharding_string(*common),
                          " and ", sharding_string(*other),
                          "); each value gets an open sdy.sharding_constraint and "
                          "propagation decides"));
    for (ValueId v : members) {
      OpId c = m.add_op("sdy.sharding_constraint", {v}, {m.values[v].type});
      m.ops[c].sharding = open_sharding(common->mesh, m.values[v].type.shape.size());
      where = sites(m);  // after add_op (which may move ops); positions move as we insert
      const Site& s = where.at(v);
      m.ops[c].loc = s.loc;
      s.block->ops.insert(s.block->ops.begin() + static_cast<std::ptrdiff_t>(s.at), c);
      replace_uses(m, v, m.ops[c].results[0], c);
    }
  }
}

}  // namespace meshplan::planner::shlo
