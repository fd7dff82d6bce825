// The mesh Shardy's explicit-reshards stage resolves an op on when its operands and results
// name meshes that order the devices differently (internal to planner/src).
#pragma once

#include <optional>
#include <span>

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// The mesh the `sdy-insert-explicit-reshards` stage computes an op on, from the shardings its
/// operands then results state (nullopt: none stated). Every stated sharding must name a mesh
/// with the same axes (names and sizes; device order aside; a mesh of no axes and no devices
/// names none); the op is computed on the mesh that most shardings splitting some dim name
/// (the first to reach that count on a tie), or, when no sharding splits a dim, on the common
/// mesh (an iota-ordered one when any is). nullptr when nothing is stated, when the meshes'
/// axes differ, or when the common mesh is a single-device (maximal) one: the stage then leaves
/// the op as it is. Every mesh named must be declared in `m`.
const MeshDecl* shardy_op_mesh(const Module& m,
                               std::span<const std::optional<TensorSharding>> stated);

/// True when `s` splits some dim and its mesh lays the devices out in another order than `on`
/// (no device_ids or listed in order are the same order): the stage then reshards that operand
/// or result to `on` even where its factor shardings already agree with the op's.
bool shardy_other_device_order(const Module& m, const TensorSharding& s, const MeshDecl& on);

}  // namespace meshplan::planner::shlo
