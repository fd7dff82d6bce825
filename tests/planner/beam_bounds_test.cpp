// Beam's bounds on wide ops: a concat of n operands has (K + 2)^n operand-option combinations,
// which beam cuts to PlannerOptions::beam_max_combinations (default (K + 2)^2, what a binary op
// has), and an op needing more OpModel evaluations than beam_max_evaluations is planned greedily
// with a note. Checked by work counts (BeamStats), never by wall time, on 8-operand concats and
// a DenseNet-style block, and on the example models (where no bound is reached).
#include <doctest/doctest.h>

#include <numeric>

#include "builder.hpp"
#include "graphs.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/policies.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

planner::PlannerOptions beam(uint32_t width = 8) {
  planner::PlannerOptions o;
  o.policy = "beam";
  o.beam_width = width;
  return o;
}

/// n relus of x joined by one concat along `axis`, then a relu: the shape of an Inception or
/// attention-head concat.
planner::Graph concat_graph(int n, int64_t axis) {
  GraphBuilder b("concat" + std::to_string(n));
  auto x = b.input("x", {64, 128});
  std::vector<planner::ValueId> parts;
  for (int i = 0; i < n; ++i) parts.push_back(b.relu("r" + std::to_string(i), x));
  auto cat = b.op(device::OpKind::concat, "cat", parts, {planner::Attribute{"axis", axis}});
  b.output(b.relu("after", cat));
  return b.finish();
}

/// A DenseNet-style block: layer i reads the concat of the block input and every earlier
/// layer's output (growth 32 channels), through relu and a 1x1 projection (a matmul on the
/// [pixels, channels] view); the block ends with a transition concat of all 8 feature maps.
planner::Graph densenet_block(int layers = 7) {
  GraphBuilder b("densenet_block");
  auto x = b.input("x", {64, 64});
  std::vector<planner::ValueId> features = {b.relu("stem", x)};
  int64_t channels = 64;
  for (int i = 0; i < layers; ++i) {
    std::string s = std::to_string(i);
    auto in = features.size() == 1 ? features[0]
                                   : b.op(device::OpKind::concat, "cat" + s, features,
                                          {planner::Attribute{"axis", int64_t{1}}});
    auto h = b.relu("act" + s, in);
    features.push_back(b.matmul("proj" + s, h, b.param("w" + s, {channels, 32})));
    channels += 32;
  }
  b.output(b.op(device::OpKind::concat, "transition", features,
                {planner::Attribute{"axis", int64_t{1}}}));
  return b.finish();
}

/// Beam over `g` with the default bounds; fails the test on an error.
planner::BeamStats beam_stats(const planner::Graph& g, const planner::PlannerOptions& o,
                              planner::LayoutDecision* decision = nullptr) {
  auto ov = planner::parse_overrides(g, device::wormhole_b0(), o);
  REQUIRE(ov);
  planner::BeamStats st;
  auto d = planner::beam_search(g, device::wormhole_b0(), o, *ov, &st);
  REQUIRE_MESSAGE(d, (d ? std::string() : d.error().message));
  if (decision) *decision = std::move(*d);
  return st;
}

/// The layouts beam scores per combination for `v`'s producer: its candidate pool plus one
/// in-place layout per operand.
uint64_t layouts_per_combination(const planner::Graph& g, planner::ValueId v, size_t operands) {
  return planner::layout_candidates(g.values[v], device::wormhole_b0(), 64).size() + operands;
}

}  // namespace

TEST_CASE("beam: an 8-operand concat is searched as widely as a binary op, and runs correctly") {
  for (int64_t axis : {0, 1}) {
    planner::Graph g = concat_graph(8, axis);
    planner::LayoutDecision d;
    planner::BeamStats st = beam_stats(g, beam(), &d);
    // (8 kept + 2 reshards)^8 = 10^8 combinations unbounded; the default bound is 10^2.
    CHECK(st.ops_bounded == 1);
    CHECK(st.ops_degraded == 0);
    CHECK(st.max_op_combinations <= 100);
    CHECK(st.max_op_combinations >= 64);  // the cut keeps most of the bound
    // Every other op is unary (at most 10 combinations): 9 relus before, one after.
    CHECK(st.combinations <= 8 + 100 + 10);
    const planner::ValueId cat = g.ops[8].results[0];
    CHECK(st.max_op_evaluations <= 100 * layouts_per_combination(g, cat, 8));
    CHECK(d.notes.empty());
    E2E e = run_e2e(g, device::wormhole_b0(), beam());
    CHECK(e.ops >= g.ops.size());
  }
}

