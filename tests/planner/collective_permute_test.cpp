// Reshards that only replace a dim's mesh axis with another unused axis of the same size become
// one sdy.collective_permute (then stablehlo.collective_permute with source_target_pairs), not
// all_gather + all_slice: fewer bytes, same values on the host SPMD simulation and, lowered to
// per-device graphs, on an emulated mesh.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/planner/spmd_host.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "meshplan/runtime/plan.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

/// A 2-axis mesh x=rows, y=cols; x + x of a 32x64 argument sharded `from` on dim 0 (a
/// pre-sharded argument, or with `replicated_arg` a replicated one constrained to `from`), the
/// result wanted `to` on dim 0.
std::string swap_module(int64_t rows, int64_t cols, const std::string& from, const std::string& to,
                        bool replicated_arg = false) {
  std::string arg_attr =
      replicated_arg ? "" : str(" {sdy.sharding = #sdy.sharding<@mesh, [{", from, "}, {}]>}");
  std::string first = replicated_arg
                          ? str("  %a = sdy.sharding_constraint %arg0 <@mesh, [{", from,
                                "}, {}]> : tensor<32x64xf32>\n")
                          : std::string("  %a = stablehlo.abs %arg0 : tensor<32x64xf32>\n");
  return str("sdy.mesh @mesh = <[\"x\"=", rows, ", \"y\"=", cols, "]>\n",
             "func.func public @main(%arg0: tensor<32x64xf32>", arg_attr,
             ") -> (tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{", to, "}, {}]>}) {\n",
             first, "  %0 = stablehlo.add %a, %a : tensor<32x64xf32>\n",
             "  %1 = sdy.sharding_constraint %0 <@mesh, [{", to, "}, {}]> : tensor<32x64xf32>\n",
             "  return %1 : tensor<32x64xf32>\n}\n");
}

Module piped(const std::string& text, int64_t rows, int64_t cols, const char* stage = "close") {
  auto m = parse_module(text, "swap.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  PipelineOptions o;
  o.mesh_rows = rows;
  o.mesh_cols = cols;
  o.stop_after = *stage_from_name(stage);
  auto s = run_pipeline(*m, o);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return std::move(*m);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

double max_abs_diff(const std::vector<HostArray>& a, const std::vector<HostArray>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].shape == b[i].shape);
    for (size_t k = 0; k < a[i].data.size(); ++k)
      worst = std::max(worst, static_cast<double>(std::abs(a[i].data[k] - b[i].data[k])));
  }
  return worst;
}

/// A closed sharding on @mesh: per dim, the names of the whole axes it is split over.
TensorSharding sharding(const std::vector<std::vector<std::string>>& dims) {
  TensorSharding s;
  s.mesh = "mesh";
  for (const auto& names : dims) {
    DimSharding d;
    for (const std::string& n : names) d.axes.push_back(AxisRef{n, 1, 0});
    s.dims.push_back(d);
  }
  return s;
}

}  // namespace

TEST_CASE("permute_pairs: target (x=r, y=q) receives from (x=q, y=r); self-pairs kept") {
  MeshDecl mesh;
  mesh.name = "mesh";
  mesh.axes = {{"x", 2}, {"y", 2}};
  TensorSharding src = sharding({{"x"}, {}});
  TensorSharding tgt = sharding({{"y"}, {}});
  auto pairs = permute_pairs(mesh, src, tgt);
  // Devices row-major: 0=(0,0) 1=(0,1) 2=(1,0) 3=(1,1). (0,1) needs piece 1, held by (1,0).
  using P = std::pair<int64_t, int64_t>;
  CHECK(pairs == std::vector<P>{{0, 0}, {2, 1}, {1, 2}, {3, 3}});
  // Two dims trading their axes: target (x=r, y=q) needs piece (q, r), held by (x=q, y=r).
  TensorSharding both = sharding({{"x"}, {"y"}});
  TensorSharding moved = sharding({{"y"}, {"x"}});
  CHECK(permute_pairs(mesh, both, moved) == std::vector<P>{{0, 0}, {2, 1}, {1, 2}, {3, 3}});
}

