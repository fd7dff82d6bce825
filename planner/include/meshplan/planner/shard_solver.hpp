// ShardSolver (seed 000): picks one sharded config per op of an L1 chain so that every edge
// between chain ops is compatible. Bitsets of still-valid configs per op, a PathSet of valid
// (producer config, consumer config) pairs per edge, worklist propagation until the constraint
// graph is stable, reshard edges where an edge has no valid path, and core-usage maximization
// through set()/finish().
#pragma once

#include <bitset>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "meshplan/planner/layout.hpp"

namespace meshplan::planner {

/// Solver over nodes 0..n-1 (the chain's ops in schedule order) and producer->consumer edges.
/// The callbacks are the only judges of compatibility (OpModel in the policy; synthetic in unit
/// tests). Not thread-safe.
class ShardSolver {
 public:
  static constexpr size_t kMaxConfigs = 512;
  using Bitset = std::bitset<kMaxConfigs>;

  struct Edge {
    uint32_t producer, consumer, operand;
    friend bool operator==(const Edge&, const Edge&) = default;
  };
  struct Path {
    uint32_t producer_config, consumer_config;
  };
  /// Valid (producer config, consumer config) pairs of one edge.
  struct PathSet {
    uint32_t producer, consumer;  ///< Node ids (each node has one bitset).
    std::vector<Path> paths;
    /// Keeps the paths whose both ends are still valid, then narrows both bitsets to the ends of
    /// the kept paths. Returns whether a bitset changed.
    bool update(std::vector<Bitset>& bitsets);
  };

  struct Callbacks {
    /// Is consumer config `c` of edge.consumer valid when edge.producer runs config `p`?
    std::function<bool(const Edge&, uint32_t p, uint32_t c)> edge_ok;
    /// Can the first op run config `c` with its operands as they are outside the chain?
    std::function<bool(uint32_t node, uint32_t c)> entry_ok;
    /// Every reshard layout of the edge's (or, with producer == consumer, the entry's) tensor that
    /// lets consumer config `c` run, in candidate order; empty when none does. The solver keeps
    /// them all (tt-mlir's reshardOutputConfigMap) and the plan takes the first of the selected
    /// config's.
    std::function<std::vector<TensorLayout>(const Edge&, uint32_t c)> reshards_for;
    /// Cores config `c` of `node` uses.
    std::function<uint32_t(uint32_t node, uint32_t c)> cores;
    /// Whether the edge (or, with producer == consumer == 0, the entry) must be a reshard edge
    /// whatever the configs (tt-mlir's insert-memreconfig): its consumer configs are those
    /// reshards_for() enables. Unset: no forced reshard edges.
    std::function<bool(const Edge&)> forced_reshard;
    /// First-op input search (seed 000's solveForOptimalFirstOpInput): the chain's input layout
    /// is free to choose (it goes through a reshard the plan inserts), so every (input layout,
    /// config) pair is searched: the first op keeps the configs that accept the input as it is
    /// (entry_ok) and those some reshard of it enables (reshards_for on the entry). Off: the
    /// entry reshard is searched only when no config accepts the input as it is.
    bool search_first_input = false;
  };

  /// The reshards of one reshard edge (tt-mlir's MemReconfigEntry): per consumer config, every
  /// valid reshard layout; the selected index is the consumer config set() locked.
  struct ReshardEntry {
    std::vector<std::vector<TensorLayout>> alternatives;  ///< By consumer config.
    std::optional<uint32_t> selected;
  };

  /// `configs[i]` = number of legal configs of node i (at most kMaxConfigs).
  ShardSolver(std::vector<uint32_t> configs, std::vector<Edge> edges, Callbacks callbacks);

  /// Builds the path sets edge by edge and propagates. False if an edge (or the entry) has no
  /// valid path and no reshard makes one: the whole chain fails.
  bool resolve();
  /// Locks node to config `c` and propagates (seed 000 §7). False if that empties an edge.
  bool set(uint32_t node, uint32_t c);
  /// Core-usage maximization (§3.3.8): accumulated cores walking the edges backward, then set()
  /// on each node in order to its best still-valid config. False on a contradiction.
  bool pick_max_core_usage();

  const Bitset& bitset(uint32_t node) const { return bitsets_[node]; }
  const std::vector<PathSet>& path_sets() const { return path_sets_; }
  /// The reshard map of edge `e` (index into the constructor's edges); empty alternatives when the
  /// edge is no reshard edge.
  const ReshardEntry& reshard_entry(size_t e) const { return reshard_[e]; }
  /// The chain input's reshard map: alternatives of the first op's configs (for a config in
  /// entry_direct(), the input as it is needs no reshard).
  const ReshardEntry& entry_reshard() const { return entry_reshard_; }
  /// First-op configs that accept the chain's input as it is.
  const Bitset& entry_direct() const { return entry_direct_; }

  struct Solution {
    std::vector<uint32_t> config;  ///< Selected config per node.
    /// Reshards: (edge, layout) for edges that needed one (entry: producer == consumer == 0).
    std::vector<std::pair<Edge, TensorLayout>> reshards;
  };
  /// The selection after pick_max_core_usage() (or set() on every node).
  Solution finish() const;
  /// Deterministic dump: bitsets per node and paths per edge.
  std::string print() const;

  /// Why resolve(), set() or pick_max_core_usage() returned false: the edge that had no valid
  /// path, the entry (edge {0, 0, 0}) or the node left without a config (edge {n, n, 0}).
  struct Failure {
    enum class At { entry, edge, node } at;
    Edge edge;
    std::string why;
  };
  const std::optional<Failure>& failure() const { return failure_; }

 private:
  bool update_solver(uint32_t root, bool expand_root);
  std::vector<uint32_t> operand_path_sets(uint32_t node) const;
  std::vector<uint32_t> user_path_sets(uint32_t node) const;

  std::vector<uint32_t> configs_;
  std::vector<Edge> edges_;
  Callbacks cb_;
  std::vector<Bitset> bitsets_;
  std::vector<PathSet> path_sets_;
  std::vector<int> path_set_of_edge_;  // by edge index, -1 when not built
  std::vector<std::optional<uint32_t>> selected_;
  // Reshard edges: per edge index, consumer config -> every valid layout, and the selection.
  std::vector<ReshardEntry> reshard_;
  ReshardEntry entry_reshard_;
  Bitset entry_direct_;
  bool failed_ = false;
  std::optional<Failure> failure_;
  /// Records the first failure and returns false.
  bool fail_at(Failure::At at, const Edge& edge, std::string why);
};

}  // namespace meshplan::planner
