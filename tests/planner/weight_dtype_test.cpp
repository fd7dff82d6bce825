// Weight storage precision (PlannerOptions::weight_dtype): which parameters count as weights,
// the overrides, the key (unchanged unless set), the planned dtypes and times, and a plan with
// block-float weights run on the emulator, its error against f32 within a bound derived from
// the formats.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/matmul_program.hpp"
#include "meshplan/planner/explain.hpp"
#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/prepare_weights.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan.hpp"
#include "meshplan/schemas/schemas.hpp"

using namespace meshplan;
using namespace meshplan::planner;
using device::DType;

namespace {

/// fc1 = linear(x, w, b); fc2 = matmul(fc1, w2); mix = fc2 + w2 (w2 has a non-weight use);
/// fc3 = matmul(mix, w3).
Graph weights_graph() {
  GraphBuilder b("weights");
  auto x = b.input("x", {32, 64});
  auto w = b.parameter("w", {64, 32});
  auto bias = b.parameter("b", {32});
  auto w2 = b.parameter("w2", {32, 32});
  auto w3 = b.parameter("w3", {32, 32});
  auto h = b.op("linear", {x, w, bias}, {}, "fc1");
  auto h2 = b.op("matmul", {h, w2}, {}, "fc2");
  auto m = b.op("add", {h2, w2}, {}, "mix");
  b.output(b.op("matmul", {m, w3}, {}, "fc3"));
  auto g = b.build();
  REQUIRE(g);
  return *g;
}

std::string listing(const Graph& g, const std::vector<WeightStorage>& s) {
  std::string out;
  for (const WeightStorage& w : s)
    out += g.values[w.value].name + ":" + std::string(device::dtype_name(w.dtype)) + " ";
  return out;
}

const fb::TensorPlan* tensor_named(const fb::Plan& p, const std::string& name) {
  for (const fb::TensorPlan* t : *p.tensors())
    if (t->name()->str() == name) return t;
  return nullptr;
}

}  // namespace

TEST_CASE("weights are parameters used only as a matmul or linear weight") {
  Graph g = weights_graph();
  auto none = weight_storage(g, DType::bf16, {});
  REQUIRE(none);
  CHECK(none->empty());
  auto all8 = weight_storage(g, DType::bf8b, {});
  REQUIRE(all8);
  CHECK(listing(g, *all8) == "w:bf8b w3:bf8b ");  // not the bias, not w2 (also added)
  auto by_op = weight_storage(g, DType::bf8b, {"fc3=bfp4_b"});
  REQUIRE(by_op);
  CHECK(listing(g, *by_op) == "w:bf8b w3:bf4b ");
  auto glob = weight_storage(g, DType::bf16, {"w*=bfp4_b", "fc1=bf16"});
  REQUIRE(glob);
  CHECK(listing(g, *glob) == "w3:bf4b ");  // the later override keeps w as given
  auto spelled = weight_storage(g, DType::bf16, {"*3=bf8b"});
  REQUIRE(spelled);
  CHECK(listing(g, *spelled) == "w3:bf8b ");
}

TEST_CASE("a weight dtype override that matches nothing or is malformed is refused by name") {
  Graph g = weights_graph();
  auto nothing = weight_storage(g, DType::bf8b, {"fc9=bfp4_b"});
  REQUIRE_FALSE(nothing);
  CHECK(nothing.error().message.find("'fc9=bfp4_b'") != std::string::npos);
  auto not_weight = weight_storage(g, DType::bf8b, {"mix=bfp4_b"});
  REQUIRE_FALSE(not_weight);
  auto bad_dtype = weight_storage(g, DType::bf8b, {"fc1=fp8"});
  REQUIRE_FALSE(bad_dtype);
  CHECK(bad_dtype.error().message.find("'fp8'") != std::string::npos);
  auto no_eq = weight_storage(g, DType::bf8b, {"fc1"});
  REQUIRE_FALSE(no_eq);
  CHECK(no_eq.error().message.find("PATTERN=dtype") != std::string::npos);
  CHECK_FALSE(parse_weight_dtype("bfp2_b"));
  CHECK(parse_weight_dtype("bfp8_b") == DType::bf8b);
  CHECK(parse_weight_dtype("bf4b") == DType::bf4b);
}