TEST_CASE("2x2: [{x},{}] -> [{y},{}] is one collective_permute, exact on host, round-trips") {
  const std::string text = swap_module(2, 2, "\"x\"", "\"y\"");
  std::string collectives = print_module(piped(text, 2, 2, "collectives"));
  CHECK(count(collectives, "sdy.collective_permute") == 1);
  CHECK(count(collectives, "sdy.all_gather") == 0);
  CHECK(count(collectives, "sdy.all_slice") == 0);
  CHECK(collectives.find("out_sharding=<@mesh, [{\"y\"}, {}]>") != std::string::npos);

  Module local = piped(text, 2, 2);
  std::string printed = print_module(local);
  CHECK(count(printed, "\"stablehlo.collective_permute\"") == 1);
  CHECK(printed.find("source_target_pairs = dense<[[0, 0], [2, 1], [1, 2], [3, 3]]> : "
                     "tensor<4x2xi64>") != std::string::npos);
  CHECK(verify_local_program(local).has_value());
  for (const std::string& t : {collectives, printed}) {
    auto again = parse_module(t, "printed.mlir");
    REQUIRE_MESSAGE(again.has_value(), again.error().message);
    CHECK(print_module(*again) == t);
  }

  auto global = parse_module(text, "swap.mlir");
  REQUIRE(global.has_value());
  auto inputs = random_inputs(*global, 3);
  auto ref = evaluate_reference(*global, inputs);
  REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
  auto spmd = evaluate_spmd(local, inputs);
  REQUIRE_MESSAGE(spmd.has_value(), spmd.error().message);
  CHECK(max_abs_diff(*spmd, *ref) == 0.0);
}

TEST_CASE("the permute moves fewer bytes than all_gather + all_slice of the same reshard") {
  Module local = piped(swap_module(2, 2, "\"x\"", "\"y\""), 2, 2);
  auto permute = communication(local);
  REQUIRE_MESSAGE(permute.has_value(), permute.error().message);
  CHECK(permute->count("collective_permute") == 1);
  // The sequence the collectives stage emitted before: gather x, then slice y.
  const std::string gather_slice =
      "sdy.mesh @mesh = <[\"x\"=2, \"y\"=2]>\n"
      "func.func public @main(%arg0: tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, "
      "[{\"x\"}, {}]>}) -> (tensor<32x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"y\"}, "
      "{}]>}) {\n"
      "  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{\"x\"}, {}]>] "
      "out_shardings=[<@mesh, [{\"y\"}, {}]>] manual_axes={} (%arg1: tensor<32x64xf32>) {\n"
      "    %1 = sdy.all_gather [{\"x\"}, {}] %arg1 out_sharding=<@mesh, [{}, {}]> : "
      "tensor<32x64xf32>\n"
      "    %2 = sdy.all_slice [{\"y\"}, {}] %1 out_sharding=<@mesh, [{\"y\"}, {}]> : "
      "tensor<32x64xf32>\n"
      "    sdy.return %2 : tensor<32x64xf32>\n"
      "  } : (tensor<32x64xf32>) -> tensor<32x64xf32>\n"
      "  return %0 : tensor<32x64xf32>\n}\n";
  Module baseline = piped(gather_slice, 2, 2);
  auto old = communication(baseline);
  REQUIRE_MESSAGE(old.has_value(), old.error().message);
  CHECK(old->count("all_gather") == 1);
  // Permute: the 16x64 f32 local shard (4096 bytes); all_gather: (2-1)/2 of 32x64 f32.
  CHECK(permute->bytes == doctest::Approx(16 * 64 * 4));
  CHECK(old->bytes == doctest::Approx(32 * 64 * 4 / 2));
  // With groups of 2 the per-device link bytes tie ((2-1)/2 of the whole = one shard); the
  // permute still never builds the whole tensor on a device (below), and wins on bytes once the
  // axes are larger (next test case).
  CHECK(permute->bytes <= old->bytes);
  // The permute's 1-to-1 transfer runs once per device pair; all_gather + all_slice also
  // materialises the whole 32x64 tensor on every device: compare what lands per device.
  auto in_local = [](const Module& m, const char* op) {
    for (const Op& o : m.ops)
      if (o.name == op) return m.values[o.results[0]].type.volume();
    return int64_t{0};
  };
  CHECK(in_local(local, "stablehlo.collective_permute") <
        in_local(baseline, "stablehlo.all_gather"));
}

