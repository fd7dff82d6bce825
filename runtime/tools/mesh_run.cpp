// meshplan-run for mesh plans (see mesh_run.hpp).
#include "mesh_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "inspect_trace.hpp"
#include "mesh_run_mpi.hpp"
#include "meshplan/device/mesh.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "tensor_io.hpp"

namespace meshplan::tools {

namespace {

using Clock = std::chrono::steady_clock;

std::string shape_text(std::span<const int64_t> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out + "]";
}

std::string shard_text(const device::MeshShardSpec& s) {
  std::string out(device::mesh_shard_type_name(s.type));
  if (s.type == device::MeshShardType::devices)
    out += str(" shard_dims=[", s.shard_dims[0], ",", s.shard_dims[1], "]");
  return out;
}

/// Chrome trace: process 0 is the mesh, one thread (track) per chip; collectives in category
/// "collective".
std::string mesh_trace(const runtime::PlanRef& plan, const runtime::RunResult& run,
                       const device::MeshDesc& mesh) {
  std::ostringstream out;
  out << "{\"traceEvents\":[";
  bool first = true;
  auto sep = [&]() {
    out << (first ? "\n" : ",\n");
    first = false;
  };
  sep();
  out << R"({"name":"process_name","ph":"M","pid":0,"args":{"name":"mesh )" << mesh.name << " "
      << mesh.rows << "x" << mesh.cols << " (" << plan.name() << ")\"}}";
  for (int c = 0; c < mesh.chips(); ++c) {
    sep();
    out << R"({"name":"thread_name","ph":"M","pid":0,"tid":)" << c << R"(,"args":{"name":"chip )"
        << device::coord_name(mesh.coord(c)) << R"("}})";
  }
  for (const runtime::OpProfile& op : run.ops) {
    sep();
    out << R"({"name":")" << op.name << R"(","cat":")" << (op.collective ? "collective" : "op")
        << R"(","ph":"X","pid":0,"tid":)" << op.chip << R"(,"ts":)" << op.start_ns / 1000.0
        << R"(,"dur":)" << op.device_ns / 1000.0 << R"(,"args":{"kind":")"
        << device::op_name(op.kind) << R"(","cores":)" << op.cores << "}}";
  }
  out << "\n],\"displayTimeUnit\":\"ns\"}\n";
  return out.str();
}

/// A per-chip file input: "@PATH" with "{c}" standing for the chip index.
bool per_chip_files(std::string_view text) {
  return text.starts_with('@') && text.find("{c}") != std::string_view::npos;
}

std::string chip_path(std::string_view pattern, int chip) {
  std::string out;
  for (size_t at = 0; at < pattern.size();) {
    if (pattern.substr(at, 3) == "{c}") {
      out += std::to_string(chip);
      at += 3;
    } else {
      out += pattern[at++];
    }
  }
  return out;
}

/// Reads chip `chip`'s piece of pre-sharded input `i` from its file into `piece`; errors name
/// the chip and the file (the caller adds the input).
Status read_chip_piece(const runtime::PlanRef& plan, size_t i, std::string_view pattern, int chip,
                       std::span<float> piece) {
  std::string path = chip_path(pattern, chip);
  auto read = read_npy(path);
  if (!read) return std::unexpected(with_context(read.error(), str("chip ", chip)));
  std::span<const int64_t> want = runtime::host_shape(plan, i, false);
  if (!std::ranges::equal(read->shape, want))
    return fail(ErrorCode::invalid_argument, "chip ", chip, ": '", path, "' holds ",
                shape_text(read->shape), "; a chip's piece of this pre-sharded input is ",
                shape_text(want));
  std::copy(read->data.begin(), read->data.end(), piece.begin());
  return {};
}

}  // namespace

