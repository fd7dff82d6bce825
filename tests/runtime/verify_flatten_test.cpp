// verify_plan runs the FlatBuffers structural verifier flattened (every helper inlined) for
// speed. This checks that it still rejects exactly what the verifier as generated rejects: on a
// real plan damaged at every byte (three ways per byte), `full` fails whenever the plain
// verifier fails, and otherwise agrees with `checksummed` (the same invariants, no structure).
#include <doctest/doctest.h>
#include <flatbuffers/flatbuffers.h>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/plan.hpp"
#include "test_util.hpp"

using namespace meshplan;

namespace {

bool plain_verifier_accepts(const std::vector<uint8_t>& b) {
  if (b.size() < 12) return false;
  uint32_t prefix = flatbuffers::GetPrefixedSize(b.data());
  if (prefix + 4ull > b.size()) return false;
  flatbuffers::Verifier v(b.data(), prefix + 4ull, 16, 16u << 20);
  return meshplan::fb::VerifySizePrefixedPlanBuffer(v);
}

}  // namespace

TEST_CASE("verify_plan(full) rejects what the generated FlatBuffers verifier rejects") {
  auto g = planner::load_graph_file(test::source_path("examples/models/mlp.json"));
  REQUIRE(g);
  planner::PlannerOptions options;
  options.policy = "greedy";  // sharded layouts: shard specs and core ranges in the plan
  auto plan = planner::compile(*g, device::wormhole_b0(), options);
  REQUIRE(plan);
  REQUIRE(plain_verifier_accepts(plan->bytes));
  REQUIRE(runtime::verify_plan(plan->bytes, "mlp", runtime::VerifyMode::full));
  size_t structural_rejects = 0, disagreements = 0;
  std::vector<uint8_t> damaged = plan->bytes;
  for (size_t i = 0; i < plan->bytes.size(); ++i) {
    for (uint8_t value : {uint8_t(plan->bytes[i] ^ 0xff), uint8_t(0), uint8_t(0x80)}) {
      if (value == plan->bytes[i]) continue;
      damaged[i] = value;
      bool plain = plain_verifier_accepts(damaged);
      bool full = runtime::verify_plan(damaged, "mlp", runtime::VerifyMode::full).has_value();
      if (!plain) {
        ++structural_rejects;
        disagreements += full;
      } else {
        bool invariants =
            runtime::verify_plan(damaged, "mlp", runtime::VerifyMode::checksummed).has_value();
        disagreements += full != invariants;
      }
    }
    damaged[i] = plan->bytes[i];
  }
  CHECK(disagreements == 0);
  CHECK(structural_rejects > 100);  // the damage did reach the structural verifier
}