TEST_CASE("4x4: the permute sends one shard per device, all_gather three of four") {
  Module local = piped(swap_module(4, 4, "\"x\"", "\"y\""), 4, 4);
  auto permute = communication(local);
  REQUIRE_MESSAGE(permute.has_value(), permute.error().message);
  CHECK(permute->count("collective_permute") == 1);
  CHECK(permute->count("all_gather") == 0);
  CHECK(permute->bytes == doctest::Approx(8 * 64 * 4));  // the 8x64 f32 local shard
  // all_gather over x (4 devices) of the 32x64 f32 tensor: (4-1)/4 of it per device.
  const double gather = 3.0 / 4.0 * 32 * 64 * 4;
  CHECK(permute->bytes < gather);
  auto global = parse_module(swap_module(4, 4, "\"x\"", "\"y\""), "swap.mlir");
  REQUIRE(global.has_value());
  auto inputs = random_inputs(*global, 11);
  auto ref = evaluate_reference(*global, inputs);
  REQUIRE(ref.has_value());
  auto spmd = evaluate_spmd(local, inputs);
  REQUIRE_MESSAGE(spmd.has_value(), spmd.error().message);
  CHECK(max_abs_diff(*spmd, *ref) == 0.0);
}

TEST_CASE("sub-axes of equal size: 2x4 [{x},{}] -> [{y:(1)2},{}] permutes, exact on host") {
  const std::string text = swap_module(2, 4, "\"x\"", "\"y\":(1)2");
  std::string collectives = print_module(piped(text, 2, 4, "collectives"));
  CHECK(count(collectives, "sdy.collective_permute") == 1);
  CHECK(count(collectives, "sdy.all_gather") == 0);
  Module local = piped(text, 2, 4);
  auto global = parse_module(text, "swap.mlir");
  REQUIRE(global.has_value());
  auto inputs = random_inputs(*global, 5);
  auto ref = evaluate_reference(*global, inputs);
  REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
  auto spmd = evaluate_spmd(local, inputs);
  REQUIRE_MESSAGE(spmd.has_value(), spmd.error().message);
  CHECK(max_abs_diff(*spmd, *ref) == 0.0);
  std::string printed = print_module(local);
  auto again = parse_module(printed, "printed.mlir");
  REQUIRE(again.has_value());
  CHECK(print_module(*again) == printed);
}

