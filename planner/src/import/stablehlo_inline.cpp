// Inlining of func.call (JAX prints nested jit functions and custom_jvp helpers as private
// functions called from @main) and unrolling of fori_loop/scan-shaped while loops with a
// constant trip count: the mesh passes and the lowering see one straight-line function. Also
// the GSPMD annotations JAX prints, dropped with a note.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "import/stablehlo_clone.hpp"
#include "import/stablehlo_parser.hpp"

namespace meshplan::planner::shlo {

namespace {

/// Inlines the calls of one function at a time, callees before callers (depth-first with an
/// explicit state per function to report recursion).
class Inliner {
 public:
  Inliner(Module& m, ImportOptions options) : m_(m), options_(options) {
    for (size_t i = 0; i < m.funcs.size(); ++i) index_[m.funcs[i].name] = i;
    state_.assign(m.funcs.size(), State::todo);
  }

  Status run() {
    std::vector<bool> called(m_.funcs.size(), false);
    for (size_t i = 0; i < m_.funcs.size(); ++i) MESHPLAN_TRY(inline_func(i, called));
    if (unrolled_)
      for (Func& f : m_.funcs) drop_dead(f.body);
    std::vector<Func> kept;
    for (size_t i = 0; i < m_.funcs.size(); ++i)
      if (!called[i] || m_.funcs[i].visibility != "private") kept.push_back(std::move(m_.funcs[i]));
    m_.funcs = std::move(kept);
    return {};
  }

 private:
  enum class State : uint8_t { todo, active, done };

  Status inline_func(size_t f, std::vector<bool>& called) {
    if (state_[f] == State::done) return {};
    // Call chains are at most as long as the function list, but keep native recursion bounded.
    if (++depth_ > kMaxCallDepth)
      return fail(ErrorCode::invalid_argument, m_.funcs[f].loc.str(), ": calls nested deeper than ",
                  kMaxCallDepth, " functions");
    state_[f] = State::active;
    Block body = m_.funcs[f].body;
    MESHPLAN_TRY(inline_block(body, called));
    m_.funcs[f].body = std::move(body);
    state_[f] = State::done;
    --depth_;
    return {};
  }

  void substitute(std::vector<ValueId>& vs) const {
    for (ValueId& v : vs)
      if (auto it = subst_.find(v); it != subst_.end()) v = it->second;
  }

  Status inline_block(Block& b, std::vector<bool>& called) {
    std::vector<OpId> out;
    for (OpId o : b.ops) {
      substitute(m_.ops[o].operands);
      for (size_t r = 0; r < m_.ops[o].regions.size(); ++r) {
        Block region = m_.ops[o].regions[r];
        MESHPLAN_TRY(inline_block(region, called));
        m_.ops[o].regions[r] = std::move(region);
      }
      if (m_.ops[o].name == "stablehlo.while" && options_.unroll_loops) {
        MESHPLAN_TRY(unroll(o, out));
        continue;
      }
      if (m_.ops[o].name == "stablehlo.optimization_barrier" && options_.drop_barriers &&
          m_.ops[o].operands.size() == m_.ops[o].results.size()) {
        // Only orders XLA's scheduling: its results are its operands.
        for (size_t i = 0; i < m_.ops[o].results.size(); ++i)
          subst_[m_.ops[o].results[i]] = m_.ops[o].operands[i];
        continue;
      }
      if (m_.ops[o].name == "stablehlo.if" || m_.ops[o].name == "stablehlo.case") {
        fold_branch(o, out);
        continue;
      }
      if (m_.ops[o].name != "func.call" || !options_.inline_calls) {
        out.push_back(o);
        continue;
      }
      MESHPLAN_TRY(expand_call(o, out, called));
    }
    b.ops = std::move(out);
    return {};
  }

