// meshplan-zoo: the main job. Precompiles the model zoo into one plan cache, opens it as an
// inference server would, runs every model on a backend (--backend, default the emulator),
// verifies it against the f32 host reference and prints a table. With --bench-json it also writes
// the policy comparison.
//
//   meshplan-zoo [--cache PATH] [--policies dram,...] [--models a,b] [--bench-json FILE] [--no-run]
//                [--no-flatten-spatial] [--backend NAME]
//   meshplan-zoo --hardware-check [--policies P] [--no-prefill] [--no-calibrate]
//
// Plans are made for the full published shapes (the figures) and for reduced widths with the same
// structure (those are executed and checked, since the emulator runs on the host CPU).
#include <mimalloc-new-delete.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "hardware_check.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/emulator_backend.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/timing.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/layout.hpp"
#include "meshplan/planner/plan_file.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/prepare_weights.hpp"
#include "meshplan/planner/spmd.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "meshplan/runtime/plan_cache.hpp"
#include "zoo.hpp"

using namespace meshplan;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  std::string cache = "build/demo/zoo.mpc";
  std::vector<std::string> policies;
  std::vector<std::string> models;
  std::string bench_json;
  std::string write_json;  ///< Folder to write each model's graph.json (full size) into.
  bool run = true;
  bool flatten_spatial = true;  ///< --no-flatten-spatial: plan conv activations NHWC as given.
  bool hardware_check = false;  ///< --hardware-check: published Llama-3.1-8B points vs the plan.
  bool prefill = true;          ///< --no-prefill: the hardware check plans decode only.
  bool calibrate = true;        ///< --no-calibrate: the hardware check keeps dispatch_ns.
  std::string weight_dtype;     ///< --weight-dtype: storage precision of every model's weights.
  std::string backend{device::kEmulatorBackend};  ///< --backend: the registered backend runs use.
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    if (comma > at) out.push_back(s.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

void progress(size_t done, size_t total, const std::string& what) {
  bool tty = ::isatty(2);
  int width = 30, filled = total ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "%s[%.*s%*s] %zu/%zu %-48s%s", tty ? "\r" : "", filled,
               "##############################", width - filled, "", done, total, what.c_str(),
               tty ? "" : "\n");
  if (tty && done == total) std::fprintf(stderr, "\n");
}

struct Row {
  std::string model, device, policy;
  uint32_t ops = 0, l1_outputs = 0, spills = 0, reshards = 0, collectives = 0;
  bool mesh = false;
  double host_io_us = 0;  ///< PCIe time of the inputs in and the outputs out (not in simulated_us).
  double bound_us = 0;    ///< Roofline lower bound of the device time (lower_bound_us).
  double simulated_us = 0, planning_ms = 0, load_us = 0, max_error = -1, relative_error = -1;
  bool verified = false;
  std::string note;
  std::string run_entry;  ///< Cache entry executed: the reduced plan, or the full one if identical.
};

/// The per-device program of an annotated graph, as meshplan-compile makes it: export to
/// StableHLO/Shardy, the mesh pipeline, lowering to the graph IR (named after the model).
Result<planner::Graph> mesh_program(const planner::AnnotatedGraph& annotated, int64_t rows,
                                    int64_t cols) {
  planner::FileOptions options;
  options.mesh = str(rows, "x", cols);
  return MESHPLAN_TRY(planner::import_annotated(annotated, options)).graph;
}

/// Bytes of a planned tensor as stored on the device (block formats by whole tiles).
uint64_t stored_bytes(const fb::TensorPlan& t) {
  int64_t n = 1;
  for (int64_t d : *t.shape()) n *= d;
  auto dtype = static_cast<device::DType>(t.dtype());
  uint32_t e = device::element_bytes(dtype);
  if (e) return static_cast<uint64_t>(n) * e;
  return static_cast<uint64_t>((n + device::kTileElems - 1) / device::kTileElems) *
         device::tile_bytes(dtype);
}

/// PCIe time of a plan's inputs in and outputs out on `chip` (parameters are uploaded once and
/// stay, so they are left out).
double host_io_us(const fb::Plan& p, const device::ChipDesc& chip) {
  uint64_t in = 0, out = 0;
  for (uint32_t i : *p.inputs())
    if (p.tensors()->Get(i)->role() == fb::TensorRole::input)
      in += stored_bytes(*p.tensors()->Get(i));
  for (uint32_t i : *p.outputs()) out += stored_bytes(*p.tensors()->Get(i));
  return static_cast<double>(device::host_transfer_ns(chip, in, true) +
                             device::host_transfer_ns(chip, out, false)) /
         1000.0;
}

