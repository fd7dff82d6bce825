// func.call in the `sdy-propagation` stage: the call graph flattened before propagation, seen
// through during it, and unflattened after (sdy_import_passes.md -sdy-flatten-call-graph,
// sdy_export_passes.md -sdy-unflatten-call-graph).
#include "mesh/sharding_calls.hpp"
#include "import/stablehlo_clone.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace meshplan::planner::shlo {

namespace {

const Attr* callee_attr(const Op& op) {
  const Attr* a = op.prop("callee");
  return a && a->kind == Attr::Kind::symbol ? a : nullptr;
}

/// Calls `fn` on every op of `b` and of the regions nested in it, in textual order.
template <class Fn>
void each_op(Module& m, const Block& b, const Fn& fn) {
  for (OpId o : b.ops) {
    for (const Block& r : m.ops[o].regions) each_op(m, r, fn);
    fn(o);
  }
}

class Flattener {
 public:
  Flattener(Module& m, CallView& view) : m_(m), view_(view) {}

  Status run() {
    for (const Func& f : m_.funcs) view_.origin.push_back(f.name);
    std::vector<uint8_t> state(m_.funcs.size(), 0);  // 0 new, 1 on the stack, 2 done
    std::vector<size_t> post;
    for (size_t f = 0; f < m_.funcs.size(); ++f) MESHPLAN_TRY(order(f, state, post));
    std::set<std::string> seen;
    for (size_t f : post) {
      std::vector<OpId> calls;
      each_op(m_, m_.funcs[f].body, [&](OpId o) {
        if (m_.ops[o].name == "func.call") calls.push_back(o);
      });
      for (OpId c : calls) {
        std::string callee = callee_attr(m_.ops[c])->text;
        if (seen.insert(callee).second) continue;
        size_t copy = clone(*index(callee));
        set_callee(c, m_.funcs[copy].name);
      }
    }
    return {};
  }

 private:
  std::optional<size_t> index(const std::string& name) const {
    for (size_t i = 0; i < m_.funcs.size(); ++i)
      if (m_.funcs[i].name == name) return i;
    return std::nullopt;
  }

  void set_callee(OpId c, const std::string& name) {
    for (auto& [k, a] : m_.ops[c].props)
      if (k == "callee") a.text = name;
  }

  /// Post-order of the call graph from function `f`; recursion is refused.
  Status order(size_t f, std::vector<uint8_t>& state, std::vector<size_t>& post) {
    if (state[f] == 2) return {};
    if (state[f] == 1)
      return fail(ErrorCode::invalid_argument, m_.funcs[f].loc.str(), ": @", m_.funcs[f].name,
                  " calls itself (recursive calls cannot be propagated through)");
    state[f] = 1;
    std::vector<OpId> calls;
    each_op(m_, m_.funcs[f].body, [&](OpId o) {
      if (m_.ops[o].name == "func.call") calls.push_back(o);
    });
    for (OpId c : calls) {
      const Attr* callee = callee_attr(m_.ops[c]);
      if (!callee)
        return fail(ErrorCode::invalid_argument, m_.ops[c].loc.str(),
                    ": func.call without a callee");
      std::optional<size_t> g = index(callee->text);
      if (!g)
        return fail(ErrorCode::invalid_argument, m_.ops[c].loc.str(), ": func.call: no function @",
                    callee->text, " in the module");
      const Func& fn = m_.funcs[*g];
      if (fn.args.size() != m_.ops[c].operands.size() ||
          fn.results.size() != m_.ops[c].results.size())
        return fail(ErrorCode::invalid_argument, m_.ops[c].loc.str(), ": func.call: @", fn.name,
                    " takes ", fn.args.size(), " arguments and returns ", fn.results.size(),
                    " values, the call has ", m_.ops[c].operands.size(), " and ",
                    m_.ops[c].results.size());
      MESHPLAN_TRY(order(*g, state, post));
    }
    state[f] = 2;
    post.push_back(f);
    return {};
  }

  /// A copy of op `o` with its regions (region arguments keep their shardings).
  OpId clone_op(OpId o, std::map<ValueId, ValueId>& vmap) {
    // No op limit, so the copy cannot fail.
    return *shlo::clone_op(m_, o, vmap, CloneOptions{.region_arg_shardings = true});
  }

