// HTML plan report: tables and inline SVG, written as well-formed XHTML-compatible markup so a
// test can check it with a plain XML tokenizer.
#include "meshplan/planner/report.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "emit/plan_text.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/types.hpp"

namespace meshplan::planner {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string layout_of(const fb::TensorPlan* t) {
  std::string s = std::string(device::buffer_name(static_cast<device::BufferType>(t->buffer()))) +
                  " " +
                  std::string(device::memory_name(static_cast<device::MemLayout>(t->memory())));
  if (t->shard() && t->shard()->grid() && t->shard()->grid()->size() > 0) {
    const fb::CoreRange* r = t->shard()->grid()->Get(0);
    s += " grid (" + std::to_string(r->x0()) + "," + std::to_string(r->y0()) + ")-(" +
         std::to_string(r->x1()) + "," + std::to_string(r->y1()) + ")";
  }
  s += " " + std::string(device::dtype_name(static_cast<device::DType>(t->dtype())));
  s += t->layout() == fb::TileLayout::tile ? " tile" : " row-major";
  return s;
}

// A stable colour per tensor id.
std::string colour(uint32_t id) {
  static const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                   "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[id % 10];
}

void op_table(std::ostringstream& o, const fb::Plan& p) {
  o << "<h2>Ops</h2>\n<table "
       "class=\"ops\">\n<thead><tr><th>#</th><th>op</th><th>kind</th><th>config</th>"
       "<th>operands</th><th>result</th><th>result layout</th><th>address</th><th>bytes/bank</th>"
       "<th>est. us</th></tr></thead>\n<tbody>\n";
  for (uint32_t i = 0; i < p.ops()->size(); ++i) {
    const fb::OpPlan* op = p.ops()->Get(i);
    const fb::OpConfig* c = op->config();
    std::string config;
    if (c) {
      config = std::to_string(c->grid_x()) + "x" + std::to_string(c->grid_y()) + " cores, " +
               std::string(device::fidelity_name(static_cast<device::MathFidelity>(c->fidelity())));
      if (c->transpose_a()) config += ", transpose_a";
      if (c->transpose_b()) config += ", transpose_b";
      if (c->act_block_h() != 0) config += ", act_block_h " + std::to_string(c->act_block_h());
      if (c->act_block_w_div() > 1)
        config += ", act_block_w_div " + std::to_string(c->act_block_w_div());
      if (c->stream_weights()) config += ", stream_weights";
      if (c->input_n() != 0)
        config += ", flat " + std::to_string(c->input_n()) + "x" + std::to_string(c->input_h()) +
                  "x" + std::to_string(c->input_w());
      if (c->activation() != fb::Activation::none)
        config += ", fused " + std::string(fb::EnumNameActivation(c->activation()));
    }
    std::string operands;
    for (uint32_t id : *op->operands())
      operands += (operands.empty() ? "" : ", ") + name_of(p.tensors()->Get(id));
    const fb::TensorPlan* r = p.tensors()->Get(op->results()->Get(0));
    bool move = op->kind() == fb::OpKind::to_memory_config;
    o << "<tr class=\"op" << (move ? " move" : "") << "\"><td>" << i << "</td><td>"
      << html_escape(op->name() ? op->name()->str() : "") << "</td><td>"
      << fb::EnumNameOpKind(op->kind()) << "</td><td>" << html_escape(config) << "</td><td>"
      << html_escape(operands) << "</td><td>" << html_escape(name_of(r)) << " [" << shape_of(r)
      << "]</td><td>" << html_escape(layout_of(r)) << "</td><td>" << r->address() << "</td><td>"
      << r->bytes_per_bank() << "</td><td>" << fmt("%.3f", op->estimated_ns() / 1000.0)
      << "</td></tr>\n";
  }
  o << "</tbody>\n</table>\n";
}

// L1 over the schedule: x = schedule position, y = address. Two strips, each scaled to what is
// used: the tensor strip spans the lowest L1 tensor address to the top of usable L1 (tensors are
// placed from the top down), the circular-buffer strip spans the unreserved base to the largest
// op's circular buffers (they grow from the base up). Moves to DRAM (spills) are marked in red.
void l1_map(std::ostringstream& o, const fb::Plan& p, const device::ChipDesc& chip) {
  const int width = 900, left = 80, right = 10, top = 10, tensor_h = 240, gap = 24, cb_h = 70,
            bottom = 20;
  const int height = top + tensor_h + gap + cb_h + bottom;
  int n = std::max<int>(1, static_cast<int>(p.ops()->size()));
  double base = static_cast<double>(chip.l1_unreserved_base),
         hi = static_cast<double>(chip.l1_usable_top());
  double col = static_cast<double>(width - left - right) / n;
  // Circular-buffer bytes per op: 2 tiles per operand and result, plus f32 partials for matmul
  // (OpModel's rule with the default config); conv2d's from its shapes, grid, window and
  // act_block_h, act_block_w_div and stream_weights (conv_blocking.hpp).
  device::OpModel model(chip);
  std::vector<double> cbs;
  for (const fb::OpPlan* op : *p.ops()) {
    std::vector<device::TensorPlacement> ts;
    std::vector<std::vector<int64_t>> shapes;
    shapes.reserve(op->operands()->size() + 1);
    auto shape_of_tensor = [&](uint32_t id) {
      const fb::TensorPlan* t = p.tensors()->Get(id);
      shapes.emplace_back();
      if (t->shape()) shapes.back().assign(t->shape()->begin(), t->shape()->end());
      return std::span<const int64_t>(shapes.back());
    };
    for (uint32_t id : *op->operands()) {
      device::TensorPlacement t;
      t.dtype = static_cast<device::DType>(p.tensors()->Get(id)->dtype());
      t.shape = shape_of_tensor(id);
      ts.push_back(t);
    }
    std::vector<const device::TensorPlacement*> ins;
    for (auto& t : ts) ins.push_back(&t);
    device::TensorPlacement res;
    res.dtype = static_cast<device::DType>(p.tensors()->Get(op->results()->Get(0))->dtype());
    res.shape = shape_of_tensor(op->results()->Get(0));
    const device::TensorPlacement* outs[] = {&res};
    device::OpConfig config;
    if (const fb::OpConfig* c = op->config(); c && op->kind() == fb::OpKind::conv2d) {
      config.grid_x = c->grid_x();
      config.grid_y = c->grid_y();
      config.groups = c->groups();
      config.act_block_h = c->act_block_h();
      config.act_block_w_div = c->act_block_w_div();
      config.stream_weights = c->stream_weights();
      config.input_n = c->input_n();
      config.input_h = c->input_h();
      config.input_w = c->input_w();
      if (c->kernel() && c->kernel()->size() == 2)
        for (uint32_t i = 0; i < 2; ++i) config.kernel[i] = c->kernel()->Get(i);
    }
    device::OpLaunch launch{static_cast<device::OpKind>(op->kind()), "", ins, outs, config};
    cbs.push_back(static_cast<double>(model.circular_buffer_bytes(launch)));
  }
  double lowest = hi;
  for (const fb::TensorPlan* t : *p.tensors())
    if (t->buffer() == fb::BufferType::l1)
      lowest = std::min(lowest, static_cast<double>(t->address()));
  double t_lo = std::max(base, lowest - std::max(1024.0, (hi - lowest) * 0.05));
  double cb_hi =
      base +
      std::max(1024.0, (cbs.empty() ? 0.0 : *std::max_element(cbs.begin(), cbs.end())) * 1.1);
  auto y_tensor = [&](double addr) { return top + (hi - addr) / (hi - t_lo) * tensor_h; };
  const int cb_top = top + tensor_h + gap;
  auto y_cb = [&](double addr) { return cb_top + (cb_hi - addr) / (cb_hi - base) * cb_h; };

  o << "<h2>L1 memory map</h2>\n<p>Per-core L1 address against schedule position. Upper strip: L1 "
       "tensors over their "
       "live range (placed from the top of L1 down). Lower strip: each op's circular buffers (from "
       "the unreserved base "
       "up). Red lines: moves to DRAM (spills). The strips are scaled separately; the space "
       "between them is free.</p>\n";
  o << "<svg class=\"l1map\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
    << "\" height=\"" << height << "\">\n";
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << width - left - right
    << "\" height=\"" << tensor_h << "\" fill=\"#fafafa\" stroke=\"#999\"/>\n";
  o << "<rect x=\"" << left << "\" y=\"" << cb_top << "\" width=\"" << width - left - right
    << "\" height=\"" << cb_h << "\" fill=\"#fafafa\" stroke=\"#999\"/>\n";
  auto label = [&](double y, uint64_t addr) {
    o << "<text x=\"2\" y=\"" << fmt("%.1f", y) << "\" font-size=\"10\">" << addr << "</text>\n";
  };
  label(top + 10, chip.l1_usable_top());
  label(top + tensor_h, static_cast<uint64_t>(t_lo));
  label(cb_top + 10, static_cast<uint64_t>(cb_hi));
  label(cb_top + cb_h, chip.l1_unreserved_base);
  for (uint32_t i = 0; i < p.ops()->size(); ++i) {
    const fb::OpPlan* op = p.ops()->Get(i);
    double y = y_cb(base + cbs[i]);
    o << "<rect class=\"cb\" x=\"" << fmt("%.1f", left + i * col) << "\" y=\"" << fmt("%.1f", y)
      << "\" width=\"" << fmt("%.1f", col) << "\" height=\"" << fmt("%.1f", y_cb(base) - y)
      << "\" fill=\"#bbb\"><title>" << html_escape(op->name() ? op->name()->str() : "")
      << " circular buffers " << static_cast<uint64_t>(cbs[i]) << " B</title></rect>\n";
    if (op->kind() == fb::OpKind::to_memory_config &&
        p.tensors()->Get(op->results()->Get(0))->buffer() == fb::BufferType::dram)
      o << "<line class=\"spill\" x1=\"" << fmt("%.1f", left + (i + 0.5) * col) << "\" y1=\"" << top
        << "\" x2=\"" << fmt("%.1f", left + (i + 0.5) * col) << "\" y2=\"" << cb_top + cb_h
        << "\" stroke=\"#d62728\" stroke-width=\"2\"/>\n";
  }
  for (uint32_t id = 0; id < p.tensors()->size(); ++id) {
    const fb::TensorPlan* t = p.tensors()->Get(id);
    if (t->buffer() != fb::BufferType::l1) continue;
    int from = std::max(0, t->first_use()),
        to = t->last_use() < 0 ? from : std::min(n - 1, t->last_use());
    double a = static_cast<double>(t->address()), b = a + static_cast<double>(t->bytes_per_bank());
    o << "<rect class=\"tensor\" x=\"" << fmt("%.1f", left + from * col) << "\" y=\""
      << fmt("%.1f", y_tensor(b)) << "\" width=\"" << fmt("%.1f", (to - from + 1) * col)
      << "\" height=\"" << fmt("%.1f", std::max(1.0, y_tensor(a) - y_tensor(b))) << "\" fill=\""
      << colour(id) << "\" fill-opacity=\"0.8\" stroke=\"#fff\" stroke-width=\"0.5\"><title>"
      << html_escape(name_of(t)) << " @" << t->address() << " +" << t->bytes_per_bank()
      << "</title></rect>\n";
  }
  o << "</svg>\n";
}

// Per-chip timeline of simulated op durations.
void timeline(std::ostringstream& o, const fb::Plan& p) {
  const int width = 900, height = 60, left = 70;
  uint64_t total = 0;
  for (const fb::OpPlan* op : *p.ops()) total += op->estimated_ns();
  double scale = total ? static_cast<double>(width - left - 10) / static_cast<double>(total) : 0.0;
  o << "<h2>Timeline</h2>\n<p>Simulated device time per op, " << fmt("%.3f", total / 1000.0)
    << " us in all.</p>\n";
  o << "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width
    << "\" height=\"" << height << "\">\n";
  o << "<text x=\"2\" y=\"30\" font-size=\"11\">chip 0</text>\n";
  double x = left;
  for (uint32_t i = 0; i < p.ops()->size(); ++i) {
    const fb::OpPlan* op = p.ops()->Get(i);
    double w = op->estimated_ns() * scale;
    o << "<rect class=\"span\" x=\"" << fmt("%.2f", x) << "\" y=\"15\" width=\""
      << fmt("%.2f", std::max(0.5, w)) << "\" height=\"25\" fill=\"" << colour(i) << "\"><title>"
      << html_escape(op->name() ? op->name()->str() : "") << " "
      << fmt("%.3f", op->estimated_ns() / 1000.0) << " us</title></rect>\n";
    x += w;
  }
  o << "</svg>\n";
}

void comparison(std::ostringstream& o, std::span<const ReportPlan> plans) {
  o << "<h2>Policy comparison</h2>\n<table "
       "class=\"compare\">\n<thead><tr><th>policy</th><th>simulated us</th>"
       "<th>ops</th><th>L1 outputs</th><th>spills</th><th>reshards</th><th>L1 "
       "high-water</th></tr></thead>\n<tbody>\n";
  for (const ReportPlan& rp : plans) {
    const fb::PlanMetrics* m = rp.plan->header()->metrics();
    o << "<tr class=\"policy\"><td>" << html_escape(rp.label) << "</td><td>"
      << fmt("%.3f", m->estimated_ns() / 1000.0) << "</td><td>" << m->ops() << "</td><td>"
      << m->l1_outputs() << "</td><td>" << m->spills() << "</td><td>" << m->reshards()
      << "</td><td>" << m->l1_high_water() << "</td></tr>\n";
  }
  o << "</tbody>\n</table>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:  // Any other character (an open set) stands for itself.
        out += c;
    }
  }
  return out;
}