std::string inspect_mesh(const runtime::PlanRef& plan) {
  std::ostringstream out;
  const fb::MeshInfo* m = plan.plan().header()->mesh();
  out << "mesh " << (m && m->name() ? m->name()->str() : "?") << " " << runtime::mesh_rows(plan)
      << "x" << runtime::mesh_cols(plan);
  if (m) {
    out << ", " << (m->topology() == 1 ? "ring" : "linear") << ", " << m->links() << " links, hop "
        << m->hop_latency_ns() << " ns";
    if (m->axis_names() && m->axis_names()->size()) {
      out << ", axes";
      for (const flatbuffers::String* a : *m->axis_names()) out << " " << a->str();
    }
  }
  out << "\n";
  for (int output = 0; output < 2; ++output) {
    const auto* ids = output ? plan.plan().outputs() : plan.plan().inputs();
    for (uint32_t i = 0; i < ids->size(); ++i) {
      device::TensorPlacement t = plan.placement(ids->Get(i));
      out << "  " << (output ? "output " : "input  ") << t.name << ": host "
          << shape_text(runtime::host_shape(plan, i, output != 0)) << " -> per chip "
          << shape_text(t.shape) << ", "
          << shard_text(runtime::boundary_shard(plan, i, output != 0)) << "\n";
    }
  }
  return out.str();
}