TEST_CASE("2x2 end to end: lowered per-device graph compiles and runs on an emulated mesh") {
  const std::string text = swap_module(2, 2, "\"x\"", "\"y\"", true);
  Module local = piped(text, 2, 2);
  CHECK(count(print_module(local), "\"stablehlo.collective_permute\"") == 1);
  auto g = lower_to_graph(local);
  REQUIRE_MESSAGE(g.has_value(), g.error().message);
  size_t permutes = 0;
  for (const auto& op : g->ops) permutes += op.kind == device::OpKind::collective_permute;
  CHECK(permutes == 1);

  auto chip_desc = device::builtin_chip("wormhole_b0");
  REQUIRE(chip_desc.has_value());
  const device::ChipDesc& chip = *chip_desc;
  planner::PlannerOptions options;
  options.policy = "greedy";
  auto plan = planner::compile(*g, chip, options);
  REQUIRE_MESSAGE(plan.has_value(), plan.error().message);
  auto ref = runtime::verify_plan(plan->bytes, g->name);
  REQUIRE_MESSAGE(ref.has_value(), ref.error().message);
  CHECK(runtime::is_mesh_plan(*ref));

  auto mesh = device::EmulatedMesh::create(device::default_mesh(chip, 2, 2));
  REQUIRE_MESSAGE(mesh.has_value(), mesh.error().message);
  auto exe = runtime::Executable::bind(*ref, **mesh);
  REQUIRE_MESSAGE(exe.has_value(), exe.error().message);

  auto global = parse_module(text, "swap.mlir");
  REQUIRE(global.has_value());
  auto inputs = random_inputs(*global, 9);
  runtime::Tensor x(inputs[0].shape);
  x.data.assign(inputs[0].data.begin(), inputs[0].data.end());
  runtime::TensorView views[] = {x.view()};
  auto run = (*exe)->run(views);
  REQUIRE_MESSAGE(run.has_value(), run.error().message);
  auto expected = runtime::run_reference(*ref, views);
  REQUIRE_MESSAGE(expected.has_value(), expected.error().message);
  CHECK(runtime::check_outputs(run->outputs, *expected, runtime::kDefaultTolerance).ok);
  // And both equal the global module's reference (x + x).
  auto want = evaluate_reference(*global, inputs);
  REQUIRE(want.has_value());
  runtime::Tensor w(want->at(0).shape);
  w.data.assign(want->at(0).data.begin(), want->at(0).data.end());
  CHECK(runtime::check_outputs(run->outputs, {w}, runtime::kDefaultTolerance).ok);
}

TEST_CASE("stablehlo.collective_permute with bad source_target_pairs is a named error") {
  auto text = [](const std::string& pairs, int n) {
    return str("sdy.mesh @mesh = <[\"x\"=1, \"y\"=2]>\n",
               "func.func public @main(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {\n",
               "  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{}, {}]>] "
               "out_shardings=[<@mesh, [{}, {}]>] manual_axes={\"x\", \"y\"} (%arg1: "
               "tensor<4x4xf32>) {\n",
               "    %1 = \"stablehlo.collective_permute\"(%arg1) <{source_target_pairs = dense<",
               pairs, "> : tensor<", n, "x2xi64>}> : (tensor<4x4xf32>) -> tensor<4x4xf32>\n",
               "    sdy.return %1 : tensor<4x4xf32>\n",
               "  } : (tensor<4x4xf32>) -> tensor<4x4xf32>\n",
               "  return %0 : tensor<4x4xf32>\n}\n");
  };
  auto error = [&](const std::string& pairs, int n) {
    auto m = parse_module(text(pairs, n), "bad.mlir");
    REQUIRE_MESSAGE(m.has_value(), m.error().message);
    std::vector<HostArray> in{HostArray{{4, 4}, std::vector<float>(16, 1.0f)}};
    auto r = evaluate_spmd(*m, in);
    REQUIRE_FALSE(r.has_value());
    return r.error().message;
  };
  CHECK(error("[[0, 1], [0, 0]]", 2).find("repeats a source") != std::string::npos);
  CHECK(error("[[0, 1], [1, 1]]", 2).find("repeats a target") != std::string::npos);
  CHECK(error("[[0, 2]]", 1).find("outside the 2-device mesh") != std::string::npos);
  // A good one: device 1 gets device 0's tensor, device 0 (nobody's target) gets zeros.
  auto m = parse_module(text("[[0, 1]]", 1), "good.mlir");
  REQUIRE(m.has_value());
  auto comm = communication(*m);
  REQUIRE(comm.has_value());
  CHECK(comm->bytes == doctest::Approx(4 * 4 * 4));
}
