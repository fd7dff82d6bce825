// The planner's entry point: graph + device + options -> a complete plan (FlatBuffer bytes).
#pragma once

#include <cstdint>
#include <vector>

#include "meshplan/device/descriptor.hpp"
#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/schemas/hash.hpp"

namespace meshplan::planner {

/// A finished plan: size-prefixed FlatBuffer (identifier MPLN) followed by 64-byte aligned
/// constant segments. `bytes` is what a plan cache stores.
struct CompiledPlan {
  std::vector<uint8_t> bytes;
  Hash128 key;
  Hash128 graph_key;
};

/// Plans `graph` for `chip`: schedule, layout policy, memory plan (verified), emit.
/// Deterministic: equal inputs give byte-identical plans (planning time is not stored).
Result<CompiledPlan> compile(const Graph& graph, const device::ChipDesc& chip,
                             const PlannerOptions& options);

}  // namespace meshplan::planner
