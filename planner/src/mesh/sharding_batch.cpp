// Automatic batch-parallel analysis: which argument dims carry the factor that becomes the
// program's leading result dim, through every op's factor rule.
#include <map>
#include <numeric>
#include <optional>

#include "meshplan/planner/sharding.hpp"

namespace meshplan::planner::shlo {

namespace {

/// Union-find over (value, dim) slots; a class is blocked when some op reduces over it or
/// needs it replicated (a concatenate or slice along it, a contracting dim, ...).
class Slots {
 public:
  int slot(ValueId v, size_t d, int64_t size) {
    auto [it, added] = ids_.try_emplace({v, d}, static_cast<int>(parent_.size()));
    if (added) {
      parent_.push_back(it->second);
      blocked_.push_back(std::string());
      size_.push_back(size);
    }
    return it->second;
  }
  std::optional<int> find_slot(ValueId v, size_t d) {
    auto it = ids_.find({v, d});
    if (it == ids_.end()) return std::nullopt;
    return find(it->second);
  }
  int find(int a) {
    while (parent_[static_cast<size_t>(a)] != a)
      a = parent_[static_cast<size_t>(a)] =
          parent_[static_cast<size_t>(parent_[static_cast<size_t>(a)])];
    return a;
  }
  void unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    parent_[static_cast<size_t>(b)] = a;
    if (blocked_[static_cast<size_t>(a)].empty())
      blocked_[static_cast<size_t>(a)] = blocked_[static_cast<size_t>(b)];
    size_[static_cast<size_t>(a)] =
        std::gcd(size_[static_cast<size_t>(a)], size_[static_cast<size_t>(b)]);
  }
  void block(int a, std::string why) {
    std::string& b = blocked_[static_cast<size_t>(find(a))];
    if (b.empty()) b = std::move(why);
  }
  const std::string& blocked(int a) { return blocked_[static_cast<size_t>(find(a))]; }
  int64_t size(int a) { return size_[static_cast<size_t>(find(a))]; }

 private:
  std::map<std::pair<ValueId, size_t>, int> ids_;
  std::vector<int> parent_;
  std::vector<std::string> blocked_;
  std::vector<int64_t> size_;
};

}  // namespace

Result<BatchAnalysis> analyze_batch(const Module& m) {
  BatchAnalysis out;
  const Func* f = m.entry();
  if (!f) return out;
  Slots slots;
  std::optional<ValueId> result;
  for (OpId o : f->body.ops) {
    const Op& op = m.ops[o];
    if (op.name == "func.return") {
      if (!op.operands.empty()) result = op.operands[0];
      continue;
    }
    auto rule = sharding_rule(m, op);
    if (!rule) {
      out.why = "no batch parallelism: " + rule.error().message;
      return out;
    }
    // A literal (constant, iota) that meets the batch factor is sliced, not a reason to stop.
    const bool literal = op.operands.empty();
    std::vector<int> first(rule->factor_sizes.size(), -1);
    auto visit = [&](ValueId v, const std::vector<std::vector<int>>& dims) {
      for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d].empty()) continue;
        size_t fi = static_cast<size_t>(dims[d].front());
        int s = slots.slot(v, d, rule->factor_sizes[fi]);
        if (first[fi] < 0)
          first[fi] = s;
        else
          slots.unite(first[fi], s);
        if (rule->reduction[fi])
          slots.block(s, str(op.name, " at ", op.loc.str(), " reduces over it"));
        else if (rule->need_replication[fi] && !literal)
          slots.block(s, str(op.name, " at ", op.loc.str(), " needs it whole"));
      }
    };
    for (size_t k = 0; k < op.operands.size() && k < rule->operands.size(); ++k)
      visit(op.operands[k], rule->operands[k]);
    for (size_t k = 0; k < op.results.size() && k < rule->results.size(); ++k)
      visit(op.results[k], rule->results[k]);
  }
  if (!result || m.values[*result].type.shape.empty()) {
    out.why = "no batch parallelism: the first result is a scalar";
    return out;
  }
  auto cls = slots.find_slot(*result, 0);
  if (!cls) {
    // The result is an argument returned as it is (or a value no rule touched).
    for (size_t i = 0; i < f->args.size(); ++i)
      if (f->args[i].value == *result) {
        out.dims.push_back({i, 0});
        out.size = m.values[*result].type.shape[0];
      }
    out.why = out.dims.empty() ? "no batch parallelism: the first result's dim 0 comes from no "
                                 "argument"
                               : "the first result is argument 0 returned as it is";
    return out;
  }
  if (!slots.blocked(*cls).empty()) {
    out.why = "no batch parallelism: the factor of the first result's dim 0 is not a batch: " +
              slots.blocked(*cls);
    return out;
  }
  out.size = slots.size(*cls);
  for (size_t i = 0; i < f->args.size(); ++i) {
    const auto& shape = m.values[f->args[i].value].type.shape;
    for (size_t d = 0; d < shape.size(); ++d)
      if (auto c = slots.find_slot(f->args[i].value, d); c && *c == *cls) {
        out.dims.push_back({i, d});
        break;
      }
  }
  out.why = out.dims.empty()
                ? "no batch parallelism: no argument carries the first result's dim 0"
                : str("the factor of size ", out.size,
                      " of the first result's dim 0 flows from these arguments through "
                      "every op without a reduction over it");
  return out;
}

}  // namespace meshplan::planner::shlo