TEST_CASE("the weight dtype enters the plan key only when set") {
  Graph g = weights_graph();
  Hash128 gk = graph_key(g);
  device::ChipDesc chip = device::wormhole_b0();
  PlannerOptions base;
  Hash128 k = plan_key(gk, chip, base);
  PlannerOptions explicit_bf16 = base;
  explicit_bf16.weight_dtype = DType::bf16;
  CHECK(plan_key(gk, chip, explicit_bf16) == k);
  PlannerOptions bf8 = base;
  bf8.weight_dtype = DType::bf8b;
  CHECK(plan_key(gk, chip, bf8) != k);
  PlannerOptions bf4 = base;
  bf4.weight_dtype = DType::bf4b;
  CHECK(plan_key(gk, chip, bf4) != plan_key(gk, chip, bf8));
  PlannerOptions over = bf8;
  over.weight_dtype_overrides = {"fc3=bfp4_b"};
  CHECK(plan_key(gk, chip, over) != plan_key(gk, chip, bf8));
  // Default plans are the bytes they were: the option's default changes nothing.
  auto a = compile(g, chip, base);
  auto b = compile(g, chip, explicit_bf16);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->bytes == b->bytes);
}

TEST_CASE("block-float weights are planned in their dtype and cost their bytes") {
  // Decode-shaped: one row of tokens against a 2048x2048 weight, which dominates the time.
  GraphBuilder b("decode");
  auto x = b.input("x", {32, 2048});
  auto w = b.parameter("w", {2048, 2048});
  b.output(b.op("matmul", {x, w}, {}, "proj"));
  auto g = b.build();
  REQUIRE(g);
  device::ChipDesc chip = device::wormhole_b0();
  auto time_of = [&](DType dt, const char* want_dtype) {
    PlannerOptions o;
    o.policy = "greedy";
    o.weight_dtype = dt;
    auto plan = compile(*g, chip, o);
    REQUIRE(plan);
    const fb::Plan* p = fb::GetSizePrefixedPlan(plan->bytes.data());
    const fb::TensorPlan* wt = tensor_named(*p, "w");
    REQUIRE(wt);
    CHECK(device::dtype_name(static_cast<DType>(wt->dtype())) == want_dtype);
    CHECK(device::dtype_name(static_cast<DType>(tensor_named(*p, "x")->dtype())) == "bf16");
    return p->header()->metrics()->estimated_ns();
  };
  uint64_t t16 = time_of(DType::bf16, "bf16"), t8 = time_of(DType::bf8b, "bf8b"),
           t4 = time_of(DType::bf4b, "bf4b");
  CHECK(t8 < t16);
  CHECK(t4 < t8);
}

TEST_CASE("the policies cost block-float weights in their storage dtype when choosing programs") {
  // A prefill-shaped K projection: 128 tokens against a 4096x1024 weight (4x32 output tiles).
  // The 1-D in0-multicast program sends every core all of in0, 128 x 4096 x 2 bytes = 1 MiB, at
  // the 22 B/cycle multicast rate: 47,663 ns before any weight arrives. With bf16 weights the
  // 2-D program's weight columns cost as much as that; with bfp8_b weights (1088 bytes a tile)
  // they cost about half, and a policy that sees the stored bytes takes the 2-D program.
  GraphBuilder b("kproj");
  auto x = b.input("x", {128, 4096});
  auto w = b.parameter("wk", {4096, 1024});
  auto h = b.op("relu", {x}, {}, "act");
  b.output(b.op("matmul", {h, w}, {}, "k_proj"));
  auto g = b.build();
  REQUIRE(g);
  for (const char* policy : {"beam", "greedy"}) {
    CAPTURE(policy);
    PlannerOptions o;
    o.policy = policy;
    o.weight_dtype = DType::bf8b;
    auto plan = compile(*g, device::wormhole_b0(), o);
    REQUIRE(plan);
    const fb::Plan* p = fb::GetSizePrefixedPlan(plan->bytes.data());
    const fb::OpPlan* proj = nullptr;
    for (const fb::OpPlan* op : *p->ops())
      if (op->name()->str() == "k_proj") proj = op;
    REQUIRE(proj);
    CHECK(static_cast<device::MatmulProgram>(proj->config()->program()) ==
          device::MatmulProgram::mcast_2d);
    CHECK(proj->estimated_ns() < 47663 + 1000);
  }
}