int64_t volume_of(const fb::TensorPlan& t) {
  int64_t n = 1;
  for (int64_t d : *t.shape()) n *= d;
  return n;
}

/// A lower bound of a plan's device time under the timing model (roofline): the larger of the
/// bytes that must cross DRAM once at dram_gbps and the matmul and conv2d FLOPs at the LoFi peak
/// of every core; plus one dispatch per graph op (reshards and spills are avoidable). The bytes
/// are every argument a non-collective op reads (arguments live in DRAM interleaved in every
/// plan: the policies choose the layouts of op results only, and an op reads a DRAM operand at
/// least once, timed at dram_gbps) and the output bytes that cannot stay in the chip's L1. Each
/// op takes dispatch + max(compute, movement), and a sum of maxima is at least the maximum of
/// the sums, so no plan beats it.
double lower_bound_us(const fb::Plan& p, const device::ChipDesc& chip) {
  std::vector<bool> read(p.tensors()->size(), false);
  for (const fb::OpPlan* op : *p.ops())
    if (op->operands() && !device::is_collective(static_cast<device::OpKind>(op->kind())))
      for (uint32_t i : *op->operands()) read[i] = true;
  uint64_t argument_bytes = 0, output_bytes = 0;
  for (uint32_t i = 0; i < p.tensors()->size(); ++i) {
    const fb::TensorPlan* t = p.tensors()->Get(i);
    if (t->role() != fb::TensorRole::intermediate && read[i])
      argument_bytes += stored_bytes(*t);
  }
  for (uint32_t i : *p.outputs()) output_bytes += stored_bytes(*p.tensors()->Get(i));
  uint64_t l1 =
      static_cast<uint64_t>(chip.cores()) * (chip.l1_usable_top() - chip.l1_unreserved_base);
  uint64_t dram_bytes = argument_bytes + (output_bytes > l1 ? output_bytes - l1 : 0);
  double flops = 0;
  uint32_t graph_ops = 0;
  for (const fb::OpPlan* op : *p.ops()) {
    if (op->origin() == fb::OpOrigin::graph) ++graph_ops;
    if (!op->results() || op->results()->size() == 0 || !op->operands() ||
        op->operands()->size() < 2)
      continue;
    const fb::TensorPlan& out = *p.tensors()->Get(op->results()->Get(0));
    const fb::TensorPlan& a = *p.tensors()->Get(op->operands()->Get(0));
    const fb::TensorPlan& w = *p.tensors()->Get(op->operands()->Get(1));
    if (op->kind() == fb::OpKind::matmul || op->kind() == fb::OpKind::linear) {
      auto shape = a.shape();
      bool ta = op->config() && op->config()->transpose_a();
      int64_t k = shape->size() < 2 ? 1 : shape->Get(shape->size() - (ta ? 2 : 1));
      flops += 2.0 * static_cast<double>(volume_of(out)) * static_cast<double>(k);
    } else if (op->kind() == fb::OpKind::conv2d && out.shape()->size() > 0) {
      // Each output element takes KH x KW x I / groups multiply-adds: the weight's volume over
      // the output channels.
      int64_t o = out.shape()->Get(out.shape()->size() - 1);
      if (o > 0)
        flops += 2.0 * static_cast<double>(volume_of(out)) * static_cast<double>(volume_of(w) / o);
    }
  }
  double peak = static_cast<double>(chip.matmul_flops_per_cycle) * chip.cores() * chip.clock_ghz;
  double ns = std::max(static_cast<double>(dram_bytes) / chip.dram_gbps, flops / peak) +
              static_cast<double>(graph_ops) * static_cast<double>(chip.dispatch_ns);
  return ns / 1000.0;
}

/// Fills `row`'s plan metrics from a compiled plan and queues the plan under `name`.
void record_plan(Row& row, std::string name, std::vector<uint8_t> bytes,
                 std::vector<runtime::CacheEntryData>& entries, const device::ChipDesc& chip) {
  row.host_io_us = host_io_us(*fb::GetSizePrefixedPlan(bytes.data()), chip);
  row.bound_us = lower_bound_us(*fb::GetSizePrefixedPlan(bytes.data()), chip);
  const fb::PlanMetrics* m = fb::GetSizePrefixedPlan(bytes.data())->header()->metrics();
  row.ops = m->ops();
  row.l1_outputs = m->l1_outputs();
  row.spills = m->spills();
  row.reshards = m->reshards();
  row.simulated_us = m->estimated_ns() / 1000.0;
  entries.push_back({std::move(name), std::move(bytes)});
}

