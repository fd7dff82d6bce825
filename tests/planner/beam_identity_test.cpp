// Beam's speed-ups (index back-pointers, hashed OpQuery memo keys) must not change a single plan
// byte: for beam widths 1, 2, 3, 4 and 8, both scoring modes, overrides and forced moves, on the
// example models, the policy test graphs (one-core chip, under L1 pressure) and a 20-layer
// transformer, the XXH3-128 of compile()'s bytes matches tests/planner/plans/beam_identity.txt,
// recorded before the speed-ups. A deliberate change of beam's plans regenerates the file with
// MESHPLAN_UPDATE_GOLDEN=1 (as plan_identity_test.cpp does).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "golden_file.hpp"
#include "graphs.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/schemas/hash.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

// Transformer-like layers (as the planning-time bench builds them): h = relu(x); q, k, v = h @ W;
// p = relu(q @ k^T); o = (p @ v) @ Wo; r = o + x; x' = relu(relu(r) @ W1) @ W2 + r.
planner::Graph transformer(int layers, int64_t seq, int64_t d, int64_t ffn) {
  GraphBuilder b("transformer" + std::to_string(layers));
  auto x = b.input("x", {seq, d});
  for (int l = 0; l < layers; ++l) {
    std::string s = "_" + std::to_string(l);
    auto h = b.relu("norm1" + s, x);
    auto q = b.matmul("q" + s, h, b.param("wq" + s, {d, d}));
    auto k = b.matmul("k" + s, h, b.param("wk" + s, {d, d}));
    auto v = b.matmul("v" + s, h, b.param("wv" + s, {d, d}));
    auto p = b.relu("softmax" + s, b.matmul("scores" + s, q, k, /*transpose_b=*/true));
    // One builder call per statement: the nodes are made in a fixed order on every compiler
    // (the order of a call's arguments is unspecified), as the recorded digests were.
    auto wo = b.param("wo" + s, {d, d});
    auto proj = b.matmul("proj" + s, b.matmul("attend" + s, p, v), wo);
    auto r = b.add("residual1" + s, proj, x);
    auto w1 = b.param("w1" + s, {d, ffn});
    auto f1 = b.matmul("ffn1" + s, b.relu("norm2" + s, r), w1);
    auto w2 = b.param("w2" + s, {ffn, d});
    auto f2 = b.matmul("ffn2" + s, b.relu("gelu" + s, f1), w2);
    x = b.add("residual2" + s, f2, r);
  }
  b.output(x);
  return b.finish();
}

struct Case {
  std::string label;
  planner::Graph graph;
  device::ChipDesc chip;
  planner::PlannerOptions options;
};

planner::PlannerOptions beam(uint32_t width, bool cost = true) {
  planner::PlannerOptions o;
  o.policy = "beam";
  o.beam_width = width;
  o.beam_cost_mode = cost;
  return o;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* m : {"mlp", "transformer_block", "small_cnn", "bert_base_layer",
                        "llama3_8b_decode", "llama3_8b_prefill", "resnet50_b1"}) {
    auto g = planner::load_graph_file(source_path(std::string("examples/models/") + m + ".json"));
    REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
    for (uint32_t k : {1u, 3u, 8u})
      out.push_back({str(m, " k", k), *g, device::wormhole_b0(), beam(k)});
    out.push_back({str(m, " k8 heuristic"), *g, device::wormhole_b0(), beam(8, false)});
  }
  planner::Graph t = transformer(20, 64, 256, 512);
  for (uint32_t k : {2u, 8u})
    out.push_back({str("transformer20 k", k), t, device::wormhole_b0(), beam(k)});
  std::vector<planner::Graph> small = {residual_graph(), qkv_graph(),           join_graph(),
                                       farthest_graph(), farthest_graph(false), operand1_graph()};
  for (const planner::Graph& g : small) {
    for (uint32_t k : {1u, 2u, 8u})
      out.push_back({str(g.name, " 1core k", k), g, one_core_chip(), beam(k)});
    out.push_back({str(g.name, " 1core k8 heuristic"), g, one_core_chip(), beam(8, false)});
    out.push_back({str(g.name, " k8"), g, device::wormhole_b0(), beam(8)});
  }
  planner::PlannerOptions o = beam(8);
  o.output_overrides = {"q_proj=dram", "k_proj=l1"};
  out.push_back({"qkv overrides", qkv_graph(), device::wormhole_b0(), o});
  o = beam(4);
  o.memreconfig = {"out:1=l1", "scores:0=dram"};
  out.push_back({"qkv memreconfig", qkv_graph(), device::wormhole_b0(), o});
  o = beam(8);
  o.max_legal_layouts = 4;
  out.push_back({"residual max_legal_layouts 4", residual_graph(), device::wormhole_b0(), o});
  return out;
}

std::string current_digests() {
  std::ostringstream out;
  for (const Case& c : cases()) {
    CAPTURE(c.label);
    auto plan = planner::compile(c.graph, c.chip, c.options);
    REQUIRE_MESSAGE(plan, (plan ? std::string() : plan.error().message));
    Hasher h;
    h.bytes(plan->bytes.data(), plan->bytes.size());
    out << c.label << " bytes " << plan->bytes.size() << " xxh3 " << h.digest().hex() << "\n";
  }
  return out.str();
}

}  // namespace

TEST_CASE("beam plans are byte-identical to those recorded before the beam speed-ups") {
  std::string path = source_path("tests/planner/plans/beam_identity.txt");
  std::string now = current_digests();
  test::check_golden_lines(path, now);
}