  Status expand_call(OpId o, std::vector<OpId>& out, std::vector<bool>& called) {
    const Op call = m_.ops[o];
    auto bad = [&](auto&&... what) {
      return fail(ErrorCode::invalid_argument, call.loc.str(), ": func.call: ", what...);
    };
    const Attr* callee = call.prop("callee");
    if (!callee || callee->kind != Attr::Kind::symbol) return bad("no callee symbol");
    auto it = index_.find(callee->text);
    if (it == index_.end()) return bad("no function @", callee->text, " in the module");
    size_t f = it->second;
    if (state_[f] == State::active)
      return bad("recursive call to @", callee->text, " (recursion cannot be inlined)");
    if (!call.shardings.empty())
      return bad(
          "sdy.sharding on a call's results is not supported (put it on the callee's "
          "ops or use sdy.sharding_constraint)");
    MESHPLAN_TRY(inline_func(f, called));
    called[f] = true;
    const Func& fn = m_.funcs[f];
    if (fn.args.size() != call.operands.size())
      return bad("@", fn.name, " takes ", fn.args.size(), " arguments but the call passes ",
                 call.operands.size());
    for (size_t i = 0; i < fn.args.size(); ++i)
      if (!(m_.values[fn.args[i].value].type == m_.values[call.operands[i]].type))
        return bad("argument ", i, " of @", fn.name, " has type ",
                   type_string(m_.values[fn.args[i].value].type), " but the call passes ",
                   type_string(m_.values[call.operands[i]].type));
    if (fn.results.size() != call.results.size())
      return bad("@", fn.name, " returns ", fn.results.size(), " values but the call has ",
                 call.results.size(), " results");
    for (size_t i = 0; i < fn.results.size(); ++i)
      if (!(fn.results[i].type == m_.values[call.results[i]].type))
        return bad("result ", i, " of @", fn.name, " has type ", type_string(fn.results[i].type),
                   " but the call says ", type_string(m_.values[call.results[i]].type));
    std::map<ValueId, ValueId> vmap;
    for (size_t i = 0; i < fn.args.size(); ++i) vmap[fn.args[i].value] = call.operands[i];
    const Block body = fn.body;  // copied: cloning grows the arenas
    for (OpId co : body.ops) {
      if (m_.ops[co].name == "func.return") {
        for (size_t i = 0; i < call.results.size(); ++i) {
          ValueId v = m_.ops[co].operands[i];
          auto mapped = vmap.find(v);
          subst_[call.results[i]] = mapped == vmap.end() ? v : mapped->second;
        }
        continue;
      }
      out.push_back(MESHPLAN_TRY(clone(co, vmap, call.loc)));
    }
    return {};
  }

  /// The scalar value of `v` when a stablehlo.constant defines it.
  std::optional<double> constant_of(ValueId v) const {
    OpId d = m_.values[v].def;
    if (d == kNone || m_.ops[d].name != "stablehlo.constant") return std::nullopt;
    const Attr* a = m_.ops[d].prop("value");
    if (!a || a->kind != Attr::Kind::dense || a->values.size() != 1) return std::nullopt;
    return a->values[0];
  }

