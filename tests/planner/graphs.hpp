// Test graphs for the layout policies: residual blocks, a 3-way QKV fork, a join of two 800 KiB
// producers, a farthest-next-use eviction, a 2000 KiB output, and the examples.
#pragma once

#include "builder.hpp"
#include "meshplan/planner/layout.hpp"
#include "meshplan/planner/import_json.hpp"
#include "test_util.hpp"

namespace meshplan::test {

/// A {64, 256} tensor height sharded in L1 on `cores` cores of row 0 (64 / cores tiles of rows
/// each): the synthetic checkers' sharded configs.
inline planner::TensorLayout shard(uint16_t cores) {
  planner::TensorLayout t;
  t.buffer = device::BufferType::l1;
  t.memory = device::MemLayout::height_sharded;
  t.shard.grid = device::CoreRange{0, 0, static_cast<uint16_t>(cores - 1), 0};
  t.shard.shape[0] = 64 / cores * 32;
  t.shard.shape[1] = 256;
  return t;
}

/// The cores of a layout made by shard().
inline uint32_t cores(const planner::TensorLayout& t) {
  return t.shard.grid.x1 + 1u;
}

/// Two residual blocks: x -> matmul -> relu -> matmul -> add(., x) -> relu, twice.
inline planner::Graph residual_graph() {
  GraphBuilder b("residual");
  auto x = b.input("x", {64, 256});
  for (int i = 0; i < 2; ++i) {
    std::string s = std::to_string(i);
    auto h = b.matmul("fc_a" + s, x, b.param("wa" + s, {256, 256}));
    auto a = b.relu("act_a" + s, h);
    auto h2 = b.matmul("fc_b" + s, a, b.param("wb" + s, {256, 256}));
    auto r = b.add("residual" + s, h2, x);
    x = b.relu("act_b" + s, r);
  }
  b.output(x);
  return b.finish();
}

/// Attention-like block: h forks three ways into Q, K, V projections.
inline planner::Graph qkv_graph() {
  GraphBuilder b("qkv");
  auto x = b.input("x", {64, 256});
  auto h = b.relu("pre", x);
  auto q = b.matmul("q_proj", h, b.param("wq", {256, 256}));
  auto k = b.matmul("k_proj", h, b.param("wk", {256, 256}));
  auto v = b.matmul("v_proj", h, b.param("wv", {256, 256}));
  auto s = b.matmul("scores", q, k, /*transpose_b=*/true);
  auto o = b.matmul("attend", s, v);
  b.output(b.add("out", o, h));
  return b.finish();
}

/// Two producers of 800 KiB each (400 bf16 tiles, on one core) joined by a matmul.
inline planner::Graph join_graph() {
  GraphBuilder b("join800");
  auto a = b.relu("prod_a", b.input("xa", {32, 12800}));
  auto c = b.relu("prod_b", b.input("xb", {12800, 32}));
  b.output(b.matmul("join", a, c));
  return b.finish();
}

/// 500 KiB tensors: `early` is read (twice) by `second`, then again only at the end, so it is the
/// farthest-next-use victim when the third 500 KiB tensor appears (and, already read from L1, it
/// is cheaper to move to DRAM by a spill op than to have written it to DRAM). With `read_early`
/// false nothing reads it before the end.
inline planner::Graph farthest_graph(bool read_early = true) {
  GraphBuilder b(read_early ? "farthest" : "farthest_unread");
  auto early = b.relu("early", b.input("xa", {320, 800}));
  auto second =
      read_early ? b.add("second", early, early) : b.relu("second", b.input("xb", {320, 800}));
  auto third = b.add("third", second, second);
  auto fourth = b.relu("fourth", third);
  b.output(b.add("last", early, fourth));
  return b.finish();
}

/// A single op whose 2000 KiB result (1000 tiles) cannot live in one core's L1.
inline planner::Graph big_output_graph() {
  GraphBuilder b("big_output");
  b.output(b.relu("big", b.input("x", {800, 1280})));
  return b.finish();
}

/// A binary op whose operand 0 must come from DRAM (a user override) while operand 1 could stay
/// in L1: df-sharding spills operand 1 (operand-0-only chains), greedy keeps it in L1.
inline planner::Graph operand1_graph() {
  GraphBuilder b("operand1");
  auto x = b.input("x", {64, 256});
  auto lhs = b.relu("lhs", x);
  auto rhs = b.relu("rhs", x);
  auto rhs2 = b.relu("rhs2", rhs);
  b.output(b.add("sum", lhs, rhs2));
  return b.finish();
}

inline planner::Graph mlp_example() {
  auto g = planner::load_graph_file(source_path("examples/models/mlp.json"));
  REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
  return *g;
}

}  // namespace meshplan::test
