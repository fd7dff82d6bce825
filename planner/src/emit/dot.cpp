// Graphviz rendering of a plan: ops, argument and output nodes, edges carrying tensors.
#include "meshplan/planner/dot.hpp"

#include <cstdio>
#include <sstream>
#include <vector>

#include "emit/plan_text.hpp"
#include "meshplan/device/types.hpp"

namespace meshplan::planner {

namespace {

/// "L1 block_sharded 4x2 cores bf16" or "DRAM interleaved bf16".
std::string layout_of(const fb::TensorPlan* t) {
  std::string s = std::string(device::buffer_name(static_cast<device::BufferType>(t->buffer()))) +
                  " " +
                  std::string(device::memory_name(static_cast<device::MemLayout>(t->memory())));
  if (t->shard() && t->shard()->grid()) {
    uint64_t cores = 0;
    for (const fb::CoreRange* r : *t->shard()->grid())
      cores += uint64_t{r->x1() - r->x0() + 1u} * (r->y1() - r->y0() + 1u);
    s += " " + std::to_string(cores) + " cores";
  }
  s += " " + std::string(device::dtype_name(static_cast<device::DType>(t->dtype())));
  if (t->layout() == fb::TileLayout::row_major) s += " row-major";
  return s;
}

std::string config_of(const fb::OpPlan* op) {
  const fb::OpConfig* c = op->config();
  if (!c) return "";
  std::string s =
      std::to_string(c->grid_x()) + "x" + std::to_string(c->grid_y()) + " grid " +
      std::string(device::fidelity_name(static_cast<device::MathFidelity>(c->fidelity())));
  if (c->program() != fb::MatmulProgram::none)
    s += " " + std::string(device::program_name(static_cast<device::MatmulProgram>(c->program())));
  if (c->act_block_h() != 0) s += " act_block_h " + std::to_string(c->act_block_h());
  if (c->act_block_w_div() > 1) s += " act_block_w_div " + std::to_string(c->act_block_w_div());
  if (c->stream_weights()) s += " stream_weights";
  if (c->input_n() != 0)
    s += " flat " + std::to_string(c->input_n()) + "x" + std::to_string(c->input_h()) + "x" +
         std::to_string(c->input_w());
  if (c->activation() != fb::Activation::none)
    s += " +" + std::string(fb::EnumNameActivation(c->activation()));
  return s;
}

}  // namespace

std::string dot_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_dot(const fb::Plan& plan, std::string_view name) {
  const auto& tensors = *plan.tensors();
  const auto& ops = *plan.ops();
  // Producer of each tensor: op index, or -1 for arguments.
  std::vector<int64_t> producer(tensors.size(), -1);
  for (uint32_t i = 0; i < ops.size(); ++i)
    for (uint32_t id : *ops.Get(i)->results()) producer[id] = i;

  std::ostringstream o;
  o << "digraph \"" << dot_escape(name) << "\" {\n"
    << "  graph [rankdir=TB, fontname=\"monospace\"];\n"
    << "  node [shape=box, fontname=\"monospace\", fontsize=10];\n"
    << "  edge [fontname=\"monospace\", fontsize=9];\n";
  // Arguments, once each, in tensor order.
  std::vector<bool> declared(tensors.size(), false);
  for (uint32_t i = 0; i < ops.size(); ++i)
    for (uint32_t id : *ops.Get(i)->operands()) {
      if (producer[id] >= 0 || declared[id]) continue;
      declared[id] = true;
      const fb::TensorPlan* t = tensors.Get(id);
      o << "  arg" << id << " [shape=ellipse, label=\""
        << dot_escape(std::string(fb::EnumNameTensorRole(t->role())) + " " + name_of(t)) << "\\n"
        << shape_of(t) << "\\n"
        << dot_escape(layout_of(t)) << "\"];\n";
    }
  for (uint32_t i = 0; i < ops.size(); ++i) {
    const fb::OpPlan* op = ops.Get(i);
    const fb::TensorPlan* r = tensors.Get(op->results()->Get(0));
    std::string mark, style;
    if (op->origin() == fb::OpOrigin::reshard) {
      mark = "[reshard] ";
      style = ", style=filled, fillcolor=\"#ffd8a8\"";
    } else if (op->origin() == fb::OpOrigin::spill) {
      mark = "[spill] ";
      style = ", style=filled, fillcolor=\"#ffb3b3\"";
    }
    char us[32];
    std::snprintf(us, sizeof us, "%.3f us", op->estimated_ns() / 1000.0);
    o << "  op" << i << " [label=\"" << mark
      << dot_escape(op->name() ? op->name()->str() : "op" + std::to_string(i)) << ": "
      << fb::EnumNameOpKind(op->kind()) << "\\n"
      << dot_escape(config_of(op)) << "\\n-> " << dot_escape(name_of(r)) << " " << shape_of(r)
      << "\\n"
      << dot_escape(layout_of(r)) << " @" << r->address() << "\\n"
      << us << "\"" << style << "];\n";
  }
  for (uint32_t k = 0; k < plan.outputs()->size(); ++k) {
    const fb::TensorPlan* t = tensors.Get(plan.outputs()->Get(k));
    o << "  out" << k << " [shape=ellipse, style=bold, label=\"output " << dot_escape(name_of(t))
      << "\\n"
      << shape_of(t) << "\"];\n";
  }
  auto edge = [&](uint32_t id, const std::string& to) {
    const fb::TensorPlan* t = tensors.Get(id);
    std::string from =
        producer[id] >= 0 ? "op" + std::to_string(producer[id]) : "arg" + std::to_string(id);
    o << "  " << from << " -> " << to << " [label=\"" << shape_of(t) << " "
      << device::buffer_name(static_cast<device::BufferType>(t->buffer())) << "\"";
    if (producer[id] >= 0 &&
        ops.Get(static_cast<uint32_t>(producer[id]))->origin() != fb::OpOrigin::graph)
      o << ", style=dashed";
    o << "];\n";
  };
  for (uint32_t i = 0; i < ops.size(); ++i)
    for (uint32_t id : *ops.Get(i)->operands()) edge(id, "op" + std::to_string(i));
  for (uint32_t k = 0; k < plan.outputs()->size(); ++k) {
    uint32_t id = plan.outputs()->Get(k);
    // An output that is an argument passed straight through still gets its argument node.
    if (producer[id] < 0 && !declared[id]) {
      declared[id] = true;
      o << "  arg" << id << " [shape=ellipse, label=\"" << dot_escape(name_of(tensors.Get(id)))
        << "\"];\n";
    }
    edge(id, "out" + std::to_string(k));
  }
  o << "}\n";
  return o.str();
}

}  // namespace meshplan::planner
