// Plan tables, plan JSON and Chrome traces for meshplan-run.
#include "inspect_trace.hpp"

#include <flatbuffers/idl.h>

#include <cstdio>
#include <map>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/types.hpp"

namespace meshplan::tools {

namespace {

std::string shape_text(const flatbuffers::Vector<int64_t>* s) {
  std::string out;
  if (!s) return "?";
  for (uint32_t i = 0; i < s->size(); ++i) out += (i ? "x" : "") + std::to_string(s->Get(i));
  return out;
}

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string inspect_table(const runtime::PlanRef& plan) {
  const fb::Plan& p = plan.plan();
  const fb::PlanHeader* h = p.header();
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "plan '%.*s' key %s, planner %s, format %u.%u, device %s %ux%u, policy %s\n",
                static_cast<int>(plan.name().size()), plan.name().data(), plan.key().hex().c_str(),
                h->planner_version() ? h->planner_version()->c_str() : "?", h->format_major(),
                h->format_minor(), h->device()->name() ? h->device()->name()->c_str() : "?",
                h->device()->grid_x(), h->device()->grid_y(),
                h->options() && h->options()->policy() ? h->options()->policy()->c_str() : "?");
  out += line;
  std::snprintf(line, sizeof line, "%5s %-16s %-16s %-22s %-10s %-14s %-14s %5s %12s %10s %11s\n",
                "#", "op", "kind", "config", "result", "placement", "shape", "grid", "address",
                "bytes/bank", "est. us");
  out += line;
  for (uint32_t i = 0; i < p.ops()->size(); ++i) {
    const fb::OpPlan* op = p.ops()->Get(i);
    device::OpConfig c = runtime::op_config_of(*op);
    std::string config = str(c.transpose_a ? "tA " : "", c.transpose_b ? "tB " : "",
                             c.activation != device::Activation::none ? "relu " : "",
                             fb::EnumNameMathFidelity(static_cast<fb::MathFidelity>(c.fidelity)));
    if (device::is_collective(static_cast<device::OpKind>(op->kind())))
      config = static_cast<device::OpKind>(op->kind()) == device::OpKind::collective_permute
                   ? str(c.pairs.size() / 2, " pairs")
                   : str("axis ", int{c.cluster_axis});
    const fb::TensorPlan* r = p.tensors()->Get(op->results()->Get(0));
    std::string placement =
        str(fb::EnumNameBufferType(r->buffer()), "/", fb::EnumNameMemLayout(r->memory()));
    std::string_view kind = device::op_name(static_cast<device::OpKind>(op->kind()));
    std::snprintf(
        line, sizeof line,
        "%5u %-16.16s %-16.*s %-22.22s %-10.10s %-14.14s %-14.14s %2ux%-2u %12llu %10llu %11.3f\n",
        i, op->name() ? op->name()->c_str() : "", static_cast<int>(kind.size()), kind.data(),
        config.c_str(), r->name() ? r->name()->c_str() : "", placement.c_str(),
        shape_text(r->shape()).c_str(), c.grid_x, c.grid_y,
        static_cast<unsigned long long>(r->address()),
        static_cast<unsigned long long>(r->bytes_per_bank()), op->estimated_ns() / 1000.0);
    out += line;
  }
  if (const fb::PlanMetrics* m = h->metrics()) {
    std::snprintf(line, sizeof line,
                  "metrics: %u ops, %u L1 outputs, %u spills, %u reshards, %llu DRAM bytes, L1 "
                  "high water %llu, estimated %.3f us, "
                  "planned in %llu us\n",
                  m->ops(), m->l1_outputs(), m->spills(), m->reshards(),
                  static_cast<unsigned long long>(m->dram_bytes()),
                  static_cast<unsigned long long>(m->l1_high_water()), m->estimated_ns() / 1000.0,
                  static_cast<unsigned long long>(m->planning_us()));
    out += line;
    if (m->spill_selection() != fb::SpillSelection::belady) {
      std::snprintf(line, sizeof line, "spill selection: %s, %llu DP states\n",
                    fb::EnumNameSpillSelection(m->spill_selection()),
                    static_cast<unsigned long long>(m->spill_dp_states()));
      out += line;
    }
  }
  return out;
}

Result<std::string> inspect_json(const runtime::PlanRef& plan) {
  flatbuffers::IDLOptions opts;
  opts.output_default_scalars_in_json = true;
  opts.strict_json = true;
  flatbuffers::Parser parser(opts);
  std::string schema(schemas::kPlanSchemaText);
  if (!parser.Parse(schema.c_str(), nullptr, "plan.fbs"))
    return fail(ErrorCode::internal, "embedded plan schema does not parse: ", parser.error_);
  std::string text;
  if (!flatbuffers::GenerateText(parser, plan.bytes().data() + sizeof(flatbuffers::uoffset_t),
                                 &text))
    return fail(ErrorCode::internal, "cannot print plan '", plan.name(), "' as JSON");
  return text;
}

std::string chrome_trace(const runtime::PlanRef& plan, const runtime::RunResult& run,
                         const std::string& chip_name) {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  out += str(R"({"name":"process_name","ph":"M","pid":0,"args":{"name":"chip 0 )",
             json_escape(chip_name), R"("}})");
  std::map<uint32_t, bool> groups;
  for (const runtime::OpProfile& op : run.ops) groups[op.cores] = true;
  for (const auto& [cores, _] : groups)
    out += str(",\n", R"({"name":"thread_name","ph":"M","pid":0,"tid":)", cores,
               R"(,"args":{"name":"core group: )", cores, R"( cores"}})");
  double ts_us = 0;
  for (size_t i = 0; i < run.ops.size(); ++i) {
    const runtime::OpProfile& op = run.ops[i];
    std::string_view kind = device::op_name(op.kind);
    const char* cat = op.kind == device::OpKind::to_memory_config ? "reshard" : "op";
    double dur = op.device_ns / 1000.0;
    char nums[96];
    std::snprintf(nums, sizeof nums, "\"ts\":%.3f,\"dur\":%.3f", ts_us, dur);
    out +=
        str(",\n{\"name\":\"", json_escape(op.name.empty() ? kind : op.name), "\",\"cat\":\"", cat,
            "\",\"ph\":\"X\",", nums, ",\"pid\":0,\"tid\":", op.cores, ",\"args\":{\"kind\":\"",
            kind, "\",\"index\":", i, ",\"cores\":", op.cores,
            ",\"estimated_ns\":", plan.plan().ops()->Get(static_cast<uint32_t>(i))->estimated_ns(),
            ",\"compute_ns\":", op.compute_ns, ",\"dram_ns\":", op.dram_ns, "}}");
    ts_us += dur;
  }
  out += "\n]}\n";
  return out;
}

}  // namespace meshplan::tools