  /// Trip count of a JAX fori_loop/scan-shaped while: a counter (constant start) compared
  /// LT/LE (or GT/GE mirrored) with a constant in `cond`, and incremented by a positive
  /// constant in the body. nullopt when the loop has another shape.
  std::optional<int64_t> trip_count(const Op& w) const {
    if (w.regions.size() != 2) return std::nullopt;
    const Block& cond = w.regions[0];
    const Block& body = w.regions[1];
    if (cond.ops.empty() || body.ops.empty()) return std::nullopt;
    const Op& cret = m_.ops[cond.ops.back()];
    if (cret.operands.size() != 1) return std::nullopt;
    OpId c = m_.values[cret.operands[0]].def;
    if (c == kNone || m_.ops[c].name != "stablehlo.compare") return std::nullopt;
    const Op& cmp = m_.ops[c];
    const Attr* dir_attr = cmp.prop("comparison_direction");
    std::string dir = dir_attr ? dir_attr->text : "";
    if (auto sp = dir.rfind(' '); sp != std::string::npos) dir = dir.substr(sp + 1, 2);
    bool counter_lhs = true;
    auto slot_of = [&](ValueId v) -> int {
      for (size_t i = 0; i < cond.args.size(); ++i)
        if (cond.args[i] == v) return static_cast<int>(i);
      return -1;
    };
    const Op& bret = m_.ops[body.ops.back()];
    if (bret.operands.size() != body.args.size() || w.operands.size() != body.args.size() ||
        cond.args.size() != body.args.size())
      return std::nullopt;
    // The bound: a constant, or (jax.lax.fori_loop with an upper bound that is a traced value
    // JAX could not fold) a loop slot the body returns unchanged whose initial value is a
    // constant.
    auto bound_of = [&](ValueId v) -> std::optional<double> {
      if (auto c = constant_of(v)) return c;
      int j = slot_of(v);
      if (j < 0 || bret.operands[static_cast<size_t>(j)] != body.args[static_cast<size_t>(j)])
        return std::nullopt;
      return constant_of(w.operands[static_cast<size_t>(j)]);
    };
    // The counter: the slot compared with the bound (either side).
    int k = slot_of(cmp.operands[0]);
    std::optional<double> bound = bound_of(cmp.operands[1]);
    if (k < 0 || !bound) {
      counter_lhs = false;
      k = slot_of(cmp.operands[1]);
      bound = bound_of(cmp.operands[0]);
    }
    if (k < 0 || !bound) return std::nullopt;
    // Mirror `bound > i` to `i < bound`.
    if (!counter_lhs) dir = dir == "GT" ? "LT" : dir == "GE" ? "LE" : "";
    if (dir != "LT" && dir != "LE") return std::nullopt;
    std::optional<double> start = constant_of(w.operands[static_cast<size_t>(k)]);
    if (!start) return std::nullopt;
    OpId inc = m_.values[bret.operands[static_cast<size_t>(k)]].def;
    if (inc == kNone || m_.ops[inc].name != "stablehlo.add") return std::nullopt;
    const Op& add = m_.ops[inc];
    ValueId counter = body.args[static_cast<size_t>(k)];
    std::optional<double> step = add.operands[0] == counter   ? constant_of(add.operands[1])
                                 : add.operands[1] == counter ? constant_of(add.operands[0])
                                                              : std::nullopt;
    if (!step || *step <= 0) return std::nullopt;
    double limit = dir == "LE" ? *bound + 1 : *bound;
    double n = std::ceil((limit - *start) / *step);
    return n <= 0 ? 0 : static_cast<int64_t>(std::min(n, 1e9));
  }

  /// Unrolls a while whose trip count is known; leaves any other while in place (the lowering
  /// refuses it, naming it).
  Status unroll(OpId o, std::vector<OpId>& out) {
    const Op w = m_.ops[o];
    std::optional<int64_t> n = trip_count(w);
    if (!n) {
      out.push_back(o);
      return {};
    }
    if (*n > kMaxUnroll)
      return fail(ErrorCode::unimplemented, w.loc.str(), ": unimplemented: stablehlo.while of ", *n,
                  " iterations (loops with a constant trip count up to ", kMaxUnroll,
                  " are unrolled)");
    std::vector<ValueId> carried = w.operands;
    const Block body = w.regions[1];
    for (int64_t it = 0; it < *n; ++it) {
      std::map<ValueId, ValueId> vmap;
      for (size_t i = 0; i < body.args.size(); ++i) vmap[body.args[i]] = carried[i];
      for (OpId bo : body.ops) {
        if (bo == body.ops.back()) {
          for (size_t i = 0; i < carried.size(); ++i) {
            ValueId v = m_.ops[bo].operands[i];
            auto f = vmap.find(v);
            carried[i] = f == vmap.end() ? v : f->second;
          }
          continue;
        }
        out.push_back(MESHPLAN_TRY(clone(bo, vmap, w.loc)));
      }
    }
    for (size_t i = 0; i < w.results.size(); ++i) subst_[w.results[i]] = carried[i];
    unrolled_ = true;
    return {};
  }