TEST_CASE("--explain plans with --weight-dtype as the compile does") {
  // The K projection above: with bfp8_b weights the explained k_proj is the compile's choice, the
  // 2-D program under 47,663 + 1,000 ns; with bf16 weights it costs more (the weight columns at
  // bf16 cost about the 1-D program's 47,663 ns of in0 multicast).
  GraphBuilder b("kproj");
  auto x = b.input("x", {128, 4096});
  auto w = b.parameter("wk", {4096, 1024});
  auto h = b.op("relu", {x}, {}, "act");
  b.output(b.op("matmul", {h, w}, {}, "k_proj"));
  auto g = b.build();
  REQUIRE(g);
  // The ns of explain's "choice:" line.
  auto explained_ns = [&](const PlannerOptions& o) -> uint64_t {
    auto planning = planning_graph(*g, o);
    REQUIRE(planning);
    auto text = explain_op(*planning, device::wormhole_b0(), o, "k_proj");
    REQUIRE_MESSAGE(text, (text ? "" : text.error().message));
    size_t at = text->find("  choice: ");
    REQUIRE(at != std::string::npos);
    size_t cores = text->find(" cores, ", at);
    REQUIRE(cores != std::string::npos);
    return std::stoull(text->substr(cores + 8));
  };
  for (const char* policy : {"greedy", "df-sharding"}) {
    CAPTURE(policy);
    PlannerOptions o;
    o.policy = policy;
    o.weight_dtype = DType::bf8b;
    auto plan = compile(*g, device::wormhole_b0(), o);
    REQUIRE(plan);
    const fb::Plan* p = fb::GetSizePrefixedPlan(plan->bytes.data());
    const fb::OpPlan* proj = nullptr;
    for (const fb::OpPlan* op : *p->ops())
      if (op->name()->str() == "k_proj") proj = op;
    REQUIRE(proj);
    uint64_t bf8 = explained_ns(o);
    CHECK(bf8 == proj->estimated_ns());
    PlannerOptions bf16 = o;
    bf16.weight_dtype = DType::bf16;
    CHECK(explained_ns(bf16) > bf8);
    if (std::string(policy) == "greedy") CHECK(bf8 < 47663 + 1000);
  }
}

TEST_CASE("a matmul on block-float weights runs at the fidelity tt-metal pairs with the dtype") {
  // tt-transformers: bfp4_b weights at LoFi, bfp8_b at HiFi2; bf16 stays at the default HiFi2.
  // fc1 = linear(x, w, bias); fc2 = matmul(fc1, w2), w2 overridden to bfp4_b.
  GraphBuilder b("fidelity");
  auto x = b.input("x", {32, 64});
  auto w = b.parameter("w", {64, 64});
  auto bias = b.parameter("bias", {64});
  auto w2 = b.parameter("w2", {64, 32});
  auto h = b.op("linear", {x, w, bias}, {}, "fc1");
  b.output(b.op("matmul", {h, w2}, {}, "fc2"));
  auto g = b.build();
  REQUIRE(g);
  auto fidelities = [&](DType dt, std::vector<std::string> overrides) {
    PlannerOptions o;
    o.weight_dtype = dt;
    o.weight_dtype_overrides = std::move(overrides);
    auto plan = compile(*g, device::wormhole_b0(), o);
    REQUIRE(plan);
    const fb::Plan* p = fb::GetSizePrefixedPlan(plan->bytes.data());
    std::string out;
    for (const fb::OpPlan* op : *p->ops())
      if (op->kind() == fb::OpKind::matmul || op->kind() == fb::OpKind::linear)
        out += op->name()->str() + ":" +
               std::string(device::fidelity_name(
                   static_cast<device::MathFidelity>(op->config()->fidelity()))) +
               " ";
    return out;
  };
  CHECK(fidelities(DType::bf16, {}) == "fc1:hifi2 fc2:hifi2 ");
  CHECK(fidelities(DType::bf8b, {}) == "fc1:hifi2 fc2:hifi2 ");
  CHECK(fidelities(DType::bf8b, {"w2=bfp4_b"}) == "fc1:hifi2 fc2:lofi ");
  CHECK(fidelities(DType::bf4b, {}) == "fc1:lofi fc2:lofi ");
  CHECK(device::weight_fidelity(DType::bf4b) == device::MathFidelity::lofi);
  CHECK(device::weight_fidelity(DType::bf8b) == device::MathFidelity::hifi2);
  CHECK(device::weight_fidelity(DType::bf16) == device::MathFidelity::hifi2);
}

