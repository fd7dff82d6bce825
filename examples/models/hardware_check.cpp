// The hardware check: the published Llama-3.1-8B configurations planned and timed.
#include "hardware_check.hpp"

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/descriptor.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/planner/plan_file.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/schemas/schemas.hpp"
#include "zoo.hpp"

namespace meshplan::models {

std::vector<PublishedPoint> published_points() {
  // tt-metal models/tt_transformers/PERF.md, table "Performance" (batch 1, prefill 128).
  return {
      {"llama3.1_8b", "n150", 1, 1, 28.3, 104},
      {"llama3.1_8b", "n300", 1, 2, 44.2, 67},
      {"llama3.1_8b", "t3k", 2, 4, 64.3, 53},
  };
}

namespace {

LlamaConfig llama31_8b(int64_t seq, int64_t past) {
  LlamaConfig c;  // hidden 4096, 32 heads, 8 KV heads, FFN 14336
  c.layers = 32;
  c.vocab = 128256;
  c.seq = seq;
  c.past = past;
  return c;
}

/// The per-chip program of `config` tensor-parallel on `mesh` (zoo_mesh.cpp), as
/// meshplan-compile makes it. Argument k of the global graph is `arg<k>` there.
Result<planner::Graph> tp_program(const LlamaConfig& config, const std::string& name,
                                  std::string_view mesh, int rows, int cols) {
  planner::Graph global = MESHPLAN_TRY(llama_decoder(config, name));
  planner::MeshAnnotations ann = MESHPLAN_TRY(llama_tensor_parallel(config, mesh));
  planner::FileOptions options;
  options.mesh = str(rows, "x", cols);
  planner::Graph g =
      MESHPLAN_TRY(planner::import_annotated({std::move(global), std::move(ann)}, options)).graph;
  g.name = name;
  return g;
}

/// tt-metal's demo dtypes: bfloat8_b weights, bfloat4_b for FF1 (w1, gate) and FF3 (w3, up).
/// On a per-chip program the weights are named by argument position.
Result<planner::PlannerOptions> demo_options(const std::string& policy, const LlamaConfig& c,
                                             bool per_chip) {
  planner::PlannerOptions o;
  o.policy = policy;
  o.weight_dtype = device::DType::bf8b;
  if (!per_chip) {
    o.weight_dtype_overrides = {"*.w1=bfp4_b", "*.w3=bfp4_b"};
    return o;
  }
  planner::Graph global = MESHPLAN_TRY(llama_decoder(c, "args"));
  for (size_t i = 0; i < global.arguments.size(); ++i) {
    const std::string& n = global.values[global.arguments[i]].name;
    if (n.ends_with(".w1") || n.ends_with(".w3"))
      o.weight_dtype_overrides.push_back("arg" + std::to_string(i) + "=bfp4_b");
  }
  return o;
}

struct Planned {
  double us = 0, weight_bytes = 0;
  uint32_t ops = 0;
};

/// `p`'s configuration planned on chips whose per-op dispatch takes `dispatch_ns`.
Result<Planned> plan_time(const PublishedPoint& p, const LlamaConfig& c, const std::string& policy,
                          uint64_t dispatch_ns) {
  const bool mesh = p.rows * p.cols > 1;
  const std::string name = "llama31_8b_" + p.device + (c.past > 0 ? "_decode" : "_prefill");
  // n300 cards (alone or four in a T3000) give one Tensix row to dispatch: 8x7 cores.
  device::ChipDesc chip = MESHPLAN_TRY(device::builtin_chip(mesh ? "n300" : "n150"));
  chip.dispatch_ns = dispatch_ns;
  planner::Graph g =
      mesh
          ? MESHPLAN_TRY(tp_program(c, name, p.device == "t3k" ? "t3k" : "n300_tp", p.rows, p.cols))
          : MESHPLAN_TRY(llama_decoder(c, name));
  planner::PlannerOptions o = MESHPLAN_TRY(demo_options(policy, c, mesh));
  if (mesh) o.mesh = device::default_mesh(chip, p.rows, p.cols);
  planner::CompiledPlan plan = MESHPLAN_TRY(planner::compile(g, chip, o));
  const fb::Plan* fp = fb::GetSizePrefixedPlan(plan.bytes.data());
  Planned out;
  out.us = static_cast<double>(fp->header()->metrics()->estimated_ns()) / 1000.0;
  out.ops = fp->ops()->size();
  for (const fb::TensorPlan* t : *fp->tensors()) {
    if (t->role() != fb::TensorRole::parameter) continue;
    // Stored bytes: whole tiles, each matrix padded to 32 rows (a [4096] norm weight is one
    // tile row of 128 tiles).
    std::vector<int64_t> shape(t->shape()->begin(), t->shape()->end());
    auto dt = static_cast<device::DType>(t->dtype());
    out.weight_bytes +=
        static_cast<double>(device::tile_grid(shape).pages()) * device::tile_bytes(dt);
  }
  return out;
}

}  // namespace

Result<HardwareCheck> hardware_check(const HardwareCheckOptions& options) {
  HardwareCheck out;
  const std::vector<PublishedPoint> points = published_points();
  const LlamaConfig decode = llama31_8b(1, kCheckDecodePast), prefill = llama31_8b(128, 0);
  out.descriptor_dispatch_ns = MESHPLAN_TRY(device::builtin_chip("n150")).dispatch_ns;
  out.dispatch_ns = out.descriptor_dispatch_ns;
  std::vector<Planned> raw;
  for (const PublishedPoint& p : points)
    raw.push_back(MESHPLAN_TRY(plan_time(p, decode, options.policy, out.descriptor_dispatch_ns)));
  if (options.calibrate && !points.empty()) {
    // Every op pays dispatch_ns once, so the n150 step time is linear in it: solve for the
    // dispatch time at which it takes the published 1 / decode_tps.
    double target_us = 1e6 / points[0].decode_tps;
    double per_op_ns = (target_us - raw[0].us) * 1000.0 / raw[0].ops;
    double fitted = static_cast<double>(out.descriptor_dispatch_ns) + per_op_ns;
    if (fitted < 0)
      return fail(ErrorCode::invalid_argument, "hardware check: n150 decode is simulated at ",
                  raw[0].us, " us, slower than the published ", target_us,
                  " us even with no dispatch time");
    out.dispatch_ns = static_cast<uint64_t>(fitted + 0.5);
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const PublishedPoint& p = points[i];
    HardwareCheckRow r;
    r.point = p;
    r.calibration_point = options.calibrate && i == 0;
    r.uncalibrated_tps = raw[i].us > 0 ? 1e6 / raw[i].us : 0;
    Planned d = out.dispatch_ns == out.descriptor_dispatch_ns
                    ? raw[i]
                    : MESHPLAN_TRY(plan_time(p, decode, options.policy, out.dispatch_ns));
    r.decode_us = d.us;
    r.decode_ops = d.ops;
    r.weight_bytes = d.weight_bytes;
    r.simulated_tps = d.us > 0 ? 1e6 / d.us : 0;
    r.ratio = r.simulated_tps / p.decode_tps;
    if (options.prefill && p.ttft_ms > 0) {
      Planned pre = MESHPLAN_TRY(plan_time(p, prefill, options.policy, out.dispatch_ns));
      r.prefill_ms = pre.us / 1000.0;
      r.ttft_ratio = r.prefill_ms > 0 ? p.ttft_ms / r.prefill_ms : 0;
    }
    out.rows.push_back(r);
  }
  return out;
}

}  // namespace meshplan::models
