// Field-by-field comparison of a plan's key material with what the caller expects.
#include "meshplan/runtime/plan_query.hpp"

namespace meshplan::runtime {

namespace {

std::string_view sv(const flatbuffers::String* s) {
  return s ? s->string_view() : std::string_view();
}

}  // namespace

Status check_plan_matches(const PlanRef& plan, const PlanQuery& query) {
  const fb::PlanHeader* h = plan.plan().header();
  // Checked without building any string first, so a match costs no allocation.
  std::string_view version = sv(h->planner_version());
  bool stale = !query.planner_version.empty() && version != query.planner_version;
  const fb::DeviceInfo* d = h->device();
  bool other_device = false;
  if (query.device) {
    Hash128 have{d->descriptor_hash()->lo(), d->descriptor_hash()->hi()};
    other_device = have != query.device->hash();
  }
  std::string_view policy = h->options() ? sv(h->options()->policy()) : std::string_view();
  uint32_t beam = h->options() ? h->options()->beam_width() : 0;
  bool other_policy = !query.policy.empty() && policy != query.policy;
  bool other_beam =
      !other_policy && query.beam_width && policy == "beam" && beam != *query.beam_width;
  bool other_graph = false;
  if (query.graph_key) {
    const fb::Hash128* g = h->graph_key();
    other_graph = !g || Hash128{g->lo(), g->hi()} != *query.graph_key;
  }
  const fb::MeshInfo* m = h->mesh();
  int rows = m ? m->rows() : 1, cols = m ? m->cols() : 1;
  bool other_mesh = false;
  if (query.mesh) {
    bool single = rows * cols == 1 && query.mesh->chips() == 1;
    const fb::Hash128* mh = m ? m->descriptor_hash() : nullptr;
    other_mesh = !single && (!mh || Hash128{mh->lo(), mh->hi()} != query.mesh->hash());
  }
  if (!stale && !other_device && !other_policy && !other_beam && !other_graph && !other_mesh)
    return {};

  std::string why;
  auto add = [&](const std::string& reason) { why += (why.empty() ? "" : "; ") + reason; };
  if (stale)
    add(str("stale: planner ", version.empty() ? "?" : version, " ≠ ", query.planner_version));
  if (other_device) {
    std::string_view name = sv(d->name());
    std::string plan_side = str(name.empty() ? "?" : name, " ", d->grid_x(), "×", d->grid_y());
    std::string want_side =
        str(query.device->name, " ", query.device->grid_x, "×", query.device->grid_y);
    // Same name and grid but another descriptor: say which other facts differ.
    if (plan_side == want_side) {
      std::string facts;
      if (d->l1_size() != query.device->l1_size)
        facts += str(" L1 ", d->l1_size(), " ≠ ", query.device->l1_size);
      if (d->dram_banks() != query.device->dram_banks)
        facts += str(" DRAM banks ", d->dram_banks(), " ≠ ", query.device->dram_banks);
      if (d->dram_bank_size() != query.device->dram_bank_size)
        facts += str(" DRAM bank size ", d->dram_bank_size(), " ≠ ", query.device->dram_bank_size);
      if (d->l1_unreserved_base() != query.device->l1_unreserved_base)
        facts += str(" L1 base ", d->l1_unreserved_base(), " ≠ ", query.device->l1_unreserved_base);
      add(str("device ", plan_side, " descriptor differs (",
              facts.empty() ? " timing or alignment facts" : facts, " )"));
    } else {
      add(str("device ", plan_side, " ≠ ", want_side));
    }
  }
  if (other_policy)
    add(str("options differ: policy ", policy.empty() ? "?" : policy, " ≠ ", query.policy));
  if (other_beam) add(str("options differ: beam width ", beam, " ≠ ", *query.beam_width));
  if (other_mesh) {
    std::string_view name = m ? sv(m->name()) : std::string_view("single chip");
    std::string plan_side = str(name, " ", rows, "×", cols);
    std::string want_side = str(query.mesh->name, " ", query.mesh->rows, "×", query.mesh->cols);
    if (plan_side != want_side) {
      add(str("mesh ", plan_side, " ≠ ", want_side));
    } else {
      // Same name and shape: say which fabric facts differ (a ring plan on a linear mesh).
      std::string facts;
      auto topology = [](uint8_t t) {
        return t <= 1 ? device::topology_name(static_cast<device::Topology>(t))
                      : std::string_view("?");
      };
      const device::MeshDesc& q = *query.mesh;
      if (m && m->topology() != static_cast<uint8_t>(q.topology))
        facts +=
            str(" topology ", topology(m->topology()), " ≠ ", device::topology_name(q.topology));
      if (m && m->links() != q.links) facts += str(" links ", m->links(), " ≠ ", q.links);
      if (m && m->hop_latency_ns() != q.hop_latency_ns)
        facts += str(" hop latency ", m->hop_latency_ns(), " ns ≠ ", q.hop_latency_ns, " ns");
      add(str("mesh ", plan_side, " descriptor differs (", facts.empty() ? " chip facts" : facts,
              " )"));
    }
  }
  if (other_graph) {
    const fb::Hash128* g = h->graph_key();
    add(str("graph differs: key ", g ? Hash128{g->lo(), g->hi()}.hex() : std::string("?"), " ≠ ",
            query.graph_key->hex()));
  }
  return fail(ErrorCode::incompatible, "plan '", plan.name(), "': ", why);
}

}  // namespace meshplan::runtime
