// Mesh plans end to end: per-device graphs with collectives and boundary shards -> planner (every
// policy) -> MPLN plan with mesh fields -> Executable on an EmulatedMesh (1x2, 2x4, 8x4),
// checked against the host SPMD reference and, for the tensor-parallel MLP, against the
// single-device f32 reference of the global MLP. Plus the bad paths.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/emulator.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "meshplan/runtime/plan_query.hpp"

using namespace meshplan;
using device::MeshShardSpec;
using device::MeshShardType;
using planner::attr;
using planner::GraphBuilder;
using Shape = std::vector<int64_t>;

namespace {

const char* const kPolicies[] = {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"};

MeshShardSpec devices(int axis0, int axis1) {
  return MeshShardSpec{MeshShardType::devices, {axis0, axis1}, {}};
}
MeshShardSpec identity() {
  return MeshShardSpec{MeshShardType::identity, {-1, -1}, {}};
}

std::unique_ptr<device::EmulatedMesh> make_mesh(std::string_view name) {
  auto desc = device::builtin_mesh(name);
  REQUIRE(desc);
  auto mesh = device::EmulatedMesh::create(*desc);
  REQUIRE(mesh);
  return std::move(*mesh);
}

runtime::Tensor random_tensor(Shape shape, uint32_t seed, float scale = 1.0f) {
  runtime::Tensor t(std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : t.data) v = dist(rng) * scale;
  return t;
}

/// Compiles `graph` and returns the verified plan over `bytes` (kept alive by the caller).
runtime::PlanRef compile(const planner::Graph& graph, std::string_view policy,
                         std::vector<uint8_t>& bytes, const device::ChipDesc& chip) {
  planner::PlannerOptions options;
  options.policy = std::string(policy);
  auto plan = planner::compile(graph, chip, options);
  INFO("policy ", std::string(policy));
  REQUIRE_MESSAGE(plan, (plan ? "" : plan.error().message));
  bytes = std::move(plan->bytes);
  auto ref = runtime::verify_plan(bytes, graph.name);
  REQUIRE_MESSAGE(ref, (ref ? "" : ref.error().message));
  return *ref;
}

struct Mlp {
  int64_t m = 32, k = 64, n = 64, h_per_chip = 32;
};

/// Tensor-parallel MLP on `rows` x `cols` over `axis` (1: each row, 0: each column, -1: the
/// whole mesh): x replicated, w1 column-split, w2 row-split, matmul, relu, matmul, all_reduce.
planner::Graph tp_mlp(int rows, int cols, int axis, const Mlp& s) {
  GraphBuilder b("tp_mlp");
  b.mesh(rows, cols);
  auto x = b.input("x", {s.m, s.k});
  auto w1 = b.parameter("w1", {s.k, s.h_per_chip});
  auto w2 = b.parameter("w2", {s.h_per_chip, s.n});
  int a0 = axis == 0 || axis == -1, a1 = axis == 1 || axis == -1;
  b.shard(w1, devices(a0 ? 1 : -1, a1 ? 1 : -1));
  b.shard(w2, devices(a0 ? 0 : -1, a1 ? 0 : -1));
  auto h = b.relu(b.matmul(x, w1, "mm1"), "act");
  auto y =
      b.op("all_reduce", {b.matmul(h, w2, "mm2")}, {attr("cluster_axis", int64_t{axis})}, "ar");
  b.output(y);
  auto g = b.build();
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  return std::move(*g);
}

/// x -> relu -> collective -> relu, with the given boundary shards.
planner::Graph one_collective(int rows, int cols, std::string_view kind, Shape local,
                              std::vector<planner::Attribute> attrs, MeshShardSpec in,
                              MeshShardSpec out) {
  GraphBuilder b{std::string(kind)};
  b.mesh(rows, cols);
  auto x = b.input("x", std::move(local));
  b.shard(x, in);
  auto c = b.op(kind, {b.relu(x, "pre")}, std::move(attrs), "coll");
  b.output(b.relu(c, "post"), out);
  auto g = b.build();
  REQUIRE_MESSAGE(g, (g ? "" : g.error().message));
  return std::move(*g);
}

}  // namespace

TEST_CASE("a tensor-parallel MLP on 1x2, 2x4 and 8x4 equals the global single-device reference") {
  struct Case {
    const char* mesh;
    int axis;
  };
  for (Case c : {Case{"n300", 1}, Case{"t3k", 1}, Case{"t3k", 0}, Case{"t3k", -1},
                 Case{"galaxy", 1}, Case{"galaxy", -1}}) {
    auto mesh = make_mesh(c.mesh);
    int group = c.axis == -1 ? mesh->size() : c.axis == 0 ? mesh->rows() : mesh->cols();
    Mlp s;
    planner::Graph g = tp_mlp(mesh->rows(), mesh->cols(), c.axis, s);
    int64_t hidden = s.h_per_chip * group;
    auto x = random_tensor({s.m, s.k}, 1);
    auto w1 = random_tensor({s.k, hidden}, 2, 0.2f);
    auto w2 = random_tensor({hidden, s.n}, 3, 0.1f);
    // The global MLP with the f32 reference on one device.
    device::OpConfig plain;
    std::vector<float> h(static_cast<size_t>(s.m * hidden)), y(static_cast<size_t>(s.m * s.n));
    Shape hs{s.m, hidden}, ys{s.m, s.n};
    device::HostView in1[] = {{x.shape, x.data}, {w1.shape, w1.data}};
    REQUIRE(device::reference(device::OpKind::matmul, in1, plain, hs, h));
    for (float& v : h) v = std::max(v, 0.0f);
    device::HostView in2[] = {{hs, h}, {w2.shape, w2.data}};
    REQUIRE(device::reference(device::OpKind::matmul, in2, plain, ys, y));
    runtime::Tensor global(ys);
    std::copy(y.begin(), y.end(), global.data.begin());

    for (const char* policy : kPolicies) {
      INFO("mesh ", std::string(c.mesh), " cluster_axis ", c.axis, " policy ", std::string(policy));
      std::vector<uint8_t> bytes;
      runtime::PlanRef plan = compile(g, policy, bytes, mesh->descriptor().chip);
      CHECK(runtime::is_mesh_plan(plan));
      auto exe = runtime::Executable::bind(plan, *mesh);
      REQUIRE_MESSAGE(exe, (exe ? "" : exe.error().message));
      CHECK((*exe)->input_shape(1)[1] == hidden);
      runtime::TensorView views[] = {x.view(), w1.view(), w2.view()};
      auto run = (*exe)->run(views);
      REQUIRE_MESSAGE(run, (run ? "" : run.error().message));
      REQUIRE(run->outputs.size() == 1);
      CHECK(run->outputs[0].shape == ys);
      auto rep = runtime::check_outputs(run->outputs, {global}, runtime::kDefaultTolerance);
      INFO("relative error ", rep.relative_error);
      CHECK(rep.ok);
      // The host SPMD reference of the plan agrees too (it is what --check uses).
      auto ref = runtime::run_reference(plan, views);
      REQUIRE(ref);
      CHECK(runtime::check_outputs(*ref, {global}, 1e-4).ok);
      // Profiles: every chip ran the one collective and at least the 3 graph device ops.
      size_t collectives = 0, device_ops = 0;
      for (const auto& op : run->ops) (op.collective ? collectives : device_ops)++;
      CHECK(collectives == static_cast<size_t>(mesh->size()));
      CHECK(device_ops >= 3 * static_cast<size_t>(mesh->size()));
      CHECK(run->device_ns == *std::max_element(run->chip_ns.begin(), run->chip_ns.end()));
      CHECK(run->collective_ns > 0);
      CHECK(run->bytes_moved > 0);
      for (int chip = 0; chip < mesh->size(); ++chip) {
        CHECK(run->chip_device_ns[static_cast<size_t>(chip)] > 0);
        CHECK(run->chip_collective_ns[static_cast<size_t>(chip)] > 0);
      }
    }
  }
}

TEST_CASE("every collective runs end to end on 1x2, 2x4 and 8x4 under every policy") {
  for (const char* name : {"n300", "t3k", "galaxy"}) {
    auto mesh = make_mesh(name);
    int rows = mesh->rows(), cols = mesh->cols(), chips = mesh->size();
    std::vector<std::pair<std::string, planner::Graph>> graphs;
    for (int axis : {0, 1, -1}) {
      if ((axis == 0 && rows == 1)) continue;
      int n = axis == -1 ? chips : axis == 0 ? rows : cols;
      MeshShardSpec split = axis == -1  ? devices(0, 0)
                            : axis == 0 ? devices(0, -1)
                                        : devices(-1, 0);
      std::string a = std::to_string(axis);
      auto ax = attr("cluster_axis", int64_t{axis});
      graphs.emplace_back("all_gather/" + a,
                          one_collective(rows, cols, "all_gather", {32, 64},
                                         {attr("dim", int64_t{0}), ax}, split, MeshShardSpec{}));
      graphs.emplace_back("all_slice/" + a,
                          one_collective(rows, cols, "all_slice", {32 * n, 64},
                                         {attr("dim", int64_t{0}), ax}, MeshShardSpec{}, split));
      graphs.emplace_back("reduce_scatter/" + a,
                          one_collective(rows, cols, "reduce_scatter", {32, 32 * n},
                                         {attr("dim", int64_t{-1}), ax, attr("reduce", "max")},
                                         identity(), identity()));
      graphs.emplace_back("all_reduce/" + a, one_collective(rows, cols, "all_reduce", {64, 32},
                                                            {ax}, identity(), identity()));
      graphs.emplace_back("all_to_all/" + a, one_collective(rows, cols, "all_to_all", {32 * n, 32},
                                                            {attr("split_dim", int64_t{0}),
                                                             attr("concat_dim", int64_t{1}), ax},
                                                            identity(), identity()));
    }
    // A shift by one chip (the last chip receives nothing and gets zeros).
    std::vector<int64_t> pairs;
    for (int i = 0; i + 1 < chips; ++i) {
      pairs.push_back(i + 1);
      pairs.push_back(i);
    }
    graphs.emplace_back("collective_permute",
                        one_collective(rows, cols, "collective_permute", {32, 32},
                                       {attr("pairs", pairs)}, identity(), identity()));
    for (const auto& [label, g] : graphs) {
      for (const char* policy : kPolicies) {
        INFO("mesh ", std::string(name), " ", label, " policy ", std::string(policy));
        std::vector<uint8_t> bytes;
        runtime::PlanRef plan = compile(g, policy, bytes, mesh->descriptor().chip);
        auto exe = runtime::Executable::bind(plan, *mesh);
        REQUIRE_MESSAGE(exe, (exe ? "" : exe.error().message));
        auto inputs = runtime::random_inputs(plan, 7);
        auto views = runtime::views_of(inputs);
        auto run = (*exe)->run(views);
        REQUIRE_MESSAGE(run, (run ? "" : run.error().message));
        auto ref = runtime::run_reference(plan, views);
        REQUIRE_MESSAGE(ref, (ref ? "" : ref.error().message));
        auto rep = runtime::check_outputs(run->outputs, *ref, runtime::kDefaultTolerance);
        INFO("relative error ", rep.relative_error);
        CHECK(rep.ok);
        // Gather of a split tensor and slice of a replicated one give the host tensor back.
        if (label.starts_with("all_gather") || label.starts_with("all_slice")) {
          runtime::Tensor relu = inputs[0];
          for (float& v : relu.data) v = std::max(v, 0.0f);
          CHECK(runtime::check_outputs(run->outputs, {relu}, runtime::kDefaultTolerance).ok);
        }
        if (label == "collective_permute") {
          // Chip i holds chip i+1's relu(x); the last chip holds zeros.
          const auto& out = run->outputs[0].data;
          const auto& in = inputs[0].data;
          size_t per = 32 * 32;
          CHECK(std::abs(out[0] - std::max(in[per], 0.0f)) < 0.02f);
          bool zeros = true;
          for (size_t k = 0; k < per; ++k) zeros = zeros && out[(chips - 1) * per + k] == 0.0f;
          CHECK(zeros);
        }
      }
    }
  }
}

TEST_CASE("mesh plans bind only to the mesh they were made for, with clear errors") {
  auto t3k = make_mesh("t3k");
  auto n300 = make_mesh("n300");
  std::vector<uint8_t> bytes;
  runtime::PlanRef plan = compile(tp_mlp(2, 4, 1, Mlp{}), "greedy", bytes, t3k->descriptor().chip);
  auto wrong = runtime::Executable::bind(plan, *n300);
  REQUIRE(!wrong);
  CHECK(wrong.error().code == ErrorCode::incompatible);
  CHECK(wrong.error().message.find("2x4 mesh, this mesh n300 is 1x2") != std::string::npos);
  auto chip = device::EmulatedDevice::create(t3k->descriptor().chip);
  REQUIRE(chip);
  auto single = runtime::Executable::bind(plan, **chip);
  REQUIRE(!single);
  CHECK(single.error().message.find("mesh plan: bind it to a device::Mesh") != std::string::npos);
  // A ring t3k is another mesh descriptor.
  device::MeshDesc ring = t3k->descriptor();
  ring.topology = device::Topology::ring;
  auto ring_mesh = device::EmulatedMesh::create(ring);
  REQUIRE(ring_mesh);
  auto other = runtime::Executable::bind(plan, **ring_mesh);
  REQUIRE(!other);
  CHECK(other.error().message.find("ring") != std::string::npos);
  // plan_query names the mesh in a miss.
  runtime::PlanQuery q;
  q.mesh = &n300->descriptor();
  auto miss = runtime::check_plan_matches(plan, q);
  REQUIRE(!miss);
  CHECK(miss.error().message.find("mesh t3k 2×4 ≠ n300 1×2") != std::string::npos);
  q.mesh = &t3k->descriptor();
  CHECK(runtime::check_plan_matches(plan, q));

  // A single-chip plan does not bind to a mesh.
  GraphBuilder b("single");
  b.output(b.relu(b.input("x", {32, 32}), "act"));
  auto g = b.build();
  REQUIRE(g);
  std::vector<uint8_t> single_bytes;
  runtime::PlanRef single_plan = compile(*g, "dram", single_bytes, t3k->descriptor().chip);
  auto on_mesh = runtime::Executable::bind(single_plan, *t3k);
  REQUIRE(!on_mesh);
  CHECK(on_mesh.error().message.find("single-chip plan") != std::string::npos);
  // Host inputs of the wrong (local) shape name the input.
  auto exe = runtime::Executable::bind(plan, *t3k);
  REQUIRE(exe);
  auto x = random_tensor({32, 64}, 1), w1 = random_tensor({64, 32}, 2),
       w2 = random_tensor({32, 64}, 3);
  runtime::TensorView views[] = {x.view(), w1.view(), w2.view()};
  auto bad = (*exe)->run(views);
  REQUIRE(!bad);
  CHECK(bad.error().message.find("input 1 'w1'") != std::string::npos);
  // The null backend answers unimplemented, naming what.
  device::NullMesh null_mesh(t3k->descriptor());
  auto null_exe = runtime::Executable::bind(plan, null_mesh);
  REQUIRE(null_exe);
  auto w1f = random_tensor({64, 128}, 2), w2f = random_tensor({128, 64}, 3);
  runtime::TensorView full[] = {x.view(), w1f.view(), w2f.view()};
  auto none = (*null_exe)->run(full);
  REQUIRE(!none);
  CHECK(none.error().code == ErrorCode::unimplemented);
}

TEST_CASE("corrupted mesh fields are clear errors from verify_plan, never crashes") {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> pairs = {0, 1, 1, 0};
  runtime::PlanRef plan = compile(one_collective(1, 2, "collective_permute", {32, 32},
                                                 {attr("pairs", pairs)}, identity(), identity()),
                                  "dram", bytes, device::builtin_mesh("n300")->chip);
  const fb::Plan& p = plan.plan();
  auto offset_of = [&](const void* at) {
    return static_cast<size_t>(static_cast<const uint8_t*>(at) - bytes.data());
  };
  const fb::OpConfig* cfg = nullptr;
  for (const fb::OpPlan* op : *p.ops())
    if (op->kind() == fb::OpKind::collective_permute) cfg = op->config();
  REQUIRE(cfg);
  REQUIRE(cfg->pairs());
  struct Corruption {
    const char* what;
    size_t offset;
    int64_t value;
    size_t width;
    const char* message;
  };
  Corruption cases[] = {
      {"pair outside the mesh", offset_of(cfg->pairs()->data()), 9, 4, "outside the 1x2 mesh"},
      {"repeated target", offset_of(cfg->pairs()->data()) + 4, 0, 4, "repeats a target"},
      {"full shape", offset_of(p.input_shards()->Get(0)->full_shape()->data()), 33, 8,
       "full dim 0"},
      {"shard dim", offset_of(p.output_shards()->Get(0)->shard_dims()->data()), 5, 4,
       "shard_dims[0] = 5"},
  };
  for (const Corruption& c : cases) {
    INFO(c.what);
    std::vector<uint8_t> bad = bytes;
    std::memcpy(bad.data() + c.offset, &c.value, c.width);
    auto v = runtime::verify_plan(bad, "corrupt");
    REQUIRE(!v);
    CHECK(v.error().code == ErrorCode::corrupt);
    CHECK(v.error().message.find(c.message) != std::string::npos);
  }
  // A flipped mesh descriptor hash verifies (it is key material) but does not bind.
  std::vector<uint8_t> other = bytes;
  other[offset_of(p.header()->mesh()->descriptor_hash())] ^= 1;
  auto v = runtime::verify_plan(other, "other");
  REQUIRE(v);
  auto n300 = make_mesh("n300");
  auto exe = runtime::Executable::bind(*v, *n300);
  REQUIRE(!exe);
  CHECK(exe.error().message.find("mesh descriptor") != std::string::npos);
}