TEST_CASE("beam: concats of 3 to 8 operands take work bounded independently of their width") {
  uint64_t widest = 0;
  for (int n = 3; n <= 8; ++n) {
    planner::BeamStats st = beam_stats(concat_graph(n, 1), beam());
    CHECK(st.max_op_combinations <= 100);
    widest = std::max(widest, st.evaluations);
  }
  // 10 unary ops of at most 10 combinations and one concat of at most 100, each combination
  // scoring at most the concat result's pool plus 8 in-place layouts (pools are at most 64).
  CHECK(widest <= (100 + 10 * 10) * (64 + 8));
}

TEST_CASE("beam: beam_max_combinations bounds every op, and enters the plan key") {
  planner::Graph g = concat_graph(4, 1);
  planner::PlannerOptions o = beam();
  o.beam_max_combinations = 4;
  planner::BeamStats st = beam_stats(g, o);
  CHECK(st.max_op_combinations <= 4);
  CHECK(st.ops_bounded >= 1);
  auto gk = planner::graph_key(g);
  auto chip = device::wormhole_b0();
  CHECK(planner::plan_key(gk, chip, o) != planner::plan_key(gk, chip, beam()));
  planner::PlannerOptions cap = beam();
  cap.beam_max_evaluations = 1000;
  CHECK(planner::plan_key(gk, chip, cap) != planner::plan_key(gk, chip, beam()));
  // Explicitly the defaults: the key of a plan made without them.
  planner::PlannerOptions same = beam();
  same.beam_max_evaluations = planner::PlannerOptions{}.beam_max_evaluations;
  CHECK(planner::plan_key(gk, chip, same) == planner::plan_key(gk, chip, beam()));
  run_e2e(g, chip, o);
}

TEST_CASE("beam: an op past beam_max_evaluations is planned greedily, named in the notes") {
  planner::Graph g = concat_graph(8, 1);
  planner::PlannerOptions o = beam();
  // Unary ops need at most 10 x (pool + 1) evaluations; the concat's 100 combinations need more.
  const uint64_t relu_work = 10 * layouts_per_combination(g, g.ops[0].results[0], 1);
  o.beam_max_evaluations = static_cast<uint32_t>(relu_work + 10);
  planner::LayoutDecision d;
  planner::BeamStats st = beam_stats(g, o, &d);
  CHECK(st.ops_degraded == 1);
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0].find("op 'cat' (concat, 8 operands)") != std::string::npos);
  CHECK(d.notes[0].find("planned greedily") != std::string::npos);
  // Greedily: one combination (the operands' best entries), its result layouts scored once;
  // the relus of x have one combination each, the relu after the concat at most 10.
  const uint64_t cat = layouts_per_combination(g, g.ops[8].results[0], 8);
  const uint64_t after = layouts_per_combination(g, g.ops[9].results[0], 1);
  CHECK(st.evaluations <= 8 * (relu_work / 10) + cat + 10 * after);
  CHECK(st.combinations <= 8 + 1 + 10);
  // The note reaches compile()'s caller; the plan is valid and computes the reference.
  auto compiled = planner::compile(g, device::wormhole_b0(), o);
  REQUIRE(compiled);
  CHECK(compiled->notes == d.notes);
  run_e2e(g, device::wormhole_b0(), o);
}

TEST_CASE("beam: a DenseNet block (concats of 2 to 8 operands) plans within the bound") {
  planner::Graph g = densenet_block();
  for (uint32_t k : {2u, 8u}) {
    planner::BeamStats st = beam_stats(g, beam(k));
    const uint64_t bound = uint64_t{k + 2} * (k + 2);
    // Plus, when no combination is valid, the interleaved-reshard fallback: one move per operand
    // and buffer, then all operands moved (2 * 8 + 2 for the 8-operand concat), which tt-metal's
    // concat rules (operands all sharded alike or all interleaved) reach.
    CHECK(st.max_op_combinations <= bound + 2 * 8 + 2);
    CHECK(st.ops_degraded == 0);
    // Only the concats of 3 to 8 computed operands can exceed the bound (a binary op has at
    // most (K + 2)^2 combinations); the 8-operand transition does.
    CHECK(st.ops_bounded >= 1);
    CHECK(st.ops_bounded <= 6);
    CHECK(st.combinations <= g.ops.size() * bound);
    E2E e = run_e2e(g, device::wormhole_b0(), beam(k));
    CHECK(e.ops >= g.ops.size());
  }
}

TEST_CASE("beam: no bound is reached on the example models (their plans are unchanged)") {
  for (const char* m : {"mlp", "transformer_block", "bert_base_layer", "resnet50_b1"}) {
    auto g = planner::load_graph_file(source_path(std::string("examples/models/") + m + ".json"));
    REQUIRE(g);
    planner::BeamStats st = beam_stats(*g, beam());
    CHECK_MESSAGE(st.ops_bounded == 0, m);
    CHECK_MESSAGE(st.ops_degraded == 0, m);
  }
}