  /// A copy of function `f` and of everything it calls; returns the copy's index.
  size_t clone(size_t f) {
    Func copy = m_.funcs[f];
    std::string origin = view_.origin[f];
    std::map<ValueId, ValueId> vmap;
    for (ArgInfo& a : copy.args) {
      ValueId n = m_.add_value(m_.values[a.value].type, kNone, m_.values[a.value].index);
      m_.values[n].sharding = m_.values[a.value].sharding;
      vmap[a.value] = n;
      a.value = n;
    }
    for (OpId& o : copy.body.ops) o = clone_op(o, vmap);
    std::vector<OpId> calls;
    each_op(m_, copy.body, [&](OpId o) {
      if (m_.ops[o].name == "func.call") calls.push_back(o);
    });
    for (OpId c : calls) {
      size_t inner = clone(*index(callee_attr(m_.ops[c])->text));
      set_callee(c, m_.funcs[inner].name);
    }
    // One counter for the module, as a symbol table uniques names.
    std::string name;
    do name = copy.name + "_" + std::to_string(counter_++);
    while (index(name));
    copy.name = name;
    copy.visibility = "private";
    m_.funcs.push_back(std::move(copy));
    view_.origin.push_back(origin);
    return m_.funcs.size() - 1;
  }

  Module& m_;
  CallView& view_;
  int counter_ = 0;
};

size_t func_index(const Module& m, const std::string& name) {
  for (size_t i = 0; i < m.funcs.size(); ++i)
    if (m.funcs[i].name == name) return i;
  return m.funcs.size();
}

ValueId resolve(const std::map<ValueId, ValueId>& subst, ValueId v) {
  for (auto it = subst.find(v); it != subst.end(); it = subst.find(v)) v = it->second;
  return v;
}

/// The sharding `v` has: its op's result sharding, or a block argument's.
std::optional<TensorSharding> sharding_of(const Module& m, ValueId v) {
  const Value& val = m.values[v];
  if (val.def == kNone) return val.sharding;
  const Op& op = m.ops[val.def];
  if (val.index < op.shardings.size()) return op.shardings[val.index];
  // A sharding constraint's (or reshard's) result has the sharding it names.
  if ((op.name == "sdy.sharding_constraint" || op.name == "sdy.reshard") && op.sharding)
    return op.sharding;
  return std::nullopt;
}

std::string key_part(const Module& m, const std::optional<TensorSharding>& s) {
  (void)m;
  return s ? sharding_string(*s) : std::string("-");
}

}  // namespace

Status flatten_call_graph(Module& m, CallView& view) {
  view.origin.clear();
  return Flattener(m, view).run();
}

Status inline_for_propagation(Module& m, CallView& view) {
  Func* entry = m.entry();
  if (!entry) return {};
  view.active = true;
  view.entry_body = entry->body;
  view.operands.clear();
  view.regions.clear();
  for (const Op& op : m.ops) {
    view.operands.push_back(op.operands);
    view.regions.push_back(op.regions);
  }
  std::map<ValueId, ValueId> subst;
  std::set<size_t> expanded;
  // Expands the calls of `b` in place; each callee is expanded once (the graph is flat).
  auto expand = [&](auto& self, Block& b) -> Status {
    std::vector<OpId> out;
    for (OpId o : b.ops) {
      for (Block& r : m.ops[o].regions) MESHPLAN_TRY(self(self, r));
      if (m.ops[o].name != "func.call") {
        out.push_back(o);
        continue;
      }
      const Op call = m.ops[o];
      size_t f = func_index(m, callee_attr(call)->text);
      if (f == m.funcs.size() || !expanded.insert(f).second)
        return fail(ErrorCode::internal, call.loc.str(), ": call graph not flat");
      Block body = m.funcs[f].body;
      for (size_t i = 0; i < call.operands.size(); ++i)
        subst[m.funcs[f].args[i].value] = call.operands[i];
      MESHPLAN_TRY(self(self, body));
      for (OpId co : body.ops) {
        if (m.ops[co].name == "func.return") {
          for (size_t i = 0; i < call.results.size() && i < m.ops[co].operands.size(); ++i)
            subst[call.results[i]] = m.ops[co].operands[i];
          continue;
        }
        out.push_back(co);
      }
    }
    b.ops = std::move(out);
    return {};
  };
  MESHPLAN_TRY(expand(expand, entry->body));
  auto rewrite = [&](auto& self, const Block& b) -> void {
    for (OpId o : b.ops) {
      for (ValueId& v : m.ops[o].operands) v = resolve(subst, v);
      for (const Block& r : m.ops[o].regions) self(self, r);
    }
  };
  rewrite(rewrite, entry->body);
  view.subst.assign(subst.begin(), subst.end());
  return {};
}

