// ShardSolver: bitsets, path sets, worklist propagation, reshard edges, core-usage maximization.
#include "meshplan/planner/shard_solver.hpp"

#include <algorithm>
#include <sstream>

namespace meshplan::planner {

namespace {
bool is_subset(const ShardSolver::Bitset& a, const ShardSolver::Bitset& b) {
  return (a & ~b).none();
}
}  // namespace

bool ShardSolver::PathSet::update(std::vector<Bitset>& bitsets) {
  Bitset valid_producer, valid_consumer;
  const Bitset& p = bitsets[producer];
  const Bitset& c = bitsets[consumer];
  std::vector<Path> kept;
  kept.reserve(paths.size());
  for (const Path& path : paths)
    if (p[path.producer_config] && c[path.consumer_config]) {
      valid_producer.set(path.producer_config);
      valid_consumer.set(path.consumer_config);
      kept.push_back(path);
    }
  paths = std::move(kept);
  bool unchanged = is_subset(p, valid_producer) && is_subset(c, valid_consumer);
  if (!unchanged) {
    bitsets[producer] &= valid_producer;
    bitsets[consumer] &= valid_consumer;
  }
  return !unchanged;
}

ShardSolver::ShardSolver(std::vector<uint32_t> configs, std::vector<Edge> edges,
                         Callbacks callbacks)
    : configs_(std::move(configs)), edges_(std::move(edges)), cb_(std::move(callbacks)) {}

std::vector<uint32_t> ShardSolver::operand_path_sets(uint32_t node) const {
  std::vector<uint32_t> out;
  for (size_t e = 0; e < edges_.size(); ++e)
    if (edges_[e].consumer == node && path_set_of_edge_[e] >= 0)
      out.push_back(static_cast<uint32_t>(path_set_of_edge_[e]));
  return out;
}

std::vector<uint32_t> ShardSolver::user_path_sets(uint32_t node) const {
  std::vector<uint32_t> out;
  for (size_t e = 0; e < edges_.size(); ++e)
    if (edges_[e].producer == node && path_set_of_edge_[e] >= 0)
      out.push_back(static_cast<uint32_t>(path_set_of_edge_[e]));
  return out;
}

bool ShardSolver::fail_at(Failure::At at, const Edge& edge, std::string why) {
  failed_ = true;
  if (!failure_) failure_ = Failure{at, edge, std::move(why)};
  return false;
}

bool ShardSolver::update_solver(uint32_t root, bool expand_root) {
  std::vector<uint32_t> needs_update = {root};
  if (expand_root) {
    for (uint32_t ps : operand_path_sets(root)) path_sets_[ps].update(bitsets_);
    for (uint32_t ps : user_path_sets(root)) path_sets_[ps].update(bitsets_);
    for (uint32_t ps : operand_path_sets(root)) needs_update.push_back(path_sets_[ps].producer);
    for (uint32_t ps : user_path_sets(root)) needs_update.push_back(path_sets_[ps].consumer);
  }
  // Worklist: re-filter the path sets around the op on top; enqueue neighbours whose bitsets
  // changed; pop the op once its edges are stable.
  size_t guard = 0;
  auto emptied = [&](uint32_t ps) {
    const PathSet& set = path_sets_[ps];
    for (const Edge& e : edges_)
      if (e.producer == set.producer && e.consumer == set.consumer)
        return fail_at(Failure::At::edge, e, "no path left after propagation");
    return fail_at(Failure::At::edge, Edge{set.producer, set.consumer, 0},
                   "no path left after propagation");
  };
  while (!needs_update.empty()) {
    if (++guard > 1000000)
      return fail_at(Failure::At::node, Edge{root, root, 0}, "propagation did not settle");
    uint32_t op = needs_update.back();
    bool changed = false;
    for (uint32_t ps : operand_path_sets(op)) {
      if (path_sets_[ps].update(bitsets_)) {
        needs_update.push_back(path_sets_[ps].producer);
        changed = true;
      }
      if (path_sets_[ps].paths.empty()) return emptied(ps);
    }
    for (uint32_t ps : user_path_sets(op)) {
      if (path_sets_[ps].update(bitsets_)) {
        needs_update.push_back(path_sets_[ps].consumer);
        changed = true;
      }
      if (path_sets_[ps].paths.empty()) return emptied(ps);
    }
    if (!changed) {
      // Remove this op (it may no longer be on top if neighbours were pushed; erase the last copy).
      auto it = std::find(needs_update.rbegin(), needs_update.rend(), op);
      needs_update.erase(std::next(it).base());
    }
  }
  for (uint32_t i = 0; i < bitsets_.size(); ++i)
    if (bitsets_[i].none()) return fail_at(Failure::At::node, Edge{i, i, 0}, "no config left");
  return true;
}

bool ShardSolver::resolve() {
  size_t n = configs_.size();
  bitsets_.assign(n, Bitset{});
  for (size_t i = 0; i < n; ++i)
    for (uint32_t c = 0; c < std::min<uint32_t>(configs_[i], kMaxConfigs); ++c) bitsets_[i].set(c);
  path_sets_.clear();
  path_set_of_edge_.assign(edges_.size(), -1);
  selected_.assign(n, std::nullopt);
  reshard_.assign(edges_.size(), ReshardEntry{});
  entry_reshard_ = ReshardEntry{};
  entry_direct_.reset();
  failed_ = false;
  failure_.reset();
  if (n == 0) return true;
  auto forced = [&](const Edge& e) { return cb_.forced_reshard && cb_.forced_reshard(e); };
  // First op (preprocessFirstOp): the configs that accept the chain's external input as it is;
  // the reshards at entry when none does, when the entry is a forced reshard edge, or when the
  // input layout is searched (search_first_input: every (input layout, config) pair, each config
  // keeping every input layout that enables it).
  const Edge entry{0, 0, 0};
  Bitset first;
  if (!forced(entry))
    for (uint32_t c = 0; c < configs_[0]; ++c)
      if (bitsets_[0][c] && cb_.entry_ok(0, c)) first.set(c);
  entry_direct_ = first;
  if (first.none() || (cb_.search_first_input && !forced(entry))) {
    entry_reshard_.alternatives.assign(configs_[0], {});
    for (uint32_t c = 0; c < configs_[0]; ++c) {
      if (!bitsets_[0][c] || entry_direct_[c]) continue;
      entry_reshard_.alternatives[c] = cb_.reshards_for(entry, c);
      if (!entry_reshard_.alternatives[c].empty()) first.set(c);
    }
  }
  if (first.none())
    return fail_at(Failure::At::entry, entry,
                   forced(entry)
                       ? "the forced reshard (memreconfig) at the chain's input enables no config"
                       : "no config accepts the chain's input and no reshard of it enables one");
  bitsets_[0] &= first;
  for (uint32_t consumer = 0; consumer < n; ++consumer) {
    for (size_t e = 0; e < edges_.size(); ++e) {
      const Edge& edge = edges_[e];
      if (edge.consumer != consumer) continue;
      Bitset edge_producer, edge_consumer;
      std::vector<Path> paths;
      for (uint32_t p = 0; p < configs_[edge.producer] && !forced(edge); ++p) {
        if (!bitsets_[edge.producer][p]) continue;
        for (uint32_t c = 0; c < configs_[consumer]; ++c)
          if (bitsets_[consumer][c] && cb_.edge_ok(edge, p, c)) {
            edge_producer.set(p);
            edge_consumer.set(c);
            paths.push_back(Path{p, c});
          }
      }
      if (paths.empty()) {
        // Reshard edge (no direct path, or forced): any producer config, the consumer configs
        // some reshard enables.
        reshard_[e].alternatives.assign(configs_[consumer], {});
        for (uint32_t c = 0; c < configs_[consumer]; ++c)
          if (bitsets_[consumer][c]) {
            reshard_[e].alternatives[c] = cb_.reshards_for(edge, c);
            if (!reshard_[e].alternatives[c].empty()) edge_consumer.set(c);
          }
        for (uint32_t p = 0; p < configs_[edge.producer]; ++p)
          if (bitsets_[edge.producer][p]) {
            edge_producer.set(p);
            for (uint32_t c = 0; c < configs_[consumer]; ++c)
              if (edge_consumer[c]) paths.push_back(Path{p, c});
          }
        if (paths.empty())
          return fail_at(Failure::At::edge, edge,
                         forced(edge)
                             ? "the forced reshard (memreconfig) enables no consumer config"
                             : "no valid (producer, consumer) config pair and no reshard");
      }
      bool producer_narrows = !is_subset(bitsets_[edge.producer], edge_producer);
      bitsets_[edge.producer] &= edge_producer;
      bitsets_[consumer] &= edge_consumer;
      path_set_of_edge_[e] = static_cast<int>(path_sets_.size());
      path_sets_.push_back(PathSet{edge.producer, consumer, std::move(paths)});
      if (producer_narrows && !update_solver(edge.producer, false)) return false;
    }
  }
  for (uint32_t i = 0; i < n; ++i)
    if (!update_solver(i, false)) return false;
  return true;
}

bool ShardSolver::set(uint32_t node, uint32_t c) {
  selected_[node] = c;
  // The reshard maps of the edges into this op select the locked config's alternatives.
  for (size_t e = 0; e < edges_.size(); ++e)
    if (edges_[e].consumer == node && !reshard_[e].alternatives.empty()) reshard_[e].selected = c;
  if (node == 0 && !entry_reshard_.alternatives.empty()) entry_reshard_.selected = c;
  bitsets_[node].reset();
  bitsets_[node].set(c);
  return update_solver(node, true);
}

bool ShardSolver::pick_max_core_usage() {
  size_t n = configs_.size();
  // accumulated[i][c] = cores(i, c) + sum over i's user edges of the best accumulated user config
  // reachable through a valid path (nodes are in schedule order, so walk them backward).
  std::vector<std::vector<uint64_t>> acc(n);
  for (size_t i = n; i-- > 0;) {
    acc[i].assign(configs_[i], 0);
    for (uint32_t c = 0; c < configs_[i]; ++c) {
      if (!bitsets_[i][c]) continue;
      uint64_t total = cb_.cores(static_cast<uint32_t>(i), c);
      for (uint32_t ps : user_path_sets(static_cast<uint32_t>(i))) {
        uint64_t best = 0;
        for (const Path& p : path_sets_[ps].paths)
          if (p.producer_config == c)
            best = std::max(best, acc[path_sets_[ps].consumer][p.consumer_config]);
        total += best;
      }
      acc[i][c] = total;
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (selected_[i]) continue;
    std::optional<uint32_t> best;
    for (uint32_t c = 0; c < configs_[i]; ++c)
      // On a tie the first op prefers a config that takes the chain's input as it is (no reshard).
      if (bitsets_[i][c] &&
          (!best || acc[i][c] > acc[i][*best] ||
           (i == 0 && acc[i][c] == acc[i][*best] && entry_direct_[c] && !entry_direct_[*best])))
        best = c;
    if (!best) return fail_at(Failure::At::node, Edge{i, i, 0}, "no config left to select");
    if (!set(i, *best)) return false;
  }
  return true;
}

ShardSolver::Solution ShardSolver::finish() const {
  Solution s;
  for (const auto& c : selected_) s.config.push_back(c.value_or(0));
  // Each reshard takes the first alternative of its selected config (tt-mlir's
  // reshardOutputConfigMap.at(selected).front()); a first-op config that accepts the input as it
  // is takes no reshard.
  auto first_of = [](const ReshardEntry& r, uint32_t c) -> const TensorLayout* {
    if (c >= r.alternatives.size() || r.alternatives[c].empty()) return nullptr;
    return &r.alternatives[c].front();
  };
  if (!s.config.empty() && !entry_direct_[s.config[0]])
    if (const TensorLayout* t = first_of(entry_reshard_, s.config[0]))
      s.reshards.emplace_back(Edge{0, 0, 0}, *t);
  for (size_t e = 0; e < edges_.size(); ++e)
    if (const TensorLayout* t = first_of(reshard_[e], s.config[edges_[e].consumer]))
      s.reshards.emplace_back(edges_[e], *t);
  return s;
}

std::string ShardSolver::print() const {
  std::ostringstream out;
  for (size_t i = 0; i < bitsets_.size(); ++i) {
    out << "node " << i << ":";
    for (uint32_t c = 0; c < configs_[i]; ++c)
      if (bitsets_[i][c]) out << " " << c;
    if (selected_[i]) out << " (selected " << *selected_[i] << ")";
    out << "\n";
  }
  for (size_t e = 0; e < edges_.size(); ++e) {
    out << "edge " << edges_[e].producer << "->" << edges_[e].consumer << "." << edges_[e].operand
        << ":";
    if (path_set_of_edge_.size() > e && path_set_of_edge_[e] >= 0)
      for (const Path& p : path_sets_[path_set_of_edge_[e]].paths)
        out << " (" << p.producer_config << "," << p.consumer_config << ")";
    if (!reshard_[e].alternatives.empty()) out << " [reshard]";
    out << "\n";
  }
  return out.str();
}

}  // namespace meshplan::planner