uint32_t count_collectives(const planner::Graph& g) {
  uint32_t n = 0;
  for (const planner::Op& op : g.ops) n += device::is_collective(op.kind) ? 1 : 0;
  return n;
}

/// --hardware-check: one line per published point, `model device published_tps simulated_tps
/// ratio`, then the prefill (time to first token) lines where a TTFT is published.
Result<int> hardware_check(const Args& args) {
  models::HardwareCheckOptions options;
  if (!args.policies.empty()) options.policy = args.policies.front();
  options.prefill = args.prefill;
  options.calibrate = args.calibrate;
  auto t0 = Clock::now();
  models::HardwareCheck check = MESHPLAN_TRY(models::hardware_check(options));
  std::printf("model device published_tps simulated_tps ratio\n");
  for (const models::HardwareCheckRow& r : check.rows)
    std::printf("%s %s %.1f %.1f %.3f%s\n", r.point.model.c_str(), r.point.device.c_str(),
                r.point.decode_tps, r.simulated_tps, r.ratio,
                r.calibration_point ? " (calibration point)" : "");
  if (options.prefill) {
    std::printf("model device published_ttft_ms simulated_prefill_ms ratio\n");
    for (const models::HardwareCheckRow& r : check.rows)
      if (r.prefill_ms > 0)
        std::printf("%s %s %.1f %.2f %.3f\n", r.point.model.c_str(), r.point.device.c_str(),
                    r.point.ttft_ms, r.prefill_ms, r.ttft_ratio);
  }
  std::printf(
      "(policy %s; batch 1, decode at position %lld; bfp4_b FF1/FF3, bfp8_b other weights; "
      "dispatch %llu ns per op",
      options.policy.c_str(), static_cast<long long>(models::kCheckDecodePast),
      static_cast<unsigned long long>(check.dispatch_ns));
  if (check.dispatch_ns != check.descriptor_dispatch_ns)
    std::printf(" (fitted on the calibration point; the descriptors' %llu ns gives",
                static_cast<unsigned long long>(check.descriptor_dispatch_ns));
  for (const models::HardwareCheckRow& r : check.rows)
    if (check.dispatch_ns != check.descriptor_dispatch_ns)
      std::printf(" %s %.1f t/s", r.point.device.c_str(), r.uncalibrated_tps);
  if (check.dispatch_ns != check.descriptor_dispatch_ns) std::printf(")");
  std::printf("; ops and weights read per decode step per chip:");
  for (const models::HardwareCheckRow& r : check.rows)
    std::printf(" %s %u ops %.2f GB", r.point.device.c_str(), r.decode_ops, r.weight_bytes / 1e9);
  std::printf("; planned in %.1f s)\n", ms_since(t0) / 1000.0);
  return 0;
}

