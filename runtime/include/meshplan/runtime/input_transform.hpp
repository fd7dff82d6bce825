// Host transforms of plan inputs (plan format 1.2): a conv2d weight the planner prepared is
// passed by the user in its host form [O, KH, KW, I/groups] and prepared on the host, into the
// 2-D [KH*KW*I/groups, O] tensor the plan holds, before upload; an NHWC activation the planner
// flattened (flatten_spatial) is passed as [N, H, W, C] and copied as it is into the
// [1, 1, N*H*W, C] tensor (same row-major bytes). Views into the plan; no allocation.
#pragma once

#include <span>

#include "meshplan/runtime/plan.hpp"
#include "meshplan/runtime/tensor.hpp"

namespace meshplan::runtime {

/// The host transform of plan input `index`, or nullptr when it has none (kind `none`, or a plan
/// without input_transforms). Precondition: index < inputs; the plan passed verify_plan().
const fb::InputTransform* input_transform(const PlanRef& plan, size_t index);

/// The shape the user passes for input `index`: the transform's host shape when it has one,
/// else the plan's host shape (mesh_plan.hpp host_shape: the full tensor on a mesh plan, the
/// tensor itself on a single chip).
std::span<const int64_t> user_input_shape(const PlanRef& plan, size_t index);

/// What a transform does, for error messages: "a conv2d weight the plan prepares into" or "an
/// NHWC activation the plan flattens into" (followed by the plan's shape).
std::string_view input_transform_text(const fb::InputTransform* transform);

/// Applies input `index`'s transform to `in` (of user_input_shape) into `out`, which holds the
/// plan's (full) input shape's values. Errors name the input and both shapes.
Status apply_input_transform(const PlanRef& plan, size_t index, TensorView in,
                             std::span<float> out);

}  // namespace meshplan::runtime