TEST_CASE("a model with bfp8_b / bfp4_b weights runs, its error within the formats' bound") {
  // y = x . w, x [32, 64] (bf16-exact), w [64, 32] ~ U(-1, 1) * sqrt(3 / 64).
  constexpr int M = 32, K = 64, N = 32;
  GraphBuilder b("one_matmul");
  auto x = b.input("x", {M, K});
  auto w = b.parameter("w", {K, N});
  b.output(b.op("matmul", {x, w}, {}, "proj"));
  auto g = b.build();
  REQUIRE(g);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  runtime::Tensor xt({M, K}), wt({K, N});
  for (float& v : xt.data) v = device::round_bf16(u(rng));
  for (float& v : wt.data) v = u(rng) * std::sqrt(3.0f / K);
  // f32 reference, computed here.
  std::vector<double> ref(M * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) ref[i * N + j] += double(xt.data[i * K + k]) * wt.data[k * N + j];
  // Bound per output: a block float shares one exponent per 16 consecutive values of a tile row
  // (here w[k, 0..15] and w[k, 16..31]); with e the group's largest exponent, |max| >= 2^e.
  //  bf8b: steps of 2^(e-6), rounded to nearest (a carry doubles the step): |dw| <= 2^-6 |max|;
  //  bf4b: steps of 2^(e-2), saturating at 7 steps: |dw| <= 2^-2 |max|.
  // |dy_ij| <= sum_k |x_ik| |dw_kj| (x is exact), plus the bf16 result's rounding (2^-9 |y|)
  // and f32 accumulation, covered by 2^-8 |y_ij|.
  auto run = [&](DType dt) {
    PlannerOptions o;
    o.weight_dtype = dt;
    auto plan = compile(*g, device::wormhole_b0(), o);
    REQUIRE(plan);
    auto ref_plan = runtime::verify_plan(plan->bytes, "p");
    REQUIRE(ref_plan);
    auto dev = device::EmulatedDevice::create(device::wormhole_b0());
    REQUIRE(dev);
    auto exe = runtime::Executable::bind(*ref_plan, **dev);
    REQUIRE(exe);
    std::vector<runtime::TensorView> views{xt.view(), wt.view()};
    auto r = (*exe)->run(views);
    REQUIRE_MESSAGE(r, (r ? std::string() : r.error().message));
    return r->outputs[0].data;
  };
  auto max_error = [&](const auto& got, double step_fraction) {
    double worst = 0, excess = -1;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double bound = 0;
        for (int k = 0; k < K; ++k) {
          double gmax = 0;
          for (int jj = j / 16 * 16; jj < j / 16 * 16 + 16; ++jj)
            gmax = std::max(gmax, double(std::fabs(wt.data[k * N + jj])));
          bound += std::fabs(xt.data[i * K + k]) * step_fraction * gmax;
        }
        bound += std::ldexp(std::fabs(ref[i * N + j]), -8);
        double err = std::fabs(got[i * N + j] - ref[i * N + j]);
        worst = std::max(worst, err);
        excess = std::max(excess, err - bound);
      }
    CHECK(excess <= 0.0);
    return worst;
  };
  double e16 = max_error(run(DType::bf16), std::ldexp(1.0, -8));  // bf16 weights: 2^-9 |w|
  double e8 = max_error(run(DType::bf8b), std::ldexp(1.0, -6));
  double e4 = max_error(run(DType::bf4b), std::ldexp(1.0, -2));
  // The emulator computes with the quantized values: fewer bits, more error.
  CHECK(e16 < e8);
  CHECK(e8 < e4);
  MESSAGE("max |error| vs f32: bf16 ", e16, ", bfp8_b ", e8, ", bfp4_b ", e4);
}
