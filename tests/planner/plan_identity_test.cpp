// Planning-speed work must not change plans: for every example model and policy, the plan key and
// a digest of the planned graph's per-op layouts (LayoutResult::print: origin, op, result layout,
// grid per op; spills and reshards) match tests/planner/plans/plan_identity.txt, recorded before
// the speed-ups. A deliberate change of plans (a new policy rule, a timing model change that moves
// beam's choices) regenerates the file with MESHPLAN_UPDATE_GOLDEN=1.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "golden_file.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/prepare_weights.hpp"
#include "meshplan/schemas/hash.hpp"
#include "test_util.hpp"

using namespace meshplan;

namespace {

const char* const kModels[] = {"mlp",
                               "transformer_block",
                               "small_cnn",
                               "bert_base_layer",
                               "llama3_8b_decode",
                               "llama3_8b_prefill",
                               "resnet50_b1"};
const char* const kPolicies[] = {"dram", "l1-interleaved", "greedy", "beam", "df-sharding"};

std::string current_digests() {
  std::ostringstream out;
  for (const char* m : kModels) {
    auto g =
        planner::load_graph_file(test::source_path(std::string("examples/models/") + m + ".json"));
    REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
    for (const char* p : kPolicies) {
      CAPTURE(m);
      CAPTURE(p);
      planner::PlannerOptions o;
      o.policy = p;
      // As compile() does: conv2d weights planned in their prepared form.
      planner::Graph prepared = *g;
      auto pass = planner::prepare_conv_weights(prepared);
      REQUIRE_MESSAGE(pass, (pass ? std::string() : pass.error().message));
      auto planned = planner::plan_layout(prepared, device::wormhole_b0(), o);
      REQUIRE_MESSAGE(planned, (planned ? std::string() : planned.error().message));
      Hasher h;
      h.string(planned->print());
      Hash128 key = planner::plan_key(planner::graph_key(*g), device::wormhole_b0(), o);
      out << m << " " << p << " key " << key.hex() << " layouts " << h.digest().hex() << "\n";
    }
  }
  return out.str();
}

}  // namespace

TEST_CASE("plans are unchanged by the planning-speed work (keys and per-op layouts)") {
  std::string path = test::source_path("tests/planner/plans/plan_identity.txt");
  std::string now = current_digests();
  test::check_golden_lines(path, now);
}