Result<int> run(const Args& args) {
  MESHPLAN_TRY(device::register_emulator_backend());
  if (args.hardware_check) return hardware_check(args);
  std::vector<models::ModelSpec> zoo = models::zoo();
  if (!args.models.empty()) {
    std::vector<models::ModelSpec> chosen;
    for (const std::string& m : args.models) {
      auto it = std::find_if(zoo.begin(), zoo.end(),
                             [&](const models::ModelSpec& s) { return s.name == m; });
      if (it != zoo.end()) {
        chosen.push_back(*it);
        continue;
      }
      std::vector<models::MeshModelSpec> meshes = models::mesh_zoo();
      if (std::none_of(meshes.begin(), meshes.end(),
                       [&](const models::MeshModelSpec& s) { return s.name == m; }))
        return fail(ErrorCode::not_found, "no model '", m, "' in the zoo");
    }
    zoo = chosen;
  }
  if (!args.write_json.empty()) {
    for (const models::ModelSpec& spec : zoo) {
      if (spec.name == "mlp")
        continue;  // examples/models/mlp.json is hand-written (same graph key)
      auto g = spec.full();
      if (!g) return std::unexpected(with_context(g.error(), "model " + spec.name));
      std::string json = MESHPLAN_TRY(planner::export_graph_json(*g));
      std::string path = args.write_json + "/" + spec.name + ".json";
      std::ofstream out(path, std::ios::trunc);
      out << json;
      if (!out) return fail(ErrorCode::io, "cannot write ", path);
      std::printf("wrote %s\n", path.c_str());
    }
    for (const models::MeshModelSpec& spec : models::mesh_zoo()) {  // annotated graph.json
      auto g = spec.full();
      if (!g) return std::unexpected(with_context(g.error(), "model " + spec.name));
      std::string json = MESHPLAN_TRY(planner::export_graph_json(g->graph, g->annotations));
      std::string path = args.write_json + "/" + spec.name + ".json";
      std::ofstream out(path, std::ios::trunc);
      out << json;
      if (!out) return fail(ErrorCode::io, "cannot write ", path);
      std::printf("wrote %s\n", path.c_str());
    }
    return 0;
  }
  std::vector<std::string> policies = args.policies;
  if (policies.empty())
    for (auto p : planner::policy_names()) policies.emplace_back(p);

  // 1. Precompile: full shapes (figures) and reduced shapes (executed), every policy.
  std::filesystem::create_directories(std::filesystem::path(args.cache).parent_path().empty()
                                          ? std::filesystem::path(".")
                                          : std::filesystem::path(args.cache).parent_path());
  std::vector<runtime::CacheEntryData> entries;
  std::vector<Row> rows;
  size_t total = zoo.size() * policies.size(), done = 0;
  for (const models::ModelSpec& spec : zoo) {
    auto full = spec.full();
    auto reduced = spec.reduced();
    if (!full) return std::unexpected(with_context(full.error(), "model " + spec.name));
    if (!reduced)
      return std::unexpected(with_context(reduced.error(), "model " + spec.name + " (reduced)"));
    device::ChipDesc chip = MESHPLAN_TRY(device::builtin_chip(spec.device));
    for (const std::string& policy : policies) {
      progress(done, total, "planning " + spec.name + " (" + policy + ")");
      planner::PlannerOptions options;
      options.policy = policy;
      options.flatten_spatial = args.flatten_spatial;
      if (!args.weight_dtype.empty())
        options.weight_dtype = MESHPLAN_TRY(planner::parse_weight_dtype(args.weight_dtype));
      Row row;
      row.model = spec.name;
      row.device = spec.device;
      row.policy = policy;
      auto t0 = Clock::now();
      auto plan = planner::compile(*full, chip, options);
      Hash128 full_key = plan ? plan->key : Hash128{};
      row.planning_ms = ms_since(t0);
      if (!plan)
        row.note = plan.error().to_string();
      else
        record_plan(row, spec.name + "/" + policy, std::move(plan->bytes), entries, chip);
      auto small = planner::compile(*reduced, chip, options);
      row.run_entry = spec.name + "/" + policy + "/reduced";
      if (small && small->key == full_key)
        row.run_entry = spec.name + "/" + policy;  // same graph
      else if (small)
        entries.push_back({row.run_entry, std::move(small->bytes)});
      else if (row.note.empty())
        row.note = "reduced: " + small.error().to_string();
      rows.push_back(std::move(row));
      progress(++done, total, "planned " + spec.name + " (" + policy + ")");
    }
  }
  // The mesh variants (tensor-parallel Llama on t3k / galaxy, data-parallel ResNet-50 on n300):
  // annotated graphs through the mesh pipeline, planned chip by chip under every policy.
  std::vector<models::MeshModelSpec> mesh_zoo;
  for (const models::MeshModelSpec& spec : models::mesh_zoo())
    if (args.models.empty() ||
        std::find(args.models.begin(), args.models.end(), spec.name) != args.models.end())
      mesh_zoo.push_back(spec);
  total += mesh_zoo.size() * policies.size();
  for (const models::MeshModelSpec& spec : mesh_zoo) {
    auto full_ann = spec.full();
    auto reduced_ann = spec.reduced();
    if (!full_ann) return std::unexpected(with_context(full_ann.error(), "model " + spec.name));
    if (!reduced_ann)
      return std::unexpected(
          with_context(reduced_ann.error(), "model " + spec.name + " (reduced)"));
    auto t_pipe = Clock::now();
    auto full = mesh_program(*full_ann, spec.rows, spec.cols);
    double pipeline_ms = ms_since(t_pipe);
    auto reduced = mesh_program(*reduced_ann, spec.rows, spec.cols);
    device::ChipDesc chip = device::wormhole_b0();
    for (const std::string& policy : policies) {
      progress(done, total, "planning " + spec.name + " (" + policy + ")");
      planner::PlannerOptions options;
      options.policy = policy;
      options.flatten_spatial = args.flatten_spatial;
      if (!args.weight_dtype.empty())
        options.weight_dtype = MESHPLAN_TRY(planner::parse_weight_dtype(args.weight_dtype));
      Row row;
      row.model = spec.name;
      row.device = spec.mesh;
      row.policy = policy;
      row.mesh = true;
      if (!full || !reduced) {
        row.note = (!full ? full.error() : reduced.error()).to_string();
        rows.push_back(std::move(row));
        progress(++done, total, "failed " + spec.name);
        continue;
      }
      row.collectives = count_collectives(*full);
      auto t0 = Clock::now();
      auto plan = planner::compile(*full, chip, options);
      row.planning_ms = pipeline_ms + ms_since(t0);
      if (!plan)
        row.note = plan.error().to_string();
      else
        record_plan(row, spec.name + "/" + policy, std::move(plan->bytes), entries, chip);
      auto small = planner::compile(*reduced, chip, options);
      row.run_entry = spec.name + "/" + policy + "/reduced";
      if (small)
        entries.push_back({row.run_entry, std::move(small->bytes)});
      else if (row.note.empty())
        row.note = "reduced: " + small.error().to_string();
      rows.push_back(std::move(row));
      progress(++done, total, "planned " + spec.name + " (" + policy + ")");
    }
  }
  MESHPLAN_TRY(runtime::write_cache(args.cache, std::move(entries)));

  // 2. Serve: open the cache once, then for each model find, bind and run the reduced plan.
  auto t_open = Clock::now();
  runtime::PlanCache cache = MESHPLAN_TRY(runtime::PlanCache::open(args.cache));
  double open_us = ms_since(t_open) * 1000.0;
  bool all_ok = true;
  for (Row& row : rows) {
    if (!row.note.empty()) {
      all_ok = false;
      continue;
    }
    auto t_load = Clock::now();
    auto full = cache.find(row.model + "/" + row.policy);
    if (!full) return std::unexpected(full.error());
    row.load_us = ms_since(t_load) * 1000.0;
    if (!args.run) continue;
    runtime::PlanRef plan = MESHPLAN_TRY(cache.find(row.run_entry));
    auto inputs = runtime::random_inputs(plan, 7);
    auto views = runtime::views_of(inputs);
    // On a mesh of the backend: the one a mesh plan was made for, else 1x1; host tensors in and
    // out.
    device::ChipDesc chip =
        row.mesh ? device::wormhole_b0() : MESHPLAN_TRY(device::builtin_chip(row.device));
    auto mesh = MESHPLAN_TRY(runtime::open_plan_mesh(plan, chip, args.backend));
    auto exe = MESHPLAN_TRY(runtime::Executable::bind(plan, *mesh));
    auto r = exe->run(views);
    Result<std::vector<runtime::Tensor>> outputs =
        r ? Result<std::vector<runtime::Tensor>>(std::move(r->outputs))
          : std::unexpected(r.error());
    if (!outputs) {
      row.note = outputs.error().to_string();
      all_ok = false;
      continue;
    }
    auto ref = MESHPLAN_TRY(runtime::run_reference(plan, views));
    runtime::CheckReport rep = runtime::check_outputs(*outputs, ref, runtime::kDefaultTolerance);
    row.max_error = rep.max_abs_error;
    row.relative_error = rep.relative_error;
    row.verified = rep.ok;
    all_ok = all_ok && rep.ok;
  }

  std::printf("\nmeshplan zoo: %zu plans in %s, opened in %.1f us\n", cache.size(),
              args.cache.c_str(), open_us);
  std::printf("%-28s %-12s %-14s %6s %6s %6s %8s %5s %14s %10s %11s %11s %9s %10s %s\n", "model",
              "device", "policy", "ops", "%L1", "spills", "reshards", "coll", "simulated us",
              "bound us", "host io us", "plan ms", "load us", "rel err", "check (reduced widths)");
  for (const Row& r : rows) {
    double l1 = r.ops ? 100.0 * r.l1_outputs / r.ops : 0.0;
    std::printf(
        "%-28s %-12s %-14s %6u %5.1f%% %6u %8u %5u %14.1f %10.1f %11.1f %11.1f %9.1f %10.5f %s\n",
        r.model.c_str(), r.device.c_str(), r.policy.c_str(), r.ops, l1, r.spills, r.reshards,
        r.collectives, r.simulated_us, r.bound_us, r.host_io_us, r.planning_ms, r.load_us,
        r.relative_error,
        !r.note.empty() ? r.note.c_str()
        : !args.run     ? "not run"
        : r.verified    ? "VERIFIED"
                        : "FAILED");
  }
  std::printf(
      "(mesh models: ops, %%L1 and simulated time are per chip, the slowest chip's "
      "estimate; coll = collectives per chip; plan ms includes the mesh pipeline; bound us = "
      "roofline lower bound of the device time; host io us = PCIe time of the inputs in and "
      "outputs out, not included in simulated us)\n");

  if (!args.bench_json.empty()) {
    std::ofstream out(args.bench_json, std::ios::trunc);
    out << "{\n  \"policies\": [\n";
    std::vector<std::string> names;
    for (const models::ModelSpec& spec : zoo) names.push_back(spec.name);
    for (const models::MeshModelSpec& spec : mesh_zoo) names.push_back(spec.name);
    for (size_t m = 0; m < names.size(); ++m) {
      out << "    {\"model\": \"" << names[m] << "\", \"simulated_us\": {";
      bool first = true;
      for (const Row& r : rows)
        if (r.model == names[m]) {
          out << (first ? "" : ", ") << "\"" << r.policy << "\": ";
          if (r.note.empty())
            out << r.simulated_us;
          else
            out << "null";
          first = false;
        }
      out << "}, \"planning_ms\": {";
      first = true;
      for (const Row& r : rows)
        if (r.model == names[m]) {
          out << (first ? "" : ", ") << "\"" << r.policy << "\": " << r.planning_ms;
          first = false;
        }
      out << "}}" << (m + 1 < names.size() ? "," : "") << "\n";
    }
    out << "  ]\n}\n";
    if (!out) return fail(ErrorCode::io, "cannot write ", args.bench_json);
  }
  return all_ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  tools::Cli cli("meshplan-zoo",
                 "meshplan-zoo [--cache PATH] [--policies P,...] [--models M,...] [options]\n\n"
                 "Precompiles the model zoo into one plan cache, runs every model on a backend\n"
                 "(default: the emulator), checks it against the f32 host reference and prints a\n"
                 "table.");
  cli.app().footer(
      "Plans are made for the full published shapes (the figures) and for reduced widths with\n"
      "the same structure (those are run and checked). Exit codes: 0 success, 1 error, 2 a\n"
      "model's check failed.\n");
  Args args;
  std::string policies, models;
  cli.app()
      .add_option("--cache", args.cache, "The plan cache to write (default build/demo/zoo.mpc)")
      ->type_name("PATH");
  cli.app()
      .add_option("--policies", policies, "Policies to plan with (default: all)")
      ->type_name("P,...");
  cli.app().add_option("--models", models, "Models to plan (default: all)")->type_name("M,...");
  cli.app()
      .add_option("--bench-json", args.bench_json, "Write the policy comparison as JSON")
      ->type_name("FILE");
  cli.app()
      .add_option("--weight-dtype", args.weight_dtype,
                  "Store every model's matmul weights as bf16, bfp8_b or bfp4_b (default bf16)")
      ->type_name("DTYPE");
  bool no_run = false, no_flatten = false;
  cli.app().add_flag("--no-run", no_run, "Plan only; run nothing");
  cli.app()
      .add_option("--backend", args.backend, "Run the plans on this backend (default: emulator)")
      ->type_name("NAME");
  cli.app()
      .add_option("--write-json", args.write_json, "Write each model's graph.json here")
      ->type_name("DIR");
  cli.app().add_flag("--no-flatten-spatial", no_flatten,
                     "Plan conv2d / pool activations NHWC as given");
  bool no_prefill = false;
  cli.app().add_flag("--hardware-check", args.hardware_check,
                     "Plan Llama-3.1-8B as tt-metal's published runs and compare throughput");
  cli.app().add_flag("--no-prefill", no_prefill, "--hardware-check: decode only (no TTFT)");
  bool no_calibrate = false;
  cli.app().add_flag("--no-calibrate", no_calibrate,
                     "--hardware-check: keep the descriptors' dispatch time (no fit)");
  if (auto exit = cli.parse(argc, argv)) return *exit;
  args.prefill = !no_prefill;
  args.calibrate = !no_calibrate;
  args.run = !no_run;
  args.flatten_spatial = !no_flatten;
  args.policies = split(policies);
  args.models = split(models);
  auto rc = run(args);
  if (!rc) {
    std::fprintf(stderr, "meshplan-zoo: error: %s\n", rc.error().to_string().c_str());
    return tools::kExitError;
  }
  return *rc;
}
