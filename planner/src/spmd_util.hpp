// Helpers shared by the mesh passes (internal to planner/src).
#pragma once

#include <optional>

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// True when the function body holds an sdy.manual_computation (a solved graph).
bool has_manual_computation(const Module& m, const Func& f);
/// The sharding a value has now: its producer's (per-value or target sharding), its function
/// argument annotation, or its manual computation's in_sharding; nullopt when none.
std::optional<TensorSharding> sharding_of(const Module& m, ValueId v);

}  // namespace meshplan::planner::shlo
