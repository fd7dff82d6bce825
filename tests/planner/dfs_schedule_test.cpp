// df-sharding on the legacy pipeline's DFS schedule (seed 001 §3.2.2): chains follow operand 0
// through the schedule that takes the previous op's reader next, not the file order.
#include <doctest/doctest.h>

#include "graphs.hpp"
#include "meshplan/planner/df_sharding.hpp"

using namespace meshplan;
using namespace meshplan::planner;
using namespace meshplan::test;

namespace {

TensorLayout shard8() {
  TensorLayout t;
  t.buffer = device::BufferType::l1;
  t.memory = device::MemLayout::height_sharded;
  t.shard.grid = device::CoreRange{0, 0, 7, 0};
  t.shard.shape[0] = 256;
  t.shard.shape[1] = 256;
  return t;
}

/// Every relu shards on 8 cores and takes any input.
class ReluChecker final : public ShardChecker {
 public:
  explicit ReluChecker(const Graph& g) : g_(g) {}
  std::vector<TensorLayout> legal_configs(OpId o) const override {
    if (g_.ops[o].kind != device::OpKind::relu) return {};
    return {shard8()};
  }
  bool valid(OpId, uint32_t, const TensorLayout&, const TensorLayout&) const override {
    return true;
  }
  bool valid_all(OpId, const std::vector<TensorLayout>&, const TensorLayout&,
                 uint64_t* l1) const override {
    if (l1) *l1 = 64 << 10;
    return true;
  }
  std::vector<TensorLayout> reshard_targets(ValueId) const override { return {}; }
  bool move_valid(ValueId, const TensorLayout&, const TensorLayout&) const override { return true; }

 private:
  const Graph& g_;
};

/// Two branches written interleaved: a1, b1, a2, b2, then their sum.
Graph interleaved() {
  GraphBuilder b("interleaved");
  auto x = b.input("x", {64, 256});
  auto a1 = b.relu("a1", x);
  auto b1 = b.relu("b1", x);
  auto a2 = b.relu("a2", a1);
  auto b2 = b.relu("b2", b1);
  b.output(b.add("sum", a2, b2));
  return b.finish();
}

std::vector<std::string> names(const Graph& g, const std::vector<OpId>& order) {
  std::vector<std::string> out;
  for (OpId o : order) out.push_back(g.ops[o].name);
  return out;
}

/// The chains' ops, "a1 a2" per chain.
std::vector<std::string> chains(const Graph& g, const DfShardingResult& r) {
  std::vector<std::string> out;
  for (const L1Chain& c : r.chains) {
    std::string s;
    for (OpId o : c.ops) s += (s.empty() ? "" : " ") + g.ops[o].name;
    out.push_back(s);
  }
  return out;
}

}  // namespace

TEST_CASE("DFS schedule: the previous op's operand-0 reader next, else the first ready op") {
  Graph g = interleaved();
  // a1's reader a2 is ready: next; sum is not (b2 missing): the first ready op, b1; then b2.
  CHECK(names(g, dfs_schedule(g)) == std::vector<std::string>{"a1", "a2", "b1", "b2", "sum"});
  Graph d = dfs_ordered(g);
  REQUIRE(d.ops.size() == g.ops.size());
  for (OpId o = 0; o < d.ops.size(); ++o)
    for (ValueId r : d.ops[o].results) CHECK(d.values[r].producer == o);
  CHECK(d.ops[1].name == "a2");
  REQUIRE(validate(d));
  // A straight line keeps its order.
  Graph line = residual_graph();
  std::vector<OpId> order = dfs_schedule(line);
  for (OpId o = 0; o < order.size(); ++o) CHECK(order[o] == o);
}

TEST_CASE("df-sharding chains on the DFS schedule join what the file order splits") {
  Graph g = interleaved();
  ReluChecker file_checker(g);
  auto file = run_df_sharding(g, device::wormhole_b0(), PlannerOptions{}, file_checker);
  REQUIRE(file);
  // In file order no relu is followed by its reader: four one-op chains.
  CHECK(chains(g, *file) == std::vector<std::string>{"a1", "b1", "a2", "b2"});
  Graph d = dfs_ordered(g);
  ReluChecker dfs_checker(d);
  auto dfs = run_df_sharding(d, device::wormhole_b0(), PlannerOptions{}, dfs_checker);
  REQUIRE(dfs);
  CHECK(
      dfs->print(d).starts_with("chain [a1 a2] completed spill dram\n"
                                "chain [b1 b2] completed spill dram\n"));
}