Result<std::string> render_report(std::span<const ReportPlan> plans) {
  if (plans.empty() || !plans[0].plan)
    return fail(ErrorCode::invalid_argument, "report: no plan given");
  const fb::Plan& p = *plans[0].plan;
  const fb::PlanHeader* h = p.header();
  const fb::DeviceInfo* d = h->device();
  device::ChipDesc chip;
  chip.name = d->name() ? d->name()->str() : "?";
  chip.grid_x = d->grid_x();
  chip.grid_y = d->grid_y();
  chip.l1_size = d->l1_size();
  chip.l1_unreserved_base = d->l1_unreserved_base();
  if (chip.l1_size <= chip.l1_unreserved_base)
    return fail(ErrorCode::invalid_argument, "report: plan has no L1 geometry");
  std::string title =
      "meshplan plan: " + (h->graph_name() ? h->graph_name()->str() : std::string("graph"));
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>"
    << html_escape(title)
    << "</"
       "title>\n<style>\nbody{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:"
       "collapse;font-size:12px}"
       "td,th{border:1px solid #ccc;padding:2px "
       "6px;text-align:left}tr.move{background:#fdecea}h2{margin-top:1.5em}\n"
       "</style>\n</head>\n<body>\n";
  o << "<h1>" << html_escape(title) << "</h1>\n";
  const fb::PlanMetrics* m = h->metrics();
  o << "<p>key " << (h->key() ? Hash128{h->key()->lo(), h->key()->hi()}.hex() : std::string("?"))
    << ", policy "
    << html_escape(h->options() && h->options()->policy() ? h->options()->policy()->str() : "?")
    << ", device " << html_escape(chip.name) << " (" << chip.grid_x << "x" << chip.grid_y
    << " cores), planner " << html_escape(h->planner_version() ? h->planner_version()->str() : "?")
    << "</p>\n";
  o << "<p>" << m->ops() << " ops, " << m->l1_outputs() << " op outputs in L1, " << m->spills()
    << " spills, " << m->reshards() << " reshards, L1 high-water " << m->l1_high_water()
    << " bytes per core, estimated " << fmt("%.3f", m->estimated_ns() / 1000.0) << " us</p>\n";
  op_table(o, p);
  l1_map(o, p, chip);
  timeline(o, p);
  if (plans.size() > 1) comparison(o, plans);
  o << "</body>\n</html>\n";
  return o.str();
}

}  // namespace meshplan::planner