namespace {

Result<int> run_on_mesh(const runtime::PlanRef& plan, const device::MeshDesc& desc,
                        const MeshRunOptions& o) {
  const device::ChipDesc& chip = desc.chip;
  auto mesh = MESHPLAN_TRY(make_run_mesh(desc, plan, o.backend));
  auto t_bind = Clock::now();
  auto exe = MESHPLAN_TRY(runtime::Executable::bind(plan, *mesh));
  double bind_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_bind).count();
  if (o.inspect) {
    if (o.json) {
      std::cout << MESHPLAN_TRY(inspect_json(plan));
    } else {
      std::cout << inspect_mesh(plan) << inspect_table(plan);
    }
    return 0;
  }
  // Per-chip files (--input=x=@x.chip{c}.npy) feed pre-sharded inputs: each rank reads the
  // files of the chips it owns (rank 0 all of them for --check, for the host reference).
  std::vector<std::pair<size_t, std::string>> per_chip;  // input index, file pattern
  int chips = desc.chips();
  size_t files_read = 0;
  auto read = [&](size_t i, std::string_view text) -> Result<runtime::Tensor> {
    if (!per_chip_files(text)) return is_root_rank() ? parse_input(text) : runtime::Tensor{};
    if (runtime::boundary_shard(plan, i, false).type != device::MeshShardType::identity)
      return fail(ErrorCode::invalid_argument, "the plan's shard of it is ",
                  shard_text(runtime::boundary_shard(plan, i, false)),
                  ", not pre-sharded: per-chip files (", text,
                  ") feed the inputs of a plan compiled with --presharded");
    per_chip.emplace_back(i, std::string(text.substr(1)));
    if (!is_root_rank()) return runtime::Tensor{};
    std::span<const int64_t> shape = runtime::host_shape(plan, i, false);
    runtime::Tensor t(std::vector<int64_t>(shape.begin(), shape.end()));
    size_t piece = t.data.size();
    t.data.resize(piece * static_cast<size_t>(chips));
    for (int c = 0; c < chips; ++c)
      if (o.check || rank_owns_chip(*mesh, c)) {
        MESHPLAN_TRY(read_chip_piece(plan, i, per_chip.back().second, c,
                                     std::span<float>(t.data).subspan(c * piece, piece)));
        ++files_read;
      }
    return t;
  };
  std::vector<runtime::Tensor> inputs;
  if (o.inputs.empty()) {
    if (is_root_rank()) inputs = runtime::random_inputs(plan, o.seed);
  } else {
    // Under MPI rank 0 reads the host inputs (share_inputs sends their shapes); every rank
    // reads its chips' per-chip files.
    std::vector<std::string> names;
    for (size_t i = 0; i < exe->input_count(); ++i) names.emplace_back(exe->input_name(i));
    auto parsed = MESHPLAN_TRY(parse_inputs(plan.name(), o.inputs, names, read));
    if (is_root_rank()) inputs = std::move(parsed);
  }
  if (!per_chip.empty()) {
    // Per-chip files and rank 0's values do not mix for pre-sharded inputs: all or none.
    for (size_t i = 0; i < exe->input_count(); ++i)
      if (runtime::boundary_shard(plan, i, false).type == device::MeshShardType::identity &&
          std::ranges::none_of(per_chip, [&](const auto& p) { return p.first == i; }))
        return fail(ErrorCode::invalid_argument, "input '", exe->input_name(i),
                    "' is pre-sharded: give every pre-sharded input per chip (@FILE{c}.npy) or "
                    "none");
    read_identity_inputs_per_rank(*mesh);
  }
  auto shared = MESHPLAN_TRY(share_inputs(inputs));
  if (!is_root_rank()) {
    for (const auto& [i, pattern] : per_chip) {
      std::span<float> all = shared->writable(i);
      size_t piece = all.size() / static_cast<size_t>(chips);
      for (int c = 0; c < chips; ++c)
        if (rank_owns_chip(*mesh, c)) {
          if (auto ok = read_chip_piece(plan, i, pattern, c, all.subspan(c * piece, piece)); !ok)
            return std::unexpected(
                with_context(ok.error(), str("input '", exe->input_name(i), "'")));
          ++files_read;
        }
    }
  }
  if (!per_chip.empty())
    std::fprintf(stderr, "%sread %zu per-chip input files\n", rank_label().c_str(), files_read);
  const std::vector<runtime::TensorView>& views = shared->views;
  auto t_run = Clock::now();
  runtime::RunResult result = MESHPLAN_TRY(exe->run(views));
  double run_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_run).count();
  report_rank(*mesh, run_ms);
  std::printf("plan '%.*s' (%s, %u ops) on mesh %s %dx%d of %s (%s, %u links)\n",
              static_cast<int>(plan.name().size()), plan.name().data(), plan.key().hex().c_str(),
              plan.plan().ops()->size(), desc.name.c_str(), desc.rows, desc.cols, chip.name.c_str(),
              std::string(device::topology_name(desc.topology)).c_str(), desc.links);
  std::printf(
      "bind %.3f ms, run %.3f ms (host), %.3f us simulated (slowest chip), %.3f us in "
      "collectives, %llu bytes between chips\n",
      bind_ms, run_ms, result.device_ns / 1000.0, result.collective_ns / 1000.0,
      static_cast<unsigned long long>(result.bytes_moved));
  for (int c = 0; c < desc.chips(); ++c)
    std::printf("  chip %s: %.3f us (ops %.3f us, collectives %.3f us)\n",
                device::coord_name(desc.coord(c)).c_str(), result.chip_ns[c] / 1000.0,
                result.chip_device_ns[c] / 1000.0, result.chip_collective_ns[c] / 1000.0);
  if (o.print)
    for (size_t i = 0; i < result.outputs.size(); ++i)
      std::printf("  %.*s = %s\n", static_cast<int>(exe->output_name(i).size()),
                  exe->output_name(i).data(), format_tensor(result.outputs[i]).c_str());
  if (!is_root_rank()) return 0;  // Rank 0 writes the outputs and checks them.
  if (o.outputs.size() > result.outputs.size())
    return fail(ErrorCode::invalid_argument, o.outputs.size(), " --output given, the plan has ",
                result.outputs.size(), " outputs");
  for (size_t i = 0; i < o.outputs.size(); ++i) {
    const std::string& f = o.outputs[i];
    if (f == "-")
      std::printf("%.*s = %s\n", static_cast<int>(exe->output_name(i).size()),
                  exe->output_name(i).data(), format_tensor(result.outputs[i]).c_str());
    else if (!f.empty() && f[0] == '@')
      MESHPLAN_TRY(write_npy(f.substr(1), result.outputs[i]));
    else
      return fail(ErrorCode::invalid_argument, "--output takes @file.npy or -, not '", f, "'");
  }
  if (!o.trace.empty()) {
    std::ofstream out(o.trace, std::ios::trunc);
    out << mesh_trace(plan, result, desc);
    if (!out) return fail(ErrorCode::io, "cannot write trace '", o.trace, "'");
    std::printf("trace: %s (%zu ops on %d chips)\n", o.trace.c_str(), result.ops.size(),
                desc.chips());
  }
  if (o.check) {
    std::vector<runtime::Tensor> ref = MESHPLAN_TRY(runtime::run_reference(plan, views));
    runtime::CheckReport rep = runtime::check_outputs(result.outputs, ref, o.tolerance);
    std::printf(
        "check: max abs error %.6g, output scale %.6g, relative error %.6g (tolerance %.3g): %s\n",
        rep.max_abs_error, rep.scale, rep.relative_error, o.tolerance, rep.ok ? "PASS" : "FAIL");
    return rep.ok ? 0 : 2;
  }
  return 0;
}

}  // namespace

Result<int> run_mesh_plan(const runtime::PlanRef& plan, const device::MeshDesc& desc,
                          const MeshRunOptions& o) {
  return finish_mpi(run_on_mesh(plan, desc, o));
}

}  // namespace meshplan::tools
