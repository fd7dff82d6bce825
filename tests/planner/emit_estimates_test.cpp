// Emission times each launch (kind, config, shapes and layouts) once and reuses the estimate for
// every later op with the same launch key. Checked against the device itself: every op's
// `estimated_ns` in the plan equals the time the emulated chip takes to run that op from the
// plan's bytes (its own placements and config), on graphs whose layers repeat launches and on
// example models, under every single-chip policy.
#include <doctest/doctest.h>

#include "builder.hpp"
#include "meshplan/planner/import_json.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

// Layers that repeat the same launches (as the planning-time bench builds them): h = relu(x);
// q, k, v = h @ W; p = relu(q @ k^T); o = (p @ v) @ Wo; r = o + x; x' = relu(relu(r) @ W1) @ W2 + r.
planner::Graph repeated_layers(int layers) {
  constexpr int64_t seq = 64, d = 128, ffn = 256;
  GraphBuilder b("layers" + std::to_string(layers));
  auto x = b.input("x", {seq, d});
  for (int l = 0; l < layers; ++l) {
    std::string s = "_" + std::to_string(l);
    auto h = b.relu("norm1" + s, x);
    auto wq = b.param("wq" + s, {d, d});
    auto q = b.matmul("q" + s, h, wq);
    auto wk = b.param("wk" + s, {d, d});
    auto k = b.matmul("k" + s, h, wk);
    auto wv = b.param("wv" + s, {d, d});
    auto v = b.matmul("v" + s, h, wv);
    auto scores = b.matmul("scores" + s, q, k, /*transpose_b=*/true);
    auto p = b.relu("softmax" + s, scores);
    auto o = b.matmul("attend" + s, p, v);
    auto wo = b.param("wo" + s, {d, d});
    auto proj = b.matmul("proj" + s, o, wo);
    auto r = b.add("residual1" + s, proj, x);
    auto h2 = b.relu("norm2" + s, r);
    auto w1 = b.param("w1" + s, {d, ffn});
    auto f1 = b.matmul("ffn1" + s, h2, w1);
    auto a = b.relu("gelu" + s, f1);
    auto w2 = b.param("w2" + s, {ffn, d});
    auto f2 = b.matmul("ffn2" + s, a, w2);
    x = b.add("residual2" + s, f2, r);
  }
  b.output(x);
  return b.finish();
}

// Runs the plan on an emulated chip and checks each op's device time against its estimate;
// returns how many ops were checked.
size_t check_estimates(const planner::Graph& g, const std::string& policy) {
  CAPTURE(g.name);
  CAPTURE(policy);
  auto compiled = planner::compile(g, device::wormhole_b0(),
                                   planner::PlannerOptions::with_policy(policy));
  REQUIRE_MESSAGE(compiled, (compiled ? std::string() : compiled.error().message));
  auto plan = runtime::verify_plan(compiled->bytes, g.name);
  REQUIRE(plan);
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto exe = runtime::Executable::bind(*plan, **dev);
  REQUIRE(exe);
  std::vector<runtime::Tensor> inputs = runtime::random_inputs(*plan, 5);
  auto views = runtime::views_of(inputs);
  auto run = (*exe)->run(views);
  REQUIRE_MESSAGE(run, (run ? std::string() : run.error().message));
  const auto* ops = plan->plan().ops();
  REQUIRE(run->ops.size() == ops->size());
  size_t mismatches = 0;
  for (uint32_t i = 0; i < ops->size(); ++i) {
    const auto* op = ops->Get(i);
    if (op->estimated_ns() != run->ops[i].device_ns) {
      ++mismatches;
      MESSAGE(op->name()->str(), ": estimated ", op->estimated_ns(), " ns, ran ",
              run->ops[i].device_ns, " ns");
    }
  }
  CHECK(mismatches == 0);
  return ops->size();
}

}  // namespace

TEST_CASE("each op's estimate in the plan is the device's time for it (repeated launches)") {
  planner::Graph g = repeated_layers(6);
  for (const char* policy : {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"})
    CHECK(check_estimates(g, policy) >= 6 * 14);
}

TEST_CASE("pools of the same shapes with other windows get their own estimates") {
  // 3x3 padded by 1 and 5x5 padded by 2, stride 1: the same [1, 32, 32, 32] result, a window of
  // 9 and of 25 elements per output element.
  GraphBuilder b("pools");
  auto x = b.input("x", {1, 32, 32, 32});
  auto window = [](int64_t k, int64_t pad) {
    return std::vector<planner::Attribute>{
        {"kernel", std::vector<int64_t>{k, k}},
        {"stride", std::vector<int64_t>{1, 1}},
        {"padding", std::vector<int64_t>{pad, pad, pad, pad}}};
  };
  auto p3 = b.op(device::OpKind::max_pool2d, "pool3", {x}, window(3, 1));
  auto p5 = b.op(device::OpKind::max_pool2d, "pool5", {p3}, window(5, 2));
  auto p3b = b.op(device::OpKind::max_pool2d, "pool3b", {p5}, window(3, 1));
  b.output(p3b);
  planner::Graph g = b.finish();
  for (const char* policy : {"dram", "greedy"}) {
    CHECK(check_estimates(g, policy) >= 3);
    auto compiled = planner::compile(g, device::wormhole_b0(),
                                     planner::PlannerOptions::with_policy(policy));
    REQUIRE(compiled);
    auto plan = runtime::verify_plan(compiled->bytes, g.name);
    REQUIRE(plan);
    uint64_t ns3 = 0, ns5 = 0;
    for (const auto* op : *plan->plan().ops()) {
      if (op->name()->string_view() == "pool3") ns3 = op->estimated_ns();
      if (op->name()->string_view() == "pool5") ns5 = op->estimated_ns();
    }
    CHECK(ns3 > 0);
    // 25 elements per output element against 9, on the same (DRAM) layouts.
    if (std::string_view(policy) == "dram") CHECK(ns5 > ns3);
  }
}

TEST_CASE("each op's estimate in the plan is the device's time for it (example models)") {
  for (const char* m : {"transformer_block", "bert_base_layer", "small_cnn"}) {
    auto g = planner::load_graph_file(source_path(std::string("examples/models/") + m + ".json"));
    REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
    for (const char* policy : {"greedy", "beam"}) CHECK(check_estimates(*g, policy) > 0);
  }
}