void restore_calls(Module& m, CallView& view, bool callee_results) {
  if (!view.active) return;
  std::map<ValueId, ValueId> subst(view.subst.begin(), view.subst.end());
  // The bodies as written; shardings are read through the inlined view's substitutions.
  struct Update {
    OpId call;
    size_t callee;
    std::vector<std::optional<TensorSharding>> args, results;
  };
  m.entry()->body = view.entry_body;
  for (size_t o = 0; o < view.operands.size(); ++o) {
    m.ops[o].operands = view.operands[o];
    m.ops[o].regions = view.regions[o];
  }
  std::vector<Update> updates;
  for (size_t f = 0; f < m.funcs.size(); ++f)
    each_op(m, m.funcs[f].body, [&](OpId o) {
      if (m.ops[o].name != "func.call") return;
      size_t g = func_index(m, callee_attr(m.ops[o])->text);
      if (g == m.funcs.size()) return;
      Update u{o, g, {}, {}};
      const Op& call = m.ops[o];
      for (ValueId v : call.operands) u.args.push_back(sharding_of(m, resolve(subst, v)));
      for (ValueId v : call.results) u.results.push_back(sharding_of(m, resolve(subst, v)));
      updates.push_back(std::move(u));
    });
  // An argument whose every use is an sdy.func_data_flow_edge: the edge holds its sharding.
  auto edge_owned = [&](const Func& fn, ValueId v) {
    bool used = false, other = false;
    each_op(m, fn.body, [&](OpId o) {
      for (ValueId x : m.ops[o].operands)
        if (x == v) (m.ops[o].name == "sdy.func_data_flow_edge" ? used : other) = true;
    });
    return used && !other;
  };
  for (const Update& u : updates) {
    Func& fn = m.funcs[u.callee];
    for (size_t i = 0; i < fn.args.size(); ++i) {
      Value& a = m.values[fn.args[i].value];
      if (!a.sharding && u.args[i] && !edge_owned(fn, fn.args[i].value)) a.sharding = u.args[i];
    }
    // The call's results: the stated callee result shardings, else the returned values'.
    std::vector<std::optional<TensorSharding>> results = u.results;
    for (size_t i = 0; i < fn.results.size(); ++i) {
      if (fn.results[i].sharding) results[i] = fn.results[i].sharding;
      if (callee_results && !fn.results[i].sharding) fn.results[i].sharding = u.results[i];
    }
    const TensorSharding* any = nullptr;
    for (const auto& r : results)
      if (r) any = &*r;
    if (!any) continue;
    Op& call = m.ops[u.call];
    call.shardings.clear();
    for (size_t i = 0; i < results.size(); ++i) {
      // A result nothing reached is fully open on the mesh the others use.
      TensorSharding open;
      open.mesh = any->mesh;
      open.dims.assign(fn.results[i].type.shape.size(), DimSharding{{}, true, -1});
      call.shardings.push_back(results[i] ? *results[i] : open);
    }
  }
  view.active = false;
}

void unflatten_call_graph(Module& m, const CallView& view) {
  if (view.origin.size() != m.funcs.size()) return;
  auto key = [&](size_t f) {
    std::string k = view.origin[f] + "|";
    for (const ArgInfo& a : m.funcs[f].args) k += key_part(m, m.values[a.value].sharding) + ";";
    k += "|";
    for (const ResultInfo& r : m.funcs[f].results) k += key_part(m, r.sharding) + ";";
    return k;
  };
  std::map<std::string, std::string> first;
  std::set<std::string> was_called;
  for (size_t f = 0; f < m.funcs.size(); ++f)
    each_op(m, m.funcs[f].body, [&](OpId o) {
      if (m.ops[o].name != "func.call") return;
      size_t g = func_index(m, callee_attr(m.ops[o])->text);
      if (g == m.funcs.size()) return;
      was_called.insert(m.funcs[g].name);
      auto [it, fresh] = first.emplace(key(g), m.funcs[g].name);
      if (fresh) return;
      for (auto& [k, a] : m.ops[o].props)
        if (k == "callee") a.text = it->second;
    });
  // Callees no remaining function calls leave (until none does).
  std::vector<std::string> origin = view.origin;
  while (true) {
    std::set<std::string> called;
    for (const Func& f : m.funcs)
      each_op(m, f.body, [&](OpId o) {
        if (const Attr* c = m.ops[o].name == "func.call" ? callee_attr(m.ops[o]) : nullptr)
          called.insert(c->text);
      });
    size_t before = m.funcs.size();
    std::erase_if(m.funcs, [&](const Func& f) {
      return was_called.contains(f.name) && !called.contains(f.name) && f.visibility == "private";
    });
    if (m.funcs.size() == before) break;
  }
}

}  // namespace meshplan::planner::shlo
