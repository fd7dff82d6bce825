// The `sdy-propagation` stage: Shardy's propagation strategies selectable by name, and the
// export that Shardy's propagation pipeline applies before printing (sdy_export_passes.md:
// sharding constraints become reshards, sharding groups go, shardings are closed, unreduced
// values are all-reduced where a use drops their unreduced axes).
#include "meshplan/planner/sharding_strategies.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "mesh/sharding_calls.hpp"
#include "mesh/sharding_groups.hpp"
#include "mesh/sharding_manual.hpp"
#include "mesh/sharding_unreduced.hpp"

namespace meshplan::planner::shlo {

namespace {

constexpr std::array<std::pair<PropagationStrategy, std::string_view>, 5> kStrategies = {{
    {PropagationStrategy::basic, "basic"},
    {PropagationStrategy::aggressive, "aggressive"},
    {PropagationStrategy::op_priority, "op-priority"},
    {PropagationStrategy::user_priority, "user-priority"},
    {PropagationStrategy::pipeline, "pipeline"},
}};

/// Closed dims, no priorities, no explicitly replicated axes (closed dims already say
/// replicated): what Shardy's close-shardings export prints.
void close(TensorSharding& s) {
  s.replicated.clear();
  for (DimSharding& d : s.dims) {
    d.open = false;
    d.priority = -1;
  }
}

/// Calls `fn` on every op of `b` and of the regions nested in it (loop bodies, branches),
/// after dropping the ops `drop` selects from each block.
template <class Drop, class Fn>
void walk(Module& m, Block& b, const Drop& drop, const Fn& fn) {
  std::erase_if(b.ops, [&](OpId o) { return drop(m.ops[o]); });
  for (OpId o : b.ops) {
    fn(m.ops[o]);
    for (size_t r = 0; r < m.ops[o].regions.size(); ++r) walk(m, m.ops[o].regions[r], drop, fn);
  }
}

/// Shardy's import applies a sharding constraint to its input when that input has no
/// sharding and the constraint is its only use (so propagation starts from it).
void apply_sharding_constraints(Module& m, Func& f) {
  std::vector<int> uses(m.values.size(), 0);
  for (OpId o : f.body.ops)
    for (ValueId v : m.ops[o].operands) ++uses[v];
  for (OpId o : f.body.ops) {
    const Op& op = m.ops[o];
    if (op.name != "sdy.sharding_constraint" || !op.sharding || op.operands.empty()) continue;
    ValueId in = op.operands[0];
    if (uses[in] != 1) continue;
    Value& v = m.values[in];
    if (v.def == kNone) {
      if (!v.sharding) v.sharding = op.sharding;
      continue;
    }
    Op& def = m.ops[v.def];
    if (def.sharding || def.results.size() != 1 || !def.shardings.empty()) continue;
    if (def.name.starts_with("sdy.")) continue;
    def.shardings = {*op.sharding};
  }
}

/// Shardy's import turns constants into sdy.constant and gives every use its own copy
/// (propagation.md, constant splitting), so that each use can take its own sharding. Copies
/// follow the original, one per use in program order.
void split_constants(Module& m, Func& f) {
  std::vector<OpId> body;
  for (OpId o : f.body.ops) body.push_back(o);
  std::vector<OpId> out;
  for (size_t i = 0; i < body.size(); ++i) {
    OpId o = body[i];
    out.push_back(o);
    if (m.ops[o].name != "stablehlo.constant" || m.ops[o].results.size() != 1) continue;
    m.ops[o].name = "sdy.constant";
    ValueId v = m.ops[o].results[0];
    bool first = true;
    for (size_t j = i + 1; j < body.size(); ++j)
      for (size_t k = 0; k < m.ops[body[j]].operands.size(); ++k) {
        if (m.ops[body[j]].operands[k] != v) continue;
        if (first) {
          first = false;
          continue;
        }
        OpId copy = m.add_op("sdy.constant", {}, {m.values[v].type}, m.ops[o].loc);
        m.ops[copy].props = m.ops[o].props;
        m.ops[copy].attrs = m.ops[o].attrs;
        out.push_back(copy);
        m.ops[body[j]].operands[k] = m.ops[copy].results[0];
      }
  }
  f.body.ops = std::move(out);
}

}  // namespace

std::optional<PropagationStrategy> strategy_from_name(std::string_view name) {
  for (const auto& [s, n] : kStrategies)
    if (n == name) return s;
  return std::nullopt;
}

std::string_view strategy_name(PropagationStrategy strategy) {
  for (const auto& [s, n] : kStrategies)
    if (s == strategy) return n;
  return "?";
}

Status run_sdy_propagation(Module& m, PropagationStrategy strategy) {
  Func* f = m.entry();
  if (!f) return fail(ErrorCode::invalid_argument, m.file, ": no function to propagate");
  const bool pipeline = strategy == PropagationStrategy::pipeline;
  const bool calls =
      std::any_of(m.ops.begin(), m.ops.end(), [](const Op& op) { return op.name == "func.call"; });
  MESHPLAN_TRY(verify_manual_computations(m));
  MESHPLAN_TRY(import_sharding_groups(m));
  CallView view;
  if (calls) MESHPLAN_TRY(flatten_call_graph(m, view));
  if (pipeline)
    for (Func& fn : m.funcs) {
      split_constants(m, fn);
      apply_sharding_constraints(m, fn);
    }
  sync_sharding_groups(m);
  if (calls) MESHPLAN_TRY(inline_for_propagation(m, view));
  auto propagated = propagate(m, strategy);
  restore_calls(m, view, pipeline);
  if (!propagated) return std::unexpected(propagated.error());
  // Applies `fix` to every sharding of every function (nested regions too), after dropping
  // the ops `drop` selects.
  auto each_sharding = [&](const auto& drop, const auto& fix) {
    for (Func& fn : m.funcs) {
      walk(m, fn.body, drop, [&](Op& op) {
        for (TensorSharding& s : op.shardings) fix(s);
        if (op.sharding) fix(*op.sharding);
      });
      for (const ArgInfo& a : fn.args)
        if (m.values[a.value].sharding) fix(*m.values[a.value].sharding);
      for (ResultInfo& r : fn.results)
        if (r.sharding) fix(*r.sharding);
    }
  };
  if (strategy == PropagationStrategy::user_priority) {
    // User-priority propagation consumes the priorities: they leave, dims stay open.
    each_sharding([](const Op&) { return false; },
                  [](TensorSharding& s) {
                    for (DimSharding& d : s.dims) d.priority = -1;
                  });
  }
  if (pipeline) {
    // Export: constraints become reshards, sharding groups leave, every sharding is closed,
    // in nested regions (loop bodies, branches) too.
    // A constraint nothing uses is dead code, which the pipeline's rewrites erase.
    std::vector<int> uses(m.values.size(), 0);
    auto count = [&](auto& self, const Block& b) -> void {
      for (OpId o : b.ops) {
        for (ValueId v : m.ops[o].operands) ++uses[v];
        for (const Block& r : m.ops[o].regions) self(self, r);
      }
    };
    for (const Func& fn : m.funcs) count(count, fn.body);
    each_sharding(
        [&](const Op& op) {
          return op.name == "sdy.sharding_group" ||
                 (op.name == "sdy.sharding_constraint" && op.results.size() == 1 &&
                  uses[op.results[0]] == 0);
        },
        close);
    for (Op& op : m.ops) {
      if (op.name == "sdy.sharding_constraint") op.name = "sdy.reshard";
      for (TensorSharding& s : op.in_shardings) close(s);
      for (TensorSharding& s : op.out_shardings) close(s);
    }
    insert_unreduced_all_reduces(m);
  }
  if (calls) unflatten_call_graph(m, view);
  return {};
}

}  // namespace meshplan::planner::shlo