  /// An if/case whose predicate (index) is a constant becomes the ops of the branch it takes
  /// (case: an index out of range takes the last branch); others stay.
  void fold_branch(OpId o, std::vector<OpId>& out) {
    const Op op = m_.ops[o];
    std::optional<double> p =
        op.operands.size() == 1 ? constant_of(op.operands[0]) : std::optional<double>();
    if (!p || op.regions.empty()) {
      out.push_back(o);
      return;
    }
    size_t n = op.regions.size();
    size_t k = op.name == "stablehlo.if"                  ? (*p != 0 ? 0 : 1)
               : (*p < 0 || *p >= static_cast<double>(n)) ? n - 1
                                                          : static_cast<size_t>(*p);
    if (k >= n) {
      out.push_back(o);
      return;
    }
    const Block& b = op.regions[k];
    if (b.ops.empty() || m_.ops[b.ops.back()].operands.size() != op.results.size()) {
      out.push_back(o);
      return;
    }
    for (OpId bo : b.ops) {
      if (bo == b.ops.back()) {
        for (size_t i = 0; i < op.results.size(); ++i)
          subst_[op.results[i]] = m_.ops[bo].operands[i];
        continue;
      }
      out.push_back(bo);
    }
    unrolled_ = true;
  }

  /// Marks every value `b`'s ops (and their regions) read.
  void mark_reads(const Block& b, std::set<ValueId>& live) const {
    for (OpId o : b.ops) {
      live.insert(m_.ops[o].operands.begin(), m_.ops[o].operands.end());
      for (const Block& r : m_.ops[o].regions) mark_reads(r, live);
    }
  }

  /// Drops side-effect-free StableHLO ops whose results nothing reads (the loop counters an
  /// unrolled loop leaves behind).
  void drop_dead(Block& b) const {
    std::set<ValueId> live;
    std::vector<OpId> kept;
    for (auto it = b.ops.rbegin(); it != b.ops.rend(); ++it) {
      const Op& op = m_.ops[*it];
      bool pure = op.name.starts_with("stablehlo.") && op.name != "stablehlo.custom_call" &&
                  op.name != "stablehlo.return" && op.regions.empty() && !op.results.empty();
      bool used = std::any_of(op.results.begin(), op.results.end(),
                              [&](ValueId v) { return live.count(v) > 0; });
      if (pure && !used) continue;
      kept.push_back(*it);
      live.insert(op.operands.begin(), op.operands.end());
      for (const Block& r : op.regions) mark_reads(r, live);
    }
    b.ops.assign(kept.rbegin(), kept.rend());
  }

  /// A copy of op `o` (and its regions) reading mapped operands; its results join `vmap`.
  Result<OpId> clone(OpId o, std::map<ValueId, ValueId>& vmap, const Location& at) {
    return clone_op(m_, o, vmap, CloneOptions{.max_ops = kMaxInlinedOps, .at = &at});
  }

  static constexpr int kMaxCallDepth = 1000;
  static constexpr int64_t kMaxUnroll = 256;
  Module& m_;
  ImportOptions options_;
  std::map<std::string, size_t> index_;
  std::vector<State> state_;
  std::map<ValueId, ValueId> subst_;
  int depth_ = 0;
  bool unrolled_ = false;
};

std::string target_of(const Op& op) {
  const Attr* t = op.prop("call_target_name");
  return op.name == "stablehlo.custom_call" && t ? t->text : "";
}

bool replicated(const Attr& a) {
  return a.kind == Attr::Kind::string &&
         (a.text == "{replicated}" || a.text == "{maximal device=0}");
}

/// Removes the ops in `drop` from `b` and its regions, reading their results through `subst`.
void rewrite_block(Module& m, Block& b, const std::map<ValueId, ValueId>& subst,
                   const std::vector<bool>& drop) {
  std::vector<OpId> kept;
  for (OpId o : b.ops) {
    for (ValueId& v : m.ops[o].operands)
      while (subst.count(v)) v = subst.at(v);
    for (Block& r : m.ops[o].regions) rewrite_block(m, r, subst, drop);
    if (!drop[o]) kept.push_back(o);
  }
  b.ops = std::move(kept);
}

}  // namespace

Status drop_gspmd_annotations(Module& m) {
  const bool shardy = !m.meshes.empty();
  auto check = [&](const std::vector<NamedAttr>& attrs, bool has_sdy, const Location& loc,
                   std::string_view what) -> Status {
    for (const auto& [k, v] : attrs) {
      if (k != "mhlo.sharding" || replicated(v)) continue;
      if (shardy && !has_sdy)
        return fail(ErrorCode::invalid_argument, loc.str(), ": mhlo.sharding ", attr_string(v),
                    " on ", what,
                    " in a module with Shardy meshes: GSPMD shardings are not read; give it as "
                    "sdy.sharding");
      m.notes.push_back(str(loc.str(), ": note: mhlo.sharding ", attr_string(v), " on ", what,
                            " ignored (GSPMD sharding; meshplan plans the global program)"));
    }
    return {};
  };
  for (const Func& f : m.funcs) {
    for (size_t i = 0; i < f.args.size(); ++i)
      MESHPLAN_TRY(check(f.args[i].attrs, m.values[f.args[i].value].sharding.has_value(), f.loc,
                         str("argument ", i, " of @", f.name)));
    for (size_t i = 0; i < f.results.size(); ++i)
      MESHPLAN_TRY(check(f.results[i].attrs, f.results[i].sharding.has_value(), f.loc,
                         str("result ", i, " of @", f.name)));
  }
  std::map<ValueId, ValueId> subst;
  std::vector<bool> drop(m.ops.size(), false);
  for (size_t o = 0; o < m.ops.size(); ++o) {
    const Op& op = m.ops[o];
    std::string t = target_of(op);
    if (t == "SPMDFullToShardShape" || t == "SPMDShardToFullShape")
      return fail(ErrorCode::unimplemented, op.loc.str(), ": unimplemented: custom_call @", t,
                  " (GSPMD shard_map); export with Shardy so shard_map becomes "
                  "sdy.manual_computation");
    if (t != "Sharding") continue;
    if (op.operands.size() != 1 || op.results.size() != 1)
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": custom_call @Sharding takes one operand and has one result");
    const Attr* sh = op.attr("mhlo.sharding");
    if (shardy && !(sh && replicated(*sh)))
      return fail(
          ErrorCode::unimplemented, op.loc.str(),
          ": unimplemented: custom_call @Sharding (a GSPMD sharding constraint) in a module "
          "with Shardy meshes; write sdy.sharding_constraint");
    if (!(m.values[op.operands[0]].type == m.values[op.results[0]].type))
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": custom_call @Sharding changes the type of its operand");
    if (sh && !replicated(*sh))
      m.notes.push_back(str(op.loc.str(), ": note: custom_call @Sharding ", attr_string(*sh),
                            " ignored (GSPMD sharding; meshplan plans the global program)"));
    subst[op.results[0]] = op.operands[0];
    drop[o] = true;
  }
  if (subst.empty()) return {};
  for (Func& f : m.funcs) rewrite_block(m, f.body, subst, drop);
  return {};
}

Status inline_calls(Module& m, ImportOptions options) {
  bool any = std::any_of(m.ops.begin(), m.ops.end(), [](const Op& op) {
    return op.name == "func.call" || op.name == "stablehlo.while" || op.name == "stablehlo.if" ||
           op.name == "stablehlo.case" || op.name == "stablehlo.optimization_barrier";
  });
  if (!any) return {};
  return Inliner(m, options).run();
}

}  // namespace meshplan::planner::shlo
